"""mpistack-bench built on the host (for the host's own MPI, or a pip stack's wheel in a virtual environment),
from the package's sources into mpistack's cache (so that an installed package, whose sources may be
read-only, builds it too)."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

from ..cache import OWN_CACHE_FIX, cache_dir, check_own
from ..recipes.render import bench_source_dir
from ..spec.mpi_family import FAMILIES

HOST_COMPILERS = {name: family.compiler for name, family in FAMILIES.items()}


def host_bench_path(mpi: str) -> Path:
    """One build per MPI and version of the sources: checkouts of different versions (or a test run beside a
    campaign) never run each other's binary nor rebuild under each other's feet."""
    return cache_dir() / "bench" / f"build-{mpi}-{sources_digest()[:12]}" / "mpistack-bench"


def sources_digest() -> str:
    source = bench_source_dir()
    digest = hashlib.sha256()
    for path in [source / "Makefile", *sorted((source / "src").glob("*.[ch]"))]:
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def build_host_bench(mpi: str) -> Path:
    """Build (or bring up to date) mpistack-bench with the host's `mpi` compiler wrapper."""
    return build_bench(HOST_COMPILERS[mpi], host_bench_path(mpi).parent)


def build_bench(mpicc: str, build: Path) -> Path:
    """Build (or bring up to date: make rebuilds what changed, and everything when the compiler does)
    mpistack-bench with the compiler wrapper `mpicc` into `build`; raises subprocess.CalledProcessError
    with the compiler's output when it fails."""
    subprocess.run(["make", "-s", "-C", str(bench_source_dir()), f"MPICC={mpicc}", f"BUILD={build}"],
                   check=True, capture_output=True, text=True)
    return check_own(build / "mpistack-bench", OWN_CACHE_FIX)  # it runs as this user: no one else's
