"""Rules on what a campaign would run (``PlanSubject``): a stack deployed by an approach on this machine. The
bind approach's ABI reasons, hybrid's PMIx reasons and fabric-swap's refusal of UCX stacks are the approaches'
own (compat.bind_abi_mismatch through approaches/bind.py, approaches/hybrid.py, approaches/fabric_swap.py), so
the doctor and a campaign agree."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import cache

from ...approaches.fabric_facts import HostLibfabric, probe_host_libfabric
from ...approaches.fabric_swap import NO_HOST_LIBFABRIC, ucx_mismatch
from ...approaches.hybrid import pmi_mismatch
from ...approaches.openmpi_facts import HostOpenMpi, probe_host_openmpi
from ...compat import (MPI_SONAMES, OPEN_MPI_ABI_SOURCE, PMIX_CROSS_VERSION_SOURCE, bind_abi_mismatch,
                       ships_standard_abi, stack_pmix_version)
from ...runtime import SRUN_MPI, presets
from ...spec.stack import Stack
from ..model import rule
from .runs import PER_RANK_APPROACHES

#: the host's Open MPI, read once per process (ompi_info and ldd of its components)
host_openmpi = cache(probe_host_openmpi)


@dataclass
class PlanSubject:
    stack: Stack
    approach: str
    ranks: int = 2
    host_mpi: str | None = None  # the family of the host library bind would mount (None: the image's own)
    host_library: str | None = None  # its path, when found
    host_libfabric: HostLibfabric | None = field(default_factory=probe_host_libfabric)  # what fabric-swap mounts
    host_openmpi: HostOpenMpi | None = field(default_factory=host_openmpi)  # its release and PMIx
    cores: int | None = field(default_factory=os.cpu_count)
    srun_mpi_types: list[str] | None = None
    env: dict[str, str] = field(default_factory=dict)  # the variant's settings on top of the stack's

    @property
    def where(self) -> str:
        return f"{self.stack.name} {self.approach}"

    @property
    def bound_mpi(self) -> str:
        """The host MPI bind mounts: the one named, else the image's own family (as a campaign chooses)."""
        return self.host_mpi or self.stack.mpi.impl

    def host_version(self, mpi: str) -> str | None:
        return self.host_openmpi.version if mpi == "openmpi" and self.host_openmpi else None

    @property
    def host_pmix(self) -> str | None:
        return self.host_openmpi.pmix_version if self.host_openmpi else None


def _abi_mismatch(plan: PlanSubject) -> str | None:
    """The run's own predicate (compat.bind_abi_mismatch) on the plan's image and host."""
    return bind_abi_mismatch(plan.stack.mpi.impl, plan.stack.mpi.version, plan.bound_mpi,
                             plan.host_version(plan.bound_mpi))


@rule("bind-abi", "plan", "Sarus 'ABI compatibility' (https://sarus.readthedocs.io/en/stable/user/abi_compatibility.html); "
      f"{OPEN_MPI_ABI_SOURCE}; "
      "MPI_Abi_get_version(3) (https://docs.open-mpi.org/en/main/man-openmpi/man3/MPI_Abi_get_version.3.html)",
      "bind: whether the host's MPI library can replace the image's (the same ABI, by the MPI's own statements)")
def bind_abi(rule, plan: PlanSubject):
    if plan.approach != "bind":
        return
    image_mpi, host_mpi = plan.stack.mpi.impl, plan.bound_mpi
    evidence = {"image_abi": f"{MPI_SONAMES.get(image_mpi, image_mpi)} {plan.stack.mpi.version}",
                "host_abi": " ".join(filter(None, [MPI_SONAMES.get(host_mpi, "none"), plan.host_version(host_mpi)])),
                "host_library": plan.host_library or "not found"}
    mismatch = _abi_mismatch(plan)
    if mismatch:
        standard = ships_standard_abi(plan.stack)
        yield rule.finding(
            "problem", f"bind refused: {image_mpi} image, {host_mpi} host", mismatch[0].upper() + mismatch[1:] + ".",
            "Use the hybrid approach (the image's own MPI) or fabric-swap (the image's MPI with the host's "
            "libfabric), rebuild the image with the host's MPI family (and a release no newer than the host's), "
            "or build the application against the MPI-5 standard ABI (libmpi_abi.so, mpicc_abi)"
            + (": this stack ships libmpi_abi.so" if standard else "") + ".",
            subject=plan.where, **evidence)
    else:
        yield rule.finding("ok", f"bind: {MPI_SONAMES.get(image_mpi)} on both sides",
                           "MPICH-ABI libraries replace each other; an Open MPI library runs what an older or "
                           "equal release compiled." , subject=plan.where, **evidence)


