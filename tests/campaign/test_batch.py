"""The batch run's bookkeeping: what each way a job can end does to its cases, with a stand-in for the Slurm
commands (the jobs' case directories are written as a job would leave them) and a real store. The real
cluster runs these paths in tests/slurm."""

from __future__ import annotations

import shlex
import sqlite3
import time
from pathlib import Path

import pytest

from mpistack.approaches import HostFacts
from mpistack.campaign import stages
from mpistack.campaign.batch import BatchRun
from mpistack.campaign.matrix import expand, resolve_stacks
from mpistack.campaign.prepare import planning_resources
from mpistack.launchers.slurm import JobState, SlurmError, SlurmLauncher
from mpistack.spec.campaign import SlurmEntry, load_campaign_text
from mpistack.store import open_database
from mpistack.store.campaigns import start_campaign

OSU = "# OSU MPI Latency Test v7.2\n# Size          Latency (us)\n1                       1.00\n"


class StandInSlurm(SlurmLauncher):
    """sbatch, squeue and scancel as a job would answer them: `plan(job, directories)` writes what the job
    left in its cases' directories and returns the state squeue reports (the job script, step settings and
    the --mpi check are the Slurm launcher's own)."""

    def __init__(self, table: SlurmEntry, plan, offered=("pmi2", "pmix")):
        super().__init__(table)
        self.plan, self.offered = plan, set(offered)
        self.jobs: dict[str, str] = {}
        self.directories: dict[str, list[Path]] = {}
        self.cancelled: list[str] = []
        self.failing_polls = 0
        self.polls = 0

    def mpi_plugins(self):
        return self.offered

    def submit(self, script: Path) -> str:
        job = str(len(self.jobs) + 1)
        directories = [Path(shlex.split(line.rstrip("\\"))[1]) for line in script.read_text().splitlines()
                       if line.startswith("mpistack_case ") and "-probe-" not in line]  # cases, not probe steps
        self.directories[job] = directories
        self.jobs[job] = self.plan(job, directories)
        return job

    def states(self, job_ids):
        self.polls += 1
        if self.failing_polls:
            self.failing_polls -= 1
            raise SlurmError("squeue: slurm_load_jobs error: Socket timed out")
        for job in job_ids:
            if self.jobs[job] == "RUNNING":  # a running job runs its cases between two polls
                self.jobs[job] = every_case_ends(job, self.directories[job])
        return {job: JobState(job, self.jobs[job], "BeginTime" if self.jobs[job] == "PENDING" else "", "node1")
                for job in job_ids}

    def cancel(self, job_ids):
        self.cancelled += job_ids

    def jobs_named(self, names):
        return {}


def ended(directory: Path, job: str, status: int = 0, stdout: str = OSU) -> None:
    began(directory, job, time.time() - (3600 if status in (124, 137) else 0))  # a timeout ran for its limit
    (directory / "stdout").write_text(stdout)
    (directory / "exit").write_text(f"{status} {time.time()}\n")


def began(directory: Path, job: str, at: float | None = None) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "started").write_text(f"{job} 0 {time.time() if at is None else at} debug node1\n")


def batch_run(tmp_path: Path, plan, repeats: int = 3, stack: str = 'name = "h"\nhost = "mpich"',
              approach: str = "native", **table):
    campaign = load_campaign_text(
        f'name = "b"\nlauncher = "slurm"\norder = "matrix"\nretries = 1\nrepeats = {repeats}\n'
        f'approaches = ["{approach}"]\n[[stack]]\n{stack}\n'
        '[[benchmark]]\nname = "fake"\nprogram = "/bin/true"\n[[placement]]\nranks = 1\n')
    stacks = resolve_stacks(campaign)
    resources = planning_resources(campaign, stacks, HostFacts())
    database = open_database(str(tmp_path / "b.db"))
    context = stages.CaseContext(campaign, start_campaign(database, campaign.name, {}), resources, None, database)
    slurm = StandInSlurm(SlurmEntry(poll_interval=0.1, max_poll_interval=0.2, **table), plan)
    outcomes = []
    run = BatchRun(context, slurm, tmp_path / "jobs", lambda case, outcome: outcomes.append((case, outcome)))
    return run, slurm, expand(campaign, stacks), outcomes


def stored(tmp_path: Path) -> list[tuple[str, str, str | None]]:
    with sqlite3.connect(tmp_path / "b.db") as connection:
        return connection.execute(
            "SELECT t.value, r.status, r.message FROM runs r JOIN run_tags t ON t.run_id = r.id AND t.key = 'case' "
            "ORDER BY t.value").fetchall()


