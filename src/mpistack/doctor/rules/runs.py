"""Rules on one stored run (``store.query.run_diagnostics``): its message against the signature bank, the
known hang, the validation failure of Open MPI's AVX reductions, and the transport its MPI said it used."""

from __future__ import annotations


from ...analysis.evidence import row_scope
from ...campaign.stages import NOT_LAUNCHED
from ...engines.confinement import Confinement, size_bytes
from ...spec.campaign import DEFAULT_VARIANT
from ...spec.status import RunStatus
from ..model import rule
from ...parsers.transport import TCP, path_of
from ..signatures import match
from .fixes import runtime_of, single_copy_fix, tcp_fix
from .system import OMPI_SHM_PER_RANK, mpi_family

def run_cell(run: dict) -> tuple[str, str, str, str]:
    """The compatibility-matrix cell of a run: (scope, stack, approach, variant), scoped as the analysis' rows."""
    return (row_scope(run), run["stack"] or "", run["approach"] or "", run["tags"].get("variant", DEFAULT_VARIANT))


def subject_of(run: dict) -> str:
    what = " ".join(part for part in (run.get("stack"), run.get("approach")) if part)
    return f"run {run['run']}" + (f" ({what}, {run.get('benchmark')})" if what else "")


def _mpi(run: dict) -> str | None:
    return run["tags"].get("mpi") or mpi_family(run.get("mpi_library_version"))


#: the bank's messages of a rank refused another's shared memory across user namespaces (UCX's posix proc-link, its
#: FIFO attach, CMA): between ranks on different nodes they mean the nodes share one kernel (one_kernel_nodes)
SHM_ATTACH_REFUSED = ("ucx-posix-proc-link-denied", "ucx-mm-connect-failed", "ucx-cma-eperm")


def one_kernel_nodes(run: dict) -> tuple[str, str] | None:
    """For a run over several nodes that share one kernel (nodes that are namespaces of one machine, as a
    one-machine Slurm cluster's), whose ranks in user namespaces of their own met UCX's shared memory between
    the nodes: the node names and how that is known. `recorded`: ranks of several host names said one boot id
    and different user namespaces (mpistack-bench's confinement lines in the transport probe), and a rank was
    refused another's memory or the MPI said it took shared memory between nodes; `inferred`: every rank alone on
    its node, yet one was refused another's shared memory, which UCX offers only to peers of its own system (one
    boot id: ucs_get_system_id). None otherwise (ranks of one user namespace share memory across such nodes)."""
    if (run.get("nodes") or 1) < 2 or not launched(run):
        return None
    transport = run.get("transport") or {}
    refused = any(hit.signature.id in SHM_ATTACH_REFUSED for hit in match(run.get("message")))
    if transport.get("one_kernel") == "none":
        return None  # the ranks said their boot ids: no two nodes share a kernel
    if transport.get("one_kernel"):
        apart = "user" in transport.get("one_kernel_separate", "").split(",")
        met = refused or transport.get("inter") == "shm"
        return (transport["one_kernel"], "recorded") if apart and met else None
    if ranks_per_node(run) == 1 and refused:
        return (run.get("tags") or {}).get("slurm_nodes") or f"{run['nodes']} nodes", "inferred"
    return None


@rule("run-signatures", "runs", "the signature bank (data/doctor/signatures.toml), each entry with its public source",
      "every known message in the run's stored message and output")
def run_signatures(rule, run: dict):
    explained = shm_cause(run) is not None  # a shared-memory failure is said by container-shm, with its cause
    one_kernel = one_kernel_nodes(run) is not None  # a refused attach between nodes is nodes-one-kernel's to say
    for hit in match(run.get("message")):
        signature = hit.signature
        if (explained and signature.id in SHM_FAILURES) or (one_kernel and signature.id in SHM_ATTACH_REFUSED):
            continue
        yield rule.finding(hit.verdict, signature.id, signature.meaning, signature.fix,
                           subject=subject_of(run), cell=run_cell(run), source=signature.source, line=hit.line,
                           status=run.get("status"))


@rule("mpich-ucx-tcp-finalize-hang", "runs",
      "measured on a 2-core Debian 12 KVM guest: Debian MPICH 4.0.2 over UCX 1.13.1 with UCX_TLS=tcp hangs in "
      "MPI_Finalize in about one launch of three (docs/slurm.md); UCX issue on Finalize hangs of tcp endpoints (https://github.com/openucx/ucx/issues/2254)",
      "a timeout of MPICH 4.0.2 over UCX with UCX_TLS=tcp: the known hang in MPI_Finalize")