@rule("plan-fabric-swap", "plan", "CSCS docs 'MPICH image' (https://docs.cscs.ch/software/container-engine/"
      "guidelines-images/image-mpich/); 'Docker build pipeline for 4 different container approaches on LUMI' "
      "(2025-03-07), its libfabric hybrid",
      "fabric-swap: whether the stack's MPI loads libfabric at all and the host has one to swap in (refused as the "
      "run refuses it)")
def plan_fabric_swap(rule, plan: PlanSubject):
    if plan.approach != "fabric-swap":
        return
    mpi = plan.stack.mpi
    mismatch = ucx_mismatch(plan.stack.name, plan.stack)
    if mismatch:
        yield rule.finding(
            "problem", f"fabric-swap refused: {mpi.impl} {mpi.device} talks over UCX",
            f"{mismatch}.",  # the run's own reason, word for word
            "Use the hybrid approach (the image's own MPI and network layer) or bind (the host's MPI), or a stack "
            "whose MPI is built over libfabric (MPICH ch4:ofi, Open MPI over ofi).",
            subject=plan.where, device=f"{mpi.impl} {mpi.device}")
    elif plan.host_libfabric is None:
        yield rule.finding(
            "problem", "fabric-swap refused: no libfabric on this host", f"{NO_HOST_LIBFABRIC[0].upper()}"
            f"{NO_HOST_LIBFABRIC[1:]}.",  # the run's own reason, word for word
            "Install the host's libfabric (Debian: apt install libfabric1) and binutils, or use the hybrid approach "
            "(the image's own libfabric).", subject=plan.where, device=f"{mpi.impl} {mpi.device}")
    else:
        host = plan.host_libfabric
        yield rule.finding("ok", f"fabric-swap: {mpi.impl} {mpi.device} loads libfabric",
                           "The symbol versions its MPI needs are checked against the host's libfabric once the "
                           "image is built (compat rule libfabric-swap-symbol-versions).",
                           subject=plan.where, device=f"{mpi.impl} {mpi.device}",
                           host_libfabric=f"{host.path} {host.version or ''}".strip())


def _refused_before_launch(plan: PlanSubject) -> bool:
    """Whether the approach refuses the stack for a reason of its own before it plans the launch (bind across
    ABIs, fabric-swap of a UCX build or without a host libfabric): that reason is the run's, said by its rule."""
    if plan.approach == "bind":
        return bool(_abi_mismatch(plan))
    if plan.approach == "fabric-swap":
        return bool(ucx_mismatch(plan.stack.name, plan.stack)) or plan.host_libfabric is None
    return False


@rule("hybrid-pmix", "plan", PMIX_CROSS_VERSION_SOURCE,
      "a container per rank (hybrid, bind, fabric-swap) of an MPI that wires up through PMIx (Open MPI): whether "
      "its PMIx talks to the host launcher's PMIx server (refused as the run refuses it)")