def tag(tmp_path: Path, case: str, key: str) -> str | None:
    with sqlite3.connect(tmp_path / "b.db") as connection:
        row = connection.execute(
            "SELECT v.value FROM run_tags c JOIN run_tags v ON v.run_id = c.run_id AND v.key = ? "
            "WHERE c.key = 'case' AND c.value = ?", (key, case)).fetchone()
    return row[0] if row else None


def every_case_ends(job: str, directories: list[Path]) -> str:
    for directory in directories:
        ended(directory, job)
    return "COMPLETED"


def test_the_job_time_limit_ends_the_running_case_and_the_rest_go_to_a_new_job(tmp_path):
    def plan(job, directories):
        if job == "1":  # the first case ended, the second was running when the job's time ran out
            ended(directories[0], job)
            began(directories[1], job)
            return "TIMEOUT"
        return every_case_ends(job, directories)

    run, slurm, cases, _ = batch_run(tmp_path, plan)
    assert run.run(cases)
    rows = stored(tmp_path)
    assert [status for _, status, _ in rows] == ["ok", "timeout", "ok"]
    assert "job 1 ended TIMEOUT on node1: the job's time limit ended this case" in rows[1][2]
    assert len(slurm.jobs) == 2
    assert tag(tmp_path, rows[2][0], "attempt") == "2"
    assert "job 1 ended TIMEOUT on node1; it had not started" in tag(tmp_path, rows[2][0], "earlier_attempts")


def test_each_case_records_the_case_its_job_ran_before_it_and_its_place_in_the_schedule(tmp_path):
    run, _, cases, _ = batch_run(tmp_path, every_case_ends)
    assert run.run(cases)
    keys = [key for key, _, _ in stored(tmp_path)]
    assert [tag(tmp_path, key, "previous_case") for key in keys] == [None, *keys[:-1]]
    assert [tag(tmp_path, key, "position") for key in keys] == ["1", "2", "3"]
    assert [tag(tmp_path, key, "round") for key in keys] == ["1", "2", "3"]


def test_node_failures_are_retried_within_the_budget(tmp_path):
    def plan(job, directories):
        for directory in directories:
            began(directory, job)
        return "NODE_FAIL"

    run, slurm, cases, _ = batch_run(tmp_path, plan, repeats=1)
    assert run.run(cases)
    ((_, status, message),) = stored(tmp_path)
    assert len(slurm.jobs) == 2  # retries = 1: one more submission, then failed
    assert status == "failed" and "job 2 ended NODE_FAIL on node1; its node failed, after 2 submission(s)" in message
    assert tag(tmp_path, stored(tmp_path)[0][0], "not_launched") is None  # it ran, on the node that failed


def test_a_failed_job_script_fails_its_cases_with_the_job_log(tmp_path):
    def plan(job, directories):
        for script in directories[0].parent.glob("*.sh"):  # the job's log is named after its script
            script.with_suffix(".out").write_text("/var/spool/slurmd/job01/slurm_script: line 9: timeout: command "
                                                  "not found\n")
        return "FAILED"

    run, slurm, cases, _ = batch_run(tmp_path, plan, repeats=1)
    assert run.run(cases)
    ((_, status, message),) = stored(tmp_path)
    assert len(slurm.jobs) == 3  # cases never started: submitted again twice, then given up
    assert status == "failed" and "timeout: command not found" in message
    assert tag(tmp_path, stored(tmp_path)[0][0], "not_launched") == "queue"  # its step never began


def test_a_job_pending_past_its_limit_is_cancelled(tmp_path):
    run, slurm, cases, _ = batch_run(tmp_path, lambda job, directories: "PENDING", repeats=2, pending_limit=0.3)
    assert run.run(cases)
    assert slurm.cancelled == ["1"]
    assert {status for _, status, _ in stored(tmp_path)} == {"failed"}
    assert "still pending after 0.3 s (reason: BeginTime); cancelled" in stored(tmp_path)[0][2]
    # recorded as never launched: the doctor claims nothing of how its ranks would have been confined
    assert {tag(tmp_path, key, "not_launched") for key, _, _ in stored(tmp_path)} == {"queue"}


