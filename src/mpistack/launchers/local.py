"""local: launches on this machine. Each launch is a job of its own (engines/containment.py: a cgroup, or
where none can be made, a variable every process inherits) under a hard limit; on expiry or interrupt
every process of the job (also those in sessions of their own, as Hydra's proxies and ranks are) and every
container carrying the case's label get SIGTERM, then SIGKILL after a short grace. What a case leaves
behind when it ends by itself is ended too.

While a case runs, a marker file in the launcher's state directory names its job and label, and its runner:
host, process id, the process's start time and the store. What a killed mpistack left running (the job's
processes, the label's containers) is found and ended when the campaign next starts (`end_leftovers`), and
only then: only when that runner is provably gone (no process of that id, or one that started at another
time). The state directory is never mounted into a container, and a marker's cgroup must be one mpistack
made, so that a case cannot make the runner end what is not the case's.

A case's directory is the one thing of the campaign's work directory its containers get, so everything in it
is the case's to forge: its outputs are created anew (never through a link: O_EXCL, O_NOFOLLOW), and what is
not a regular file in it when the case is over is removed unread.

Before a case starts, a settle gate waits (up to 2 s) until the previous case's processes are gone and the
machine is quiet; the steal time and runnable processes around the launch, and how long the gate waited, are
recorded with the run (launchers/machine.py).

A case's stdout and stderr go to files, `<output_dir>/<label>/stdout` and `stderr` (the layout of the Slurm
launcher's case directories), never through memory: the Execution holds a bounded head and tail of each
(`captured_outputs`), and the parse stage reads a larger output from its file."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import socket
import stat
import subprocess
import tempfile
from datetime import datetime, timezone
from pathlib import Path

from ..cache import create_new_file, read_regular_bytes, write_file_atomically
from ..engines import Engine
from ..engines.base import STOP_GRACE_SECONDS
from ..engines.containment import Job
from ..registry import LAUNCHERS
from ..runtime import mpiexec_argv
from ..spec.campaign import Placement
from ..spec.mpi_family import FAMILIES
from . import machine
from .base import Execution, LauncherCapabilities, LaunchPlan, PerRankStart, captured_outputs, recorded_environment

#: the host's launcher of each MPI (Debian installs both side by side)
HOST_LAUNCHERS = {name: family.launcher for name, family in FAMILIES.items()}


class Mpiexec:
    """Ranks on this machine, started by the host's mpiexec (or a wheel's)."""

    def ranks(self, mpi: str, placement: Placement, program: str | None = None) -> list[str]:
        return mpiexec_argv(program or HOST_LAUNCHERS[mpi], mpi, placement.ranks, placement.binding)

    def ranks_in_containers(self, mpi: str, placement: Placement) -> PerRankStart:
        """MPICH's Hydra in its PMI_PORT mode: the process-management wire protocol goes over TCP, which
        crosses into a container on the host network. Open MPI's mpirun as it is: its daemon's PMIx server
        publishes a TCP address (PMIX_SERVER_URI*) that crosses the same way."""
        argv = self.ranks(mpi, placement)
        if mpi == "openmpi":
            return PerRankStart(argv, serves_pmix=True)
        return PerRankStart([argv[0], "-pmi-port", *argv[1:]])

    def one_task(self, placement: Placement) -> list[str]:
        return []


def open_for(campaign, resources, store=None, earlier_workdir=None) -> "LocalLauncher":
    """The launcher of a campaign on this machine: its markers and case outputs in the work directory."""
    return LocalLauncher(resources.engine, state_dir=resources.workdir / "running",
                         output_dir=resources.workdir / "cases", store=store,
                         earlier_state_dirs=[earlier_workdir / "running"] if earlier_workdir else [])


# pmi2: Hydra's PMI over a port (MPICH); pmix: mpirun.openmpi's daemon (Open MPI)
@LAUNCHERS.register("local", starter=Mpiexec(), open=open_for,
                    can=LauncherCapabilities(batch=False, max_nodes=1, per_rank_containers=True,
                                             pmi=("pmi2", "pmix")))
class LocalLauncher:
    def __init__(self, engine: Engine | None = None, state_dir: Path | None = None, cgroups: bool = True,
                 output_dir: Path | None = None, store: str | None = None, earlier_state_dirs: list[Path] = ()):
        self.engine = engine  # removes a killed case's containers
        self.state_dir = state_dir  # markers of the running case (None: none kept)
        self.store = store  # the store the campaign writes to, named in the markers
        # markers an earlier run of the campaign (another campaign id) may have left: ended like its own
        self.earlier_state_dirs = list(earlier_state_dirs)
        # where each case's stdout and stderr are written (None: a temporary directory, gone with the launcher)
        self._scratch = None if output_dir is not None else tempfile.TemporaryDirectory(prefix="mpistack-cases-")
        self.output_dir = output_dir if output_dir is not None else Path(self._scratch.name)
        self.cgroups = cgroups  # False: contain cases by their environment only (as where no cgroup can be made)
        self._current: tuple[subprocess.Popen, Job, str | None] | None = None
        self._previous: Job | None = None  # the job of the launch before
        self._interrupted = False

    def execute(self, plan: LaunchPlan, timeout: float, ranks: int | None = None) -> Execution:
        """Run the plan under `timeout`. `ranks`: the processes the launch starts; given, a settle gate first
        waits (at most machine.SETTLE_LIMIT_SECONDS) for the previous launch's processes to be gone and the
        machine to be quiet. The machine's state around the launch is among the Execution's facts."""
        quiet = None
        if ranks is not None:
            previous = self._previous
            quiet = machine.wait_until_quiet(ranks, clear=lambda: previous is None or not previous.members())
        job = Job.create("case", cgroups=self.cgroups)
        env = {**os.environ, **plan.env}
        marker = self._mark(plan, job)  # before the start: a kill in between still names the job and label
        outputs = self._case_directory(plan)
        try:
            _fresh_directory(outputs)
            if plan.output is not None and plan.output.parent != outputs:  # a JSON output elsewhere: its
                plan.output.parent.mkdir(parents=True, exist_ok=True)     # directory there, no stale file
                plan.output.unlink(missing_ok=True)
            with os.fdopen(create_new_file(outputs / "stdout"), "wb") as stdout, \
                    os.fdopen(create_new_file(outputs / "stderr"), "wb") as stderr:
                before = machine.sample()
                started = datetime.now(timezone.utc)
                process = job.start(plan.argv, env, stdout=stdout, stderr=stderr)
        except BaseException:
            job.close()
            if marker is not None:
                marker.unlink(missing_ok=True)
            raise
        self._current, self._interrupted = (process, job, plan.label), False
        timed_out = False
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            self._kill(process, job, plan.label)
        finally:
            self._current = None
            after = machine.sample()
        try:
            if not timed_out and not self._interrupted:
                self._end_rest(job, plan.label)  # what the case left running when it ended by itself
        finally:
            job.close()
            self._previous = job  # what the next launch's settle gate waits to be gone
            if marker is not None:
                marker.unlink(missing_ok=True)
        ended_by_itself = not timed_out and not self._interrupted
        removed = _disarm(outputs)  # nothing of the case runs now: what it left is checked once, for good
        # cpus: what the ranks may run on (this process's affinity, which they inherit), for the doctor's
        # oversubscription check of stored runs
        facts = {"containment": job.mechanism, "cpus": str(len(os.sched_getaffinity(0))),
                 **machine.facts(before, after)}
        if job.mechanism != "cgroup":
            facts["containment_note"] = job.note
        if quiet is not None:
            facts.update(quiet.facts())
        outputs_read = captured_outputs(outputs)
        if removed:
            facts["removed_unread"] = " ".join(removed)
            outputs_read["stderr"] = (f"mpistack: removed unread from the case's directory (not regular files): "
                                      f"{', '.join(removed)}\n" + outputs_read["stderr"])
        return Execution(exit_code=process.returncode if ended_by_itself else None, timed_out=timed_out,
                         interrupted=self._interrupted, started=started, finished=datetime.now(timezone.utc),
                         environment=recorded_environment(env), facts=facts, **outputs_read)

    def _case_directory(self, plan: LaunchPlan) -> Path:
        """Where the case writes: the directory of its JSON output when that is one of the launcher's case
        directories (a case without containers has no label), else one named after its label."""
        if plan.output is not None and plan.output.parent.parent == self.output_dir:
            return plan.output.parent
        return self.output_dir / (plan.label or "case")

    def _end_rest(self, job: Job, label: str | None) -> None:
        if job.members():
            self._kill(None, job, label)
        elif label and self.engine is not None and self.engine.available():
            self.engine.remove_containers(f"mpistack.case={label}", STOP_GRACE_SECONDS)

    def _mark(self, plan: LaunchPlan, job: Job) -> Path | None:
        if self.state_dir is None:
            return None
        return write_file_atomically(self.state_dir / f"running-{os.getpid()}.json", json.dumps({
            "label": plan.label, "command": shlex.join(plan.argv)[:200], **job.record(),
            "host": socket.gethostname(), "pid": os.getpid(), "pid_started": process_start_time(os.getpid()),
            "store": self.store}))

    def end_leftovers(self) -> list[str]:
        """End what earlier runs left running when they were killed: each marker's job (its processes) and
        containers, once its runner is provably gone. Returns what was ended or left, and whose it was, for
        the user to read."""
        said = []
        directories = {directory.resolve() for directory in (self.state_dir, *self.earlier_state_dirs) if directory}
        for marker in sorted(path for directory in directories for path in directory.glob("running-*.json")):
            try:
                left = json.loads(read_regular_bytes(marker))
                runner = Runner.from_marker(left)
            except FileNotFoundError:  # ended meanwhile by its own runner
                continue
            except (OSError, ValueError, KeyError, TypeError) as error:
                marker.unlink(missing_ok=True)  # not a marker of mpistack's (a forged one is a link or malformed)
                said.append(f"removed {marker.name}, not a marker mpistack wrote ({error})")
                continue
            if runner.pid == os.getpid() and runner.host == socket.gethostname():
                continue
            gone = runner.gone()
            if gone is None:
                said.append(f"left the case of `{left.get('command')}` running: its runner, {runner}, "
                            f"{'is still running' if runner.host == socket.gethostname() else 'cannot be checked from here'}")
                continue
            whose = f"its runner, {runner}, {gone}"
            if left.get("job"):  # every process of the case, wherever its session
                try:
                    job = Job.from_record(left)
                except ValueError as error:
                    said.append(f"not ended: {error} ({whose})")
                    marker.unlink(missing_ok=True)
                    continue
                count = job.end(STOP_GRACE_SECONDS)
                job.close()
                if count:
                    said.append(f"{count} process(es) of `{left.get('command')}` (job {left['job']}; {whose})")
            if left.get("label") and self.engine is not None and self.engine.available():
                removed = self.engine.remove_containers(f"mpistack.case={left['label']}")
                if removed:
                    said.append(f"{removed} container(s) labelled {left['label']} ({whose})")
            marker.unlink(missing_ok=True)
        return said

    def interrupt(self) -> None:
        self._interrupted = True
        if self._current is not None:
            self._kill(*self._current)

    def _kill(self, process: subprocess.Popen | None, job: Job, label: str | None) -> None:
        """Every process of the case and its containers: SIGTERM, then SIGKILL after the grace period."""
        if self.engine is not None:
            self.engine.end(job, label)
        else:
            job.end(STOP_GRACE_SECONDS)
        if process is not None:
            process.wait()


def process_start_time(pid: int) -> int | None:
    """When the process started, in clock ticks after boot (/proc/PID/stat field 22, proc(5)): a process id
    can be reused, this pair cannot. None when there is no such process."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # the command name (field 2) is in parentheses and may hold blanks or ')': read after the last one
    fields = text[text.rindex(")") + 2:].split()
    return int(fields[19])  # field 22 is the 20th after the name


