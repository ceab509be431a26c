"""The mpistack-bench building block."""

from __future__ import annotations

from ...registry import BLOCKS
from .base import Block, Step, render_lines


@BLOCKS.register("mpistack-bench", order=90, applies=lambda stack: True)
class MpistackBenchBlock(Block):
    name = "mpistack-bench"

    def step(self) -> Step:
        make_vars: dict[str, str] = {}
        if self.stack.gpu.kind == "cuda":
            make_vars["CUDA"] = self.stack.gpu.prefix or "/usr/local/cuda"
        elif self.stack.gpu.kind == "rocm":
            make_vars["ROCM"] = self.stack.gpu.prefix or "/opt/rocm"
        else:
            make_vars["CUDA"] = ""
        lines = render_lines("bench.sh.j2", mpicc=self.stack.mpicc, make_vars=make_vars,
                             bindir="/usr/local/bin", stage=self.stage)
        return Step("mpistack-bench", "mpistack-bench, compiled from this repository's bench/ sources",
                    before=["COPY bench/ /opt/mpistack/bench-src/"], files=[("bench", "/opt/mpistack/bench-src")],
                    commands=lines, build_packages=["make"], copies=["/usr/local/bin/mpistack-bench"])
