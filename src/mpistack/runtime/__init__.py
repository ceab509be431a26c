"""Runtime files from the same stack spec: environment presets per MPI and network, the CSCS Container
Engine EDF, and Apptainer bind lists for the host-library approaches ('Docker build pipeline for 4 different container approaches on LUMI' (2025-03-07)).

    presets(stack, gpu=True)      -> {"MPIR_CVAR_CH4_OFI_ENABLE_HMEM": "1", ...}
    srun_mpi(stack)               -> "pmi2" | "pmix"
    edf(stack)                    -> TOML text for ~/.edf/NAME.toml
    apptainer_binds(stack, "hybrid") -> ["/opt/cray/libfabric/...:/opt/cray/libfabric/...", ...]
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from pathlib import Path

from ..spec.stack import Stack

APPROACHES = ("container", "hybrid", "bind", "opensource")


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


def env_script(stack: Stack, **options) -> str:
    preset = presets(stack, **options)
    lines = [f"# mpistack runtime environment for {stack.name} ({stack.mpi.impl} {stack.mpi.version}, "
             f"network {options.get('network') or stack.network})"]
    lines += [f"# {note}" for note in preset.notes]
    lines += [f"export {key}={shlex.quote(value)}" for key, value in preset.env.items()]
    return "\n".join(lines) + "\n"


def _toml_str(value: str) -> str:
    return json.dumps(value)  # a JSON string is a valid TOML basic string


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
    lines = [f"# CSCS Container Engine EDF for {stack.name}, written by mpistack",
             f"# run with: srun --mpi={srun_mpi(stack)} --environment=<this file> ...",
             f"image = {_toml_str(ce_image(image or stack.image_ref()))}"]
    if mounts:
        lines.append("mounts = [" + ", ".join(_toml_str(m) for m in mounts) + "]")
    if workdir:
        lines.append(f"workdir = {_toml_str(workdir)}")
    if preset.env:
        lines += ["", "[env]"] + [f"{k} = {_toml_str(v)}" for k, v in preset.env.items()]
    lines += ["", "[annotations]", f"com.hooks.cxi.enabled = {_toml_str('true' if cxi_hook else 'false')}"]
    return "\n".join(lines) + "\n"


#: host paths an approach binds into the container ('Docker build pipeline for 4 different container approaches on LUMI' (2025-03-07)): hybrid swaps in the host's libfabric
#: and libcxi; bind brings the host's whole Cray MPICH.
HOST_PATHS = {
    "container": [],
    "opensource": [],
    "hybrid": ["/opt/cray/libfabric/{libfabric}", "/usr/lib64/libcxi.so.1", "/usr/lib64/libcxi.so",
               "/usr/lib64/libjson-c.so.3", "/usr/lib64/libnl-3.so.200", "/var/spool/slurmd", "/var/run/munge"],
    "bind": ["/opt/cray", "/usr/lib64/libcxi.so.1", "/usr/lib64/libjson-c.so.3", "/usr/lib64/libnl-3.so.200",
             "/usr/lib64/libpals.so.0", "/var/spool/slurmd", "/var/run/munge", "/usr/share/libdrm/amdgpu.ids"],
}


def apptainer_binds(stack: Stack, approach: str, *, host_libfabric: str = "1.15.2.0") -> list[str]:
    if approach not in APPROACHES:
        raise ValueError(f"approach {approach!r}: expected one of {', '.join(APPROACHES)}")
    paths = [p.format(libfabric=host_libfabric) for p in HOST_PATHS[approach]]
    if approach == "bind" and stack.gpu.kind == "rocm":
        paths.append(stack.gpu.prefix or "/opt/rocm")
    return [f"{p}:{p}" for p in paths]


def apptainer_env(stack: Stack, approach: str, *, host_libfabric: str = "1.15.2.0") -> dict[str, str]:
    if approach == "hybrid":
        return {"LD_LIBRARY_PATH": f"/opt/cray/libfabric/{host_libfabric}/lib64:/usr/lib64"}
    if approach == "bind":
        return {"LD_LIBRARY_PATH": "/opt/cray/pe/mpich/default/ofi/gnu/12.3/lib-abi-mpich:/opt/cray/pe/lib64:"
                                   "/opt/cray/libfabric/default/lib64:/usr/lib64"}
    return {}


def write_runtime(stack: Stack, directory: Path, *, gpu: bool | None = None) -> list[Path]:
    """env.sh, <name>.edf.toml and Apptainer bind lists for the host-library approaches."""
    directory.mkdir(parents=True, exist_ok=True)
    gpu = stack.gpu.kind != "none" if gpu is None else gpu
    written = []
    path = directory / "env.sh"
    path.write_text(env_script(stack, gpu=gpu))
    written.append(path)
    path = directory / f"{stack.name}.edf.toml"
    path.write_text(edf(stack, gpu=gpu))
    written.append(path)
    for approach in ("hybrid", "bind"):
        path = directory / f"apptainer-{approach}.sh"
        body = [f"# Apptainer settings for the {approach} approach ('Docker build pipeline for 4 different container approaches on LUMI' (2025-03-07)): source this file, then",
                "#   apptainer exec IMAGE.sif ...",
                f"export APPTAINER_BIND={shlex.quote(','.join(apptainer_binds(stack, approach)))}"]
        body += [f"export APPTAINERENV_{k}={shlex.quote(v)}" for k, v in apptainer_env(stack, approach).items()]
        path.write_text("\n".join(body) + "\n")
        written.append(path)
    return written
