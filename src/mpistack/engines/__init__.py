"""Container runtimes behind one interface (`ContainerRuntime`), each registered in ENGINES: podman (default),
docker and charliecloud run here; the runtimes HPC centres start under srun (cscs-ce, pyxis, apptainer) are
rendered, each by its own module (rendering.py: what they share).

    engine = get_engine("podman")
    engine.build(context_dir, containerfile, tag, labels=..., log_path=...)
    engine.image_exists(tag); engine.inspect_digest(tag); engine.run_argv(ContainerRun(image, argv, ...))

podman is configured by the project itself for restricted hosts (see podman.py): a containers.conf
written to the user's cache directory and named in CONTAINERS_CONF of the subprocess only, plus
``--runtime runc``. Nothing under /etc is touched.
"""

from __future__ import annotations

from ..registry import ENGINES
from .base import BuildResult, ContainerRun, ContainerRuntime, Engine, EngineError, RunResult
from .confinement import NAMESPACES, Confinement
from .docker import DockerEngine  # each engine module registers itself when imported
from .podman import PodmanEngine  # isort: skip
from .charliecloud import CharliecloudEngine  # isort: skip
from .cscs_ce import CscsContainerEngine  # isort: skip
from .pyxis import PyxisRuntime  # isort: skip
from .apptainer import ApptainerRuntime  # isort: skip


def get_engine(name: str = "podman", **options) -> ContainerRuntime:
    try:
        cls = ENGINES.get(name).plugin
    except KeyError as error:
        raise EngineError(str(error.args[0])) from None
    return cls(**options)


def runtime_class(name: str | None) -> type[ContainerRuntime] | None:
    """The registered runtime of that name, for its facts (`join_setting`, `one_container_per_node`) without
    starting anything; None for an unknown or missing name (a run recorded by another version)."""
    return ENGINES.get(name).plugin if name and name in ENGINES else None


__all__ = ["NAMESPACES", "ApptainerRuntime", "BuildResult", "CharliecloudEngine", "CscsContainerEngine", "Confinement", "ContainerRun", "ContainerRuntime",
           "DockerEngine", "Engine", "EngineError", "PodmanEngine", "PyxisRuntime", "RunResult",
           "get_engine", "runtime_class"]
