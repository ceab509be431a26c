"""Bad input names the file, the field and what was expected."""

from __future__ import annotations

import pytest

from mpistack.spec import catalogue
from mpistack.recipes import RecipeError, render
from mpistack.spec import StackError, load_stack

OK = '''
name = "t"
[base]
image = "docker.io/ubuntu:24.04"
[libfabric]
version = "1.22.0"
[mpi]
impl = "mpich"
version = "4.3.1"
'''


def test_valid(stack_from):
    s = stack_from(OK)
    assert s.image_ref() == "localhost/mpistack/t:mpich4.3.1-ofi1.22"


def test_unknown_component(stack_from):
    with pytest.raises(StackError, match=r"^bad.toml: mvapich: unknown field"):
        stack_from(OK + "[mvapich]\nversion = '3.0'\n", "bad.toml")


def test_unknown_mpi(stack_from):
    with pytest.raises(StackError, match=r"bad.toml: mpi.impl: expected 'mpich' or 'openmpi' \(got 'mvapich'\)"):
        stack_from(OK.replace('impl = "mpich"', 'impl = "mvapich"'), "bad.toml")


def test_unknown_provider(stack_from):
    with pytest.raises(StackError, match="libfabric.providers: unknown libfabric provider 'gni2'"):
        stack_from(OK.replace('version = "1.22.0"', 'version = "1.22.0"\nproviders = ["gni2"]'))


def test_bad_version(stack_from):
    with pytest.raises(StackError, match=r"mpi.version: expected a release version such as 4.3.1 \(got 'latest'\)"):
        stack_from(OK.replace('"4.3.1"', '"latest"'))


def test_missing_field(stack_from):
    with pytest.raises(StackError, match="base: required field missing"):
        stack_from('name = "t"\n[mpi]\nimpl = "mpich"\nversion = "4.3.1"\n')


def test_tristate_path_must_be_absolute(stack_from):
    with pytest.raises(StackError, match="mpi.cuda: expected true, false or an absolute path"):
        stack_from(OK + 'cuda = "cuda"\n')


def test_conflicting_cuda_without_gpu(stack_from):
    with pytest.raises(StackError, match=r"libfabric.cuda: needs gpu.kind = 'cuda' \(got gpu.kind = 'none'\)"):
        stack_from(OK.replace('version = "1.22.0"', 'version = "1.22.0"\ncuda = true'))


def test_conflicting_distro_and_source_component(stack_from):
    text = OK.replace('[mpi]', 'mode = "distro"\n[mpi]') if False else ('mode = "distro"\n' + OK)
    with pytest.raises(StackError, match="libfabric: mode 'distro' takes libfabric from the distribution"):
        stack_from(text)


def test_source_mode_with_pip_channel(stack_from):
    with pytest.raises(StackError, match="mpi.channel must be 'source'"):
        stack_from(OK + 'channel = "pip"\n')


def test_version_without_checksum(stack_from):
    s = stack_from(OK.replace('"4.3.1"', '"4.1.3"'), "old.toml")
    with pytest.raises(RecipeError, match=r"old.toml: mpi.version: mpich 4.1.3 has no pinned sha256 in versions.toml; "
                                          r"pinned versions: 5.0.1, "):
        render(s)


def test_invalid_toml(tmp_path):
    path = tmp_path / "broken.toml"
    path.write_text("name = \n")
    with pytest.raises(StackError, match="broken.toml: not valid TOML"):
        load_stack(path)


def test_unknown_catalogue_name():
    with pytest.raises(StackError, match="not a file and not in the catalogue"):
        catalogue.load("no-such-stack")
