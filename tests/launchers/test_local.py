"""The local launcher ends every process a case starts with the case, real processes throughout: also those
that call setsid (MPICH's Hydra puts its proxy and ranks in sessions of their own), whether the case times out,
is interrupted, ends by itself with something still running, or outlives a killed runner. Both ways of
containing a case are tested: a cgroup of its own, and the environment variable used where none can be made."""

from __future__ import annotations

import json
import socket
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from mpistack.engines.containment import Job, cgroup_parent
from mpistack.launchers.base import LaunchPlan
from mpistack.launchers.local import LocalLauncher
from tests.helpers import CONTAINMENT, HAS_CGROUPS, new_marker, processes_with

needs_mpich = pytest.mark.skipif(shutil.which("mpiexec.mpich") is None, reason="mpiexec.mpich is not installed")


def _plan(marker: str, script: str, *argv: str) -> LaunchPlan:
    return LaunchPlan(argv=[*argv, "sh", "-c", script], env={"MPISTACK_TEST_MARKER": marker}, output=None)


class _Watcher(threading.Thread):
    """Records the sessions of the marked processes while the case runs: proof that a child did call setsid."""

    def __init__(self, marker: str):
        super().__init__(daemon=True)
        self.marker, self.sessions, self.done = marker, set(), threading.Event()

    def run(self) -> None:
        while not self.done.is_set():
            self.sessions.update(processes_with(self.marker).values())
            time.sleep(0.05)


# A child that leaves the case's session (setsid) and sleeps; the case's own process sleeps too.
SETSID_CHILD = "setsid sleep 1000 & sleep 1000"


@pytest.mark.parametrize("cgroups", CONTAINMENT)
def test_a_timed_out_case_leaves_no_process_also_not_one_that_called_setsid(cgroups):
    marker = new_marker()
    watcher = _Watcher(marker)
    watcher.start()
    execution = LocalLauncher(cgroups=cgroups).execute(_plan(marker, SETSID_CHILD), timeout=1.5)
    watcher.done.set()
    watcher.join()
    assert execution.timed_out and execution.exit_code is None
    assert len(watcher.sessions) >= 2, "the child never left the case's session: the test proves nothing"
    assert processes_with(marker) == {}
    assert execution.seconds < 1.5 + 3  # SIGTERM ends `sleep` at once: no grace period spent


@needs_mpich
@pytest.mark.parametrize("cgroups", CONTAINMENT)
@pytest.mark.parametrize("limit", [0.01, 0.02, 0.05, 0.15, 0.3, 0.6])
def test_a_timeout_while_mpiexec_starts_leaves_no_proxy_and_no_rank(cgroups, limit):
    """Hydra starts its proxy and the ranks in sessions of their own; a limit that falls while it starts them
    used to leave them running."""
    marker = new_marker()
    plan = _plan(marker, SETSID_CHILD, "mpiexec.mpich", "-n", "2")
    execution = LocalLauncher(cgroups=cgroups).execute(plan, timeout=limit)
    assert execution.timed_out
    time.sleep(0.2)  # a process that escaped would still be starting
    assert processes_with(marker) == {}


@needs_mpich
@pytest.mark.parametrize("cgroups", CONTAINMENT)
def test_ctrl_c_during_an_mpi_case_ends_mpiexec_its_proxy_and_the_ranks(cgroups):
    marker = new_marker()
    launcher = LocalLauncher(cgroups=cgroups)
    seen = []

    def press_ctrl_c() -> None:  # what the campaign's SIGINT handler does, once the ranks run
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and len(processes_with(marker)) < 5:  # mpiexec, proxy, 2 ranks, 1 child
            time.sleep(0.05)
        seen.append(len(processes_with(marker)))
        launcher.interrupt()

    threading.Thread(target=press_ctrl_c, daemon=True).start()
    execution = launcher.execute(_plan(marker, SETSID_CHILD, "mpiexec.mpich", "-n", "2"), timeout=60)
    assert execution.interrupted and not execution.timed_out and execution.exit_code is None
    assert seen and seen[0] >= 5, f"only {seen} processes of the case ever ran"
    assert processes_with(marker) == {}


