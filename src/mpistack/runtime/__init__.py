"""Runtime files from the same stack spec: environment presets per MPI and network, the CSCS Container
Engine EDF, and Apptainer settings for the approaches that bind host paths, which come from a system profile
(runtime/systems.py: `local` by default, `lumi`, `alps`).

    presets(stack, gpu=True)      -> {"MPIR_CVAR_CH4_OFI_ENABLE_HMEM": "1", ...}
    srun_mpi(stack)               -> "pmi2" | "pmix"
    edf(stack)                    -> TOML text for ~/.edf/NAME.toml
    apptainer_binds(stack, "fabric-swap", system="lumi") -> ["/opt/cray/libfabric/1.15.2.0:/opt/cray/...", ...]

Every generator escapes each value for its format (shlex.quote for shell, JSON strings for TOML), checks
every variable name against a strict pattern, and keeps newlines out of comments: stack fields reach these
files, and a file that is sourced must not run what a field smuggles in.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from ..recipes.escaping import comment
from ..registry import APPROACHES
from ..spec.stack import Stack
from . import systems
from .systems import DEFAULT_SYSTEM, check_bind, check_env_name


@dataclass
class Preset:
    env: dict[str, str]
    notes: list[str]


def presets(stack: Stack, *, gpu: bool = False, network: str | None = None, local_root: bool = False) -> Preset:
    """Environment for running ``stack``'s MPI over ``network`` (default: the stack's own)."""
    net = network or stack.network
    env: dict[str, str] = {}
    notes: list[str] = []
    mpi = stack.mpi
    if mpi.impl == "mpich":
        if mpi.channel == "pip":
            env["MPICH_CH4_NETMOD"] = mpi.netmod
        if mpi.netmod == "ofi":
            # over cxi MPICH picks the provider itself (the CSCS MPICH EDFs set nothing: CSCS docs 'MPICH image' (https://docs.cscs.ch/software/container-engine/guidelines-images/image-mpich/))
            if net == "tcp":
                env["FI_PROVIDER"] = "tcp"
            elif net == "lnx":
                env.update({"FI_PROVIDER": "lnx", "FI_LNX_PROV_LINKS": "shm+cxi"})
            if gpu:
                env["MPIR_CVAR_CH4_OFI_ENABLE_HMEM"] = "1"
                notes.append("MPIR_CVAR_CH4_OFI_ENABLE_HMEM=1: needed for inter-node GPU-to-GPU bandwidth; it can "
                             "slow intra-node CPU-to-CPU transfers (CSCS docs 'MPICH image' (https://docs.cscs.ch/software/container-engine/guidelines-images/image-mpich/))")
        notes.append("under Slurm: srun --mpi=pmi2 (MPICH wires up with PMI-1/PMI-2)")
    else:
        env["PMIX_MCA_psec"] = "native"
        if net in ("cxi", "lnx"):
            env.update({"OMPI_MCA_pml": "^ucx", "OMPI_MCA_mtl": "ofi"})
            if net == "lnx":
                env.update({"FI_PROVIDER": "lnx", "FI_LNX_PROV_LINKS": "shm+cxi"})
            else:
                env["FI_PROVIDER"] = "cxi"
        elif net == "tcp":
            env.update({"OMPI_MCA_pml": "ob1", "OMPI_MCA_btl": "self,vader,tcp"})
        notes.append("under Slurm: srun --mpi=pmix" + (" (Debian's Open MPI has no PMI-2)" if mpi.channel == "apt" else ""))
        if local_root:
            env.update({"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"})
            notes.append("OMPI_ALLOW_RUN_AS_ROOT*: Open MPI refuses to run as root (containers) without them")
    return Preset(env, notes)


#: srun's PMI plug-in per MPI family (checked against `srun --mpi=list`): MPICH wires up with PMI-1/2;
#: Open MPI with PMIx (Debian's Open MPI has no PMI-2)
SRUN_MPI = {"mpich": "pmi2", "openmpi": "pmix"}


def srun_mpi(stack: Stack) -> str:
    return SRUN_MPI[stack.mpi.impl]


def mpiexec_argv(program: str, mpi: str, ranks: int, binding: str = "none") -> list[str]:
    """`program -n RANKS` with the options of its MPI family: binding is Hydra's -bind-to or Open MPI's
    --bind-to (core, socket); Open MPI gets --oversubscribe, as campaigns here may run more ranks than cores."""
    command = [program, *(["--oversubscribe"] if mpi == "openmpi" else []), "-n", str(ranks)]
    if binding != "none":
        command += ["-bind-to", binding] if mpi == "mpich" else ["--bind-to", binding]
    return command


def launch_command(stack: Stack, ranks: int, argv: list[str], *, binding: str = "none") -> list[str]:
    """The image's own launcher, e.g. ['mpiexec.mpich', '-n', '2', 'mpistack-bench', ...]."""
    return [*mpiexec_argv(stack.launcher, stack.mpi.impl, ranks, binding), *argv]


