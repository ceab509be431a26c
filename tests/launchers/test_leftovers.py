"""Leftovers only of the dead, and a case's directory treated as hostile, with real processes and real
cgroups: a marker's job is ended only when its runner is provably gone (no such process, or the pid reused
by another), a marker naming a cgroup mpistack did not make ends nothing, and the links a case plants in its
own directory are never written through nor read."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mpistack.engines.containment import cgroup_parent
from mpistack.launchers.base import LaunchPlan
from mpistack.launchers.local import LocalLauncher, process_start_time
from tests.helpers import HAS_CGROUPS, new_marker, processes_with

RUNNER = """
import sys
from pathlib import Path
from mpistack.launchers.base import LaunchPlan
from mpistack.launchers.local import LocalLauncher
plan = LaunchPlan(argv=["sh", "-c", "setsid sleep 1000 & sleep 1000"], env={"MPISTACK_TEST_MARKER": sys.argv[2]},
                  output=None)
LocalLauncher(state_dir=Path(sys.argv[1]), store="sqlite:////tmp/a.db").execute(plan, timeout=600)
"""


def _start_runner(state: Path, marker: str) -> subprocess.Popen:
    runner = subprocess.Popen([sys.executable, "-c", RUNNER, str(state), marker],
                              cwd=Path(__file__).resolve().parents[2])
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (len(set(processes_with(marker)) - {runner.pid}) < 3
                                           or not list(state.glob("running-*.json"))):
        time.sleep(0.05)
    return runner


def test_a_live_runners_case_is_left_alone_and_the_marker_says_whose_it_is(tmp_path):
    """Two campaigns that shared a state directory (the name-keyed work directory did): the second's start
    ended the first's running case. Now a live runner's case is left, and the start says so."""
    marker = new_marker()
    runner = _start_runner(tmp_path, marker)
    try:
        record = json.loads(next(tmp_path.glob("running-*.json")).read_text())
        assert (record["host"], record["pid"], record["store"]) == (socket.gethostname(), runner.pid,
                                                                    "sqlite:////tmp/a.db")
        assert record["pid_started"] == process_start_time(runner.pid)
        said = LocalLauncher(state_dir=tmp_path).end_leftovers()
        assert len(processes_with(marker)) == 4  # the runner, sh, its sleep, the setsid child's sleep
        assert said == [f"left the case of `sh -c 'setsid sleep 1000 & sleep 1000'` running: its runner, process "
                        f"{runner.pid} on {socket.gethostname()} (store sqlite:////tmp/a.db), is still running"]
        assert list(tmp_path.glob("running-*.json"))  # its marker stays, for when it is gone
    finally:
        runner.send_signal(signal.SIGINT)
        runner.kill()
        runner.wait()
        LocalLauncher(state_dir=tmp_path).end_leftovers()
    assert processes_with(marker) == {}


def test_a_marker_whose_pid_now_belongs_to_another_process_is_the_dead_runners(tmp_path):
    """The pid alone does not prove a runner alive: after a reboot or a wrap it may be another process's.
    The start time tells them apart; the other process is not touched."""
    marker = new_marker()
    runner = _start_runner(tmp_path, marker)
    runner.kill()
    runner.wait()
    bystander = subprocess.Popen(["sleep", "1000"])
    try:
        path = next(tmp_path.glob("running-*.json"))
        record = json.loads(path.read_text())
        record["pid"] = bystander.pid  # as if the dead runner's pid had been given to `sleep`
        path.write_text(json.dumps(record))
        said = LocalLauncher(state_dir=tmp_path).end_leftovers()
        assert said[0].startswith("3 process(es) of `sh -c 'setsid sleep 1000 & sleep 1000'`")
        assert f"is gone (process {bystander.pid} is another process now)" in said[0]
        assert processes_with(marker) == {} and bystander.poll() is None
    finally:
        bystander.kill()
        bystander.wait()


@pytest.mark.skipif(not HAS_CGROUPS, reason=cgroup_parent()[1])
def test_a_marker_naming_a_cgroup_mpistack_did_not_make_ends_nothing(tmp_path):
    """A forged marker (a container case could write one into the runner's directory when the whole work
    directory was mounted) naming a host cgroup made the next start end that cgroup's processes."""
    parent = cgroup_parent()[0]
    victim_cgroup = parent / f"victim-{os.getpid()}"
    victim_cgroup.mkdir()
    victim = subprocess.Popen(["sleep", "1000"])
    try:
        (victim_cgroup / "cgroup.procs").write_text(str(victim.pid))
        for forged in ({"job": "case-1-0-abcdef", "cgroup": str(victim_cgroup)},
                       {"job": "case-1-0-abcdef", "cgroup": str(parent / "mpistack-case-1-0-abcdef" / ".." /
                                                                  victim_cgroup.name)},
                       {"job": "../victim", "cgroup": str(victim_cgroup)}):
            (tmp_path / "running-1.json").write_text(json.dumps(
                {"label": None, "command": "forged", "host": socket.gethostname(), "pid": 2**22 + 1,
                 "pid_started": 1, **forged}))
            said = LocalLauncher(state_dir=tmp_path).end_leftovers()
            assert said and said[0].startswith("not ended:"), said
            assert victim.poll() is None and victim_cgroup.is_dir()
    finally:
        victim.kill()
        victim.wait()
        victim_cgroup.rmdir()


def test_a_link_planted_at_a_cases_output_is_not_written_through(tmp_path):
    """A case that left `stdout` as a link to a host file: the next launch of the label wrote its output
    through it. The runner removes the links a case leaves, and creates its outputs anew, never through one."""
    target = tmp_path / "precious"
    target.write_text("keep me\n")
    cases = tmp_path / "cases"
    launcher = LocalLauncher(output_dir=cases)
    first = launcher.execute(LaunchPlan(argv=["sh", "-c", f"ln -s {target} {cases}/x/planted"], env={}, output=None,
                                        label="x"), timeout=30)
    assert first.facts["removed_unread"] == "planted" and not (cases / "x" / "planted").exists()
    for name in ("stdout", "stderr"):  # as something of the case still running could plant them
        (cases / "x" / name).unlink()
        (cases / "x" / name).symlink_to(target)
    again = launcher.execute(LaunchPlan(argv=["sh", "-c", "echo second; echo oops >&2"], env={}, output=None,
                                        label="x"), timeout=30)
    assert target.read_text() == "keep me\n"
    assert (again.stdout, again.stderr) == ("second\n", "oops\n")


def test_a_case_that_links_its_outputs_to_a_host_file_gets_nothing_read(tmp_path):
    """The runner read a file the case linked its stderr (and its JSON) to, and stored the content as the
    case's failure message."""
    secret = tmp_path / "secret"
    secret.write_text("root-only content\n")
    secret.chmod(0o600)
    cases = tmp_path / "cases"
    directory = cases / "mpistack-0123456789ab"
    output = directory / "result.json"
    script = f"rm -f {directory}/stderr; ln -s {secret} {directory}/stderr; ln -s {secret} {output}; exit 1"
    execution = LocalLauncher(output_dir=cases).execute(
        LaunchPlan(argv=["sh", "-c", script], env={}, output=output, label="mpistack-0123456789ab"), timeout=30)
    assert "root-only" not in execution.stderr
    assert "removed unread from the case's directory (not regular files): result.json, stderr" in execution.stderr
    assert execution.facts["removed_unread"] == "result.json stderr"
    assert not output.is_symlink() and secret.read_text() == "root-only content\n"
