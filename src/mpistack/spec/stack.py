"""Stack specification: base image, MPI, transport libraries, GPU, benchmarks.

A stack is written in TOML (see src/mpistack/data/catalogue/*.toml) and validated by the pydantic models
below. Errors name the file, the field and what was expected:

    debian-mpich.toml: mpi.device: expected one of 'ch4:ofi', 'ch4:ucx', 'ch3:nemesis' (got 'ch5')
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Literal, Union

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator, model_validator

from .mpi_family import FAMILIES
from .toml_files import load_model, read_text

#: tri-state option: True -> --with-X, "/path" -> --with-X=/path, False -> --without-X, None -> not mentioned
Tristate = Union[bool, str, None]

VERSION_RE = re.compile(r"^\d+(\.\d+){0,3}([.-]?(post|rc|a|b)\d*)?$")

# Every value of a stack file ends up in a generated file (Containerfile, Apptainer definition, shell, labels)
# or in a file name, so each field has a pattern or is at least one line of printable text of bounded length.

#: control characters (C0, DEL, C1) and the Unicode line and paragraph separators: each can end a line of a
#: generated file, and a new line there can start a new instruction or section
CONTROL_RE = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
#: stack names become image names, directory and file names (a file name has at most 255 bytes)
NAME_MAX = 100
TEXT_MAX = 1000
PATH_MAX = 1024
#: the OCI distribution specification's tag grammar: https://github.com/opencontainers/distribution-spec
TAG_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")
NAME_RE = re.compile(r"[a-z0-9][a-z0-9._-]*")
IMAGE_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/:@-]*")
IMAGE_MAX = 255
#: absolute paths without blanks, quotes or shell syntax (they are also configure --prefix values)
PATH_RE = re.compile(r"/[A-Za-z0-9._+@~/-]*")
#: POSIX environment variable names (Shell and Utilities, 8.1 Environment Variable Definition)
ENV_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
ENV_NAME_MAX = 128
#: Debian package names (Debian Policy 5.6.7), optionally with an architecture, =version or /release
PACKAGE_RE = re.compile(r"[a-z0-9][a-z0-9+.-]*(:[a-z0-9-]+)?([=/][A-Za-z0-9.+~:_-]+)?")
#: a command name or path (the image's MPI launcher)
COMMAND_RE = re.compile(r"[A-Za-z0-9_./+-]+")


def check_text(value: str, limit: int = TEXT_MAX) -> str:
    """One line of printable text: no control characters (new line, carriage return, NUL, ...)."""
    match = CONTROL_RE.search(value)
    if match:
        raise ValueError(f"expected one line of printable text: control character {match.group()!r} at "
                         f"position {match.start()}")
    if len(value) > limit:
        raise ValueError(f"expected at most {limit} characters ({len(value)} characters)")
    return value


def check_pattern(value: str, pattern: re.Pattern, what: str, limit: int) -> str:
    if len(value) > limit:
        raise ValueError(f"expected at most {limit} characters, {what} ({len(value)} characters)")
    if not pattern.fullmatch(value):
        raise ValueError(f"expected {what}")
    return value


def _pattern(pattern: re.Pattern, what: str, limit: int) -> AfterValidator:
    return AfterValidator(lambda value: check_pattern(value, pattern, what, limit))


def check_argument(value: str) -> str:
    """A configure argument: one line of text that a Containerfile RUN line can hold."""
    if "<<" in check_text(value):
        # BuildKit reads `<<WORD` in a RUN line as a here-document, even inside shell quotes (Dockerfile
        # reference, "Here-Documents": https://docs.docker.com/reference/dockerfile/#here-documents)
        raise ValueError("'<<' is not allowed: a Containerfile RUN line would read it as a here-document")
    return value


Text = Annotated[str, AfterValidator(check_text)]
Argument = Annotated[str, AfterValidator(check_argument)]
StackName = Annotated[str, _pattern(NAME_RE, "a stack name: lower-case letters, digits, '.', '_' and '-', "
                                             "starting with a letter or a digit", NAME_MAX)]
ImageRef = Annotated[str, _pattern(IMAGE_RE, "an image reference such as docker.io/ubuntu:24.04", IMAGE_MAX)]
AbsPath = Annotated[str, _pattern(PATH_RE, "an absolute path of letters, digits and ._+@~/-", PATH_MAX)]
ImageTag = Annotated[str, _pattern(TAG_RE, "an image tag: letters, digits, '_', '.' and '-', not starting with "
                                           "'.' or '-'", 128)]
Package = Annotated[str, _pattern(PACKAGE_RE, "a Debian package name such as libnuma-dev", 200)]
Command = Annotated[str, _pattern(COMMAND_RE, "a command name or path such as mpiexec.hydra", PATH_MAX)]
Identifier = Annotated[str, _pattern(re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*"),
                                     "a name of letters, digits, '.', '_' and '-'", 64)]


#: Debian's names for each MPI's compiler wrapper and launcher (spec/mpi_family.py)
APT_MPI_COMMANDS = {name: (family.compiler, family.launcher) for name, family in FAMILIES.items()}
#: where MPI wheels from PyPI are installed in an image
PIP_MPI_PREFIX = "/opt/mpi"


class StackError(ValueError):
    """An invalid stack file or an impossible request; the message names the file and the field."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=False)


def _check_path(value: Tristate) -> Tristate:
    if isinstance(value, str) and not (len(value) <= PATH_MAX and PATH_RE.fullmatch(value)):
        raise ValueError("expected true, false or an absolute path of letters, digits and ._+@~/-")
    return value


def is_release_version(value: str) -> bool:
    """A release version such as 4.3.1, as stack files and versions.toml name them."""
    # fullmatch: `$` alone would also accept a trailing new line
    return len(value) <= 32 and VERSION_RE.fullmatch(value) is not None


