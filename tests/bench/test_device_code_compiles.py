"""The CUDA and ROCm code paths of mpistack-bench compile (warnings as errors) on machines without a
GPU toolkit, against stand-in headers that declare what the code calls with the toolkits' signatures.
On a machine with the toolkit, `make -C bench` builds them for real."""

import shutil
import subprocess
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
STUBS = Path(__file__).resolve().parent / "stubs"
FLAGS = {"cuda": ["-DMPISTACK_BENCH_CUDA", f"-I{STUBS / 'cuda' / 'include'}"],
         "rocm": ["-DMPISTACK_BENCH_ROCM", "-D__HIP_PLATFORM_AMD__", f"-I{STUBS / 'rocm' / 'include'}"]}


@pytest.mark.parametrize("device", sorted(FLAGS))
def test_device_code_path_compiles(device):
    if shutil.which("mpicc.mpich") is None:
        pytest.skip("mpicc.mpich not installed")
    sources = sorted(str(path) for path in (BENCH / "src").glob("*.c"))
    command = ["mpicc.mpich", "-std=c11", "-D_GNU_SOURCE", "-Wall", "-Wextra", "-Werror", "-Wno-unused-parameter",
               "-fsyntax-only", *FLAGS[device], *sources]
    result = subprocess.run(command, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
