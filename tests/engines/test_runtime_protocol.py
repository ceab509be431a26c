"""Every registered container runtime implements the whole interface (engines.ContainerRuntime), so that a new
runtime is one module: the approaches, both launchers and the prepare stage call only these methods."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

import mpistack

from mpistack.engines import ContainerRun, ContainerRuntime, get_engine
from mpistack.engines.confinement import NAMESPACES, Confinement
from mpistack.registry import ENGINES

METHODS = [name for name, member in vars(ContainerRuntime).items()
           if inspect.isfunction(member) and not name.startswith("_")]


def test_the_interface_is_what_the_approaches_and_launchers_call():
    assert {"check", "planned_image", "prepare_image", "run_argv", "launch_argv", "launcher_env", "confinement",
            "end", "remove_containers", "available", "env_overrides"} <= set(METHODS)


#: the methods with a default every runtime may keep: nothing to add to the caller's or launcher's environment,
#: the launcher's options followed by the runtime's command, and bind targets the runtime makes itself, the built image named as it is, ranks
#: that are the user who starts them (a launcher that needs no other user namespace)
DEFAULTS = {"env_overrides", "launcher_env", "launch_argv", "prepare_mounts", "ranks_are_another_uid",
            "in_ranks_user_namespace", "rendered_image"}


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


@pytest.mark.parametrize("name", ENGINES.names())
def test_the_doctors_fix_for_ranks_apart_is_the_runtimes_own_setting(name):
    """A runtime says how its users join a node's ranks (`join_setting`) or that a node's ranks share one container;
    the doctor's fixes read those facts, so a new runtime needs no doctor change."""
    from mpistack.doctor.rules.fixes import join_fix, single_copy_fix

    runtime = ENGINES.get(name).plugin
    fix = single_copy_fix(name, 4)
    if runtime.join_setting:
        assert runtime.join_setting.format(count=4) in fix and fix == join_fix(name, 4)
    elif runtime.one_container_per_node:
        assert fix.startswith(f"{name} runs the ranks of a node in one container already")
    else:
        assert "--cap-add SYS_PTRACE" in fix


def _code_strings(path: Path) -> list[tuple[int, str]]:
    """The string constants of a module that are not docstrings (comments are not in the tree at all)."""
    tree = ast.parse(path.read_text())
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                  and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    return [(node.lineno, node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings]


def test_no_module_outside_engines_names_a_runtime_that_is_not_the_default():
    """A runtime is one module: nothing outside engines/ decides by Charliecloud's, Apptainer's, pyxis's or the
    CSCS Container Engine's name or commands (podman and docker, the default dialect, are named by the rules that
    read their messages)."""
    package = Path(mpistack.__file__).parent
    names = {name for name in ENGINES.names() if name not in ("podman", "docker")} | {"ch-run"}
    found = [f"{path.relative_to(package)}:{line}: {text[:60]!r}"
             for path in sorted(package.rglob("*.py")) if "engines" not in path.relative_to(package).parts
             for line, text in _code_strings(path) if text in names]
    assert not found, "runtime names decided on outside engines/:\n" + "\n".join(found)
