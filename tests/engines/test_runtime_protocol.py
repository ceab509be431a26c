"""Every registered container runtime implements the whole interface (engines.ContainerRuntime), so that a new
runtime is one module: the approaches, both launchers and the prepare stage call only these methods."""

from __future__ import annotations

import inspect

import pytest

from mpistack.engines import ContainerRun, ContainerRuntime, get_engine
from mpistack.engines.confinement import NAMESPACES, Confinement
from mpistack.registry import ENGINES

METHODS = [name for name, member in vars(ContainerRuntime).items()
           if inspect.isfunction(member) and not name.startswith("_")]


def test_the_interface_is_what_the_approaches_and_launchers_call():
    assert {"check", "planned_image", "prepare_image", "run_argv", "launch_argv", "launcher_env", "confinement",
            "end", "remove_containers", "available", "env_overrides"} <= set(METHODS)


#: the methods with a default every runtime may keep: nothing to add to the caller's or launcher's environment,
#: the launcher's options followed by the runtime's command, and bind targets the runtime makes itself, ranks
#: that are the user who starts them (a launcher that needs no other user namespace)
DEFAULTS = {"env_overrides", "launcher_env", "launch_argv", "prepare_mounts", "ranks_are_another_uid",
            "in_ranks_user_namespace"}


def test_every_runtime_of_a_cluster_is_registered_and_renders():
    """cscs-ce, pyxis and apptainer are runtimes like podman, chosen by name; they render, never run here."""
    rendered = {name for name in ENGINES.names() if get_engine(name).renders_only}
    assert rendered == {"cscs-ce", "pyxis", "apptainer"}
    assert not any(get_engine(name).renders_only for name in ("podman", "docker", "charliecloud"))


@pytest.mark.parametrize("name", ENGINES.names())
def test_every_registered_runtime_implements_every_method(name):
    runtime = ENGINES.get(name).plugin
    missing = [method for method in METHODS
               if getattr(runtime, method) is getattr(ContainerRuntime, method)
               and method not in DEFAULTS]
    assert not missing, f"runtime {name} leaves {', '.join(missing)} to the interface"
    assert runtime.name == name


@pytest.mark.parametrize("name", ENGINES.names())
@pytest.mark.parametrize("per_rank", [False, True])
def test_every_runtime_says_its_confinement_as_a_typed_value(name, per_rank):
    runtime = get_engine(name)
    confinement = runtime.confinement(ContainerRun("image", ["true"], per_rank=per_rank, share_pid=per_rank,
                                                   share_ipc=per_rank))
    assert isinstance(confinement, Confinement) and confinement.runtime == name
    assert set(confinement.shared) <= set(NAMESPACES) and confinement.host <= confinement.shared
    if not per_rank:  # one container holds every rank: they share all that decides how they talk
        assert {"user", "ipc", "pid"} <= confinement.shared
    assert Confinement.from_record(confinement.record()) == confinement


@pytest.mark.parametrize("name", ENGINES.names())
def test_every_runtime_renders_a_rank_s_container_under_a_launcher(name):
    """The launcher's options, then one command that ends with the rank's argv, every item a string."""
    runtime = get_engine(name)
    run = ContainerRun(runtime.planned_image("registry.example.org/mpich:4"), ["mpistack-bench", "latency"], env={"A": "1"},
                       mounts=["/out:/out"], per_rank=True, join_ranks=2, workdir="/out")
    argv = runtime.launch_argv(["srun", "--mpi=pmi2"], run)
    assert argv[:2] == ["srun", "--mpi=pmi2"] and argv[-2:] == ["mpistack-bench", "latency"]
    assert all(isinstance(item, str) for item in argv) and len(argv) > 4
    assert isinstance(runtime.launcher_env(run), dict)


def test_an_unknown_runtime_name_lists_the_known_ones():
    from mpistack.engines import EngineError
    with pytest.raises(EngineError, match="unknown container engine 'singularity': expected one of .*charliecloud"):
        get_engine("singularity")
