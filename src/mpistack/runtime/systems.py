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
from ..registry import APPROACHES
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

    @field_validator("approaches")
    @classmethod
    def _approaches(cls, value: dict[str, ApproachPaths]) -> dict[str, ApproachPaths]:
        for name, paths in value.items():
            if name not in APPROACHES:
                raise ValueError(f"approaches.{name}: unknown approach, expected one of {', '.join(APPROACHES.names())}")
            if APPROACHES.get(name).capabilities.get("mounts_host_libraries") and not _loads_bound_libraries(paths):
                # the approach's runs set it (approaches/bind.py, fabric_swap.py): without it the container's
                # MPI keeps loading the image's own libraries, and the swap measures nothing
                raise ValueError(f"approaches.{name}: binds host libraries, but env.LD_LIBRARY_PATH names no "
                                 "directory of them, so the container's MPI would keep loading the image's own "
                                 "(expected LD_LIBRARY_PATH with a bound directory, one inside it, or the directory "
                                 "a library is bound into)")
        return value

    def paths(self, approach: str) -> ApproachPaths:
        """What `approach` binds on this system; nothing for one the profile leaves out (container, native)."""
        APPROACHES.check(approach)
        return self.approaches.get(approach, ApproachPaths())


def _loads_bound_libraries(paths: ApproachPaths) -> bool:
    """Whether LD_LIBRARY_PATH leads to what is bound: a directory that is, lies inside, or holds a bind's
    container side (trivially true with no binds: nothing to load)."""
    targets = [spec.split(":")[-1].rstrip("/") for spec in paths.binds]
    directories = [entry.rstrip("/") for entry in paths.env.get("LD_LIBRARY_PATH", "").split(":") if entry]
    return not targets or any(directory == target or directory.startswith(f"{target}/")
                              or target.startswith(f"{directory}/")
                              for directory in directories for target in targets)


def names() -> list[str]:
    return sorted(path.stem for path in data_path("systems").glob("*.toml"))


@cache
def load(name: str = DEFAULT_SYSTEM) -> System:
    path = data_path("systems", f"{name}.toml")
    if not re.fullmatch(r"[a-z0-9][a-z0-9-]*", name) or not path.is_file():
        raise SystemProfileError(f"unknown system {name!r}: expected one of {', '.join(names())}")
    return load_model(System, read_text(path, SystemProfileError), str(path), SystemProfileError)
