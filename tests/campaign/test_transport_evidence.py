"""Transport evidence recorded with every run: real MPI, real podman, a real store (no stand-ins), and the
batch run's probe steps with a stand-in for the Slurm commands."""

from __future__ import annotations

import json
import shlex
import shutil
import sqlite3
from collections import Counter
from pathlib import Path

import pytest

from mpistack.campaign import probe
from mpistack.launchers import LaunchPlan, LocalLauncher
from tests.helpers import campaign_file, execution, mpistack

from .test_batch import StandInSlurm, batch_run, ended, every_case_ends

DATA = Path(__file__).parent.parent / "parsers" / "data" / "transport"
SMALL = '["-m", "1:64", "-i", "20", "-x", "2"]'

needs_mpich = pytest.mark.skipif(shutil.which("mpiexec.mpich") is None, reason="Debian's mpich not installed")
needs_openmpi = pytest.mark.skipif(shutil.which("mpirun.openmpi") is None, reason="Debian's openmpi not installed")
needs_podman = pytest.mark.skipif(shutil.which("podman") is None, reason="podman not installed")


def stored_runs(db) -> list[dict]:
    with sqlite3.connect(db) as connection:
        connection.row_factory = sqlite3.Row
        rows = [dict(row) for row in connection.execute(
            "SELECT r.id, r.stack, r.approach, r.status, r.transport, r.environment, "
            "(SELECT value FROM run_tags t WHERE t.run_id = r.id AND t.key = 'variant') AS variant, "
            "(SELECT value FROM run_tags t WHERE t.run_id = r.id AND t.key = 'confinement') AS confinement, "
            "(SELECT count(*) FROM results s WHERE s.run_id = r.id) AS results FROM runs r ORDER BY r.id")]
    for row in rows:
        row["transport"] = json.loads(row["transport"] or "{}")
        row["environment"] = json.loads(row["environment"] or "{}")
    return rows


@needs_mpich
@needs_openmpi
def test_native_campaign_records_tcp_for_forced_tcp_shared_memory_otherwise_and_open_mpis_pml(tmp_path):
    db = tmp_path / "r.db"
    path = campaign_file(tmp_path, f"""
approaches = ["native"]
repeats = 2
timeout = 30
benchmark_options = {SMALL}
benchmarks = ["latency", "bw"]
[[stack]]
name = "host-mpich"
host = "mpich"
[[stack]]
name = "host-openmpi"
host = "openmpi"
[[variant]]
name = "tcp"
env = {{ UCX_TLS = "tcp" }}
stacks = ["host-mpich"]
approaches = ["native"]
""")
    mpistack("run", path, "--db", db, check=None)  # (a timed-out case makes the exit status non-zero)
    runs = stored_runs(db)
    assert len(runs) == 3 * 2 * 2  # three configurations x two benchmarks x two repeats: no probe stored as a run
    # Debian's MPICH 4.0.2 over UCX's tcp transport alone hangs in some launches (examples/local.toml says so):
    # such a launch is a timeout of the tcp variant, and every other launch ran
    hung = [run for run in runs if run["status"] == "timeout"]
    assert all(run["variant"] == "tcp" for run in hung)
    assert all(run["status"] == "ok" and run["results"] > 0 for run in runs if run not in hung)
    by_configuration = {(run["stack"], run["variant"]): run["transport"] for run in runs}
    assert len({json.dumps(run["transport"], sort_keys=True) for run in runs}) == 3  # one probe per configuration
    plain, tcp = by_configuration[("host-mpich", "default")], by_configuration[("host-mpich", "tcp")]
    assert (plain["layer"], plain["network"], plain["single_copy"]) == ("ucx", "shm", "cma")
    assert "sysv/memory" in plain["transports"].split(",")
    assert tcp["network"] == "tcp" and all(item.startswith("tcp/") for item in tcp["transports"].split(","))
    openmpi = by_configuration[("host-openmpi", "default")]
    assert (openmpi["mpi"], openmpi["layer"], openmpi["transports"]) == ("openmpi", "ob1", "vader,self")
    assert openmpi["single_copy"] == "cma" and openmpi["eager_limit"].isdigit()
    # the verbose settings went to the probe only: the timed runs ran without them
    assert not any("UCX_LOG_LEVEL" in run["environment"] or "OMPI_MCA_pml_base_verbose" in run["environment"]
                   for run in runs)
    shown = mpistack("show", runs[0]["id"], "--db", db).stdout
    assert "transport:" in shown and f"layer: {runs[0]['transport']['layer']}" in shown


@needs_mpich
@needs_podman
def test_containers_with_and_without_single_copy_rights_each_record_their_own_probe(tmp_path):
    """One container per rank (hybrid), under podman's default confinement and with single-copy rights
    (--pid host, CAP_SYS_PTRACE, no seccomp filter). On this machine (root, runc) UCX lists and uses
    cross-memory attach under both, so the mechanism recorded is the same (cma): what differs is the
    confinement each probe ran under, which is the run's; the evidence says the default did not cost CMA."""
    db = tmp_path / "r.db"
    path = campaign_file(tmp_path, f"""
approaches = [{{ name = "hybrid" }}, {{ name = "hybrid", single_copy = true }}]
benchmark_options = {SMALL}
benchmarks = ["latency"]
[[stack]]
name = "debian-mpich"
""")
    mpistack("run", path, "--db", db)
    runs = stored_runs(db)
    assert Counter(run["confinement"] for run in runs) == {"host-ipc-pid": 1, "single-copy": 1}
    for run in runs:
        assert run["status"] == "ok", run
        assert (run["transport"]["layer"], run["transport"]["network"]) == ("ucx", "shm")
        assert run["transport"]["single_copy"] == "cma"
    default, single_copy = sorted(runs, key=lambda run: run["confinement"])
    assert default["transport"]["transports"] == single_copy["transport"]["transports"]


