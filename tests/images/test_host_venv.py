"""A pip stack's wheel on the host: pinned per machine, checked by pip against the pin, installed once.
Offline: a stand-in wheel is served from a local directory (pip's --find-links, no index)."""

from __future__ import annotations

import platform
import subprocess

import pytest

from tests.conftest import stand_in_wheel

from mpistack.images import host_venv
from mpistack.images.host_venv import build_native, native_build_paths, wheel_installed, wheel_requirement
from mpistack.spec import catalogue
from mpistack.spec.pins import UnpinnedError

MPICH_4_3_2_X86_64 = "afb503104df7e3ba828d86e78f54427ef410e9fc4a2da113de529fc851128ed4"  # PyPI's published sha256


@pytest.fixture
def pip_mpich():
    return catalogue.load("pip-mpich")


@pytest.mark.skipif(platform.machine() != "x86_64", reason="the pin checked here is the x86_64 wheel's")
def test_the_requirement_pins_this_machines_wheel(pip_mpich):
    assert wheel_requirement(pip_mpich) == f"mpich==4.3.2 --hash=sha256:{MPICH_4_3_2_X86_64}"


def test_a_release_without_a_pinned_wheel_is_refused(pip_mpich):
    older = pip_mpich.model_copy(update={"mpi": pip_mpich.mpi.model_copy(update={"version": "4.1.0"})})
    with pytest.raises(UnpinnedError, match="pip-mpich: mpi.version: the mpich 4.1.0 wheel for .* has no sha256 "
                                            "pinned in versions.toml"):
        wheel_requirement(older)


def test_the_paths_are_known_before_anything_is_built(pip_mpich, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    paths = native_build_paths(pip_mpich)
    assert paths.mpiexec == tmp_path / "mpistack/native/mpich-4.3.2/venv/bin/mpiexec"
    assert paths.bench == tmp_path / "mpistack/native/mpich-4.3.2/build/mpistack-bench"
    assert not (tmp_path / "mpistack").exists()


@pytest.fixture
def local_index(tmp_path, monkeypatch):
    """pip finds only the stand-in wheel; the cache is the test's own. Returns the wheel's sha256."""
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(wheels))
    monkeypatch.setenv("PIP_NO_CACHE_DIR", "1")
    return stand_in_wheel(wheels)


def _pin(monkeypatch, sha256: str) -> None:
    monkeypatch.setattr(host_venv, "wheel_requirement", lambda stack: f"mpich==4.3.2 --hash=sha256:{sha256}")


def test_a_wheel_that_does_not_match_its_pin_is_not_installed(pip_mpich, local_index, monkeypatch):
    _pin(monkeypatch, "0" * 64)
    with pytest.raises(subprocess.CalledProcessError) as failure:
        build_native(pip_mpich)
    assert "DO NOT MATCH THE HASHES" in failure.value.stderr and local_index in failure.value.stderr
    assert not wheel_installed(pip_mpich)


def test_the_wheel_is_installed_once(pip_mpich, local_index, monkeypatch):
    _pin(monkeypatch, local_index)
    with pytest.raises(subprocess.CalledProcessError):  # installed, but the stand-in has no mpicc to build with
        build_native(pip_mpich)
    assert wheel_installed(pip_mpich)
    monkeypatch.setattr(host_venv, "_install_wheel", lambda stack: pytest.fail("installed again"))
    with pytest.raises(subprocess.CalledProcessError):
        build_native(pip_mpich)
    _pin(monkeypatch, "1" * 64)  # a new pin installs afresh
    assert not wheel_installed(pip_mpich)
