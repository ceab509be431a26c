"""Stack specification: base image, MPI, transport libraries, GPU, benchmarks.

A stack is written in TOML (see src/mpistack/data/catalogue/*.toml) and validated by the pydantic models
below. Errors name the file, the field and what was expected:

    debian-mpich.toml: mpi.device: expected one of 'ch4:ofi', 'ch4:ucx', 'ch3:nemesis' (got 'ch5')
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from .toml_files import load_model, read_text

#: tri-state option: True -> --with-X, "/path" -> --with-X=/path, False -> --without-X, None -> not mentioned
Tristate = Union[bool, str, None]

VERSION_RE = re.compile(r"^\d+(\.\d+){0,3}([.-]?(post|rc|a|b)\d*)?$")


#: Debian's names for each MPI's compiler wrapper and launcher (both MPIs install side by side)
APT_MPI_COMMANDS = {"mpich": ("mpicc.mpich", "mpiexec.mpich"), "openmpi": ("mpicc.openmpi", "mpirun.openmpi")}
#: where MPI wheels from PyPI are installed in an image
PIP_MPI_PREFIX = "/opt/mpi"


class StackError(ValueError):
    """An invalid stack file or an impossible request; the message names the file and the field."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=False)


def _check_path(value: Tristate) -> Tristate:
    if isinstance(value, str) and not value.startswith("/"):
        raise ValueError(f"expected true, false or an absolute path (got {value!r})")
    return value


def _check_version(value: str) -> str:
    if not VERSION_RE.match(value):
        raise ValueError(f"expected a release version such as 4.3.1 (got {value!r})")
    return value


class Component(_Model):
    version: str
    prefix: str = "/usr"
    configure: list[str] = Field(default_factory=list, description="extra configure arguments, appended")

    @field_validator("version")
    @classmethod
    def _version(cls, v: str) -> str:
        return _check_version(v)

    @field_validator("prefix")
    @classmethod
    def _prefix(cls, v: str) -> str:
        if not v.startswith("/"):
            raise ValueError(f"expected an absolute path (got {v!r})")
        return v


class Base(_Model):
    image: str = Field(description="FROM image, e.g. docker.io/ubuntu:24.04 or localhost/debian:bookworm")
    make: str | None = Field(None, description="made locally by `mpistack base NAME` (e.g. debian:bookworm)")
    runtime_image: str | None = Field(None, description="final stage image of a multi-stage build (default: image)")
    packages: list[str] = Field(default_factory=list, description="extra apt packages for the build stage")

    @field_validator("image")
    @classmethod
    def _image(cls, v: str) -> str:
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._/:@-]*", v):
            raise ValueError(f"expected an image reference such as docker.io/ubuntu:24.04 (got {v!r})")
        return v


class Gpu(_Model):
    kind: Literal["none", "cuda", "rocm"] = "none"
    version: str | None = None
    prefix: str | None = None
    #: CUDA target directory name under targets/ (x86_64-linux, sbsa-linux) for the driver stubs
    target: str = "x86_64-linux"

    @model_validator(mode="after")
    def _defaults(self) -> "Gpu":
        if self.kind == "cuda" and self.prefix is None:
            self.prefix = "/usr/local/cuda"
        if self.kind == "rocm" and self.prefix is None:
            self.prefix = "/opt/rocm"
        return self


class Mpi(Component):
    impl: Literal["mpich", "openmpi"]
    device: Literal["ch4:ofi", "ch4:ucx", "ch3:nemesis", "ofi", "ucx"] = "ch4:ofi"
    fortran: bool = False
    cxx: bool = False
    #: where it comes from in distro mode: Debian/Ubuntu packages or PyPI wheels
    channel: Literal["source", "apt", "pip"] = "source"
    cuda: Tristate = None
    rocm: Tristate = None
    xpmem: Tristate = None
    libfabric: Tristate = None
    ucx: Tristate = None
    pmix: Tristate = None
    #: launcher inside the image; derived when not given
    launcher: str | None = None

    _paths = field_validator("cuda", "rocm", "xpmem", "libfabric", "ucx", "pmix")(classmethod(lambda cls, v: _check_path(v)))

    @model_validator(mode="after")
    def _device_matches_impl(self) -> "Mpi":
        if self.impl == "mpich" and self.device in ("ofi", "ucx"):
            raise ValueError(f"mpich device must be ch4:ofi, ch4:ucx or ch3:nemesis (got {self.device!r})")
        if self.impl == "openmpi" and self.device.startswith("ch"):
            # Open MPI has no "device": accept ch4:* spellings as the preferred transport
            self.device = self.device.split(":")[-1]  # type: ignore[assignment]
        return self

    @property
    def netmod(self) -> str:
        return self.device.split(":")[-1]


