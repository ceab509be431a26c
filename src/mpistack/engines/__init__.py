"""Container engines behind one interface: podman (default) and docker, each registered in ENGINES.

    engine = get_engine("podman")
    engine.build(context_dir, containerfile, tag, labels=..., log_path=...)
    engine.image_exists(tag); engine.inspect_digest(tag); engine.run_argv(ContainerRun(image, argv, ...))

podman is configured by the project itself for restricted hosts (see podman.py): a containers.conf
written to the user's cache directory and named in CONTAINERS_CONF of the subprocess only, plus
``--runtime runc``. Nothing under /etc is touched.
"""

from __future__ import annotations

from ..registry import ENGINES
from .base import BuildResult, ContainerRun, Engine, EngineError, RunResult
from .docker import DockerEngine  # each engine module registers itself when imported
from .podman import PodmanEngine


def get_engine(name: str = "podman", **options) -> Engine:
    try:
        cls = ENGINES.get(name).plugin
    except KeyError as error:
        raise EngineError(str(error.args[0])) from None
    return cls(**options)


__all__ = ["BuildResult", "ContainerRun", "DockerEngine", "Engine", "EngineError", "PodmanEngine", "RunResult",
           "get_engine"]
