"""System profiles: the host paths a centre's containers bind, per approach, as data (data/systems/NAME.toml),
each citing its public source. `local` (this machine's Debian paths) is the default, so that runtime files
rendered for a local stack carry no centre's paths.

    [approaches.fabric-swap]
    binds = ["/opt/cray/libfabric/1.15.2.0", "/usr/lib64/libcxi.so.1:/usr/lib64/libcxi.so.1"]
    env = { LD_LIBRARY_PATH = "/opt/cray/libfabric/1.15.2.0/lib64" }
"""

from __future__ import annotations

import re
from functools import cache

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..data import data_path
from ..spec.stack import CONTROL_RE, ENV_NAME_RE
from ..spec.toml_files import load_model, read_text

DEFAULT_SYSTEM = "local"


class SystemProfileError(ValueError):
    """A system profile that is unknown or does not read."""


def check_env_name(name: str, where: str) -> str:
    """An environment variable's name (the stack spec's pattern): what a shell, Apptainer's APPTAINERENV_
    prefix and an EDF key all accept."""
    if not ENV_NAME_RE.fullmatch(name):
        raise ValueError(f"{where}: {name!r} is not an environment variable name (expected letters, digits and "
                         "'_', not starting with a digit)")
    return name


def check_bind(spec: str, where: str) -> str:
    """'PATH' or 'HOST:CONTAINER', both absolute paths an Apptainer bind list can carry."""
    parts = spec.split(":")
    # each an absolute path, with no separator of Apptainer's bind list (',' and ':') and no control character
    if len(parts) > 2 or not all(part.startswith("/") and "," not in part and not CONTROL_RE.search(part)
                                 for part in parts):
        raise ValueError(f"{where}: {spec!r} is not a bind (expected /HOST/PATH or /HOST/PATH:/CONTAINER/PATH, "
                         "without ',' or control characters)")
    return spec


class ApproachPaths(BaseModel):
    model_config = ConfigDict(extra="forbid")

    binds: list[str] = Field(default_factory=list, description="host paths, or HOST:CONTAINER pairs, to bind")
    env: dict[str, str] = Field(default_factory=dict, description="variables set inside the container")

    @field_validator("binds")
    @classmethod
    def _binds(cls, value: list[str]) -> list[str]:
        return [check_bind(spec, "binds") for spec in value]

    @field_validator("env")
    @classmethod
    def _env(cls, value: dict[str, str]) -> dict[str, str]:
        return {check_env_name(name, "env"): text for name, text in value.items()}


class System(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    description: str
    source: str = Field(min_length=1, description="the public document the paths come from")
    gpu_runtime_for: list[str] = Field(default_factory=list, description="approaches that also bind the stack's "
                                                                         "GPU runtime prefix")
    approaches: dict[str, ApproachPaths] = Field(default_factory=dict)

    def paths(self, approach: str) -> ApproachPaths:
        """What `approach` binds on this system; nothing for one the profile leaves out (container, native).
        Approach names are checked against the registry by approaches/apptainer.py (a later stage)."""
        return self.approaches.get(approach, ApproachPaths())


def names() -> list[str]:
    return sorted(path.stem for path in data_path("systems").glob("*.toml"))


@cache
def load(name: str = DEFAULT_SYSTEM) -> System:
    path = data_path("systems", f"{name}.toml")
    if not re.fullmatch(r"[a-z0-9][a-z0-9-]*", name) or not path.is_file():
        raise SystemProfileError(f"unknown system {name!r}: expected one of {', '.join(names())}")
    return load_model(System, read_text(path, SystemProfileError), str(path), SystemProfileError)
