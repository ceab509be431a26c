"""native: the host's MPI launching a host-built mpistack-bench."""

from __future__ import annotations

from ..launchers import LaunchPlan
from ..registry import APPROACHES
from .base import Approach, Refused, benchmark_argv, host_launcher


@APPROACHES.register("native", image=False)
class Native(Approach):
    def plan(self, case, resources, output, options, label) -> LaunchPlan:
        mpi = case.stack.entry.host
        binary = resources.host_bench.get(mpi)
        if binary is None and not case.benchmark.program:
            raise Refused(f"no mpistack-bench built for the host's {mpi}")
        argv = host_launcher(mpi, case.placement.ranks, case.placement.binding)
        argv += benchmark_argv(case, str(binary), output, options)
        return LaunchPlan(argv=argv, env={**resources.host.root_env(), **case.variant_env}, output=output)
