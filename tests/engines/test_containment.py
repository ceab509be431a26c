"""Jobs (engines/containment.py) with real processes: every process of a job ends with it, also those that keep
starting new ones in sessions of their own, and the cgroups of jobs whose runner was killed are tidied."""

from __future__ import annotations

import os
import subprocess
import time

import pytest

from mpistack.engines.containment import JOB_VARIABLE, Job, cgroup_parent
from tests.helpers import CONTAINMENT, new_marker, processes_with


def _start(job: Job, marker: str, script: str) -> subprocess.Popen:
    return job.start(["sh", "-c", script], {**os.environ, "MPISTACK_TEST_MARKER": marker})


def _wait_for(marker: str, count: int) -> None:
    deadline = time.monotonic() + 30
    while len(processes_with(marker)) < count:
        assert time.monotonic() < deadline, f"fewer than {count} processes started"
        time.sleep(0.01)


@pytest.mark.parametrize("cgroups", CONTAINMENT)
def test_a_job_that_keeps_starting_processes_in_new_sessions_is_ended(cgroups):
    job = Job.create("test", cgroups=cgroups)
    marker = new_marker()
    try:
        process = _start(job, marker, "while :; do setsid sleep 1000 & sleep 0.02; done")
        _wait_for(marker, 9)  # a margin over the 6 below: the loop's short-lived sleeps may end in between
        assert len(job.members()) >= 6
        assert job.kill(seconds=10)
        process.wait(timeout=10)
        assert processes_with(marker) == {} and job.members() == []
    finally:
        job.kill()  # a failed assertion must not leave the loop starting processes for ever
        job.close()


def test_the_fallback_finds_the_job_by_its_variable_and_not_others():
    mine, other = Job.create("test", cgroups=False), Job.create("test", cgroups=False)
    assert mine.cgroup is None and mine.environment() == {JOB_VARIABLE: mine.ident}
    marker = new_marker()
    first, second = _start(mine, marker, "exec sleep 1000"), _start(other, marker, "exec sleep 1000")
    try:
        _wait_for(marker, 2)
        assert mine.members() == [first.pid] and other.members() == [second.pid]
    finally:
        for job in (mine, other):
            job.kill()
        first.wait(), second.wait()


@pytest.mark.skipif(cgroup_parent()[0] is None, reason=cgroup_parent()[1])
def test_empty_cgroups_of_killed_runners_are_removed_and_busy_ones_kept():
    parent = cgroup_parent()[0]
    dead = subprocess.Popen(["true"])
    dead.wait()
    empty, busy = parent / f"mpistack-case-{dead.pid}-0-aaaaaa", parent / f"mpistack-case-{dead.pid}-1-bbbbbb"
    empty.mkdir(), busy.mkdir()
    left = Job(busy.name, busy, "")
    process = _start(left, new_marker(), "exec sleep 1000")
    try:
        Job.create("test").close()
        assert not empty.exists()
        assert busy.exists() and left.members() == [process.pid]  # the next campaign run ends and reports it
    finally:
        left.kill()
        process.wait()
        left.close()
        assert not busy.exists()