def _check_version(value: str) -> str:
    if not is_release_version(value):
        raise ValueError(f"expected a release version such as 4.3.1 (got {value!r})")
    return value


class Component(_Model):
    version: str
    prefix: AbsPath = "/usr"
    configure: list[Argument] = Field(default_factory=list, description="extra configure arguments, appended")

    @field_validator("version")
    @classmethod
    def _version(cls, v: str) -> str:
        return _check_version(v)


class Base(_Model):
    image: ImageRef = Field(description="FROM image, e.g. docker.io/ubuntu:24.04 or localhost/debian:bookworm")
    make: ImageRef | None = Field(None, description="made locally by `mpistack base NAME` (e.g. debian:bookworm)")
    runtime_image: ImageRef | None = Field(None, description="final stage image of a multi-stage build "
                                                             "(default: image)")
    packages: list[Package] = Field(default_factory=list, description="extra apt packages for the build stage")


class Gpu(_Model):
    kind: Literal["none", "cuda", "rocm"] = "none"
    version: str | None = None
    prefix: AbsPath | None = None
    #: CUDA target directory name under targets/ (x86_64-linux, sbsa-linux) for the driver stubs
    target: Identifier = "x86_64-linux"

    @field_validator("version")
    @classmethod
    def _version(cls, v: str | None) -> str | None:
        return None if v is None else _check_version(v)

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
    launcher: Command | None = None

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


#: Debian's libfabric development package, and the -dev packages of the libraries its libfabric.so links to
#: (Debian's libfabric lists -lpsm_infinipath -lpsm2 -lrdmacm for linking): an MPI built against it links
#: only with all of them installed
APT_LIBFABRIC_PACKAGES = ("libfabric-dev", "libpsm-infinipath1-dev", "libpsm2-dev", "librdmacm-dev")


class Libfabric(Component):
    #: "source": built from its release tarball; "apt": the distribution's libfabric-dev of this version, as
    #: centres that build MPI against the system's libfabric do (nothing is compiled)
    channel: Literal["source", "apt"] = "source"
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

    @model_validator(mode="after")
    def _apt_builds_nothing(self) -> "Libfabric":
        if self.channel == "apt":
            # the package is what it is: build options would be silently ignored
            chosen = [name for name in ("providers", "disable", "configure") if getattr(self, name)]
            chosen += [name for name in ("cuda", "rocm", "gdrcopy", "xpmem") if getattr(self, name) is not None]
            if chosen:
                raise ValueError(f"channel 'apt' installs the distribution's libfabric as it is built: remove "
                                 f"{', '.join(chosen)} (build options of channel 'source')")
            if self.prefix != "/usr":
                raise ValueError(f"channel 'apt' installs libfabric under /usr: remove prefix (got {self.prefix!r})")
        return self


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

    @field_validator("cassini_headers", "cxi_driver")
    @classmethod
    def _versions(cls, v: str | None) -> str | None:
        return None if v is None else _check_version(v)


class Pmix(Component):
    pass


#: the mirror names a stack or the user's mirrors.toml may list, beside absolute directory paths
MIRROR_NAMES = ("upstream", "debian")


def check_mirror(value: str) -> str:
    """A source mirror: "upstream" (each component's own URL), "debian" (the Debian archive's orig tarball)
    or an absolute path of a directory holding release tarballs."""
    if value in MIRROR_NAMES:
        return value
    if len(value) <= PATH_MAX and PATH_RE.fullmatch(value):
        return value
    raise ValueError(f"expected 'upstream', 'debian' or a directory's absolute path of letters, digits and "
                     f"._+@~/- (got {value[:100]!r})")


Mirror = Annotated[str, AfterValidator(check_mirror)]


class Sources(_Model):
    #: where release tarballs come from, tried in this order (after the user's mirrors.toml) for each
    #: component; each component's upstream URL comes last unless "upstream" is listed
    mirrors: list[Mirror] = Field(default_factory=list)


class Benchmarks(_Model):
    #: mpistack-bench from this repository's bench/ is always built
    mpistack_bench: Literal[True] = True
    osu: str | None = Field(None, description="OSU micro-benchmarks version, e.g. 7.5.1")
    osu_configure: list[Argument] = Field(default_factory=list)

    @field_validator("osu")
    @classmethod
    def _osu(cls, v: str | None) -> str | None:
        return None if v is None else _check_version(v)


class Stack(_Model):
    name: StackName
    description: Text = ""
    #: where this stack comes from (a public guide, a site's own)
    origin: Text = ""
    mode: Literal["source", "distro"] = "source"
    #: image tag; derived from the versions when absent (CSCS style: mpich4.3.1-ofi1.22-cuda12.8)
    tag: ImageTag | None = None
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
    #: source mirrors of this stack (None: the user's, then upstream)
    sources: Sources | None = None
    env: dict[str, str] = Field(default_factory=dict, description="ENV baked into the image")
    #: the file it was loaded from (not part of the TOML)
    path: str | None = Field(None, exclude=True)

    @field_validator("env")
    @classmethod
    def _env(cls, env: dict[str, str]) -> dict[str, str]:
        # checked here rather than by a key type, so that an error names the key without printing it as
        # part of the field's location
        for key, value in env.items():
            if len(key) > ENV_NAME_MAX or not ENV_NAME_RE.fullmatch(key):
                raise ValueError(f"key {key[:60]!r}: expected an environment variable name (letters, digits "
                                 f"and '_', not starting with a digit, at most {ENV_NAME_MAX} characters)")
            try:
                check_text(value, PATH_MAX * 4)
            except ValueError as error:
                raise ValueError(f"{key}: {error}") from None
        return env

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
