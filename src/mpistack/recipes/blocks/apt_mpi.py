"""The apt-mpi building block."""

from __future__ import annotations

from ...registry import BLOCKS
from .base import Block, Step


APT_MPI = {
    # impl: (build packages, runtime packages)
    "mpich": (["mpich", "libmpich-dev"], ["mpich"]),
    "openmpi": (["openmpi-bin", "libopenmpi-dev"], ["openmpi-bin"]),
}


@BLOCKS.register("apt-mpi", order=70, applies=lambda stack: stack.mode != "source" and stack.mpi.channel != "pip")
class AptMpiBlock(Block):
    name = "apt-mpi"

    def step(self) -> Step:
        mpi = self.stack.mpi
        build, runtime = APT_MPI[mpi.impl]
        return Step("mpi", f"{mpi.impl} {mpi.version} from the distribution ({mpi.netmod})",
                    build_packages=build, runtime_packages=runtime)
