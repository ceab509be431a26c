"""The libcxi building block."""

from __future__ import annotations

from ...registry import BLOCKS
from .base import AUTOTOOLS, Block, Step, fetch_context, render_lines, tristate, built_from_source


@BLOCKS.register("libcxi", order=30, applies=built_from_source("libcxi"))
class LibcxiBlock(Block):
    """cassini-headers + cxi-driver (uapi headers) + libcxi: the open-source Slingshot user space."""

    name = "libcxi"

    def step(self) -> Step:
        comp = self.stack.libcxi
        assert comp is not None
        cassini = comp.cassini_headers or comp.version
        driver = comp.cxi_driver or comp.version
        p_cassini = self.pin("cassini-headers", cassini, "libcxi.cassini_headers")
        p_driver = self.pin("cxi-driver", driver, "libcxi.cxi_driver")
        p_cxi = self.pin("libcxi", comp.version, "libcxi.version")
        lines = render_lines("headers.sh.j2", prefix=comp.prefix, share=True,
                             **fetch_context(p_cassini, "/tmp/src/cassini-headers"))
        lines += render_lines("headers.sh.j2", prefix=comp.prefix, share=False,
                              **fetch_context(p_driver, "/tmp/src/cxi-driver"))
        configure = [f"--prefix={comp.prefix}", "--without-ze",
                     *tristate("cuda", self.gpu_path(True if self.stack.gpu.kind == "cuda" else False)),
                     *tristate("rocm", self.gpu_path(True if self.stack.gpu.kind == "rocm" else False)),
                     f"CFLAGS=-I{comp.prefix}/include", *comp.configure]
        lines += render_lines("autotools.sh.j2", prefix=comp.prefix, autogen=True, pre=[],
                              configure_cmd="./configure", configure=configure, stage=self.stage,
                              **fetch_context(p_cxi, "/tmp/src/libcxi"))
        return Step("libcxi", f"libcxi {comp.version} with cassini-headers {cassini} and cxi-driver {driver} headers",
                    commands=lines, pin=p_cxi, extra_pins=[p_cassini, p_driver],
                    build_packages=AUTOTOOLS + ["libconfig-dev", "libuv1-dev", "libfuse-dev", "libyaml-dev",
                                                "libnl-3-dev", "libnl-genl-3-dev", "libnuma-dev", "libsensors-dev"],
                    runtime_packages=["libconfig9", "libuv1", "libfuse2", "libyaml-0-2", "libnl-3-200",
                                      "libnl-genl-3-200", "libnuma1", "libsensors5"])
