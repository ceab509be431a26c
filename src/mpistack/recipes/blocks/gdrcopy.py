"""The gdrcopy building block."""

from __future__ import annotations

from ...registry import BLOCKS
from .base import Block, Step, fetch_context, render_lines, built_from_source


@BLOCKS.register("gdrcopy", order=20, applies=built_from_source("gdrcopy"))
class GdrcopyBlock(Block):
    name = "gdrcopy"

    def step(self) -> Step:
        comp = self.stack.gdrcopy
        assert comp is not None
        pin = self.pin("gdrcopy", comp.version, "gdrcopy.version")
        lines = render_lines("gdrcopy.sh.j2", prefix=comp.prefix, cuda=self.stack.gpu.prefix or "/usr/local/cuda",
                             **fetch_context(pin, "/tmp/src/gdrcopy"))
        return Step("gdrcopy", f"GDRCopy {comp.version} (library; the gdrdrv module is the host's)",
                    commands=lines, pin=pin)