def test_a_job_queued_behind_the_campaigns_own_running_job_is_not_cancelled(tmp_path):
    """The demo cluster runs one two-node job at a time: a campaign's later jobs pend behind its first for as
    long as it runs, which is no reason to give them up."""
    run, slurm, cases, _ = batch_run(tmp_path, lambda job, directories: "RUNNING" if job == "1" else "PENDING",
                                     repeats=2, pending_limit=0.3, cases_per_job=1)
    polls_running = 8  # 0.1 to 0.2 s each: the first job runs well past the second's pending limit
    answer = StandInSlurm.states

    def states(job_ids):
        first = slurm.jobs.get("1")
        if first == "RUNNING" and slurm.polls < polls_running:
            slurm.polls += 1
            return {job: JobState(job, slurm.jobs[job], "Resources", "node1") for job in job_ids}
        if first != "RUNNING" and slurm.jobs.get("2") == "PENDING":
            slurm.jobs["2"] = "RUNNING"  # the nodes are free: the second job starts
        return answer(slurm, job_ids)

    slurm.states = states
    assert run.run(cases)
    assert slurm.cancelled == [] and [status for _, status, _ in stored(tmp_path)] == ["ok", "ok"]


def test_transient_poll_failures_are_tolerated(tmp_path):
    run, slurm, cases, _ = batch_run(tmp_path, lambda job, directories: "RUNNING", repeats=2)
    slurm.failing_polls = 3  # squeue fails three times while the job runs, then the job ends
    assert run.run(cases)
    assert slurm.failing_polls == 0 and slurm.polls >= 4
    assert [status for _, status, _ in stored(tmp_path)] == ["ok", "ok"]


def test_too_many_failing_polls_end_the_run(tmp_path):
    run, slurm, cases, _ = batch_run(tmp_path, lambda job, directories: "RUNNING", repeats=1)
    slurm.failing_polls = 100
    with pytest.raises(SlurmError, match="Socket timed out"):
        run.run(cases)
    assert stored(tmp_path) == []  # nothing recorded: --resume finds the job again


def test_a_plugin_srun_lacks_fails_the_case_before_submission(tmp_path):
    run, slurm, cases, _ = batch_run(tmp_path, lambda job, directories: "COMPLETED", repeats=1,
                                     stack='name = "o"\nhost = "openmpi"')
    slurm.offered = {"pmi2", "none"}
    assert run.run(cases)
    ((_, status, message),) = stored(tmp_path)
    assert status == "failed" and "srun --mpi=pmix: this cluster's srun offers none, pmi2" in message
    assert slurm.jobs == {}


@pytest.mark.parametrize("exit_status, status", [(0, "ok"), (124, "timeout"), (3, "failed")])
def test_each_case_is_judged_from_its_exit_file(tmp_path, exit_status, status):
    def plan(job, directories):
        ended(directories[0], job, exit_status)
        return "COMPLETED"

    run, _, cases, outcomes = batch_run(tmp_path, plan, repeats=1)
    assert run.run(cases)
    assert [row[1] for row in stored(tmp_path)] == [status]
    assert outcomes[0][1].status.value == status


def test_a_jobs_probe_step_is_read_once_for_all_its_cases(tmp_path, monkeypatch):
    from mpistack.campaign import probe

    reads = []
    real = probe.read_batch_probe
    monkeypatch.setattr(probe, "read_batch_probe", lambda *args: reads.append(args[-1]) or real(*args))
    run, slurm, cases, outcomes = batch_run(tmp_path, every_case_ends, repeats=4)
    assert run.run(cases)
    assert len(outcomes) == 4 and len(slurm.jobs) == 1
    assert len(reads) == 1  # one configuration in one job: one probe step, read once


def test_a_container_configurations_probe_step_has_its_case_directory(tmp_path):
    """podman refuses a bind mount whose source is missing: a job's probe of a container configuration failed
    with `Error: statfs .../cases/mpistack-probe-...` until its directory was made with the job."""
    run, slurm, cases, _ = batch_run(tmp_path, every_case_ends, repeats=1, stack='name = "pip-mpich"',
                                     approach="container")
    resources = run.context.resources
    resources.workdir = tmp_path / "work"
    resources.images = {"pip-mpich": "localhost/mpistack/pip-mpich:test"}
    assert run.run(cases)
    script = next((tmp_path / "jobs").glob("*.sh")).read_text()
    probes = [path for path in (tmp_path / "work" / "cases").glob("mpistack-probe-*") if path.is_dir()]
    assert len(probes) == 1 and f"{probes[0]}:{probes[0]}" in script
