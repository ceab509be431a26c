"""The rank-namespaces rule on runs written through the real store writer: ranks of one node in separate user
namespaces (the inodes each rank said, through the transport probe, or the runtime's declared confinement), with
the runtime's own fix and the workaround's cost; joined ranks and native ranks say nothing."""

from __future__ import annotations

from mpistack.doctor import diagnose_runs
from mpistack.engines import CharliecloudEngine, ContainerRun
from mpistack.parsers.model import ParsedRun
from mpistack.parsers.transport import parse_transport
from mpistack.spec.provenance import Provenance
from mpistack.spec.status import RunStatus
from mpistack.store import open_database
from mpistack.store.query import Where

from .test_stored import store_runs

#: what two ranks said before MPI_Init, each in a ch-run of its own (user and mount namespaces apart)
SEPARATE = """mpistack-bench: confinement host=vm pid=11 uid=1001 cap_eff=0 ns_user=4026532181 ns_ipc=4026531839 ns_pid=4026531836 ns_mnt=4026532182 ns_net=4026531833
mpistack-bench: confinement host=vm pid=12 uid=1001 cap_eff=0 ns_user=4026532191 ns_ipc=4026531839 ns_pid=4026531836 ns_mnt=4026532192 ns_net=4026531833"""
JOINED = SEPARATE.replace("4026532191", "4026532181").replace("4026532192", "4026532182")


def charliecloud_run(mpi: str, status: RunStatus | None, said: str | None, joined: bool = False,
                     variant: str = "default"):
    run = ContainerRun("image", per_rank=True, join_ranks=2 if joined else 0)
    confinement = CharliecloudEngine().confinement(run)
    facts = Provenance(stack=f"debian-{mpi}", approach="hybrid", ranks=2, nodes=1, command="mpiexec ch-run ...")
    facts.transport = parse_transport(said, mpi) if said else {}
    tags = {"mpi": mpi, "variant": variant, "confinement": confinement.word(), "runtime": "charliecloud",
            "confinement_record": confinement.record()}
    return ParsedRun.empty("latency"), facts, tags, status, "exit status 1" if status else None


def findings(store_url, *runs):
    engine = open_database(store_url)
    campaign = store_runs(engine, *runs)
    return [f for f in diagnose_runs(engine, [Where("campaign", "=", campaign)]) if f.rule == "rank-namespaces"]


def test_separate_user_namespaces_recorded_by_the_ranks_name_the_join_and_the_workarounds_cost(store_url):
    said = findings(store_url, charliecloud_run("mpich", RunStatus.FAILED, SEPARATE))
    assert len(said) == 1
    finding = said[0]
    assert finding.verdict == "problem" and finding.cause == "user-ns-separate"
    assert finding.evidence["known"] == "recorded" and finding.evidence["separate"] == "user,mnt"
    assert "ch-run --join-ct=2 --join-tag=TAG" in finding.fix and 'namespaces = "joined"' in finding.fix
    assert "UCX_POSIX_USE_PROC_LINK=n" in finding.fix and "52 us against 18 us" in finding.fix


def test_a_hang_is_not_bare_it_is_the_namespaces_of_open_mpi(store_url):
    said = findings(store_url, charliecloud_run("openmpi", RunStatus.TIMEOUT, SEPARATE))
    assert [f.verdict for f in said] == ["problem"]
    assert "btl_vader_single_copy_mechanism=none" in said[0].fix and "hung at or below 1 MiB" in said[0].fix


def test_without_the_ranks_word_the_runtimes_declared_confinement_is_read(store_url):
    said = findings(store_url, charliecloud_run("mpich", RunStatus.OK, None))
    assert [(f.verdict, f.evidence["known"]) for f in said] == [("warning", "declared")]


def test_joined_ranks_and_ranks_that_said_they_share_are_not_flagged(store_url):
    assert findings(store_url, charliecloud_run("mpich", RunStatus.OK, JOINED),
                    charliecloud_run("mpich", RunStatus.OK, None, joined=True)) == []


def test_ranks_that_recorded_separate_ipc_namespaces_cannot_share_segments(store_url):
    run = charliecloud_run("mpich", RunStatus.OK, None)
    run[1].transport = {"ns_separate": "user,ipc,mnt", "ns_ranks": "2", "mpi": "mpich"}
    said = {f.cause: f for f in findings(store_url, run)}
    assert set(said) == {"user-ns-separate", "ipc-not-shared"}
    assert said["ipc-not-shared"].verdict == "warning" and "--ipc host" in said["ipc-not-shared"].fix


# -- ranks on different nodes of one machine (the one-machine Slurm cluster) -------------------------------------