@needs_mpich
def test_a_probe_that_fails_is_a_note_and_the_campaign_goes_on(tmp_path):
    db = tmp_path / "r.db"
    path = campaign_file(tmp_path, f"""
approaches = ["native"]
benchmark_options = {SMALL}
benchmarks = ["latency"]
[[stack]]
name = "host-mpich"
host = "mpich"
[[variant]]
name = "no-such-transport"
env = {{ UCX_TLS = "no_such_transport" }}
approaches = ["native"]
""")
    mpistack("run", path, "--db", db)
    runs = {run["variant"]: run for run in stored_runs(db)}
    assert runs["default"]["status"] == "ok" and runs["default"]["transport"]["network"] == "shm"
    broken = runs["no-such-transport"]["transport"]
    assert broken["note"].startswith("probe failed: exit status") and broken["mpi"] == "mpich"
    assert "UCX_LOG_LEVEL=info" in broken["probe"]


def test_a_probe_past_its_limit_is_killed_and_recorded_as_failed(tmp_path):
    launcher = LocalLauncher()
    plan = LaunchPlan(argv=["sh", "-c", "echo started; sleep 60"], env={}, output=None)
    execution = launcher.execute(plan, 0.5)
    assert probe.evidence("mpich", plan, execution) == {
        "probe": "UCX_LOG_LEVEL=info MPIR_CVAR_DEBUG_SUMMARY=1", "mpi": "mpich",
        "note": f"probe failed: no answer within {probe.PROBE_TIMEOUT:g} s"}


def test_the_first_error_line_skips_the_librarys_chatter():
    stderr = ("[1.0] [vm:1:0]  ucp_context.c:1849 UCX  INFO  Version 1.13.1\n"
              "[1.0] [vm:1:0]  ucp_worker.c:1462 UCX  DIAG  failed to open CM\n"
              "Abort(1091471) on node 0: Fatal error in internal_Init: Other MPI error\n")
    found = probe.evidence("mpich", LaunchPlan(["x"], {}, None), execution(exit_code=15, stderr=stderr))
    assert found["note"] == "probe failed: exit status 15: Abort(1091471) on node 0: Fatal error in internal_Init: " \
                            "Other MPI error"


def test_a_batch_job_probes_each_configuration_first_and_its_cases_record_what_it_found(tmp_path):
    """Under Slurm each job starts with a probe step per configuration of its cases; a case records its own
    job's probe (a stand-in for the Slurm commands writes what the job would leave)."""
    probe_steps: list[Path] = []

    class Recording(StandInSlurm):
        def submit(self, script: Path) -> str:
            lines = [line for line in script.read_text().splitlines() if line.startswith("mpistack_case ")]
            steps = [Path(shlex.split(line.rstrip("\\"))[1]) for line in lines if "-probe-" in line]
            assert lines[:len(steps)] == [line for line in lines if "-probe-" in line]  # before every case
            probe_steps.extend(steps)
            for step in steps:
                ended(step, str(len(self.jobs) + 1), stdout=(DATA / "mpich402-ucx-tls-tcp.txt").read_text())
            return super().submit(script)

    run, slurm, cases, _ = batch_run(tmp_path, every_case_ends, repeats=3, cases_per_job=2)
    run.launcher = Recording(slurm.table, every_case_ends)
    assert run.run(cases)
    assert len(probe_steps) == 2  # two jobs, one configuration each
    with sqlite3.connect(tmp_path / "b.db") as connection:
        transports = [json.loads(value) for (value,) in connection.execute("SELECT transport FROM runs")]
    assert len(transports) == 3
    assert all(found["transports"] == "tcp/lo,tcp/eth0" and found["network"] == "tcp" for found in transports)


def test_a_probe_that_fails_in_mpi_init_keeps_what_the_ranks_said_of_their_namespaces():
    """Ranks in separate user namespaces (ch-run each) abort in MPI_Init; their lines, said before it, stand."""
    stderr = "".join(f"mpistack-bench: confinement host=vm pid={pid} uid=1001 cap_eff=0 ns_user={user} ns_ipc=9 "
                     f"ns_pid=8 ns_mnt={user + 1} ns_net=7\n" for pid, user in ((11, 100), (12, 200)))
    stderr += "Abort(1091471) on node 0: Fatal error in internal_Init: Other MPI error\n"
    found = probe.evidence("mpich", LaunchPlan(["x"], {}, None), execution(exit_code=15, stderr=stderr))
    assert found["ns_separate"] == "user,mnt" and found["ns_ranks"] == "2" and found["cap_eff"] == "0"
    assert found["note"].startswith("probe failed: exit status 15: Abort")
    assert probe.CONFINEMENT_ENV == {"MPISTACK_CONFINEMENT": "1"}
