"""The ucx building block."""

from __future__ import annotations

from ...registry import BLOCKS
from .base import AUTOTOOLS, Block, Step, built_from_source, fetch_context, has_no_configure, render_lines, tristate


@BLOCKS.register("ucx", order=50, applies=built_from_source("ucx"))
class UcxBlock(Block):
    name = "ucx"
    configure_command = "./contrib/configure-release"

    def configure_args(self) -> list[str]:
        comp = self.stack.ucx
        assert comp is not None
        gdr = comp.gdrcopy
        if gdr is True and self.stack.gdrcopy:
            gdr = self.stack.gdrcopy.prefix
        xp = comp.xpmem
        if xp is True and self.stack.xpmem:
            xp = self.stack.xpmem.prefix
        return [f"--prefix={comp.prefix}", "--without-go", "--disable-doxygen-doc", "--enable-mt",
                *tristate("cuda", self.gpu_path(comp.cuda)), *tristate("rocm", self.gpu_path(comp.rocm)),
                *tristate("gdrcopy", gdr), *tristate("xpmem", xp), *comp.configure]

    def before_autogen(self) -> list[str]:
        # UCX's configure.ac links debian/ files, which Debian's orig tarball keeps as debian.upstream/
        return ["test -e debian || ln -s debian.upstream debian"]

    def step(self) -> Step:
        comp = self.stack.ucx
        assert comp is not None
        pin = self.pin("ucx", comp.version, "ucx.version")
        autogen = has_no_configure(pin)
        lines = render_lines("autotools.sh.j2", prefix=comp.prefix, autogen=autogen,
                             pre=self.before_autogen() if autogen else [],
                             configure_cmd=self.configure_command, configure=self.configure_args(),
                             stage=self.stage, **fetch_context(pin, "/tmp/src/ucx"))
        return Step("ucx", f"UCX {comp.version}", commands=lines, pin=pin,
                    build_packages=["libnuma-dev", *(AUTOTOOLS if autogen else [])], runtime_packages=["libnuma1"])
