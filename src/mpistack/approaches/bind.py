"""bind: the host's MPI libraries mounted over the image's, ranks started as in hybrid.

Only ABI-compatible pairs are allowed: MPICH and its derivatives share the MPICH ABI (libmpi.so.12), so a
binary built against one runs on another; the MPI-5 standard ABI (libmpi_abi.so) would join any two
libraries that ship it. Open MPI (libmpi.so.40) into MPICH, or the reverse, is refused with the reason.
"""

from __future__ import annotations

from ..launchers import LaunchPlan
from ..registry import APPROACHES
from .base import Approach, Refused, benchmark_argv, container_plan, image_env
from .hybrid import per_rank_launch

MOUNT_DIR = "/opt/mpistack/host-mpi/lib"
SONAMES = {"mpich": "libmpi.so.12 (MPICH ABI)", "openmpi": "libmpi.so.40 (Open MPI)"}


def abi_mismatch(image_mpi: str, host_mpi: str) -> str | None:
    """Why the host's MPI library cannot replace the image's, or None when they share an ABI."""
    if image_mpi == host_mpi:
        return None
    return (f"the image's {image_mpi} uses {SONAMES.get(image_mpi, image_mpi)}, the host's {host_mpi} provides "
            f"{SONAMES.get(host_mpi, host_mpi)}; the ABIs differ, so the image's binaries cannot run on the host's "
            "library")


@APPROACHES.register("bind", image=True, mounts_host_libraries=True)
class Bind(Approach):
    host_mpi = "mpich"

    def plan(self, case, resources, output, options, label) -> LaunchPlan:
        host_mpi = self.host_mpi
        mismatch = abi_mismatch(case.stack.mpi_impl, host_mpi)
        if mismatch:
            raise Refused(f"bind refused: {mismatch}")
        files = resources.host.mpi_library_files.get(host_mpi)
        if not files:
            raise Refused(f"the host has no {host_mpi} library to bind: install the host's {host_mpi}")
        mounts = [f"{source}:{MOUNT_DIR}/{name}:ro" for source, name in files]
        mounts += [f"{directory}:{directory}:ro" for directory in resources.host.plugin_dirs]
        env = image_env(case, resources.host)
        env.pop("MPICH_CH4_NETMOD", None)  # the image's wheel setting means nothing to the host's library
        env["LD_LIBRARY_PATH"] = MOUNT_DIR
        argv, run = per_rank_launch(case, resources, label, env,
                                    benchmark_argv(case, "mpistack-bench", output, options), mounts)
        return container_plan(case, resources, argv, output, label, run, host_env=resources.host.root_env(),
                              bound_mpi=host_mpi)
