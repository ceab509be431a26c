"""bind: the host's MPI libraries mounted over the image's, ranks started as in hybrid.

Only pairs the MPIs' own ABI statements allow (compat.bind_abi_mismatch, which the doctor's plan check uses
too): MPICH and its derivatives share the MPICH ABI (libmpi.so.12), so a binary built against one runs on
another; an Open MPI library (libmpi.so.40) runs what an older or equal release of its series compiled, and
v5.0.x what v4.x compiled. Open MPI into MPICH, or the reverse, is refused with the reason.

The host's MPI is the one of the image's family unless the campaign's approach entry names another
(`host_mpi`). Its library and every library it needs go into one directory on LD_LIBRARY_PATH; the directories
it loads at run time (UCX's modules; Open MPI's component directory, PMIx's plug-ins and help texts) are
mounted at their host paths, where the host's library looks for them.
"""

from __future__ import annotations

from ..compat import MPI_SONAMES, bind_abi_mismatch
from ..launchers import LaunchPlan
from ..registry import APPROACHES
from .base import Approach, Refused, benchmark_argv, container_plan, image_env
from .hybrid import per_rank_launch

MOUNT_DIR = "/opt/mpistack/host-mpi/lib"
SONAMES = MPI_SONAMES


def host_mpi_for(case) -> str:
    """The host MPI bind mounts for this case: the campaign's choice, else the image's own family."""
    return case.approach.host_mpi or case.stack.mpi_impl


def abi_refusal(case, resources, host_mpi: str) -> str | None:
    """The run's reason to refuse bind, word for word what the doctor's plan check says."""
    return bind_abi_mismatch(case.stack.mpi_impl, case.stack.declared_mpi_version, host_mpi,
                             resources.host.mpi_versions.get(host_mpi))


@APPROACHES.register("bind", image=True, mounts_host_libraries=True)
class Bind(Approach):
    def mount_points(self, case, resources) -> list[str]:
        host_mpi = host_mpi_for(case)
        files = resources.host.mpi_library_files.get(host_mpi)
        if not files and host_mpi == case.stack.mpi_impl:
            raise Refused(f"the host has no {host_mpi} library to bind: install the host's {host_mpi}")
        mismatch = abi_refusal(case, resources, host_mpi)
        if mismatch:
            raise Refused(f"bind refused: {mismatch}")
        mounts = [f"{source}:{MOUNT_DIR}/{name}:ro" for source, name in files or ()]
        return mounts + [f"{directory}:{directory}:ro" for directory in resources.host.plugin_dirs_of(host_mpi)]

    def plan(self, case, resources, output, options, label) -> LaunchPlan:
        host_mpi = host_mpi_for(case)
        mounts = self.mount_points(case, resources)
        env = image_env(case, resources.host)
        env.pop("MPICH_CH4_NETMOD", None)  # the image's wheel setting means nothing to the host's library
        env["LD_LIBRARY_PATH"] = MOUNT_DIR
        argv, run = per_rank_launch(case, resources, label, env,
                                    benchmark_argv(case, "mpistack-bench", output, options), mounts,
                                    pmix_client=resources.host.pmix_version)
        version = {"bound_mpi_version": resources.host.mpi_versions[host_mpi]} \
            if host_mpi in resources.host.mpi_versions else {}
        return container_plan(case, resources, argv, output, label, run, host_env=resources.host.root_env(),
                              bound_mpi=host_mpi, **version)
