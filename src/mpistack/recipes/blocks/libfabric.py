"""The libfabric building block."""

from __future__ import annotations

from ...registry import BLOCKS
from ...spec.stack import APT_LIBFABRIC_PACKAGES
from ..escaping import shell
from .base import Block, Step, fetch_context, render_lines, tristate, built_from_source


@BLOCKS.register("libfabric", order=40, applies=built_from_source("libfabric"))
class LibfabricBlock(Block):
    name = "libfabric"

    def configure_args(self) -> list[str]:
        comp = self.stack.libfabric
        assert comp is not None
        args = [f"--prefix={comp.prefix}"]
        for provider in comp.providers:
            if provider == "cxi":
                cxi = self.stack.libcxi
                cxi_prefix = cxi.prefix if cxi else "/usr"
                args += [f"--enable-cxi={cxi_prefix}", f"--with-cassini-headers={cxi_prefix}/include",
                         f"--with-cxi-uapi-headers={cxi_prefix}/include", "--with-json-c=/usr", "--with-curl=/usr"]
            elif provider == "xpmem":
                xp = self.stack.xpmem
                args.append(f"--enable-xpmem={xp.prefix if xp else '/usr'}")
            else:
                args.append(f"--enable-{provider}")
        args += [f"--disable-{p}" for p in comp.disable]
        args += tristate("cuda", self.gpu_path(comp.cuda))
        args += tristate("rocr", self.gpu_path(comp.rocm))
        gdr = comp.gdrcopy
        if gdr is True and self.stack.gdrcopy:
            gdr = self.stack.gdrcopy.prefix
        args += tristate("gdrcopy", gdr)
        return args + comp.configure

    def step(self) -> Step:
        comp = self.stack.libfabric
        assert comp is not None
        if comp.channel == "apt":
            return self.apt_step()
        pin = self.pin("libfabric", comp.version, "libfabric.version")
        lines = render_lines("autotools.sh.j2", prefix=comp.prefix, autogen=False, pre=[],
                             configure_cmd="./configure", configure=self.configure_args(), stage=self.stage,
                             **fetch_context(pin, "/tmp/src/libfabric"))
        extra = ["libjson-c-dev", "libcurl4-openssl-dev"] if "cxi" in comp.providers else []
        runtime = ["libjson-c5", "libcurl4"] if "cxi" in comp.providers else []
        return Step("libfabric", f"libfabric {comp.version}" + (f" (providers: {', '.join(comp.providers)})"
                                                                if comp.providers else ""),
                    commands=lines, pin=pin, build_packages=extra, runtime_packages=runtime,
                    copies=[comp.prefix] if self.stage else [])

    def apt_step(self) -> Step:
        """The distribution's libfabric-dev, checked to be the version the stack names (pkg-config's
        --modversion: a different release in the archive stops the build rather than mislabel the image)."""
        comp = self.stack.libfabric
        assert comp is not None
        packages = " ".join(shell(p) for p in APT_LIBFABRIC_PACKAGES)
        found = "$(pkg-config --modversion libfabric)"
        mismatch = shell(f"mpistack: the distribution's libfabric-dev is not libfabric {comp.version} "
                         "(libfabric.channel = 'apt' installs the archive's release): found ")
        commands = ["apt-get update",
                    f"apt-get install -y --no-install-recommends {packages}",
                    "rm -rf /var/lib/apt/lists/*",
                    f'test "{found}" = {shell(comp.version)} || {{ echo {mismatch}"{found}" >&2; exit 1; }}']
        return Step("libfabric", f"libfabric {comp.version} from the distribution (libfabric-dev; not built)",
                    commands=commands, runtime_packages=["libfabric1"], shared_layer=True)
