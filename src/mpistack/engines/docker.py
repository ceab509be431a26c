"""docker: the same CLI dialect as podman, no host-specific configuration."""

from __future__ import annotations

from .base import Engine


class DockerEngine(Engine):
    program = "docker"