#: a ch-run per rank on node1 and node2 of scripts/slurm-cluster: two host names, one boot id
DEMO_NODES = """mpistack-bench: confinement host=node1 pid=11 uid=1001 cap_eff=0 ns_user=4026532181 ns_ipc=4026531839 ns_pid=4026531836 ns_mnt=4026532182 ns_net=4026532001 boot=f1e1000f-9730
mpistack-bench: confinement host=node2 pid=12 uid=1001 cap_eff=0 ns_user=4026532191 ns_ipc=4026531839 ns_pid=4026531836 ns_mnt=4026532192 ns_net=4026532002 boot=f1e1000f-9730"""
#: what Debian's MPICH over UCX said when one rank opened the other's /proc/PID/fd across the two "nodes"
PROC_LINK = ("exit status 137: Abort(339332623) on node 1 (rank 1 in comm 0): Fatal error in internal_Init\n"
             "[1732851234.1] [node2:12 :0] mm_posix.c:219  UCX  ERROR   open(file_name=/proc/11/fd/14 flags=0x0) "
             "failed: Permission denied")


def two_node_run(said: str | None, status: RunStatus | None, message: str | None, joined: bool = False,
                 tags: dict | None = None):
    run = charliecloud_run("mpich", status, said, joined=joined)
    run[1].nodes = 2
    return run[0], run[1], {**run[2], "slurm_nodes": "node[1-2]", **(tags or {})}, status, message


def all_findings(store_url, *runs):
    engine = open_database(store_url)
    return list(diagnose_runs(engine, [Where("campaign", "=", store_runs(engine, *runs))]))


def test_ranks_on_two_nodes_of_one_kernel_are_named_with_a_fix_that_works_there(store_url):
    said = all_findings(store_url, two_node_run(DEMO_NODES, RunStatus.FAILED, PROC_LINK))
    kernel = [f for f in said if f.rule == "nodes-one-kernel"]
    assert len(kernel) == 1 and kernel[0].verdict == "problem"
    finding = kernel[0]
    assert finding.evidence["nodes"] == "node1,node2" and finding.evidence["known"] == "recorded"
    assert "user" in finding.evidence["separate"].split(",")
    assert "UCX_TLS=tcp" in finding.fix and "one container" not in finding.fix
    assert "cannot help" in finding.meaning  # joining a node's ranks is not the fix across nodes
    # the generic message fix ("the node's ranks in one container") is not said beside it, nor a one-node claim
    assert not [f for f in said if f.rule in ("run-signatures", "rank-namespaces")]


def test_without_boot_ids_a_refused_attach_between_lone_ranks_is_inferred(store_url):
    said = all_findings(store_url, two_node_run(None, RunStatus.FAILED, PROC_LINK))
    kernel = [f for f in said if f.rule == "nodes-one-kernel"]
    assert [(f.evidence["known"], f.evidence["nodes"]) for f in kernel] == [("inferred", "node[1-2]")]
    assert not [f for f in said if f.rule == "run-signatures"]


def test_real_nodes_and_ranks_that_met_no_shared_memory_between_nodes_say_nothing_of_one_kernel(store_url):
    own = DEMO_NODES.replace("boot=f1e1000f-9730\n", "boot=aaaa\n")
    over_tcp = two_node_run(DEMO_NODES, RunStatus.OK, None)  # UCX_TLS=tcp: the MPI said TCP between the nodes
    over_tcp[1].transport = {**over_tcp[1].transport, "inter": "tcp"}
    native = two_node_run(DEMO_NODES.replace("4026532191", "4026532181").replace("4026532192", "4026532182"),
                          RunStatus.TIMEOUT, "killed after 60 s")  # one user namespace: a hang is not this
    said = all_findings(store_url, two_node_run(own, RunStatus.FAILED, PROC_LINK), two_node_run(None, RunStatus.OK, None),
                        over_tcp, native)
    assert not [f for f in said if f.rule == "nodes-one-kernel"]


def test_a_case_the_batch_system_never_started_makes_no_namespace_claim(store_url):
    """A job cancelled while pending: the runtime's declared confinement (separate namespaces) was never in
    force, and the probe of another job's cases is not this case's; the doctor says it never started."""
    cancelled = charliecloud_run("mpich", RunStatus.FAILED, SEPARATE)
    cancelled = (cancelled[0], cancelled[1], {**cancelled[2], "not_launched": "queue"}, RunStatus.FAILED,
                 "job 7 still pending after 900 s (reason: Resources); cancelled")
    said = all_findings(store_url, cancelled)
    assert not [f for f in said if f.rule in ("rank-namespaces", "container-shm", "nodes-one-kernel")]
    assert [(f.rule, f.title.split(":")[0]) for f in said if f.verdict == "problem"] == [
        ("not-launched", "never started by the batch system")]
