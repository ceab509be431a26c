"""The xpmem building block."""

from __future__ import annotations

from ...registry import BLOCKS
from .base import Block, Step, fetch_context, render_lines, built_from_source


@BLOCKS.register("xpmem", order=10, applies=built_from_source("xpmem"))
class XpmemBlock(Block):
    name = "xpmem"

    def step(self) -> Step:
        comp = self.stack.xpmem
        assert comp is not None
        pin = self.pin("xpmem", comp.version, "xpmem.version")
        lines = render_lines("xpmem.sh.j2", prefix=comp.prefix, **fetch_context(pin, "/tmp/src/xpmem"))
        return Step("xpmem", f"xpmem {comp.version}: user-space library only (the kernel module is the host's)",
                    commands=lines, pin=pin, copies=[f"{comp.prefix}/lib/libxpmem.so.0"] if self.stage else [])
