"""mpistack-bench built on the host (for the host's own MPI, or a pip stack's wheel in a virtual environment),
from the package's sources into mpistack's cache (so that an installed package, whose sources may be
read-only, builds it too)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from ..cache import OWN_CACHE_FIX, cache_dir, check_own
from ..recipes.render import bench_source_dir
from ..spec.mpi_family import FAMILIES

HOST_COMPILERS = {name: family.compiler for name, family in FAMILIES.items()}


def host_bench_path(mpi: str) -> Path:
    return cache_dir() / "bench" / f"build-{mpi}" / "mpistack-bench"


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
