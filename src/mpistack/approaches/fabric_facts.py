"""What the fabric-swap approach needs to know about libfabric on both sides, read off the ELF files:

- the host's libfabric (probed once with the other host facts): its file, the libraries it needs, the
  symbol versions it defines (FABRIC_1.x), its version and its directory of provider plug-ins;
- an image's (probed once per image, when a campaign is prepared, and cached by image digest): which file
  its MPI library loads as libfabric.so.1, and the FABRIC_1.x versions that MPI library needs from it. Open MPI
  links libfabric from its plug-ins (mca_mtl_ofi.so, mca_btl_ofi.so, opened at run time), not from
  libmpi.so.40, so where the MPI library itself does not load it, the plug-ins beside it are read instead.

Both sides are read with binutils' readelf on the host: an image need not carry binutils, so its MPI
library is copied out of a container into a scratch directory first.
"""

from __future__ import annotations

import ctypes
import json
import os
import re
import subprocess
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

from ..cache import cache_dir, write_file_atomically
from ..system_tools import system_tool_argv0
from ..compat import LIBFABRIC_SONAME
from ..engines import ContainerRun, Engine, EngineError

# The C library stays the image's own: mounting the host's would replace the loader under running code.
GLIBC = re.compile(r"^(libc|libm|libdl|librt|libpthread|ld-linux[-\w]*|libresolv|libutil)\.so")
_IMAGE_FACTS_FORMAT = 3  # bump when ImageFabric changes, so that older cached facts are probed again


@dataclass(frozen=True)
class HostLibfabric:
    """The host's libfabric as fabric-swap mounts it into a container."""

    path: str  # the real file
    soname: str | None
    version: str | None  # fi_version() as 'major.minor', as mpistack-bench reports it
    defines: tuple[str, ...]  # FABRIC_1.x symbol versions the file defines
    dependencies: tuple[tuple[str, str], ...] = ()  # (host path, name the loader asks for), libc excluded
    providers_dir: str | None = None  # its directory of provider plug-ins (FI_PROVIDER_PATH), when it has one


@dataclass(frozen=True)
class ImageFabric:
    """Which libfabric an image's MPI loads, and what it needs of it; `problem` says why this is unknown."""

    mpi_library: str | None = None  # the file that links libfabric.so.1, e.g. /opt/mpi/lib/libmpi.so.12
    libfabric: str | None = None  # the path the loader resolves libfabric.so.1 to inside the image
    needs: tuple[str, ...] = ()  # FABRIC_1.x versions the MPI library (or its plug-ins) need from libfabric.so.1
    problem: str | None = None


def readelf_versions(path: str) -> tuple[str | None, tuple[str, ...], dict[str, tuple[str, ...]]]:
    """(soname, symbol versions defined, {needed file: versions needed from it}) of one ELF file."""
    dynamic = subprocess.run(["readelf", "-d", "-W", path], capture_output=True, text=True, check=True).stdout
    soname = re.search(r"\(SONAME\)\s+Library soname: \[([^\]]+)\]", dynamic)
    listing = subprocess.run(["readelf", "-V", "-W", path], capture_output=True, text=True, check=True).stdout
    defines: list[str] = []
    needs: dict[str, list[str]] = {}
    section, current = "", ""
    for line in listing.splitlines():
        if line.startswith("Version definition section"):
            section = "d"
        elif line.startswith("Version needs section"):
            section = "r"
        elif line.startswith("Version symbols section"):
            section = ""
        elif section == "d" and (match := re.search(r"Flags: (\S+).*Name: (\S+)", line)):
            if match.group(1) != "BASE":  # the first definition names the file itself
                defines.append(match.group(2))
        elif section == "r" and (match := re.search(r"File: (\S+)", line)):
            current = match.group(1)
            needs.setdefault(current, [])
        elif section == "r" and current and (match := re.search(r"Name: (\S+)", line)):
            needs[current].append(match.group(1))
    return (soname.group(1) if soname else None, tuple(defines),
            {name: tuple(versions) for name, versions in needs.items()})


def ldd_resolved(listing: str) -> dict[str, str]:
    """{name asked for: path the loader resolves it to} of an ldd listing."""
    return dict(re.findall(r"^\s*(\S+) => (/\S+)", listing, re.MULTILINE))