def finalize_hang(rule, run: dict):
    environment = run.get("environment") or {}
    tls = environment.get("UCX_TLS", "")
    version = run.get("mpi_library_version") or ""
    if run.get("status") != RunStatus.TIMEOUT.value or _mpi(run) != "mpich" or "tcp" not in tls.split(","):
        return
    if version and "4.0.2" not in version:
        return
    yield rule.finding("warning", "known hang: MPICH 4.0.2 over UCX tcp in MPI_Finalize",
                       "The benchmark most likely finished its work and then hung in MPI_Finalize: Debian's MPICH "
                       "4.0.2 with UCX 1.13 and UCX_TLS=tcp does this now and then (often with 3 or more ranks). "
                       "The timeout is the hang, not a slow transport.",
                       "Keep a case timeout (the campaign's) and repeat the launch; use UCX_TLS=tcp,self or "
                       "MPICH over libfabric's tcp provider (pip-mpich with FI_PROVIDER=tcp) for a TCP baseline.",
                       subject=subject_of(run), cell=run_cell(run), UCX_TLS=tls, status=run.get("status"))


@rule("ompi-avx-char-validation", "runs", "https://github.com/open-mpi/ompi/issues/8045 (Incorrect reduction with "
      "op avx and dtype overflow, wontfix)",
      "a validation failure from 16 B on in an Open MPI reduction: the AVX op and an overflowing MPI_CHAR sum")
def avx_validation(rule, run: dict):
    sizes = run.get("failed_sizes") or []
    reductions = ("allreduce", "reduce", "reduce_scatter")
    if _mpi(run) != "openmpi" or run.get("benchmark") not in reductions:
        return
    if not sizes and run.get("status") != RunStatus.VALIDATION_FAILED.value:
        return
    first = min((size for size in sizes if size is not None), default=None)
    if first is not None and first < 16:
        return
    yield rule.finding("warning", "validation failure of Open MPI's AVX reduction, not of the transport",
                       "Open MPI 4.1+ reduces 16 or more bytes with vector (AVX) code; a MPI_CHAR sum that overflows "
                       "comes out differently there than in the scalar code the check assumes (upstream: wontfix). "
                       "The messages arrived intact.",
                       "Exclude the avx op component (OMPI_MCA_op=^avx) for validated runs, or validate with "
                       "values whose sum does not overflow.", subject=subject_of(run), cell=run_cell(run),
                       failed_sizes=sizes, benchmark=run.get("benchmark"))


@rule("transport-evidence", "runs",
      "UCX ucp_worker ep_cfg log (UCX_LOG_LEVEL=info); MPICH MPIR_CVAR_DEBUG_SUMMARY "
      "(https://github.com/pmodels/mpich/pull/5526) and MPIR_CVAR_NOLOCAL, 'as though all processes are located on "
      "another node' (https://github.com/pmodels/mpich/blob/main/src/util/mpir_nodemap.c); Open MPI pml_base_verbose "
      "and btl_base_verbose",
      "the path the run's ranks took for their placement, as their MPI recorded it (between ranks of one node when "
      "the run had one node): TCP where shared memory or the fabric was due")
def transport_evidence(rule, run: dict):
    transport = {key: value for key, value in (run.get("transport") or {}).items() if value}
    if not transport:
        return
    nodes = run.get("nodes") or 1
    path, via = path_of(transport, nodes)
    evidence = {key: transport[key] for key in ("intra", "intra_via", "inter", "inter_via", "layer", "provider",
                                                "single_copy", "eager_limit", "probe", "note") if key in transport}
    common = {"subject": subject_of(run), "cell": run_cell(run), **evidence}
    if path == TCP and nodes == 1:
        yield rule.finding("warning", "ranks on one node talked over TCP (recorded)",
                           f"The MPI library said it sent between ranks that share a node over TCP ({via}): no "
                           "shared-memory path (a transport list without sm, a provider forced to tcp with "
                           "MPIR_CVAR_NOLOCAL=1, a container without a shared /dev/shm or IPC namespace).",
                           tcp_fix(transport, one_node=True), cause="tcp-intra", **common)
    elif path == TCP:
        yield rule.finding("warning", "inter-node traffic over TCP (recorded)",
                           f"The fabric provider (cxi, verbs, efa) was not used between nodes ({via}).",
                           "Bring the fabric into the container (CXI hook, host libfabric and /dev/cxi*); check "
                           "fi_info -p cxi inside it.", cause="tcp-inter", **common)
    else:
        yield rule.finding("ok", f"{'intra' if nodes == 1 else 'inter'}-node path: {path or 'not recorded'}"
                           + (f" ({via})" if via else ""), "What the MPI library said it used.", **common)


