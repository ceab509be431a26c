"""How to take ranks off TCP, said alike by the rules that read a run's recorded path and by those that compare
its figures: between nodes the fabric; on one node shared memory, which under Open MPI's cm PML means leaving
the MTL, since it carries the messages between ranks of one node too."""

from __future__ import annotations

from ...engines import runtime_class
from ...engines.confinement import Confinement

SHM_FIX = ("Let ranks of one node use shared memory: unset UCX_TLS or include sm in it, unset FI_PROVIDER and "
           "MPIR_CVAR_NOLOCAL (MPICH), keep vader/sm in OMPI_MCA_btl (Open MPI); in containers share IPC "
           "(--ipc host) and /dev/shm.")
FABRIC_FIX = ("Check the provider inside the container (fi_info -p cxi exits 61 when cxi is absent); bring the "
              "host's libfabric and /dev/cxi* in (the CSCS CXI hook: com.hooks.cxi.enabled = \"true\").")
# Open MPI's ofi MTL leaves out by default only the providers that duplicate its own transports (Open MPI pull
# request 5776, https://github.com/open-mpi/ompi/pull/5776): a TCP provider of another name (libfabric 1.17's
# net) is taken, and the cm PML then sends every message through it
CM_DEFAULT_EXCLUDE = "shm,sockets,tcp,udp,rstream,usnic"


def cm_fix(provider: str) -> str:
    first = provider.split(";")[0]
    return (f"Open MPI's cm PML sends every message, those between ranks of one node too, through its ofi MTL's "
            f"provider ({provider}): choose ob1 with its shared-memory BTL (OMPI_MCA_pml=ob1), or leave the provider "
            f"out (OMPI_MCA_mtl_ofi_provider_exclude={CM_DEFAULT_EXCLUDE},{first}; the default list does not name "
            f"{first}).")


def join_fix(runtime: str, per_node: int | None = None) -> str:
    """How the runtime puts the ranks of a node into one namespace set, in its own setting (its module's
    `join_setting`: ch-run --join-ct, apptainer --sharens)."""
    facts = runtime_class(runtime)
    joined = facts.join_setting.format(count=per_node or "N") if facts is not None else ""
    said = f"with {joined}; " if joined else ""
    return (f"Put the node's ranks in one namespace set: {said}in mpistack a variant with namespaces = \"joined\", "
            "or one container per node (approach container).")


def single_copy_fix(runtime: str | None, per_node: int | None = None) -> str:
    """How the ranks' runtime grants them single copy (CMA), in its own settings: podman and docker add
    CAP_SYS_PTRACE and the host's PID namespace; the unprivileged runtimes, whose ranks have no capability to
    add, put a node's ranks in one user namespace; those that run a node's ranks in one container already
    cannot be the cause."""
    facts = runtime_class(runtime)
    if facts is not None and facts.join_setting:
        return join_fix(runtime, per_node)
    if facts is not None and facts.one_container_per_node:
        return (f"{runtime} runs the ranks of a node in one container already: look for a setting that turns single "
                "copy off (btl_vader_single_copy_mechanism, smsc, UCX_TLS without cma) or Yama's "
                "/proc/sys/kernel/yama/ptrace_scope.")
    return ("Grant single-copy rights: podman run --cap-add SYS_PTRACE --pid host (mpistack: an approach with "
            "single_copy = true).")


def runtime_of(run: dict) -> str | None:
    """The runtime that started a stored run's containers, as recorded with it (None: native or not recorded)."""
    tags = run.get("tags") or {}
    confinement = Confinement.from_record(tags.get("confinement_record"))
    return tags.get("runtime") or (confinement.runtime if confinement else None)


def tcp_fix(transport: dict, one_node: bool) -> str:
    """The fix for ranks that took TCP, by what their MPI recorded."""
    if not one_node:
        return FABRIC_FIX
    if transport.get("layer") == "cm" and transport.get("provider"):
        return cm_fix(transport["provider"])
    return SHM_FIX
