"""Fixtures for mpistack-bench tests: builds for Debian's MPICH and Open MPI, launch helpers."""
from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest


def load_benchlib():
    """Import benchlib.py under a unique name (robust to other conftest/test modules)."""
    name = "mpistack_bench_testlib"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name("benchlib.py"))
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
    return sys.modules[name]


lib = load_benchlib()
BENCH, MPIS, SCHEMA, bench_env = lib.BENCH, lib.MPIS, lib.SCHEMA, lib.bench_env


def _build(mpi: str, build_dir: Path, corrupt: bool = False) -> Path:
    cc = MPIS[mpi]["cc"]
    if shutil.which(cc) is None or shutil.which(MPIS[mpi]["run"][0]) is None:
        pytest.skip(f"{cc} / {MPIS[mpi]['run'][0]} not installed")
    cmd = ["make", "-s", "-C", str(BENCH), f"MPICC={cc}", f"BUILD={build_dir}", "WERROR=1"]
    if corrupt:
        cmd.append("CORRUPT=1")
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"build failed:\n{proc.stdout}\n{proc.stderr}"
    binary = build_dir / "mpistack-bench"
    assert binary.is_file()
    return binary


@pytest.fixture(scope="session")
def bench_build_root(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("mpistack-bench-builds")


@pytest.fixture(scope="session")
def builds(bench_build_root) -> dict:
    """Lazily built binaries, one per MPI (WERROR=1); a missing MPI skips its tests."""
    cache: dict = {}

    def get(mpi: str, corrupt: bool = False) -> Path:
        key = (mpi, corrupt)
        if key not in cache:
            cache[key] = _build(mpi, bench_build_root / f"{mpi}{'-corrupt' if corrupt else ''}",
                                corrupt)
        return cache[key]

    return get


@dataclass
class Result:
    rc: int
    stdout: str
    stderr: str
    cmd: list = field(default_factory=list)


@pytest.fixture(scope="session")
def run_bench(builds):
    """run_bench(mpi, nranks, args, corrupt=False, env=None) -> Result"""
    cache: dict = {}

    def run(mpi: str, nranks: int, args: list, corrupt: bool = False, env: dict | None = None,
            cwd: Path | None = None, use_cache: bool = True) -> Result:
        binary = builds(mpi, corrupt)
        cmd = MPIS[mpi]["run"] + [str(nranks), str(binary)] + [str(a) for a in args]
        key = (tuple(cmd), corrupt)
        if use_cache and env is None and key in cache:
            return cache[key]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300,
                              env=env or bench_env(), cwd=cwd, errors="replace")
        res = Result(proc.returncode, proc.stdout, proc.stderr, cmd)
        if use_cache and env is None:
            cache[key] = res
        return res

    return run


@pytest.fixture(scope="session")
def schema() -> dict:
    return json.loads(SCHEMA.read_text())


