"""Container engines behind one interface: podman (default) and docker.

    engine = get_engine("podman")
    engine.build(context_dir, containerfile, tag, labels=..., log_path=...)
    engine.image_exists(tag); engine.inspect_digest(tag); engine.run(tag, argv, env=...)

podman is configured by the project itself for restricted hosts (see podman.py): a containers.conf
written to the user's cache directory and named in CONTAINERS_CONF of the subprocess only, plus
``--runtime runc``. Nothing under /etc is touched.
"""

from __future__ import annotations

from .base import BuildResult, Engine, EngineError, RunResult
from .docker import DockerEngine
from .podman import PodmanEngine

ENGINES: dict[str, type[Engine]] = {"podman": PodmanEngine, "docker": DockerEngine}


def get_engine(name: str = "podman", **options) -> Engine:
    try:
        cls = ENGINES[name]
    except KeyError:
        raise EngineError(f"unknown engine {name!r}: expected one of {', '.join(ENGINES)}") from None
    return cls(**options)


__all__ = ["BuildResult", "DockerEngine", "ENGINES", "Engine", "EngineError", "PodmanEngine", "RunResult",
           "get_engine"]