#: the bank's messages of a container refusing cross-process memory attach (CMA): Open MPI 4 and 5, and UCX
CMA_REFUSED = ("cma-permission-denied", "cma-read-eperm", "smsc-cma-no-permission", "ucx-cma-eperm")


def confinement_of(run: dict) -> str:
    """What the run's containers were allowed, as recorded (``approaches.base.confinement``); ``native`` for
    ranks that ran as host processes."""
    recorded = (run.get("tags") or {}).get("confinement")
    return recorded or ("native" if run.get("approach") == "native" else "not recorded")


def single_copy_settings(environment: dict) -> list[str]:
    """The settings in a run's environment that turn single copy off: Open MPI's vader mechanism or smsc
    component set to none, or a UCX_TLS that lists transports without cma (nor an alias holding it: sm, shm,
    all; UCX's ucx_info -d lists what each names)."""
    found = [f"{name}={value}" for name, value in sorted(environment.items())
             if name in ("OMPI_MCA_btl_vader_single_copy_mechanism", "OMPI_MCA_smsc")
             and value.strip() in ("none", "^cma")]
    tls = environment.get("UCX_TLS", "")
    listed = {name.strip() for name in tls.split(",")}
    if tls and not tls.startswith("^") and not listed & {"cma", "sm", "shm", "all"}:
        found.append(f"UCX_TLS={tls}")
    return found


@rule("single-copy", "runs",
      "Open MPI 4 help-btl-vader.txt [cma-permission-denied] (https://github.com/open-mpi/ompi/blob/v4.1.x/opal/mca/"
      "btl/vader/help-btl-vader.txt); UCX process_vm_readv EPERM in containers (https://github.com/openucx/ucx/issues/"
      "3545); podman-run(1) --cap-add (https://docs.podman.io/en/latest/markdown/podman-run.1.html)",
      "the single-copy mechanism a one-node run recorded, and its confinement; none, or an attach the container "
      "refused, is a warning (what it costs is the comparison's to say: loss-above-eager, faster-than-native)")
def single_copy(rule, run: dict):
    if (run.get("nodes") or 1) > 1:
        return
    mechanism = (run.get("transport") or {}).get("single_copy")
    refused = [hit for hit in match(run.get("message")) if hit.signature.id in CMA_REFUSED]
    confinement = confinement_of(run)
    record = confinement_record(run)
    common = {"subject": subject_of(run), "cell": run_cell(run), "single_copy": mechanism or "not recorded",
              "confinement": confinement, **({"user_namespace": user_namespace(record)} if record else {})}
    if refused or mechanism == "none":
        settings = single_copy_settings(run.get("environment") or {})
        if confinement == "native":
            # no container took the rights away: the MPI's own settings did, or the kernel's ptrace policy
            fix = (f"The ranks ran on the host, and the run's environment turns single copy off ({', '.join(settings)})"
                   ": unset it where the comparison shows a loss above the eager limit." if settings else
                   "The ranks ran on the host: look for a setting that turns single copy off (Open MPI's "
                   "btl_vader_single_copy_mechanism or smsc, UCX_TLS without cma), and for Yama's "
                   "/proc/sys/kernel/yama/ptrace_scope, which can forbid cross-process memory attach.")
        else:
            fix = ("Where the comparison shows a loss above the eager limit: "
                   + single_copy_fix(runtime_of(run), ranks_per_node(run)))
            if record is not None and record.runtime == "podman" and user_namespace(record) == ROOTLESS_USER_NAMESPACE:
                fix += (" Under rootless podman the user's containers share one user namespace, where processes of "
                        "the user may attach each other without that capability (measured: benchmarks/cma_check.py): "
                        "a refusal there comes from a seccomp filter or Yama's ptrace_scope.")
        yield rule.finding(
            "warning", f"single-copy: {'refused' if refused else 'none'} (recorded), confinement {confinement}",
            "Large messages between ranks of one node are copied twice through shared memory (copy-in/copy-out): "
            + ("the container refused cross-process memory attach. " if refused else
               "the MPI library said it had no single-copy mechanism (no CMA, xpmem or knem). ")
            + "That is not always slower (a copy through shared memory can beat CMA): the paired comparison "
            "says what it cost.",
            # what it can cost is above the eager limit, where messages go by rendezvous
            fix, sizes=_above_eager(run), **common, **({"line": refused[0].line, "signature": refused[0].signature.id} if refused else {}),
            **({"settings": ", ".join(settings)} if settings else {}))
    elif mechanism:
        yield rule.finding(
            "ok", f"single-copy: {mechanism} (recorded), confinement {confinement}",
            "The mechanism the MPI library said it used for large messages on one node; what it costs is the "
            "analysis' to say (the paired comparison with native), not the doctor's.", **common)


