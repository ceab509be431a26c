"""The mpich building block."""

from __future__ import annotations

from ...registry import BLOCKS
from .base import Block, Step, fetch_context, render_lines, tristate


@BLOCKS.register("mpich", order=70, applies=lambda stack: stack.mode == "source" and stack.mpi.impl == "mpich")
class MpichBlock(Block):
    name = "mpich"

    def configure_args(self) -> list[str]:
        stack, mpi = self.stack, self.stack.mpi
        args = [f"--prefix={mpi.prefix}", "--enable-fast=O3,ndebug",
                "--enable-fortran" if mpi.fortran else "--disable-fortran",
                "--enable-cxx" if mpi.cxx else "--disable-cxx",
                f"--with-device={mpi.device}"]
        ofi = mpi.libfabric
        if ofi is None and mpi.netmod == "ofi":
            ofi = stack.libfabric.prefix if stack.libfabric else None
        ucx = mpi.ucx
        if ucx is None and mpi.netmod == "ucx":
            ucx = stack.ucx.prefix if stack.ucx else None
        xp = mpi.xpmem
        if xp is None and stack.xpmem:
            xp = stack.xpmem.prefix
        args += tristate("libfabric", ofi) + tristate("ucx", ucx) + tristate("xpmem", xp)
        cuda = self.gpu_path(mpi.cuda if mpi.cuda is not None else (True if stack.gpu.kind == "cuda" else None))
        args += tristate("cuda", cuda)
        rocm = mpi.rocm if mpi.rocm is not None else (True if stack.gpu.kind == "rocm" else None)
        args += tristate("hip", self.gpu_path(rocm))
        if stack.gpu.kind == "cuda" and cuda:
            stubs = f"{stack.gpu.prefix}/targets/{stack.gpu.target}/lib/stubs/"
            args += [f"CFLAGS=-L{stubs} -lcuda", f"CXXFLAGS=-L{stubs} -lcuda"]
        return args + mpi.configure

    def step(self) -> Step:
        mpi = self.stack.mpi
        pin = self.pin("mpich", mpi.version, "mpi.version")
        lines = render_lines("autotools.sh.j2", prefix=mpi.prefix, autogen=False, pre=[],
                             configure_cmd="./configure", configure=self.configure_args(), stage=self.stage,
                             **fetch_context(pin, "/tmp/src/mpich"))
        pkgs = ["python3"] + (["gfortran"] if mpi.fortran else [])
        return Step("mpi", f"MPICH {mpi.version} ({mpi.device})", commands=lines, pin=pin, build_packages=pkgs,
                    runtime_packages=["libgfortran5"] if mpi.fortran else [],
                    copies=[mpi.prefix] if self.stage else [])
