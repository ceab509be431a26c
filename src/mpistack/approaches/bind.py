"""bind: the host's MPI libraries mounted over the image's, ranks started as in hybrid.

Only ABI-compatible pairs are allowed: MPICH and its derivatives share the MPICH ABI (libmpi.so.12), so a
binary built against one runs on another; the MPI-5 standard ABI (libmpi_abi.so) would join any two
libraries that ship it. Open MPI (libmpi.so.40) into MPICH, or the reverse, is refused with the reason.
"""

from __future__ import annotations

import os
import re
import subprocess
from functools import lru_cache
from pathlib import Path

from ..campaign.matrix import Case
from . import hybrid
from .base import Context, Launch, Refused, benchmark_argv, image_env, image_launch, root_env

MOUNT_DIR = "/opt/mpistack/host-mpi/lib"
# The host's MPI library and the names a binary may ask it by.
HOST_LIBRARIES = {"mpich": ("libmpich.so.12", ["libmpi.so.12", "libmpich.so.12"])}
SONAMES = {"mpich": "libmpi.so.12 (MPICH ABI)", "openmpi": "libmpi.so.40 (Open MPI)"}
# The C library stays the image's own: mounting the host's would replace the loader under running code.
_GLIBC = re.compile(r"^(libc|libm|libdl|librt|libpthread|ld-linux[-\w]*|libresolv|libutil)\.so")


@lru_cache(maxsize=4)
def host_library_files(mpi: str) -> tuple[tuple[str, str], ...]:
    """(host path, name inside the container) for the host MPI library and its dependencies."""
    library, aliases = HOST_LIBRARIES[mpi]
    listing = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True, check=True).stdout
    match = re.search(rf"^\s*{re.escape(library)} \(([^)]*)\) => (\S+)", listing, re.MULTILINE)
    if not match:
        raise Refused(f"the host has no {library}: install the host's {mpi}")
    path = os.path.realpath(match.group(2))
    files = [(path, alias) for alias in aliases]
    ldd = subprocess.run(["ldd", path], capture_output=True, text=True, check=True).stdout
    for name, resolved in re.findall(r"^\s*(\S+) => (/\S+)", ldd, re.MULTILINE):
        if not _GLIBC.match(name):
            files.append((os.path.realpath(resolved), name))
    return tuple(files)


def _plugin_dirs() -> list[str]:
    """Transport plug-ins the host MPI loads at run time (UCX modules), mounted at their own path."""
    return [str(path) for path in Path("/usr/lib/x86_64-linux-gnu").glob("ucx") if path.is_dir()]


def plan(case: Case, context: Context, output, options: list[str], label: str) -> Launch:
    image_mpi, host_mpi = case.stack.mpi, "mpich"
    if image_mpi != host_mpi:
        raise Refused(f"bind refused: the image's {image_mpi} uses {SONAMES[image_mpi]}, the host's {host_mpi} "
                      f"provides {SONAMES[host_mpi]}; the ABIs differ, so the image's binaries cannot run on the "
                      "host's library")
    mounts = []
    for source, name in host_library_files(host_mpi):
        mounts += ["-v", f"{source}:{MOUNT_DIR}/{name}:ro"]
    for directory in _plugin_dirs():
        mounts += ["-v", f"{directory}:{directory}:ro"]
    env = image_env(case)
    env.pop("MPICH_CH4_NETMOD", None)  # the image's wheel setting means nothing to the host's library
    env["LD_LIBRARY_PATH"] = MOUNT_DIR
    argv = [*hybrid.host_side(case, context, label, env, mounts),
            *benchmark_argv(case, "mpistack-bench", output, options)]
    return image_launch(case, context, argv, output, label, host_env=root_env(), bound_mpi=host_mpi)