def hybrid_pmix(rule, plan: PlanSubject):
    if plan.approach not in PER_RANK_APPROACHES or _refused_before_launch(plan) or plan.stack.mpi.impl == "mpich":
        return
    # bind's ranks are clients of the host's own PMIx (mounted with its MPI); the others of the image's
    client = plan.host_pmix if plan.approach == "bind" else stack_pmix_version(plan.stack)
    evidence = {"image_pmix": client or "unknown", "host_pmix": plan.host_pmix or "unknown"}
    mismatch = pmi_mismatch(plan.stack.name, plan.stack.mpi.impl, client, plan.host_pmix)
    if mismatch:
        yield rule.finding(
            "problem", f"{plan.approach} refused: {plan.stack.mpi.impl} ranks cannot reach the host's PMIx",
            f"{mismatch}.",  # the run's own reason, word for word
            "Run the image's ranks in one container with its own mpirun (the container approach), or start them "
            "with a launcher whose PMIx is v2.1.1 or later on both sides.", subject=plan.where, **evidence)
    else:
        # a wheel's bundled PMIx is known only as its series' first (compat.INTERNAL_PMIX_AT_LEAST)
        bound = " or later" if plan.approach != "bind" and plan.stack.pmix is None and plan.stack.mpi.channel == "pip" \
            else ""
        yield rule.finding("ok", f"{plan.approach}: PMIx {client or '?'}{bound} client, PMIx {plan.host_pmix or '?'} "
                                 "server",
                           "PMIx releases from v2.1.1 on talk to each other; Open MPI itself promises nothing when "
                           "the launcher's release and the ranks' differ, so the run is the evidence.",
                           subject=plan.where, **evidence)


@rule("plan-environment", "plan", "CSCS docs 'MPICH image' and 'OpenMPI' (https://docs.cscs.ch/software/container-engine/"
      "guidelines-images/image-mpich/, https://docs.cscs.ch/software/communication/openmpi/)",
      "the environment the stack needs (runtime presets: FI_PROVIDER, HMEM, OMPI MCA, PMIx psec) missing or contradicted")
def plan_environment(rule, plan: PlanSubject):
    needed = presets(plan.stack, gpu=plan.stack.gpu.kind != "none").env
    given = {**plan.stack.env, **plan.env}
    contradicted = {key: f"{given[key]} (the stack needs {value})" for key, value in needed.items()
                    if key in given and given[key] != value}
    if "FI_PROVIDER" in given and plan.stack.mpi.netmod == "ucx":
        contradicted["FI_PROVIDER"] = f"{given['FI_PROVIDER']} (ignored: this MPICH talks through UCX, not libfabric)"
    if contradicted:
        yield rule.finding("warning", "environment contradicts what the stack needs",
                           "A variable set against the stack's preset changes the transport or breaks start-up.",
                           "Drop or correct: " + ", ".join(contradicted), subject=plan.where, **contradicted)
    else:
        yield rule.finding("ok", "environment: the stack's preset applies" if needed else "environment: none needed",
                           "mpistack sets these for every case of the stack.", subject=plan.where, **needed)


@rule("plan-srun-mpi", "plan", "Slurm 'MPI Users Guide' (https://slurm.schedmd.com/mpi_guide.html)",
      "srun's --mpi plug-in the stack needs (runtime.SRUN_MPI) against srun --mpi=list")
def plan_srun(rule, plan: PlanSubject):
    if plan.srun_mpi_types is None:
        return
    needed = SRUN_MPI[plan.stack.mpi.impl]
    if not any(kind.startswith(needed) for kind in plan.srun_mpi_types):
        yield rule.finding("problem", f"srun lacks --mpi={needed}",
                           f"{plan.stack.mpi.impl} wires up through {needed}; with another type every rank starts alone.",
                           "Use the image's own launcher (launcher = local) or a Slurm with that plug-in.",
                           subject=plan.where, srun_mpi_types=plan.srun_mpi_types)


@rule("plan-oversubscription", "plan", "measured on a 2-core Debian 12 KVM guest: MPICH 4.0.2 (ch4:ucx) "
      "busy-polls, 4 ranks on 2 cores give millisecond latencies; Open MPI FAQ, oversubscribing (https://www.open-mpi.org/faq/?category=running#oversubscribing)",
      "more ranks than cores on one node")
def plan_oversubscription(rule, plan: PlanSubject):
    if plan.cores and plan.ranks > plan.cores:
        mpich = plan.stack.mpi.impl == "mpich"
        yield rule.finding("warning", f"oversubscribed: {plan.ranks} ranks on {plan.cores} cores",
                           "MPICH busy-polls: latencies become milliseconds." if mpich else
                           "Open MPI yields with --oversubscribe, but the figures are not those of a core per rank.",
                           "Run at most one rank per core.", subject=plan.where, ranks=plan.ranks, cores=plan.cores)