class Libfabric(Component):
    providers: list[str] = Field(default_factory=list, description="providers to enable; others libfabric default")
    disable: list[str] = Field(default_factory=list, description="providers to disable explicitly")
    cuda: Tristate = None
    rocm: Tristate = None
    gdrcopy: Tristate = None
    xpmem: Tristate = None

    _paths = field_validator("cuda", "rocm", "gdrcopy", "xpmem")(classmethod(lambda cls, v: _check_path(v)))

    @field_validator("providers", "disable")
    @classmethod
    def _providers(cls, v: list[str]) -> list[str]:
        known = {"cxi", "efa", "lnx", "mrail", "opx", "psm2", "psm3", "rxd", "rxm", "shm", "sm2", "sockets", "tcp",
                 "ucx", "udp", "usnic", "verbs", "xpmem", "lpp", "hook_debug", "hook_hmem", "dmabuf_peer_mem"}
        for name in v:
            if name not in known:
                raise ValueError(f"unknown libfabric provider {name!r}: expected one of {', '.join(sorted(known))}")
        return v


class Ucx(Component):
    cuda: Tristate = None
    rocm: Tristate = None
    gdrcopy: Tristate = None
    xpmem: Tristate = None

    _paths = field_validator("cuda", "rocm", "gdrcopy", "xpmem")(classmethod(lambda cls, v: _check_path(v)))


class Xpmem(Component):
    pass


class Gdrcopy(Component):
    pass


class Libcxi(Component):
    #: cassini-headers and cxi-driver (headers only) releases; default: the libcxi version
    cassini_headers: str | None = None
    cxi_driver: str | None = None


class Pmix(Component):
    pass


class Benchmarks(_Model):
    #: mpistack-bench from this repository's bench/ is always built
    mpistack_bench: Literal[True] = True
    osu: str | None = Field(None, description="OSU micro-benchmarks version, e.g. 7.5.1")
    osu_configure: list[str] = Field(default_factory=list)

    @field_validator("osu")
    @classmethod
    def _osu(cls, v: str | None) -> str | None:
        return None if v is None else _check_version(v)