@pytest.mark.parametrize("cgroups", CONTAINMENT)
def test_what_a_case_leaves_running_when_it_ends_by_itself_is_ended(cgroups):
    marker = new_marker()
    execution = LocalLauncher(cgroups=cgroups).execute(
        _plan(marker, "setsid sleep 1000 </dev/null >/dev/null 2>&1 & echo done"), timeout=30)
    assert execution.exit_code == 0 and execution.stdout == "done\n"
    assert processes_with(marker) == {}


def test_the_containment_is_recorded_with_the_reason_for_a_fallback():
    marker = new_marker()
    fallback = LocalLauncher(cgroups=False).execute(_plan(marker, "true"), timeout=30)
    assert fallback.facts["containment"] == "environment"
    assert "MPISTACK_JOB" in fallback.facts["containment_note"]
    if HAS_CGROUPS:
        facts = LocalLauncher().execute(_plan(marker, "true"), timeout=30).facts
        assert facts["containment"] == "cgroup" and "containment_note" not in facts


@pytest.mark.skipif(not HAS_CGROUPS, reason=cgroup_parent()[1])
def test_a_case_cgroup_is_removed_when_the_case_ends():
    before = set(cgroup_parent()[0].glob(f"mpistack-case-{os.getpid()}-*"))
    LocalLauncher().execute(_plan(new_marker(), SETSID_CHILD), timeout=0.5)
    assert set(cgroup_parent()[0].glob(f"mpistack-case-{os.getpid()}-*")) == before


RUNNER = """
import sys
from pathlib import Path
from mpistack.launchers.base import LaunchPlan
from mpistack.launchers.local import LocalLauncher
from tests.helpers import CONTAINMENT, HAS_CGROUPS, new_marker, processes_with
plan = LaunchPlan(argv=["sh", "-c", "setsid sleep 1000 & sleep 1000"], env={"MPISTACK_TEST_MARKER": sys.argv[2]},
                  output=None)
LocalLauncher(state_dir=Path(sys.argv[1]), cgroups=sys.argv[3] == "True").execute(plan, timeout=600)
"""


@pytest.mark.parametrize("cgroups", CONTAINMENT)
def test_a_killed_runner_leaves_its_case_for_the_next_start_to_end(tmp_path, cgroups):
    """SIGKILL of the runner runs no handler: its case survives it, and `end_leftovers` ends all of it
    (also the child in a session of its own) at the next start."""
    marker = new_marker()
    runner = subprocess.Popen([sys.executable, "-c", RUNNER, str(tmp_path), marker, str(cgroups)])
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and len(set(processes_with(marker)) - {runner.pid}) < 3:
        time.sleep(0.05)
    runner.kill()
    runner.wait()
    assert len(processes_with(marker)) == 3  # sh, its sleep, the setsid child's sleep
    record = json.loads(next(tmp_path.glob("running-*.json")).read_text())
    ended = LocalLauncher(state_dir=tmp_path).end_leftovers()
    assert ended == [f"3 process(es) of `sh -c 'setsid sleep 1000 & sleep 1000'` (job {record['job']}; its runner, "
                     f"process {runner.pid} on {socket.gethostname()}, is gone)"]
    assert processes_with(marker) == {}
    assert list(tmp_path.glob("running-*.json")) == []
    if cgroups:
        assert not Path(record["cgroup"]).exists()


def test_a_job_ends_a_process_that_ignores_sigterm_after_the_grace():
    job = Job.create("test")
    try:
        marker = new_marker()
        process = job.start(["sh", "-c", "trap '' TERM; setsid sh -c \"trap '' TERM; sleep 1000\" & wait"],
                            {**os.environ, "MPISTACK_TEST_MARKER": marker})
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and len(processes_with(marker)) < 3:
            time.sleep(0.05)
        started = time.monotonic()
        assert job.end(grace=1) >= 3
        assert 1 <= time.monotonic() - started < 3
        process.wait(timeout=5)
        assert process.returncode == -signal.SIGKILL
        assert processes_with(marker) == {}
    finally:
        job.close()
