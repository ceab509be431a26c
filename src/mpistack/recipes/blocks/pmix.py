"""The pmix building block."""

from __future__ import annotations

from ...registry import BLOCKS
from .base import Block, Step, fetch_context, render_lines, built_from_source


@BLOCKS.register("pmix", order=60, applies=built_from_source("pmix"))
class PmixBlock(Block):
    name = "pmix"

    def step(self) -> Step:
        comp = self.stack.pmix
        assert comp is not None
        pin = self.pin("pmix", comp.version, "pmix.version")
        configure = [f"--prefix={comp.prefix}", "--with-libevent=/usr", "--with-hwloc=/usr", "--disable-sphinx",
                     *comp.configure]
        lines = render_lines("autotools.sh.j2", prefix=comp.prefix, autogen=False, pre=[],
                             configure_cmd="./configure", configure=configure, stage=self.stage,
                             **fetch_context(pin, "/tmp/src/pmix"))
        return Step("pmix", f"OpenPMIx {comp.version}", commands=lines, pin=pin,
                    build_packages=["libevent-dev", "libhwloc-dev", "zlib1g-dev"],
                    runtime_packages=["libevent-2.1-7", "libevent-pthreads-2.1-7", "libhwloc15", "zlib1g"])