class Runner:
    """The mpistack process a marker names: host, process id, its start time and store."""

    def __init__(self, host: str, pid: int, started: int | None, store: str | None):
        self.host, self.pid, self.started, self.store = host, pid, started, store

    @classmethod
    def from_marker(cls, record: dict) -> "Runner":
        pid, started = record["pid"], record.get("pid_started")
        if not isinstance(pid, int) or pid <= 0 or not (started is None or isinstance(started, int)):
            raise ValueError(f"pid {pid!r}, start time {started!r}: expected whole numbers")
        return cls(str(record["host"]), pid, started, record.get("store"))

    def gone(self) -> str | None:
        """How this runner is known to be gone ('is gone', 'is gone: process N is another program now'), or
        None while it may still run (it does, or it ran on another host)."""
        if self.host != socket.gethostname():
            return None
        now = process_start_time(self.pid)
        if now is None:
            return "is gone"
        if self.started is not None and now != self.started:
            return f"is gone (process {self.pid} is another process now)"
        return None

    def __str__(self) -> str:
        return f"process {self.pid} on {self.host}" + (f" (store {self.store})" if self.store else "")


def _fresh_directory(path: Path) -> None:
    """The case's directory, empty: whatever an earlier launch of the label left there (a link among it)
    is removed without following a link."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        info = None
    if info is not None:
        if stat.S_ISDIR(info.st_mode):
            shutil.rmtree(path)  # never follows a link inside it
        else:
            path.unlink()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.mkdir()


def _disarm(directory: Path) -> list[str]:
    """Remove, unread, what a case left in its directory that is not a regular file or a directory (links,
    FIFOs, devices): the runner reads its outputs from here next. The names removed."""
    removed = []
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return removed
    for entry in entries:
        if entry.is_symlink() or not (entry.is_file(follow_symlinks=False) or entry.is_dir(follow_symlinks=False)):
            try:
                os.unlink(entry.path)
                removed.append(entry.name)
            except OSError:
                pass
    return sorted(removed)
