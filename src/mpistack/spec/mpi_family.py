"""What mpistack knows of each MPI family, in one place: Debian's command names (both MPIs install side by
side, so each wrapper and launcher carries its family's suffix), the library's ABI name, and the
process-management interface its ranks wire up through when srun or another launcher starts them, and whether
its network layer is fixed when the library is built."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class MpiFamily:
    name: str
    compiler: str  # Debian's compiler wrapper
    launcher: str  # Debian's launcher
    soname: str  # the library's ABI, as messages name it
    wire_up: str  # srun --mpi=...: pmi2 (MPICH's PMI-2), pmix (Open MPI is a PMIx client)
    #: MPICH's ch4 device has one netmod, chosen at configure time (ch4:ucx never loads libfabric); Open MPI
    #: builds its transports as components chosen at run time (Debian's 4.1.4 has pml ucx beside the ofi MTL
    #: and BTL, which load libfabric.so.1), so its device names only what it prefers
    netmod_fixed: bool


FAMILIES = {
    "mpich": MpiFamily("mpich", "mpicc.mpich", "mpiexec.mpich", "libmpi.so.12 (MPICH ABI)", "pmi2", True),
    "openmpi": MpiFamily("openmpi", "mpicc.openmpi", "mpirun.openmpi", "libmpi.so.40 (Open MPI)", "pmix", False),
}
