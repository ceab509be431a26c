"""What every building block shares: the Step it returns, the Block base class, Jinja2 templates and
tri-state options. Building blocks: one per component, one per file. Each turns the stack spec into shell commands (the body of one
Containerfile RUN step, or lines of an Apptainer %post), plus the packages, environment and files it
needs. Every value placed in shell is quoted (the ``shell`` filter, see ..escaping); every download is checked
against the sha256 pinned in versions.toml before it is unpacked.

Tri-state options follow HPC Container Maker: True -> --with-X, "/path" -> --with-X=/path,
False -> --without-X, None -> not mentioned (the component's own default).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import jinja2

from ...spec.stack import Stack, Tristate
from ...spec.pins import Pinned
from ..escaping import FILTERS
from ..sources import SOURCES_MOUNT, resolve

STAGE = "/opt/mpistack/stage"

BUILD_BASE = ["build-essential", "ca-certificates", "curl", "pkg-config", "file"]
#: distro builds only compile mpistack-bench
DISTRO_BASE = ["ca-certificates", "gcc", "libc6-dev", "make"]
AUTOTOOLS = ["autoconf", "automake", "libtool"]


@lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.PackageLoader("mpistack.recipes", "templates"),
                             undefined=jinja2.StrictUndefined,
                             keep_trailing_newline=False, trim_blocks=False, autoescape=False)
    env.filters.update(FILTERS)
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
    # build secrets the RUN may mount, (id, path in the build): mounted only when the build supplies them
    secrets: list[tuple[str, str]] = field(default_factory=list)
    # a layer stacks share (a distribution package): placed right after the build tools, before the packages
    # of the other blocks, which differ between stacks, so that every stack on the base reuses it
    shared_layer: bool = False
    # further downloads of the step besides ``pin`` (libcxi's headers)
    extra_pins: list[Pinned] = field(default_factory=list)

    @property
    def sources(self) -> list[Pinned]:
        """Every download of the step, each said in the Containerfile with its origin and checksum."""
        return ([self.pin] if self.pin else []) + self.extra_pins

    @property
    def mirrored(self) -> bool:
        """Whether a download comes from a mirror directory (mounted into the step's RUN)."""
        return any(pin.local_path for pin in self.sources)


def fetch_context(pin: Pinned, dir: str) -> dict:
    # a mirror directory's file is mounted into the build (SOURCES_MOUNT) instead of downloaded
    local = f"{SOURCES_MOUNT}/{pin.filename}" if pin.local_path else ""
    return {"url": pin.url, "sha256": pin.sha256, "file": pin.filename, "dir": dir, "local": local,
            "origin": pin.local_path or pin.url, "component": pin.component, "version": pin.version}


def fetch_lines(pin: Pinned, dir: str = "/tmp/src") -> list[str]:
    """The rendered download + verify + unpack step alone (used by tests to run the real thing)."""
    return render_lines("fetch.sh.j2", **fetch_context(pin, dir))


def has_no_configure(pin: Pinned) -> bool:
    """Whether the tarball is a git tree without a generated configure script (./autogen.sh makes it): Debian's
    orig tarball of UCX, unlike UCX's release tarballs."""
    return pin.component == "ucx" and pin.filename.endswith(".orig.tar.xz")


class Block:
    """Base class: subclasses set ``name`` and implement ``step``; an autotools component also has
    ``configure_args()`` (what the host build script renders too, recipes.host_script)."""

    name = ""
    configure_command = "./configure"

    def __init__(self, stack: Stack, versions_path: Path | None = None):
        self.stack = stack
        self.versions_path = versions_path

    @property
    def stage(self) -> str:
        # source builds are development images (applications are built on top of them, as at CSCS):
        # single stage. Distro builds copy selected paths into a slim final stage instead.
        return ""

    def pin(self, component: str, version: str, field_name: str) -> Pinned:
        """The pinned file of a release, from the first of the stack's mirrors that holds one (..sources)."""
        return resolve(self.stack, component, version, field=field_name, versions_path=self.versions_path)

    def gpu_path(self, value: Tristate) -> Tristate:
        """A component's cuda/rocm option: True means the stack's GPU toolkit prefix."""
        if value is True and self.stack.gpu.prefix:
            return self.stack.gpu.prefix
        return value

    def before_autogen(self) -> list[str]:
        """Shell commands a tarball without a configure script needs before ./autogen.sh (has_no_configure)."""
        return []

    def step(self) -> Step:  # pragma: no cover - abstract
        raise NotImplementedError




def built_from_source(component: str):
    """`applies` for a component block: the stack builds from source and names the component."""
    return lambda stack: stack.mode == "source" and getattr(stack, component) is not None
