"""native: the host's MPI launching a host-built mpistack-bench."""

from __future__ import annotations

import os

from ..campaign.matrix import Case
from .base import Context, Launch, Refused, benchmark_argv, host_launcher, root_env


def plan(case: Case, context: Context, output, options: list[str]) -> Launch:
    mpi = case.stack.entry.host
    binary = context.host_bench.get(mpi)
    if binary is None and not case.benchmark.program:
        raise Refused(f"no mpistack-bench built for the host's {mpi}")
    argv = host_launcher(mpi, case.placement.ranks, case.placement.binding)
    argv += benchmark_argv(case, str(binary), output, options)
    return Launch(argv=argv, env={**os.environ, **root_env()}, output=output)