def _export(name: str, value: str, where: str) -> str:
    return f"export {check_env_name(name, where)}={shlex.quote(value)}"


def env_script(stack: Stack, **options) -> str:
    preset = presets(stack, **options)
    lines = ["# " + comment(f"mpistack runtime environment for {stack.name} ({stack.mpi.impl} {stack.mpi.version}, "
                            f"network {options.get('network') or stack.network})")]
    lines += ["# " + comment(note) for note in preset.notes]
    lines += [_export(key, value, "environment preset") for key, value in preset.env.items()]
    return "\n".join(lines) + "\n"


def _toml_str(value: str) -> str:
    return json.dumps(str(value))  # a JSON string is a valid TOML basic string


def ce_image(ref: str) -> str:
    """registry/name:tag -> registry#name:tag, the Container Engine's spelling."""
    if "#" in ref or ref.startswith("/"):
        return ref
    first, _, rest = ref.partition("/")
    if rest and ("." in first or ":" in first or first == "localhost"):
        return f"{first}#{rest}"
    return ref


def edf(stack: Stack, *, image: str | None = None, mounts: list[str] | None = None, workdir: str | None = None,
        cxi_hook: bool = True, gpu: bool = False) -> str:
    """A CSCS Container Engine environment definition file (TOML)."""
    preset = presets(stack, gpu=gpu)
    lines = ["# " + comment(f"CSCS Container Engine EDF for {stack.name}, written by mpistack"),
             f"# run with: srun --mpi={srun_mpi(stack)} --environment=<this file> ...",
             f"image = {_toml_str(ce_image(image or stack.image_ref()))}"]
    if mounts:
        lines.append("mounts = [" + ", ".join(_toml_str(m) for m in mounts) + "]")
    if workdir:
        lines.append(f"workdir = {_toml_str(workdir)}")
    if preset.env:
        lines += ["", "[env]"] + [f"{check_env_name(k, 'EDF env')} = {_toml_str(v)}" for k, v in preset.env.items()]
    lines += ["", "[annotations]", f"com.hooks.cxi.enabled = {_toml_str('true' if cxi_hook else 'false')}"]
    return "\n".join(lines) + "\n"


def refusal(stack: Stack, approach: str) -> str | None:
    """Why `approach` cannot serve `stack` by its stack file alone (fabric-swap and a UCX build), else None:
    the approach's own `refuses` capability, which its runs and the doctor give too."""
    refuses = APPROACHES.get(approach).capabilities.get("refuses")
    return refuses(stack) if refuses else None


def apptainer_binds(stack: Stack, approach: str, *, system: str = DEFAULT_SYSTEM) -> list[str]:
    """HOST:CONTAINER bind specifications for `approach` on `system` (an approach the profile leaves out,
    such as container, binds nothing). Raises ValueError for an unknown approach, one that cannot serve the
    stack (`refusal`) or a path that cannot be written into a bind list."""
    profile = systems.load(system)
    paths = list(profile.paths(approach).binds)
    if (refused := refusal(stack, approach)) is not None:
        raise ValueError(refused)
    if approach in profile.gpu_runtime_for and stack.gpu.kind == "rocm":
        paths.append(stack.gpu.prefix or "/opt/rocm")
    return [check_bind(spec if ":" in spec else f"{spec}:{spec}", f"system {system}, approach {approach}")
            for spec in paths]


def apptainer_env(stack: Stack, approach: str, *, system: str = DEFAULT_SYSTEM) -> dict[str, str]:
    return dict(systems.load(system).paths(approach).env)


def apptainer_script(stack: Stack, approach: str, *, system: str = DEFAULT_SYSTEM) -> str:
    """A file to source before `apptainer exec`: APPTAINER_BIND and APPTAINERENV_* for the approach."""
    profile = systems.load(system)
    body = ["# " + comment(f"Apptainer settings for the {approach} approach of {stack.name} on system "
                           f"{system} ({profile.source}): source this file, then"),
            "#   apptainer exec IMAGE.sif ...",
            _export("APPTAINER_BIND", ",".join(apptainer_binds(stack, approach, system=system)), "bind list")]
    body += [_export(f"APPTAINERENV_{check_env_name(key, 'Apptainer env')}", value, "Apptainer env")
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
                     if name in systems.load(system).approaches and refusal(stack, name) is None):
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
