"""What each approach binds into Apptainer containers on a system, and the files that set it: the system
profiles (data/systems/NAME.toml, read by runtime/systems.py) checked against the approaches' registered
capabilities, which only this stage may ask (a registry lookup loads the approaches' package):

    apptainer_binds(stack, "fabric-swap", system="lumi") -> ["/opt/cray/libfabric/1.15.2.0:/opt/cray/...", ...]
    write_runtime(stack, directory, system="lumi")        -> env.sh, NAME.edf.toml, apptainer-APPROACH.sh

A profile may name only registered approaches, and one that mounts host libraries (bind, fabric-swap) must
point LD_LIBRARY_PATH at them: without it the container's MPI keeps loading the image's own libraries, and the
deployment measures nothing.
"""

from __future__ import annotations

import re
from pathlib import Path

from ..recipes.escaping import comment
from ..registry import APPROACHES
from ..runtime import edf, env_script, export_line, systems
from ..runtime.systems import DEFAULT_SYSTEM, ApproachPaths, System, check_bind, check_env_name
from ..spec.stack import Stack


def refusal(stack: Stack, approach: str) -> str | None:
    """Why `approach` cannot serve `stack` by its stack file alone (fabric-swap and a UCX build), else None:
    the approach's own `refuses` capability, which its runs and the doctor give too."""
    refuses = APPROACHES.get(approach).capabilities.get("refuses")
    return refuses(stack) if refuses else None


def _loads_bound_libraries(paths: ApproachPaths) -> bool:
    """Whether LD_LIBRARY_PATH leads to what is bound: a directory that is, lies inside, or holds a bind's
    container side (trivially true with no binds: nothing to load)."""
    targets = [spec.split(":")[-1].rstrip("/") for spec in paths.binds]
    directories = [entry.rstrip("/") for entry in paths.env.get("LD_LIBRARY_PATH", "").split(":") if entry]
    return not targets or any(directory == target or directory.startswith(f"{target}/")
                              or target.startswith(f"{directory}/")
                              for directory in directories for target in targets)


def check_profile(profile: System) -> System:
    """The profile's approaches against the registry; a ValueError names the field."""
    for name, paths in profile.approaches.items():
        if name not in APPROACHES:
            raise ValueError(f"approaches.{name}: unknown approach, expected one of {', '.join(APPROACHES.names())}")
        if APPROACHES.get(name).capabilities.get("mounts_host_libraries") and not _loads_bound_libraries(paths):
            raise ValueError(f"approaches.{name}: binds host libraries, but env.LD_LIBRARY_PATH names no "
                             "directory of them, so the container's MPI would keep loading the image's own "
                             "(expected LD_LIBRARY_PATH with a bound directory, one inside it, or the directory "
                             "a library is bound into)")
    return profile


def load_system(name: str = DEFAULT_SYSTEM) -> System:
    """A shipped profile, checked against the approaches (SystemProfileError for an unknown or bad one)."""
    profile = systems.load(name)
    try:
        return check_profile(profile)
    except ValueError as error:
        raise systems.SystemProfileError(f"system {name}: {error}") from None


def _paths(stack: Stack, approach: str, system: str) -> ApproachPaths:
    APPROACHES.check(approach)
    return load_system(system).paths(approach)


def apptainer_binds(stack: Stack, approach: str, *, system: str = DEFAULT_SYSTEM) -> list[str]:
    """HOST:CONTAINER bind specifications for `approach` on `system` (an approach the profile leaves out,
    such as container, binds nothing). Raises ValueError for an unknown approach, one that cannot serve the
    stack (`refusal`) or a path that cannot be written into a bind list."""
    paths = list(_paths(stack, approach, system).binds)
    if (refused := refusal(stack, approach)) is not None:
        raise ValueError(refused)
    if approach in load_system(system).gpu_runtime_for and stack.gpu.kind == "rocm":
        paths.append(stack.gpu.prefix or "/opt/rocm")
    return [check_bind(spec if ":" in spec else f"{spec}:{spec}", f"system {system}, approach {approach}")
            for spec in paths]


def apptainer_env(stack: Stack, approach: str, *, system: str = DEFAULT_SYSTEM) -> dict[str, str]:
    return dict(_paths(stack, approach, system).env)


def apptainer_script(stack: Stack, approach: str, *, system: str = DEFAULT_SYSTEM) -> str:
    """A file to source before `apptainer exec`: APPTAINER_BIND and APPTAINERENV_* for the approach."""
    profile = load_system(system)
    body = ["# " + comment(f"Apptainer settings for the {approach} approach of {stack.name} on system "
                           f"{system} ({profile.source}): source this file, then"),
            "#   apptainer exec IMAGE.sif ...",
            export_line("APPTAINER_BIND", ",".join(apptainer_binds(stack, approach, system=system)), "bind list")]
    body += [export_line(f"APPTAINERENV_{check_env_name(key, 'Apptainer env')}", value, "Apptainer env")
             for key, value in apptainer_env(stack, approach, system=system).items()]
    return "\n".join(body) + "\n"


def write_runtime(stack: Stack, directory: Path, *, gpu: bool | None = None,
                  system: str = DEFAULT_SYSTEM) -> list[Path]:
    """env.sh, <name>.edf.toml and an Apptainer settings file per approach the system profile binds for and
    that can serve the stack."""
    directory.mkdir(parents=True, exist_ok=True)
    gpu = stack.gpu.kind != "none" if gpu is None else gpu
    files = {"env.sh": env_script(stack, gpu=gpu), f"{_file_name(stack.name)}.edf.toml": edf(stack, gpu=gpu)}
    for approach in (name for name in APPROACHES.names()
                     if name in load_system(system).approaches and refusal(stack, name) is None):
        files[f"apptainer-{approach}.sh"] = apptainer_script(stack, approach, system=system)
    written = []
    for name, text in files.items():
        path = directory / name
        path.write_text(text)
        written.append(path)
    return written


def _file_name(name: str) -> str:
    """A stack name as one file name inside the directory (no separator, no leading dot)."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", name).lstrip(".") or "stack"
