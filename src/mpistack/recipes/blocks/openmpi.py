"""The openmpi building block."""

from __future__ import annotations

from ...registry import BLOCKS
from .base import Block, Step, fetch_context, render_lines, tristate


@BLOCKS.register("openmpi", order=70, applies=lambda stack: stack.mode == "source" and stack.mpi.impl == "openmpi")
class OpenmpiBlock(Block):
    name = "openmpi"

    def configure_args(self) -> list[str]:
        stack, mpi = self.stack, self.stack.mpi
        args = [f"--prefix={mpi.prefix}"]
        ofi = mpi.libfabric if mpi.libfabric is not None else (stack.libfabric.prefix if stack.libfabric else None)
        ucx = mpi.ucx if mpi.ucx is not None else (stack.ucx.prefix if stack.ucx else None)
        pmix = mpi.pmix if mpi.pmix is not None else (stack.pmix.prefix if stack.pmix else None)
        xp = mpi.xpmem if mpi.xpmem is not None else (stack.xpmem.prefix if stack.xpmem else None)
        args += tristate("ofi", ofi) + tristate("ucx", ucx) + tristate("pmix", pmix) + tristate("xpmem", xp)
        cuda = mpi.cuda if mpi.cuda is not None else (True if stack.gpu.kind == "cuda" else None)
        args += tristate("cuda", self.gpu_path(cuda))
        if cuda:
            args.append(f"--with-cuda-libdir={stack.gpu.prefix}/lib64/stubs")
        rocm = mpi.rocm if mpi.rocm is not None else (True if stack.gpu.kind == "rocm" else None)
        args += tristate("rocm", self.gpu_path(rocm))
        if stack.gdrcopy:
            args.append(f"--with-gdrcopy={stack.gdrcopy.prefix}")
        args.append("--enable-mpi-fortran" if mpi.fortran else "--disable-mpi-fortran")
        if mpi.cxx and mpi.version.startswith(("3.", "4.")):
            args.append("--enable-mpi-cxx")
        if mpi.version.startswith("5"):
            args.append("--enable-oshmem")
        return args + mpi.configure

    def step(self) -> Step:
        mpi = self.stack.mpi
        pin = self.pin("openmpi", mpi.version, "mpi.version")
        lines = render_lines("autotools.sh.j2", prefix=mpi.prefix, autogen=False, pre=[],
                             configure_cmd="./configure", configure=self.configure_args(), stage=self.stage,
                             **fetch_context(pin, "/tmp/src/openmpi"))
        pkgs = ["libevent-dev", "libhwloc-dev", "zlib1g-dev", "perl"] + (["gfortran"] if mpi.fortran else [])
        return Step("mpi", f"Open MPI {mpi.version}", commands=lines, pin=pin, build_packages=pkgs,
                    # mpirun will not start without an rsh agent, even for ranks on its own node (Debian's
                    # openmpi-bin depends on openssh-client for the same reason)
                    runtime_packages=["libevent-2.1-7", "libevent-pthreads-2.1-7", "libhwloc15", "openssh-client"],
                    copies=[mpi.prefix] if self.stage else [])
