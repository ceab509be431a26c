"""The osu building block."""

from __future__ import annotations

from ...registry import BLOCKS
from ..escaping import shell
from .base import Block, Step, fetch_context, render_lines


@BLOCKS.register("osu", order=80, applies=lambda stack: bool(stack.benchmarks.osu))
class OsuBlock(Block):
    name = "osu"

    def configure_args(self) -> list[str]:
        stack = self.stack
        mpicc = stack.mpicc
        mpicxx = mpicc.replace("mpicc", "mpicxx")
        configure = ["--prefix=/usr/local", f"CC={mpicc}", f"CXX={mpicxx}"]
        if stack.gpu.kind == "cuda":
            cuda = stack.gpu.prefix
            configure += ["--enable-cuda", f"--with-cuda-include={cuda}/include", f"--with-cuda-libpath={cuda}/lib64",
                          "CFLAGS=-O3 -lcuda -lnvidia-ml", "CXXFLAGS=-lmpi -lcuda"]
        elif stack.gpu.kind == "rocm":
            configure += ["--enable-rocm", f"--with-rocm={stack.gpu.prefix}", "CFLAGS=-O3"]
        else:
            configure.append("CFLAGS=-O3")
        return configure + stack.benchmarks.osu_configure

    def step(self) -> Step:
        stack = self.stack
        version = stack.benchmarks.osu
        assert version
        pin = self.pin("osu", version, "benchmarks.osu")
        pre: list[str] = []
        if stack.gpu.kind == "cuda":
            pre.append(f"ldconfig {shell(f'{stack.gpu.prefix}/targets/{stack.gpu.target}/lib/stubs')}")
        lines = render_lines("autotools.sh.j2", prefix="/usr/local", autogen=False, pre=pre,
                             configure_cmd="./configure", configure=self.configure_args(), stage=self.stage,
                             **fetch_context(pin, "/tmp/src/osu"))
        return Step("osu", f"OSU micro-benchmarks {version}", commands=lines, pin=pin,
                    copies=["/usr/local/libexec/osu-micro-benchmarks"])