def dependencies(path: str) -> tuple[tuple[str, str], ...]:
    """The libraries `path` needs besides the C library, as (real host path, name asked for)."""
    ldd = subprocess.run(["ldd", path], capture_output=True, text=True).stdout
    return tuple((os.path.realpath(resolved), name) for name, resolved in ldd_resolved(ldd).items()
                 if not GLIBC.match(name))


def find_library(soname: str) -> str | None:
    """Where the dynamic loader finds ``soname`` on the host (ldconfig's cache), or None."""
    try:
        listing = subprocess.run([system_tool_argv0("ldconfig"), "-p"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    match = re.search(rf"^\s*{re.escape(soname)} \([^)]*\) => (\S+)", listing, re.MULTILINE)
    return match.group(1) if match else None


def call_version_function(path: str, name: str, restype):
    """What the library file's version function `name` (no arguments) returns, or None where the file does not
    load or has no such function."""
    try:
        function = getattr(ctypes.CDLL(path), name)
    except (OSError, AttributeError):
        return None
    function.restype = restype
    return function()


def fi_version(path: str) -> str | None:
    """fi_version() of the library file: FI_VERSION(major, minor) = major << 16 | minor (fi_version(3))."""
    version = call_version_function(path, "fi_version", ctypes.c_uint32)
    return None if version is None else f"{version >> 16}.{version & 0xFFFF}"


def host_libfabric(path: str) -> HostLibfabric:
    """The facts of one libfabric file on the host (the system's, or one a test or a user names)."""
    real = os.path.realpath(path)
    soname, defines, _ = readelf_versions(real)
    providers = Path(real).parent / "libfabric"  # where libfabric's build puts its DL providers (libdir/libfabric)
    return HostLibfabric(path=real, soname=soname, version=fi_version(real),
                         defines=tuple(name for name in defines if name.startswith("FABRIC_")),
                         dependencies=dependencies(real),
                         providers_dir=str(providers) if providers.is_dir() else None)


def probe_host_libfabric() -> HostLibfabric | None:
    """The system's libfabric.so.1 as the dynamic loader finds it (ldconfig's cache); None without one or
    without readelf."""
    path = find_library(LIBFABRIC_SONAME)
    if path is None:
        return None
    try:
        return host_libfabric(path)
    except (OSError, subprocess.CalledProcessError):
        return None


def _ldd_in_image(engine: Engine, image: str, program: str) -> dict[str, str]:
    run = engine.run(ContainerRun(image=image, argv=["sh", "-c", 'ldd "$(command -v "$1")"', "sh", program]),
                     timeout=120)
    if run.returncode != 0:
        raise EngineError(f"ldd of {program} in {image} failed ({run.returncode}): {run.stderr.strip()[-500:]}")
    return ldd_resolved(run.stdout)


def _copy_out(engine: Engine, image: str, path: str, directory: str) -> str:
    """One file of the image, copied into a host directory mounted into a throw-away container."""
    run = engine.run(ContainerRun(image=image, argv=["cp", "-L", path, "/mpistack-out/library"],
                                  mounts=[f"{directory}:/mpistack-out"]), timeout=120)
    if run.returncode != 0:
        raise EngineError(f"cannot copy {path} out of {image} ({run.returncode}): {run.stderr.strip()[-500:]}")
    return os.path.join(directory, "library")


def probe_image_fabric(engine: Engine, image: str, program: str = "mpistack-bench") -> ImageFabric:
    """Which libfabric the image's `program` loads through its MPI library, and the symbol versions that
    library needs: run once per image digest, then read from the cache."""
    try:
        digest = engine.inspect_digest(image)
    except EngineError as error:
        return ImageFabric(problem=f"image {image} unavailable: {error}")
    cached = cache_dir() / "image-facts" / f"fabric-{re.sub(r'[^A-Za-z0-9]', '_', digest)}.json"
    if cached.is_file():
        stored = json.loads(cached.read_text())
        if stored.pop("format", None) == _IMAGE_FACTS_FORMAT:
            return ImageFabric(**{**stored, "needs": tuple(stored["needs"])})
    facts = _probe_image(engine, image, program)
    if facts.problem is None:
        write_file_atomically(cached, json.dumps({"format": _IMAGE_FACTS_FORMAT, **asdict(facts)}))
    return facts


# Every Open MPI plug-in (mca_<framework>_<component>.so) within four levels of the MPI library's real directory
# (Open MPI's pkglibdir: <libdir>/openmpi; Debian's: <libdir>/openmpi/lib/openmpi3) that resolves libfabric.so.1,
# printed as "plug-in => path".
_PLUGINS_LOADING_LIBFABRIC = r"""
for library in "$@"; do
  find "$(dirname "$(readlink -f "$library")")" -maxdepth 4 -name 'mca_*.so' 2>/dev/null
done | sort -u | while read -r plugin; do
  ldd "$plugin" 2>/dev/null | sed -n "s|^[[:space:]]*libfabric\\.so\\.1 => \\(/[^ ]*\\).*|$plugin => \\1|p"
done
"""


def _plugins_loading_libfabric(engine: Engine, image: str, libraries: list[str]) -> dict[str, str]:
    """{plug-in: the libfabric.so.1 it loads} of the MPI libraries' plug-ins in the image."""
    if not libraries:
        return {}
    run = engine.run(ContainerRun(image=image, argv=["sh", "-c", _PLUGINS_LOADING_LIBFABRIC, "sh", *libraries]),
                     timeout=120)
    if run.returncode != 0:
        raise EngineError(f"listing the MPI plug-ins of {image} failed ({run.returncode}): "
                          f"{run.stderr.strip()[-500:]}")
    return dict(re.findall(r"^(/\S+) => (/\S+)$", run.stdout, re.MULTILINE))


def _probe_image(engine: Engine, image: str, program: str) -> ImageFabric:
    try:
        loaded = _ldd_in_image(engine, image, program)
        libraries = [path for name, path in loaded.items() if name.startswith("libmpi")]
        libfabric = loaded.get(LIBFABRIC_SONAME)
        if libfabric is None:
            return _probe_plugins(engine, image, program, libraries)
        with tempfile.TemporaryDirectory(prefix="mpistack-elf-") as directory:
            for library in libraries:
                _, _, needs = readelf_versions(_copy_out(engine, image, library, directory))
                if LIBFABRIC_SONAME in needs:
                    return ImageFabric(mpi_library=library, libfabric=libfabric, needs=needs[LIBFABRIC_SONAME])
    except (EngineError, OSError, subprocess.CalledProcessError) as error:
        return ImageFabric(problem=f"cannot read the libfabric facts of {image}: {error}")
    return ImageFabric(libfabric=libfabric, problem=f"no MPI library of {image} links {LIBFABRIC_SONAME} itself "
                                                    f"(it is opened by a plug-in): its needs cannot be checked")


def _probe_plugins(engine: Engine, image: str, program: str, libraries: list[str]) -> ImageFabric:
    """The libfabric facts of an MPI that opens libfabric from its plug-ins (Open MPI's ofi components): the
    needs of every such plug-in together, since any of them may be the one selected at run time."""
    plugins = _plugins_loading_libfabric(engine, image, libraries)
    if not plugins:
        return ImageFabric(problem=f"{program} in {image} does not load {LIBFABRIC_SONAME}, nor does any plug-in of "
                                   "its MPI library: its MPI uses another network layer, so there is no libfabric "
                                   "to swap")
    if len(set(plugins.values())) > 1:
        return ImageFabric(problem=f"the MPI plug-ins of {image} load {LIBFABRIC_SONAME} from different files "
                                   f"({', '.join(sorted(set(plugins.values())))}): no single file to swap")
    needs_of: dict[str, tuple[str, ...]] = {}
    with tempfile.TemporaryDirectory(prefix="mpistack-elf-") as directory:
        for plugin in sorted(plugins):
            needs_of[plugin] = readelf_versions(_copy_out(engine, image, plugin, directory))[2].get(
                LIBFABRIC_SONAME, ())
    # the plug-in that needs the most names the check; all of them together are what the host must define
    widest = max(sorted(needs_of), key=lambda plugin: len(needs_of[plugin]))
    needs = tuple(sorted({version for versions in needs_of.values() for version in versions}))
    return ImageFabric(mpi_library=widest, libfabric=next(iter(plugins.values())), needs=needs)
