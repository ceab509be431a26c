"""A sequential campaign on the two-node demo cluster: the pilot's jobs all end and are stored before the look,
then only the open rows' cases (with their baselines and the A/A control) are submitted as the next stage;
the budget counts the stages' wall time, the queue included. Nothing here mocks Slurm or the store.

(File order: after test_slurm_campaign.py, before test_slurm_cluster.py, whose last test stops the cluster.)
"""

from __future__ import annotations

import signal
import sqlite3

import pytest

from tests.cli.test_run_sequential import latency_and_variants

from .test_slurm_campaign import bundles, finish, jobs_dir, start_mpistack
from .test_slurm_cluster import wait_for

pytestmark = pytest.mark.slurm


def sequential_text(tmp_path, budget: str) -> str:
    return f"""
name = "seq"
launcher = "slurm"
pilot = 6
repeats = 10
seed = 3
timeout = 30
budget = "{budget}"
approaches = ["native"]

[slurm]
workdir = "{tmp_path}"
cases_per_job = 12
poll_interval = 0.3
max_poll_interval = 1.0
pending_limit = 300

[[stack]]
name = "h"
host = "mpich"

[[placement]]
ranks = 1

""" + latency_and_variants(tmp_path)


def launches_by_variant(db) -> dict[str, list[tuple[int, int]]]:
    """variant -> (round, job id) of each stored launch."""
    with sqlite3.connect(db) as connection:
        rows = connection.execute(
            "SELECT v.value, r.value, j.value FROM run_tags v "
            "JOIN run_tags r ON r.run_id = v.run_id AND r.key = 'round' "
            "JOIN run_tags j ON j.run_id = v.run_id AND j.key = 'slurm_job_id' WHERE v.key = 'variant'").fetchall()
    found: dict[str, list[tuple[int, int]]] = {}
    for variant, round_, job in rows:
        found.setdefault(variant, []).append((int(round_), int(job)))
    return found


def test_after_the_pilots_jobs_only_open_rows_are_submitted(slurm_cluster, tmp_path):
    out = " ".join(finish(start_mpistack(slurm_cluster, tmp_path, sequential_text(tmp_path, "20m")),
                          timeout=900).split())
    assert "look after 6 rounds:" in out and "rounds 7–10:" in out, out
    launches = launches_by_variant(tmp_path / "db.sqlite")
    assert len(launches["slow"]) == 6, out  # settled at the pilot's look: not submitted again
    assert len(launches["a-a"]) == 10 and len(launches["default"]) >= 10  # the control and the baseline
    pilot_jobs = {job for runs in launches.values() for round_, job in runs if round_ <= 6}
    later_jobs = {job for runs in launches.values() for round_, job in runs if round_ > 6}
    # the second stage was submitted once the pilot's jobs had ended: its jobs are all later ones
    assert later_jobs and min(later_jobs) > max(pilot_jobs)


def test_a_pilot_whose_wall_time_leaves_no_room_for_a_stage_is_the_only_one(slurm_cluster, tmp_path):
    # the pilot's jobs (30 launches, the baseline's twice a round, with their probe steps and queue) take more
    # than the budget's 1 s: the pilot runs whole (a submitted stage is not stopped), the looks are planned to
    # the pilot alone (at its full level), nothing more is submitted, the open rows say why
    out = " ".join(finish(start_mpistack(slurm_cluster, tmp_path, sequential_text(tmp_path, "1")),
                          timeout=600).split())
    launches = launches_by_variant(tmp_path / "db.sqlite")
    assert max(round_ for runs in launches.values() for round_, _ in runs) == 6, out
    assert sum(len(runs) for runs in launches.values()) == 30
    # (unless no row went on at the pilot's look: the noisy row's own forecast may stop it)
    assert "no further round fits in the 0 s left, so the pilot's look is the only one" in out, out
    assert "rounds 7–10" not in out and "sequential, one look, after 6 rounds (no further round was planned)" in out
    assert "the most rounds the budget reached at the pilot's cost" in out or "0 row(s) left open" in out \
        or "row(s) left open" not in out, out


def test_a_killed_sequential_run_resumes_its_stage_without_submitting_twice(slurm_cluster, tmp_path):
    text = sequential_text(tmp_path, "20m")
    script = tmp_path / "latency.sh"  # each launch at least 0.3 s, so that the pilot's jobs are still running
    script.write_text(script.read_text().replace("#!/bin/sh\n", "#!/bin/sh\nsleep 0.3\n", 1))
    proc = start_mpistack(slurm_cluster, tmp_path, text)
    jobs = jobs_dir(tmp_path, "seq")
    assert wait_for(lambda: stored(tmp_path / "db.sqlite") > 0, 120), bundles(jobs)  # the pilot's jobs run
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    submitted = {int(b["job"]) for b in bundles(jobs) if b["job"]}
    out = " ".join(finish(start_mpistack(slurm_cluster, tmp_path, text, "--resume"), timeout=900).split())
    assert "spent by the sessions before" in out and "look after 6 rounds:" in out, out
    launches = launches_by_variant(tmp_path / "db.sqlite")
    pilot = [(variant, round_, job) for variant, runs in launches.items() for round_, job in runs if round_ <= 6]
    assert len(pilot) == 30 and len(launches["slow"]) == 6  # the pilot whole, the settled row not again
    assert {job for _, _, job in pilot} <= submitted  # collected from the jobs submitted before the kill


def stored(db) -> int:
    try:
        with sqlite3.connect(db) as connection:
            return connection.execute("SELECT count(*) FROM runs").fetchone()[0]
    except sqlite3.Error:  # not made yet, or being written
        return 0
