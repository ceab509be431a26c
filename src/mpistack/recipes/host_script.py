"""A stack's source build as one bash script for a host without a container engine or a network: the same
blocks and configure arguments as its Containerfile, every component installed into one PREFIX given when the
script runs, against the CUDA toolkit named then, from release tarballs in a SOURCES directory, each checked
against its pinned sha256 before it is unpacked (the upstream release or Debian's orig tarball, whichever
the directory holds). Nothing needs root: no ldconfig, the driver stubs found through LIBRARY_PATH.

The stack's install prefixes and CUDA directory are replaced by markers before the blocks render their
arguments; each argument is then written as one shell word in which the markers become "$prefix" and
"$cuda"."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from .. import __version__
from ..spec.pins import Pinned, UnpinnedError, pinned, pinned_debian
from ..spec.stack import Stack
from .blocks import blocks_for, environment
from .escaping import shell
from .render import RecipeError

PREFIX_MARK = "/MPISTACK-HOST-PREFIX"
CUDA_MARK = "/MPISTACK-HOST-CUDA"
_MARKS = {PREFIX_MARK: "prefix", CUDA_MARK: "cuda"}
_MARK_RE = re.compile("|".join(re.escape(mark) for mark in _MARKS))
#: built by the device check itself with `make -C bench` (recipes.blocks.mpistack_bench copies the sources)
_NOT_HERE = {"mpistack-bench"}


@dataclass(frozen=True)
class HostComponent:
    name: str
    version: str
    directory: str             # the unpacked tree, under the script's work directory
    files: list[Pinned]        # the tarballs it accepts, in order of preference
    configure_command: str
    configure: list[str]       # each one shell word, "$prefix" and "$cuda" in place
    before_autogen: list[str]  # for a tarball without a configure script


def shell_word(value: str) -> str:
    """``value`` as one shell word, with the markers turned into "$prefix" and "$cuda"."""
    parts, last = [], 0
    for match in _MARK_RE.finditer(value):
        if match.start() > last:
            parts.append(shell(value[last:match.start()]))
        parts.append(f'"${_MARKS[match.group()]}"')
        last = match.end()
    if last < len(value):
        parts.append(shell(value[last:]))
    return "".join(parts) or "''"


def _marked(stack: Stack) -> Stack:
    """The stack with every install prefix and the CUDA directory replaced by the markers."""
    update: dict = {"mpi": stack.mpi.model_copy(update={"prefix": PREFIX_MARK})}
    for name in ("libfabric", "ucx", "xpmem", "gdrcopy", "pmix"):
        component = getattr(stack, name)
        if component is not None:
            update[name] = component.model_copy(update={"prefix": PREFIX_MARK})
    if stack.gpu.kind == "cuda":
        update["gpu"] = stack.gpu.model_copy(update={"prefix": CUDA_MARK})
    return stack.model_copy(update=update)


def _accepted_files(component: str, version: str, field: str, versions_path: Path | None) -> list[Pinned]:
    """The upstream release tarball, then Debian's orig tarball: each that versions.toml pins."""
    files: list[Pinned] = []
    try:
        files.append(pinned(component, version, field=field, path=versions_path))
    except UnpinnedError:
        pass
    debian = pinned_debian(component, version, path=versions_path)
    if debian:
        files.append(debian)
    if not files:
        pinned(component, version, field=field, path=versions_path)  # raises, naming what is pinned
    return files


def host_components(stack: Stack, versions_path: Path | None = None,
                    extra_files: dict[str, list[Pinned]] | None = None) -> list[HostComponent]:
    """What the script builds, in the blocks' order; RecipeError for a stack it cannot build on a host.
    ``extra_files``: further tarballs a component accepts, preferred to its pinned ones (a tree made here
    from a pinned tarball, with the sha256 of what was made)."""
    if stack.mode != "source":
        raise RecipeError(f"{stack.name}: mode = {stack.mode!r}: a host build script needs a source stack")
    if stack.gpu.kind == "rocm":
        raise RecipeError(f"{stack.name}: gpu.kind = 'rocm': the host build script knows CUDA only")
    marked = _marked(stack)
    components = []
    for block in blocks_for(marked, versions_path):
        if block.name in _NOT_HERE:
            continue
        if not hasattr(block, "configure_args"):
            raise RecipeError(f"{stack.name}: the {block.name} block has no configure arguments to build it on a host")
        version, field = _version_of(marked, block.name)
        try:
            files = _accepted_files(block.name, version, field, versions_path)
        except UnpinnedError as error:
            raise RecipeError(str(error)) from None
        configure = [f"--prefix={PREFIX_MARK}" if arg.startswith("--prefix=") else arg
                     for arg in block.configure_args()]
        files = [*(extra_files or {}).get(block.name, []), *files]
        components.append(HostComponent(block.name, version, block.name, files, block.configure_command,
                                        [shell_word(arg) for arg in configure], block.before_autogen()))
    return components


def _version_of(stack: Stack, block: str) -> tuple[str, str]:
    if block in ("openmpi", "mpich"):
        return stack.mpi.version, "mpi.version"
    if block == "osu":
        return str(stack.benchmarks.osu), "benchmarks.osu"
    return getattr(stack, block).version, f"{block}.version"


def render_host_script(stack: Stack, versions_path: Path | None = None,
                       extra_files: dict[str, list[Pinned]] | None = None) -> str:
    """The bash script: `build.sh SOURCES PREFIX CUDA`."""
    components = host_components(stack, versions_path, extra_files)
    template = environment().get_template("host-build.sh.j2")
    return template.render(stack=stack, components=components, version=__version__,
                           cuda=stack.gpu.kind == "cuda") + "\n"