def _above_eager(run: dict) -> tuple[int, None] | None:
    """The sizes a missing single copy can cost (above the recorded eager limit), or None where none was recorded."""
    eager = str((run.get("transport") or {}).get("eager_limit", ""))
    return (int(eager), None) if eager.isdigit() else None


# -- a container's /dev/shm ------------------------------------------------------------------------------------

#: the bank's messages of ranks that found no room, or no peer's segment, in shared memory
SHM_FAILURES = ("shm-target-full", "bus-error", "ucx-posix-oom", "ucx-posix-shm-full", "mpich-shm-alloc",
                "ucx-worker-no-resource")


def shm_bytes(text: str) -> int | None:
    """A --shm-size value in bytes (units b, k, m, g; bytes without one); None when it is not one."""
    return size_bytes(text)


def launched(run: dict) -> bool:
    """Whether the run's ranks were started at all: a case stopped before its launch (its image, its approach's
    refusal, a batch job that never started it: campaign/stages.py NOT_LAUNCHED) measured nothing, not even how
    its ranks were confined."""
    return NOT_LAUNCHED not in (run.get("tags") or {})


def confinement_record(run: dict) -> Confinement | None:
    """The confinement the run's containers had, as recorded (engines.Confinement); None for ranks run natively,
    a run recorded without one, or one never launched (no ranks, no confinement to speak of)."""
    if not launched(run):
        return None
    return Confinement.from_record((run.get("tags") or {}).get("confinement_record"))


#: the user namespace of a rootless engine's ranks: one for all of a user's containers, not the host's
ROOTLESS_USER_NAMESPACE = "one, the user's (rootless)"


def user_namespace(record: Confinement) -> str:
    """Which user namespace the ranks of a node ran in: the host's (root podman, docker), one of the user's
    shared by every rank (rootless podman, joined Charliecloud ranks), or one per rank."""
    if "user" in record.host:
        return "the host's"
    return ROOTLESS_USER_NAMESPACE if "user" in record.shared else "one per rank"


