"""`mpistack stack sources`: where each source of a stack comes from, and the errors a bad mirrors.toml gives
(a message naming the file and the key, never a traceback)."""

from __future__ import annotations

import os
import subprocess

from tests.helpers import MPISTACK, plain_environment


def _sources(tmp_path, *args: str) -> subprocess.CompletedProcess:
    env = {**plain_environment(), "XDG_CONFIG_HOME": str(tmp_path / "config"), "COLUMNS": "80"}
    env.pop("MPISTACK_VERSIONS", None)
    return subprocess.run([*MPISTACK, "stack", "sources", *args], capture_output=True, text=True, env=env,
                          timeout=120, cwd=tmp_path)


def test_debian_and_upstream_origins_are_listed(tmp_path):
    result = _sources(tmp_path, "source-mpich-ofi")
    assert result.returncode == 0, result.stderr
    assert "mpich 4.0.2  Debian archive" in result.stdout
    assert "/pool/main/m/mpich/mpich_4.0.2.orig.tar.xz" in result.stdout
    assert "sha256 b27039f964afeb6b8a3e009c56b441cbe368c26d6d6476ad3bb7190996875860" in result.stdout
    assert "mpich_4.0.2-3.dsc" in result.stdout
    upstream = _sources(tmp_path, "cscs-mpich-cpu")
    assert "mpich 4.3.1  upstream" in upstream.stdout and "https://www.mpich.org/static/downloads/4.3.1/" \
        in upstream.stdout


def test_a_mirror_directory_of_the_user_comes_first(tmp_path):
    tarballs = tmp_path / "tarballs"
    tarballs.mkdir()
    (tarballs / "mpich_4.0.2.orig.tar.xz").write_bytes(b"x")
    (tmp_path / "config" / "mpistack").mkdir(parents=True)
    (tmp_path / "config" / "mpistack" / "mirrors.toml").write_text(f'mirrors = ["{tarballs}"]\n')
    result = _sources(tmp_path, "source-mpich-ofi")
    assert result.returncode == 0, result.stderr
    assert "mpich 4.0.2  mirror directory" in result.stdout
    assert f"{tarballs}/mpich_4.0.2.orig.tar.xz" in result.stdout


def test_a_bad_mirrors_file_is_an_error_naming_it(tmp_path):
    (tmp_path / "config" / "mpistack").mkdir(parents=True)
    path = tmp_path / "config" / "mpistack" / "mirrors.toml"
    path.write_text('mirrors = ["ftp://example.org/x"]\n')
    for verb in (["stack", "sources", "source-mpich-ofi"], ["stack", "render", "source-mpich-ofi"]):
        env = {**plain_environment(), "XDG_CONFIG_HOME": str(tmp_path / "config")}
        result = subprocess.run([*MPISTACK, *verb], capture_output=True, text=True, env=env, timeout=120)
        assert result.returncode == 2, result.stdout
        assert f"{path}: mirrors[0]: expected 'upstream', 'debian' or a directory" in " ".join(result.stderr.split())
        assert "Traceback" not in result.stderr
    assert os.path.exists(path)


def test_render_prints_the_containerfile_unless_asked_for_the_definition(tmp_path):
    env = {**plain_environment(), "XDG_CONFIG_HOME": str(tmp_path / "config")}
    containerfile = subprocess.run([*MPISTACK, "stack", "render", "source-openmpi-ofi"], capture_output=True,
                                   text=True, env=env, timeout=120)
    assert containerfile.returncode == 0 and containerfile.stdout.startswith("# syntax=docker/dockerfile:1")
    # a single-stage image gets its run-time packages too: Open MPI's mpirun needs an rsh agent to start
    assert "apt-get install -y --no-install-recommends libfabric1 libevent-2.1-7 libevent-pthreads-2.1-7 libhwloc15 " \
           "openssh-client" in containerfile.stdout
    definition = subprocess.run([*MPISTACK, "stack", "render", "source-openmpi-ofi", "--apptainer"],
                                capture_output=True, text=True, env=env, timeout=120)
    assert definition.returncode == 0 and definition.stdout.startswith("Bootstrap: localimage")
