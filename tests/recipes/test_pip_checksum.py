"""A wheel that does not match its pin must stop a pip stack's build. The test runs the real rendered pip
step (the lines a Containerfile RUN carries; only the install paths are moved under the test's directory)
offline: pip finds a stand-in wheel in a local directory (--find-links, no index)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.conftest import stand_in_wheel

from mpistack.recipes import blocks as B
from mpistack.spec.pins import wheel_component


@pytest.fixture
def wheels(tmp_path, monkeypatch):
    """pip sees only the stand-in wheel. Returns its sha256."""
    directory = tmp_path / "wheels"
    directory.mkdir()
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(directory))
    monkeypatch.setenv("PIP_DISABLE_PIP_VERSION_CHECK", "1")
    return stand_in_wheel(directory)


def _step(seed_stack, tmp_path: Path, sha256: str) -> list[str]:
    versions = tmp_path / "versions.toml"
    component = wheel_component("mpich")
    versions.write_text(f'[{component}]\nurl = "https://pypi.org/pypi/mpich/{{version}}/json"\nsource = "test"\n'
                        f'[{component}.versions]\n"4.3.2" = "{sha256}"\n')

    class Here(B.PipMpiBlock):
        PREFIX = str(tmp_path / "mpi")
        REQUIREMENTS = str(tmp_path / "requirements.txt")

    return Here(seed_stack("pip-mpich"), versions).step().commands


def _run(lines: list[str], workdir: Path) -> subprocess.CompletedProcess:
    script = "set -eu -o pipefail\n" + "\n".join(lines) + "\n"
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True, cwd=workdir, timeout=120)


def test_the_pinned_wheel_is_installed(seed_stack, tmp_path, wheels):
    result = _run(_step(seed_stack, tmp_path, wheels), tmp_path)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "requirements.txt").read_text() == f"mpich==4.3.2 --hash=sha256:{wheels}\n"
    assert "Name: mpich" in (tmp_path / "mpi" / "mpistack-wheel-files.txt").read_text()


def test_a_wheel_that_does_not_match_its_pin_stops_the_build(seed_stack, tmp_path, wheels):
    result = _run(_step(seed_stack, tmp_path, "0" * 64) + ["echo SHOULD-NOT-RUN"], tmp_path)
    assert result.returncode != 0
    assert "SHOULD-NOT-RUN" not in result.stdout
    assert "DO NOT MATCH THE HASHES" in result.stderr and wheels in result.stderr
    assert not (tmp_path / "mpi" / "mpistack-wheel-files.txt").exists()
