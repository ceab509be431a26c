"""hybrid: the host's launcher starts one container per rank and PMI crosses the boundary (the model of
the CSCS Container Engine under srun, and of Apptainer's hybrid mode).

Here the host launcher is MPICH's Hydra in its PMI_PORT mode (the process-management wire protocol goes
over TCP, which crosses into a container with --network host), so the image's MPI must speak PMI-1/2:
MPICH and its derivatives do; Open MPI wires up through PMIx and is refused.
"""

from __future__ import annotations

from ..campaign.matrix import Case
from .base import (Context, Launch, Refused, benchmark_argv, container_run, host_launcher, image_env,
                   image_launch, root_env)

# Rank-private variables the host launcher sets for each rank: passed into its container.
PMI_ENV_PATTERNS = ["PMI_*", "MPIR_CVAR_*", "HYDI_*", "HYDRA_*"]


def host_side(case: Case, context: Context, label: str, env: dict[str, str], extra_mounts: list[str] = ()) -> list[str]:
    """mpiexec.mpich -pmi-port -n N podman run ... --env 'PMI_*' IMAGE"""
    if case.stack.mpi != "mpich":
        raise Refused(f"{case.stack.name} is {case.stack.mpi}: the host launcher (Hydra, PMI-1/2 over a port) "
                      "cannot start its ranks; Open MPI needs a PMIx server of its own version")
    launcher = host_launcher("mpich", case.placement.ranks, case.placement.binding)
    launcher.insert(1, "-pmi-port")
    passthrough = [flag for pattern in PMI_ENV_PATTERNS for flag in ("--env", pattern)]
    run = container_run(context, case, context.images[case.stack.name], label, env,
                        ["--pid", "host", *passthrough, *extra_mounts])
    return [*launcher, *run]


def plan(case: Case, context: Context, output, options: list[str], label: str) -> Launch:
    argv = [*host_side(case, context, label, image_env(case)), *benchmark_argv(case, "mpistack-bench", output, options)]
    return image_launch(case, context, argv, output, label, host_env=root_env())
