"""The host's Open MPI as bind mounts it into an image, read once with the other host facts: its release,
its library (libmpi.so.40) and every library that library, its run-time components and its PMIx need, the
directories it loads plug-ins and help texts from (its component directory, PMIx's plug-ins), and the
version of the PMIx it serves ranks with.

Open MPI opens its components from the directory compiled into it (`ompi_info --path pkglibdir`) and PMIx
its plug-ins from beside libpmix: both are mounted at their host paths, the libraries they need into the
bound-library directory that LD_LIBRARY_PATH names.
"""

from __future__ import annotations

import ctypes
import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from .fabric_facts import GLIBC, call_version_function, find_library, ldd_resolved

OPEN_MPI_SONAME = "libmpi.so.40"
PMIX_SONAME = "libpmix.so.2"


@dataclass(frozen=True)
class HostOpenMpi:
    version: str | None  # e.g. 4.1.4
    library_files: tuple[tuple[str, str], ...]  # (host path, name the loader asks for), the C library excluded
    plugin_dirs: tuple[str, ...]  # mounted at their host paths
    pmix_version: str | None  # the PMIx its launcher serves ranks with, e.g. 4.2.2


def _ompi_info(*args: str) -> str:
    try:
        return subprocess.run(["ompi_info", *args], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired):
        return ""


def pmix_library_version(path: str) -> str | None:
    """PMIx_Get_version() of a libpmix file ("OpenPMIx 4.2.2rc2 (...)" -> "4.2.2")."""
    text = call_version_function(path, "PMIx_Get_version", ctypes.c_char_p)
    match = re.search(rb"(\d+\.\d+\.\d+)", text or b"")
    return match.group(1).decode() if match else None


def _needed(paths: list[str]) -> dict[str, str]:
    """{name asked for: real host path} of what these ELF files need, in one ldd call."""
    if not paths:
        return {}
    listing = subprocess.run(["ldd", *paths], capture_output=True, text=True).stdout
    return {name: os.path.realpath(path) for name, path in ldd_resolved(listing).items() if not GLIBC.match(name)}


def probe_host_openmpi() -> HostOpenMpi | None:
    """The system's Open MPI, as the dynamic loader finds libmpi.so.40; None without one."""
    library = find_library(OPEN_MPI_SONAME)
    if library is None:
        return None
    version = re.search(r"Open MPI v(\d+\.\d+\.\d+)", _ompi_info("-V"))
    paths = dict(re.findall(r"^path:(\w+):(.+)$", _ompi_info("--parsable", "--path", "pkglibdir", "--path",
                                                              "pkgdatadir"), re.MULTILINE))
    components = Path(paths.get("pkglibdir", ""))
    modules = sorted(str(path) for path in components.glob("*.so")) if paths.get("pkglibdir") else []
    needed = _needed([os.path.realpath(library), *modules])
    files = {(os.path.realpath(library), OPEN_MPI_SONAME), *((path, name) for name, path in needed.items())}
    plugin_dirs = [str(components)] if modules else []
    if paths.get("pkgdatadir") and Path(paths["pkgdatadir"]).is_dir():
        plugin_dirs.append(paths["pkgdatadir"])  # help texts: what an error says
    pmix = needed.get(PMIX_SONAME)
    if pmix is not None:
        files |= {(path, name) for name, path in _needed([pmix]).items()}
        if (Path(pmix).parent / "pmix").is_dir():
            plugin_dirs.append(str(Path(pmix).parent / "pmix"))
    return HostOpenMpi(version=version.group(1) if version else None, library_files=tuple(sorted(files)),
                       plugin_dirs=tuple(plugin_dirs), pmix_version=pmix_library_version(pmix) if pmix else None)
