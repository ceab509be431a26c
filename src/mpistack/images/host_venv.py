"""A pip stack's MPI on the host: the wheel its image installs (same release, the sha256 pinned in
versions.toml) in a virtual environment under mpistack's cache, with mpistack-bench built by the wheel's
own mpicc. Launched with the wheel's mpiexec, it is the stack's same-build native baseline: a container's
loss then splits into the stack's effect (this build against the system's MPI) and the deployment's (the
container against this build run natively).

Installed once and reused: a later campaign only lets make check that mpistack-bench is up to date. A new
pin (another release or checksum) installs afresh and rebuilds."""

from __future__ import annotations

import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from ..cache import OWN_CACHE_FIX, cache_dir, check_own
from ..spec.pins import pinned_wheel
from ..spec.stack import Stack
from .host_bench import build_bench

INSTALLED = "installed.txt"  # the requirement line of a finished install, written last


@dataclass(frozen=True)
class NativeBuild:
    """What a native run of a pip stack uses: the wheel's launcher and mpistack-bench linked to the wheel's
    libmpi (by the runpath its mpicc sets, so that no environment is needed to find it)."""

    mpiexec: Path
    bench: Path


def wheel_requirement(stack: Stack) -> str:
    """`mpich==4.3.2 --hash=sha256:...`, the line pip's --require-hashes reads: the wheel pinned for this
    machine, the same pin the stack's image installs (recipes' pip-mpi block); spec.pins.UnpinnedError
    when there is none."""
    return pinned_wheel(stack.mpi.impl, stack.mpi.version, stack=stack.name).requirement


def native_dir(stack: Stack) -> Path:
    """One per wheel, shared by the stacks that install the same one."""
    return cache_dir() / "native" / f"{stack.mpi.impl}-{stack.mpi.version}"


def native_build_paths(stack: Stack) -> NativeBuild:
    """Where the build lies, known before it exists: a dry run prints these paths."""
    root = native_dir(stack)
    return NativeBuild(mpiexec=root / "venv" / "bin" / "mpiexec", bench=root / "build" / "mpistack-bench")


def wheel_installed(stack: Stack) -> bool:
    """Whether the pinned wheel is installed already: the finished install's requirement line, hash
    included, is the one pinned now."""
    marker = native_dir(stack) / INSTALLED
    return marker.is_file() and marker.read_text() == wheel_requirement(stack)


def build_native(stack: Stack) -> NativeBuild:
    """Install the pinned wheel unless it is there, and bring mpistack-bench up to date with its mpicc.
    Raises UnpinnedError, subprocess.CalledProcessError (with pip's or the compiler's output) or OSError."""
    if not wheel_installed(stack):
        _install_wheel(stack)
    paths = native_build_paths(stack)
    check_own(paths.mpiexec, OWN_CACHE_FIX)  # the launcher and the wheel's MPI run as this user
    build_bench(str(paths.mpiexec.with_name("mpicc")), paths.bench.parent)
    return paths


def _install_wheel(stack: Stack) -> None:
    """A fresh virtual environment with the pinned wheel. What was there (an unfinished install, an older
    pin, a bench built against it) goes first. With --require-hashes pip checks every file it downloads
    against the pin and refuses dependencies that have none; it uses the host's ordinary configuration
    (index, proxy, certificates), as the image build does."""
    root = native_dir(stack)
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    requirement = wheel_requirement(stack)
    requirements = root / "requirements.txt"
    requirements.write_text(requirement + "\n")
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True, text=True)
    subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                    "--require-hashes", "--only-binary=:all:", "-r", str(requirements)],
                   check=True, capture_output=True, text=True)
    (root / INSTALLED).write_text(requirement)