class Stack(_Model):
    name: Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9._-]*$")]
    description: str = ""
    #: where this stack comes from (a public guide, a site's own)
    origin: str = ""
    mode: Literal["source", "distro"] = "source"
    #: image tag; derived from the versions when absent (CSCS style: mpich4.3.1-ofi1.22-cuda12.8)
    tag: str | None = None
    multistage: bool = False
    network: Literal["cxi", "lnx", "tcp", "ucx", "shm", "auto"] = "auto"
    base: Base
    gpu: Gpu = Field(default_factory=Gpu)
    mpi: Mpi
    libfabric: Libfabric | None = None
    ucx: Ucx | None = None
    xpmem: Xpmem | None = None
    gdrcopy: Gdrcopy | None = None
    libcxi: Libcxi | None = None
    pmix: Pmix | None = None
    benchmarks: Benchmarks = Field(default_factory=Benchmarks)
    env: dict[str, str] = Field(default_factory=dict, description="ENV baked into the image")
    #: the file it was loaded from (not part of the TOML)
    path: str | None = Field(None, exclude=True)

    @model_validator(mode="after")
    def _consistent(self) -> "Stack":
        if self.mode == "source" and self.mpi.channel != "source":
            raise ValueError("mode 'source' builds every component from release tarballs: "
                             f"mpi.channel must be 'source' (got {self.mpi.channel!r}); use mode = 'distro'")
        if self.mode == "distro":
            if self.mpi.channel == "source":
                self.mpi.channel = "apt"
            for name in ("libfabric", "ucx", "xpmem", "gdrcopy", "libcxi", "pmix"):
                if getattr(self, name) is not None:
                    raise ValueError(f"{name}: mode 'distro' takes {name} from the distribution or the wheel; "
                                     f"remove the [{name}] table or use mode = 'source'")
        if self.gpu.kind != "cuda":
            for owner in ("mpi", "libfabric", "ucx"):
                comp = getattr(self, owner)
                if comp is not None and comp.cuda not in (None, False):
                    raise ValueError(f"{owner}.cuda: needs gpu.kind = 'cuda' (got gpu.kind = {self.gpu.kind!r})")
        if self.gpu.kind != "rocm":
            for owner in ("mpi", "libfabric", "ucx"):
                comp = getattr(self, owner)
                if comp is not None and comp.rocm not in (None, False):
                    raise ValueError(f"{owner}.rocm: needs gpu.kind = 'rocm' (got gpu.kind = {self.gpu.kind!r})")
        return self

    # -- derived names ------------------------------------------------------------------------------
    def version_tag(self) -> str:
        if self.tag:
            return self.tag
        parts = [f"{self.mpi.impl}{self.mpi.version}"]
        if self.libfabric:
            parts.append("ofi" + ".".join(self.libfabric.version.split(".")[:2]))
        if self.ucx:
            parts.append("ucx" + ".".join(self.ucx.version.split(".")[:2]))
        if self.mode == "distro":
            parts.append(self.mpi.channel if self.mpi.channel == "pip" else self.mpi.netmod)
        if self.libcxi:
            parts.insert(1, "cxi" + self.libcxi.version)
        if self.gpu.kind != "none" and self.gpu.version:
            parts.append(f"{self.gpu.kind}{self.gpu.version}")
        return "-".join(parts)

    def image_ref(self) -> str:
        return f"localhost/mpistack/{self.name}:{self.version_tag()}"

    @property
    def mpicc(self) -> str:
        """The MPI compiler wrapper inside the image."""
        if self.mpi.channel == "apt":
            return APT_MPI_COMMANDS[self.mpi.impl][0]
        if self.mpi.channel == "pip":
            return f"{PIP_MPI_PREFIX}/bin/mpicc"
        return f"{self.mpi.prefix}/bin/mpicc"

    @property
    def launcher(self) -> str:
        """The image's own MPI launcher."""
        if self.mpi.launcher:
            return self.mpi.launcher
        if self.mpi.channel == "apt":
            return APT_MPI_COMMANDS[self.mpi.impl][1]
        return "mpiexec" if self.mpi.impl == "mpich" else "mpirun"

    def components(self) -> list[tuple[str, Component]]:
        out: list[tuple[str, Component]] = []
        for name in ("xpmem", "gdrcopy", "libcxi", "libfabric", "ucx", "pmix"):
            comp = getattr(self, name)
            if comp is not None:
                out.append((name, comp))
        out.append(("mpi", self.mpi))
        return out

    def versions(self) -> dict[str, str]:
        out = {self.mpi.impl: self.mpi.version}
        for name, comp in self.components():
            if name != "mpi":
                out[name] = comp.version
        if self.libcxi:
            out["cassini-headers"] = self.libcxi.cassini_headers or self.libcxi.version
            out["cxi-driver"] = self.libcxi.cxi_driver or self.libcxi.version
        if self.gpu.kind != "none":
            out[self.gpu.kind] = self.gpu.version or "base"
        if self.benchmarks.osu:
            out["osu"] = self.benchmarks.osu
        return out


def load_stack_text(text: str, where: str = "<stack>") -> Stack:
    stack = load_model(Stack, text, where, StackError)
    stack.path = where
    return stack


def load_stack(path: str | Path) -> Stack:
    return load_stack_text(read_text(path, StackError), str(path))
