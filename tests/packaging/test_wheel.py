"""An installed wheel works outside the checkout: package data (catalogue, pins, templates, published
references, mpistack-bench sources) is found through importlib.resources, not by walking up to a clone."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
# the installed package alone: no source tree on the path
CLEAN_ENV = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}


@pytest.fixture(scope="module")
def installed(tmp_path_factory, repo):
    work = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w",
                    str(work / "dist"), str(repo)], check=True, capture_output=True, text=True)
    (wheel,) = (work / "dist").glob("mpistack-*.whl")
    venv = work / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               check=True, capture_output=True, text=True).stdout.strip())
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "-q", str(wheel)],
                   check=True, capture_output=True, text=True, env=CLEAN_ENV)
    # the dependencies come from the test environment (a plain path entry, after the venv's own packages:
    # the test environment's editable mpistack is not seen)
    (site / "zz-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return venv / "bin" / "mpistack", work


def run(installed, *args):
    mpistack, work = installed
    return subprocess.run([str(mpistack), *args], cwd=work, capture_output=True, text=True, timeout=120,
                          env=CLEAN_ENV)


def test_installed_package_is_the_wheel(installed):
    mpistack, work = installed
    python = mpistack.parent / "python"
    where = subprocess.run([str(python), "-c", "import mpistack; print(mpistack.__file__)"], cwd=work,
                           capture_output=True, text=True, check=True, env=CLEAN_ENV).stdout
    assert "/venv/lib/" in where


def test_references_are_found(installed):
    result = run(installed, "references")
    assert result.returncode == 0, result.stderr
    assert "alps-gh200-mpich-ce" in result.stdout and "lumi-container-approaches" in result.stdout


def test_stack_render_uses_packaged_templates_and_pins(installed):
    result = run(installed, "stack", "render", "debian-mpich")
    assert result.returncode == 0, result.stderr
    assert "FROM " in result.stdout and "mpistack-bench" in result.stdout


def test_build_context_carries_packaged_bench_sources(installed, tmp_path):
    result = run(installed, "stack", "render", "pip-mpich", "--out", str(tmp_path / "ctx"))
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "ctx" / "bench" / "Makefile").is_file()
    assert (tmp_path / "ctx" / "bench" / "src" / "bench.h").is_file()


def test_reference_ingest_from_the_wheel(installed):
    _, work = installed
    result = run(installed, "--db", str(work / "w.db"), "ingest", "--reference", "cscs-mpich-guide")
    assert result.returncode == 0, result.stderr