def ranks_per_node(run: dict) -> int:
    """The most ranks a node of the run held (its ranks spread evenly over its nodes, the rest on the first)."""
    return -(-(run.get("ranks") or 1) // (run.get("nodes") or 1))


def _mib(size: int) -> str:
    return f"{size // 1024 ** 2} MiB" if size >= 1024 ** 2 else f"{size} bytes"


#: the approaches whose ranks the host's launcher starts, one container each (approaches/hybrid.py per_rank_launch)
PER_RANK_APPROACHES = ("hybrid", "bind", "fabric-swap")


def shm_cause(run: dict) -> tuple[str, dict] | None:
    """What the run's containers left its ranks of shared memory, by their recorded confinement: ranks of one node in
    containers of their own without the host's IPC namespace (``ipc-not-shared``: each has a /dev/shm of its own),
    or a /dev/shm below what the node's ranks need (``shm-size``); with the evidence. None for a native run or
    one whose containers had room."""
    confinement = confinement_record(run)
    if confinement is None:
        return None
    per_node = ranks_per_node(run)
    evidence = {"confinement_record": run["tags"]["confinement_record"], "confinement": confinement_of(run),
                "ranks_per_node": per_node}
    if run.get("approach") in PER_RANK_APPROACHES and "ipc" not in confinement.shared and per_node > 1:
        return "ipc-not-shared", evidence
    size = confinement.shm_bytes
    if size is not None and size < OMPI_SHM_PER_RANK * per_node:
        return "shm-size", {**evidence, "shm_size": _mib(size),
                            "needed": f"{OMPI_SHM_PER_RANK * per_node // 1024 ** 2} MiB"}
    return None


_SHM_SOURCE = ("podman-run(1) --shm-size and --ipc (https://docs.podman.io/en/latest/markdown/podman-run.1.html); "
               "MPICH MPIDU_Init_shm_init (https://github.com/pmodels/mpich/blob/main/src/mpid/common/shm/"
               "mpidu_init_shm.c); Open MPI help-opal-shmem-mmap.txt [target full] (https://github.com/open-mpi/ompi/"
               "blob/main/opal/mca/shmem/mmap/help-opal-shmem-mmap.txt); measured on a 2-core Debian 12 KVM guest: "
               "Open MPI 5 asks 16 MiB of /dev/shm per local rank")


@rule("container-shm", "runs", _SHM_SOURCE,
      "a failed run whose containers left its ranks without shared memory, by their recorded confinement: a "
      "container per rank without the host's IPC namespace (each rank its own /dev/shm), or a /dev/shm below 16 MiB "
      "per rank of the node")
def container_shm(rule, run: dict):
    if run.get("status") not in (RunStatus.FAILED.value, RunStatus.TIMEOUT.value):
        return
    diagnosis = shm_cause(run)
    if diagnosis is None:
        return
    cause, evidence = diagnosis
    hits = [hit for hit in match(run.get("message")) if hit.signature.id in SHM_FAILURES]
    if hits:
        evidence = {**evidence, "line": hits[0].line, "signature": hits[0].signature.id}
    said = (f"The run failed with {hits[0].signature.id} ({hits[0].line}). " if hits else
            "The run failed without a known message; its containers' confinement is the likely cause. ")
    if cause == "ipc-not-shared":
        yield rule.finding(
            "problem" if hits else "warning", "ranks in containers of their own without a shared IPC namespace",
            said + f"Each of the node's {evidence['ranks_per_node']} ranks ran in a container of its own without "
            "--ipc host: each had a /dev/shm of its own, so no rank could map the segment another created.",
            "Start a container per rank with --ipc host (mpistack's hybrid does unless a variant sets "
            "share_ipc = false), or run the node's ranks in one container.", subject=subject_of(run),
            cell=run_cell(run), cause=cause, status=run.get("status"), **evidence)
    else:
        yield rule.finding(
            "problem" if hits else "warning",
            f"/dev/shm of {evidence['shm_size']} below what {evidence['ranks_per_node']} ranks need "
            f"({evidence['needed']})",
            said + f"The container's /dev/shm was {evidence['shm_size']} (--shm-size); the MPI's shared-memory "
            "segments for the node's ranks did not fit.",
            "--shm-size=1g (mpistack's default) or --ipc host for the container.", subject=subject_of(run),
            cell=run_cell(run), cause=cause, status=run.get("status"), **evidence)


# -- more ranks than CPUs ---------------------------------------------------------------------------------------

@rule("run-oversubscription", "runs",
      "Open MPI FAQ 'Running MPI jobs', oversubscribing (https://www.open-mpi.org/faq/?category=running#"
      "oversubscribing); measured on a 2-core Debian 12 KVM guest: MPICH 4.0.2 (ch4:ucx), 4 ranks on 2 cores, "
      "allreduce 4-10 ms",
      "a run with more ranks per node than the CPUs its launcher's processes could run on (recorded by the local "
      "launcher as cpus)")
def run_oversubscription(rule, run: dict):
    cpus = (run.get("tags") or {}).get("cpus", "")
    ranks, nodes, per_node = run.get("ranks") or 1, run.get("nodes") or 1, ranks_per_node(run)
    if not cpus.isdigit() or per_node <= int(cpus):
        return
    mpi = _mpi(run)
    yield rule.finding(
        "problem", f"oversubscribed: {per_node} ranks per node on {cpus} CPUs",
        f"The run started {ranks} ranks on {nodes} node(s), {per_node} per node, where its processes could run on "
        f"{cpus} CPUs: ranks wait for a CPU, and the figures measure the scheduler, not the transport"
        + (" (MPICH busy-polls: latencies become milliseconds)." if mpi == "mpich" else "."),
        "Run at most one rank per CPU (fewer ranks per node, or more nodes).", subject=subject_of(run),
        cell=run_cell(run), cause="oversubscription", ranks=ranks, nodes=nodes, ranks_per_node=per_node,
        cpus=int(cpus), benchmark=run.get("benchmark"))
