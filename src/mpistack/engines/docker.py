"""docker: the same CLI dialect as podman, no host-specific configuration."""

from __future__ import annotations

from ..registry import ENGINES
from .base import Engine


@ENGINES.register("docker")
class DockerEngine(Engine):
    name = program = "docker"
