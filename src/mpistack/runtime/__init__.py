"""Runtime files from the same stack spec: environment presets per MPI and network, the CSCS Container
Engine EDF, and the system profiles (runtime/systems.py: `local` by default, `lumi`, `alps`) of the host
paths an approach binds. The Apptainer settings per approach are rendered by approaches/apptainer.py, a later
stage: they depend on what each approach is (the registry's capabilities), which this stage cannot ask.

    presets(stack, gpu=True)      -> {"MPIR_CVAR_CH4_OFI_ENABLE_HMEM": "1", ...}
    srun_mpi(stack)               -> "pmi2" | "pmix"
    edf(stack)                    -> TOML text for ~/.edf/NAME.toml

Every generator escapes each value for its format (shlex.quote for shell, JSON strings for TOML), checks
every variable name against a strict pattern, and keeps newlines out of comments: stack fields reach these
files, and a file that is sourced must not run what a field smuggles in.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from ..engines.cscs_ce import edf_text
from ..recipes.escaping import comment
from ..spec.mpi_family import FAMILIES
from ..spec.stack import Stack
from .systems import check_env_name


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
SRUN_MPI = {name: family.wire_up for name, family in FAMILIES.items()}


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


def export_line(name: str, value: str, where: str) -> str:
    return f"export {check_env_name(name, where)}={shlex.quote(value)}"


def env_script(stack: Stack, **options) -> str:
    preset = presets(stack, **options)
    lines = ["# " + comment(f"mpistack runtime environment for {stack.name} ({stack.mpi.impl} {stack.mpi.version}, "
                            f"network {options.get('network') or stack.network})")]
    lines += ["# " + comment(note) for note in preset.notes]
    lines += [export_line(key, value, "environment preset") for key, value in preset.env.items()]
    return "\n".join(lines) + "\n"


def edf(stack: Stack, *, image: str | None = None, mounts: list[str] | None = None, workdir: str | None = None,
        cxi_hook: bool = True, gpu: bool = False) -> str:
    """A CSCS Container Engine environment definition file (TOML) with the stack's presets
    (engines/cscs_ce.py writes it)."""
    preset = presets(stack, gpu=gpu)
    for name in preset.env:
        check_env_name(name, "EDF env")
    return edf_text(image or stack.image_ref(), env=preset.env, mounts=mounts or (), workdir=workdir,
                    cxi_hook=cxi_hook, title=stack.name, srun_mpi=srun_mpi(stack))
