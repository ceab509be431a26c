"""native: a stack's MPI outside any container. The host's own MPI launches a host-built mpistack-bench; a
pip stack's wheel, installed in a virtual environment on the host, launches mpistack-bench built with the
wheel's mpicc (the same build as in its image: the stack's native baseline)."""

from __future__ import annotations

from ..launchers import LaunchPlan
from ..registry import APPROACHES
from .base import Approach, Refused, benchmark_argv, image_env, rank_starter


@APPROACHES.register("native", image=False)
class Native(Approach):
    def plan(self, case, resources, output, options, label) -> LaunchPlan:
        if case.stack.native_form == "venv":
            return _venv_plan(case, resources, output, options)
        return _host_plan(case, resources, output, options)


def _host_plan(case, resources, output, options) -> LaunchPlan:
    mpi = case.stack.entry.host
    binary = resources.host_bench.get(mpi)
    if binary is None and not case.benchmark.program:
        raise Refused(f"no mpistack-bench built for the host's {mpi}")
    argv = rank_starter(resources).ranks(mpi, case.placement)
    argv += benchmark_argv(case, str(binary), output, options)
    return LaunchPlan(argv=argv, env={**resources.host.root_env(), **case.variant_env}, output=output)


def _venv_plan(case, resources, output, options) -> LaunchPlan:
    """The wheel's own mpiexec with the stack's runtime preset, as its containers get it."""
    stack = case.stack
    build = resources.native_bench.get(stack.name)
    if build is None:
        raise Refused(f"no native build of {stack.name}: its {stack.mpi_impl} {stack.declared_mpi_version} wheel "
                      f"in a virtual environment, with mpistack-bench built by the wheel's mpicc")
    argv = rank_starter(resources).ranks(stack.mpi_impl, case.placement, str(build.mpiexec))
    argv += benchmark_argv(case, str(build.bench), output, options)
    return LaunchPlan(argv=argv, env={**resources.host.root_env(), **image_env(case, resources.host)},
                      output=output)
