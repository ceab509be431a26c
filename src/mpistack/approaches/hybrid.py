"""hybrid: the host's launcher starts one container per rank and PMI crosses the boundary (the model of
the CSCS Container Engine under srun, and of Apptainer's hybrid mode).

On this machine the host launcher is MPICH's Hydra in its PMI_PORT mode (the process-management wire
protocol goes over TCP, which crosses into a container with --network host); under Slurm it is srun's PMI-2
plug-in, whose socket each container keeps as a file descriptor. Either way the image's MPI must speak
PMI-1/2: MPICH and its derivatives do; Open MPI wires up through PMIx and is refused.
"""

from __future__ import annotations

from ..launchers import LaunchPlan
from ..registry import APPROACHES
from .base import Approach, Refused, benchmark_argv, container, container_plan, image_env, rank_starter

# Rank-private variables the host launcher sets for each rank: passed into its container.
PMI_ENV_PATTERNS = ["PMI_*", "MPIR_CVAR_*", "HYDI_*", "HYDRA_*"]


def pmi_mismatch(stack_name: str, mpi_impl: str) -> str | None:
    """Why the host launcher cannot start the image's MPI in a container per rank (the doctor gives the same)."""
    if mpi_impl == "mpich":
        return None
    return (f"{stack_name} is {mpi_impl}: the host launcher (Hydra, PMI-1/2 over a port) cannot start its ranks; "
            "Open MPI needs a PMIx server of its own version")


def per_rank_launch(case, resources, label: str, env: dict[str, str], argv: list[str], mounts: list[str] = ()):
    """mpiexec.mpich -pmi-port -n N (or srun) podman run ... --env 'PMI_*' IMAGE ARGV, and its container."""
    mismatch = pmi_mismatch(case.stack.name, case.stack.mpi_impl)
    if mismatch:
        raise Refused(mismatch)
    start = rank_starter(resources).ranks_in_containers("mpich", case.placement)
    run = container(case, resources, label, env, argv, per_rank=True, mounts=list(mounts),
                    passthrough=PMI_ENV_PATTERNS, preserve_fds=start.preserve_fds)
    return [*start.argv, *resources.engine.run_argv(run)], run


@APPROACHES.register("hybrid", image=True)
class Hybrid(Approach):
    def plan(self, case, resources, output, options, label) -> LaunchPlan:
        argv, run = per_rank_launch(case, resources, label, image_env(case, resources.host),
                                    benchmark_argv(case, "mpistack-bench", output, options))
        return container_plan(case, resources, argv, output, label, run, host_env=resources.host.root_env())
