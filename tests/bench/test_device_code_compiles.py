"""The CUDA and ROCm code paths of mpistack-bench compile (warnings as errors) on machines without a GPU.

CUDA: against the CUDA runtime's real headers and libcudart from PyPI (nvidia-cuda-runtime and nvidia-cuda-crt,
in the test extra), laid out as a toolkit (include/, lib64/) so that `make -C bench CUDA=DIR` builds and links the
real thing, with Debian's MPICH and Open MPI (their MPIX_GPU_query_support and MPIX_Query_cuda_support paths).
Run here, the binary meets a runtime without a driver: it must say so in one line and exit 2, not crash.
Built against a double of the runtime whose one "device" has host memory (stubs/cuda/fake_cudart.c), the device
code runs end to end: placements, validation copied back from the device, the accelerator JSON section.
ROCm: HIP's headers come only with ROCm, so that path still compiles against the stand-in in stubs/rocm."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import load_benchlib  # noqa: E402  (tests/bench/conftest.py)

lib = load_benchlib()
BENCH = lib.BENCH
STUBS = Path(__file__).resolve().parent / "stubs"


def wheel_cuda_tree() -> Path | None:
    """The nvidia/cu13 directory the CUDA runtime wheels install (include/cuda_runtime.h, lib/libcudart.so.13)."""
    for entry in sys.path:
        tree = Path(entry) / "nvidia" / "cu13"
        if (tree / "include" / "cuda_runtime.h").is_file() and (tree / "include" / "crt").is_dir():
            return tree
    return None


@pytest.fixture(scope="module")
def cuda_toolkit(tmp_path_factory) -> Path:
    """A CUDA directory as `make CUDA=DIR` expects one: the wheels' headers, and lib64/libcudart.so."""
    tree = wheel_cuda_tree()
    if tree is None:
        pytest.skip("the CUDA runtime wheels are not installed (pip install -e '.[test]' on Linux x86_64/aarch64)")
    runtime = sorted((tree / "lib").glob("libcudart.so.*"))
    if not runtime:
        pytest.skip(f"{tree / 'lib'} holds no libcudart.so.N")
    root = tmp_path_factory.mktemp("cuda")
    (root / "include").symlink_to(tree / "include")
    (root / "lib64").mkdir()
    for name in ("libcudart.so", runtime[-1].name):  # the link-time name and the soname, as a toolkit has them
        (root / "lib64" / name).symlink_to(runtime[-1])
    return root


@pytest.fixture(scope="module")
def double_toolkit(cuda_toolkit, tmp_path_factory) -> Path:
    """The real headers, and a libcudart.so that is the test double."""
    root = tmp_path_factory.mktemp("cuda-double")
    (root / "include").symlink_to(cuda_toolkit / "include")
    (root / "lib64").mkdir()
    result = subprocess.run(["cc", "-std=c11", "-Wall", "-Wextra", "-Werror", "-shared", "-fPIC",
                             "-Wl,-soname,libcudart.so", f"-I{root / 'include'}", str(STUBS / "cuda" / "fake_cudart.c"),
                             "-o", str(root / "lib64" / "libcudart.so")], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return root


def build(mpi: str, build_dir: Path, **make_vars: str) -> Path:
    cc = lib.MPIS[mpi]["cc"]
    if shutil.which(cc) is None:
        pytest.skip(f"{cc} not installed")
    command = ["make", "-s", "-C", str(BENCH), f"MPICC={cc}", f"BUILD={build_dir}", "WERROR=1",
               *(f"{key}={value}" for key, value in make_vars.items())]
    result = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    return build_dir / "mpistack-bench"


def builds_against(toolkit: Path, factory, label: str):
    """get(mpi): mpistack-bench built with that MPI and CUDA=toolkit, once per module."""
    cache: dict = {}

    def get(mpi: str) -> Path:
        if mpi not in cache:
            cache[mpi] = build(mpi, factory.mktemp(f"{label}-{mpi}"), CUDA=str(toolkit))
        return cache[mpi]

    return get


@pytest.fixture(scope="module")
def cuda_builds(cuda_toolkit, tmp_path_factory):
    return builds_against(cuda_toolkit, tmp_path_factory, "cuda")


@pytest.fixture(scope="module")
def double_builds(double_toolkit, tmp_path_factory):
    return builds_against(double_toolkit, tmp_path_factory, "double")


@pytest.mark.parametrize("mpi, query", [("mpich", "MPIX_GPU_query_support"), ("openmpi", "MPIX_Query_cuda_support")])
def test_cuda_path_builds_and_links_against_the_real_runtime(cuda_builds, mpi, query):
    binary = cuda_builds(mpi)
    imported = subprocess.run(["nm", "-D", "--undefined-only", str(binary)], capture_output=True, text=True).stdout
    assert query in imported, f"the {mpi} build does not ask the library about device buffers ({query})"
    linked = subprocess.run(["ldd", str(binary)], capture_output=True, text=True).stdout
    assert "libcudart.so" in linked and "not found" not in linked.split("libcudart")[1].splitlines()[0]
    listing = json.loads(subprocess.run([str(binary), "--list"], capture_output=True, text=True).stdout)
    assert listing, "the CUDA build lists its tests"


@pytest.mark.parametrize("mpi", ["mpich", "openmpi"])
def test_cuda_build_without_a_driver_says_so_and_exits_2(cuda_builds, mpi):
    binary = cuda_builds(mpi)
    run = lib.MPIS[mpi]["run"]
    result = subprocess.run([*run, "2", str(binary), "latency", "-d", "cuda", "D", "D", "-m", "8"],
                            capture_output=True, text=True, timeout=120, env=lib.bench_env())
    assert result.returncode == 2, result.stdout + result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("mpistack-bench: error:")]
    assert len(errors) == 1, result.stderr  # rank 0 alone reports it
    assert "no CUDA device available (cudaGetDeviceCount:" in errors[0]
    assert "Send Buffer" not in result.stdout  # nothing was measured


