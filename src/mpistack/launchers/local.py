"""local: launches on this machine. Each launch runs in a process session of its own under a hard
limit; on expiry or interrupt the whole group gets SIGTERM, then SIGKILL after a grace period, and the
containers carrying the case's label are removed.

While a case runs, a marker file in the launcher's state directory names its session and label, so that
what a killed mpistack left running (the session's processes, the label's containers) is found and ended
when the campaign next starts (`end_leftovers`)."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import time
from datetime import datetime, timezone
from pathlib import Path

from ..engines import Engine
from ..registry import LAUNCHERS
from ..runtime import mpiexec_argv
from ..spec.campaign import Placement
from .base import Execution, LaunchPlan, PerRankStart, recorded_environment

KILL_GRACE_SECONDS = 3
#: the host's launcher of each MPI (Debian installs both side by side)
HOST_LAUNCHERS = {"mpich": "mpiexec.mpich", "openmpi": "mpirun.openmpi"}


class Mpiexec:
    """Ranks on this machine, started by the host's mpiexec (or a wheel's)."""

    def ranks(self, mpi: str, placement: Placement, program: str | None = None) -> list[str]:
        return mpiexec_argv(program or HOST_LAUNCHERS[mpi], mpi, placement.ranks, placement.binding)

    def ranks_in_containers(self, mpi: str, placement: Placement) -> PerRankStart:
        """MPICH's Hydra in its PMI_PORT mode: the process-management wire protocol goes over TCP, which
        crosses into a container on the host network."""
        argv = self.ranks(mpi, placement)
        return PerRankStart([argv[0], "-pmi-port", *argv[1:]])

    def one_task(self, placement: Placement) -> list[str]:
        return []


def _stat(pid: int | str) -> list[str] | None:
    """/proc/PID/stat after the command name: state, ppid, pgrp, session, ... (starttime is the 20th)."""
    try:
        return (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def _session_members(session: int, since: int) -> list[int]:
    """Processes of this session started no earlier than `since` (clock ticks after boot): the session's
    leader may be gone, and a later process could have been given its number."""
    members = []
    for entry in Path("/proc").iterdir():
        fields = _stat(entry.name) if entry.name.isdigit() else None
        if fields and int(fields[3]) == session and int(fields[19]) >= since:
            members.append(int(entry.name))
    return members


def _end(pids: list[int]) -> None:
    """SIGTERM (mpiexec ends its proxies and ranks), then SIGKILL what is left after the grace period."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + KILL_GRACE_SECONDS
        while time.monotonic() < deadline and any(Path(f"/proc/{pid}").exists() for pid in pids):
            time.sleep(0.1)


def _start_time(pid: int) -> int:
    fields = _stat(pid)
    return int(fields[19]) if fields else 0


@LAUNCHERS.register("local", max_nodes=1, starter=Mpiexec())
class LocalLauncher:
    def __init__(self, engine: Engine | None = None, state_dir: Path | None = None):
        self.engine = engine  # removes a killed case's containers
        self.state_dir = state_dir  # markers of the running case (None: none kept)
        self._current: subprocess.Popen | None = None
        self._current_label: str | None = None
        self._interrupted = False

    def execute(self, plan: LaunchPlan, timeout: float) -> Execution:
        env = {**os.environ, **plan.env}
        started = datetime.now(timezone.utc)
        marker = self._mark(plan, None)  # before the start: a kill in between still names the label
        process = subprocess.Popen(plan.argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                   errors="replace", start_new_session=True)
        self._mark(plan, process.pid)
        self._current, self._current_label, self._interrupted = process, plan.label, False
        timed_out = False
        try:
            stdout, stderr = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            self._kill(process, plan.label)
            stdout, stderr = process.communicate()
        finally:
            self._current = None
            if marker is not None:
                marker.unlink(missing_ok=True)
        ended_by_itself = not timed_out and not self._interrupted
        return Execution(exit_code=process.returncode if ended_by_itself else None, timed_out=timed_out,
                         interrupted=self._interrupted, stdout=stdout, stderr=stderr, started=started,
                         finished=datetime.now(timezone.utc), environment=recorded_environment(env))

    def _mark(self, plan: LaunchPlan, pid: int | None) -> Path | None:
        if self.state_dir is None:
            return None
        self.state_dir.mkdir(parents=True, exist_ok=True)
        marker = self.state_dir / f"running-{os.getpid()}.json"
        temporary = marker.with_suffix(".part")
        temporary.write_text(json.dumps({"label": plan.label, "command": shlex.join(plan.argv)[:200],
                                         "session": pid, "since": _start_time(pid) if pid else 0}))
        temporary.replace(marker)
        return marker

    def end_leftovers(self) -> list[str]:
        """End what earlier, killed runs left running: each marker's session and containers. Returns what
        was ended, for the user to read."""
        ended = []
        for marker in sorted(self.state_dir.glob("running-*.json")) if self.state_dir else []:
            if int(marker.stem.split("-")[1]) == os.getpid():
                continue
            try:
                left = json.loads(marker.read_text())
            except (OSError, ValueError):
                marker.unlink(missing_ok=True)
                continue
            if left.get("session"):
                members = _session_members(left["session"], left.get("since", 0))
                _end(members)
                if members:
                    ended.append(f"{len(members)} process(es) of `{left.get('command')}` (session {left['session']})")
            if left.get("label") and self.engine is not None and self.engine.available():
                removed = self.engine.remove_containers(f"mpistack.case={left['label']}")
                if removed:
                    ended.append(f"{removed} container(s) labelled {left['label']}")
            marker.unlink(missing_ok=True)
        return ended

    def interrupt(self) -> None:
        self._interrupted = True
        if self._current is not None:
            self._kill(self._current, self._current_label)

    def _kill(self, process: subprocess.Popen, label: str | None) -> None:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(process.pid, sig)
            except ProcessLookupError:
                break
            try:
                process.wait(timeout=KILL_GRACE_SECONDS)
                break
            except subprocess.TimeoutExpired:
                continue
        if label and self.engine is not None and self.engine.available():
            self.engine.remove_containers(f"mpistack.case={label}")