@pytest.mark.parametrize("command_line", [
    ["latency", "-d", "cuda", "D", "D"],  # OSU 7.4's own form
    ["latency", "D", "H"],                # -d cuda implied by a CUDA build
    ["bw", "-d", "managed"],              # managed memory (M M), a shorthand of ours
    ["bw", "-d", "cuda", "M", "M"],       # OSU's spelling of it
    ["bibw", "-d", "cuda", "H", "D"],
    ["allreduce", "-d", "cuda"],
])
def test_cuda_build_accepts_osu_placements(cuda_builds, command_line):
    result = subprocess.run([str(cuda_builds("mpich")), *command_line, "--check"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("ok:")


def test_host_only_build_refuses_device_buffers(builds):
    result = subprocess.run([str(builds("mpich")), "latency", "-d", "cuda", "D", "D", "--check"],
                            capture_output=True, text=True)
    assert result.returncode == 2
    assert result.stderr.strip() == ("mpistack-bench: error: built without CUDA support (rebuild with "
                                     "CUDA=<path>)")


def test_unknown_accelerator_names_the_choices(builds):
    result = subprocess.run([str(builds("mpich")), "latency", "-d", "opencl", "--check"], capture_output=True,
                            text=True)
    assert result.returncode == 2
    assert "invalid accelerator 'opencl' (cuda, rocm or managed)" in result.stderr


@pytest.mark.parametrize("mpi", ["mpich", "openmpi"])
def test_rocm_code_path_compiles_against_the_stand_in(mpi):
    cc = lib.MPIS[mpi]["cc"]
    if shutil.which(cc) is None:
        pytest.skip(f"{cc} not installed")
    sources = sorted(str(path) for path in (BENCH / "src").glob("*.c"))
    command = [cc, "-std=c11", "-D_GNU_SOURCE", "-Wall", "-Wextra", "-Werror", "-Wno-unused-parameter",
               "-fsyntax-only", "-DMPISTACK_BENCH_ROCM", "-D__HIP_PLATFORM_AMD__",
               f"-I{STUBS / 'rocm' / 'include'}", *sources]
    result = subprocess.run(command, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def run_double(double_builds, mpi: str, *args: str, tmp_path: Path) -> tuple[subprocess.CompletedProcess, list]:
    out = tmp_path / f"{mpi}.json"
    result = subprocess.run([*lib.MPIS[mpi]["run"], "2", str(double_builds(mpi)), *args, "-c", "-m", "1:4096", "-i", "5",
                             "-x", "1", "--json", str(out)], capture_output=True, text=True, timeout=300,
                            env=lib.bench_env())
    assert result.returncode == 0, result.stdout + result.stderr
    documents = json.loads(out.read_text())
    return result, documents if isinstance(documents, list) else [documents]


@pytest.mark.parametrize("mpi, query", [("mpich", "MPIX_GPU_query_support"), ("openmpi", "MPIX_Query_cuda_support")])
def test_device_buffers_are_validated_and_described(double_builds, mpi, query, tmp_path, schema):
    """D D through the double: every size passes validation (the received data copied back from the "device"),
    and the document says which device each rank took and what the MPI said of device buffers."""
    import jsonschema

    result, (document,) = run_double(double_builds, mpi, "latency", "-d", "cuda", "D", "D", tmp_path=tmp_path)
    assert "# Send Buffer on DEVICE (D) and Receive Buffer on DEVICE (D)" in result.stdout
    jsonschema.validate(document, schema)
    assert [entry["validation"] for entry in document["results"]] == ["pass"] * 13
    assert document["title"] == "OSU MPI-CUDA Latency Test"
    assert document["options"]["buffers"] == "D D"
    accelerator = document["accelerator"]
    assert accelerator["api"] == "cuda" and accelerator["name"] == "mpistack test double"
    assert accelerator["driver_version"] == "12.4" and accelerator["runtime_version"].startswith("13.")
    # Debian's MPICH and Open MPI are built without CUDA, and their query functions say so
    assert (accelerator["mpi_device_buffers"], accelerator["mpi_query"]) == (False, query)
    assert accelerator["local_rank_from"] == "MPI_Comm_split_type"
    assert [(r["local_rank"], r["device"]) for r in accelerator["ranks"]] == [(0, 0), (1, 0)]


@pytest.mark.parametrize("args, buffers", [
    (["--suite", "bw,bibw", "-d", "cuda", "H", "D"], ["H D", "H D"]),
    (["--suite", "latency,allreduce", "-d", "managed"], ["M M", "M"]),
    (["--suite", "bw,allreduce", "-d", "cuda", "D", "H"], ["D H", "D"]),
])
def test_every_placement_validates(double_builds, args, buffers, tmp_path):
    _, documents = run_double(double_builds, "mpich", *args, tmp_path=tmp_path)
    assert [document["options"]["buffers"] for document in documents] == buffers
    for document in documents:
        assert {entry["validation"] for entry in document["results"]} == {"pass"}, document["benchmark"]


def test_host_buffers_in_a_cuda_build_write_no_accelerator_section(double_builds, tmp_path):
    _, (document,) = run_double(double_builds, "mpich", "latency", tmp_path=tmp_path)
    assert "accelerator" not in document and document["options"]["device"] == "none"
