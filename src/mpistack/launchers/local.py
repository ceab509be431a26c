"""local: launches on this machine. Each launch is a job of its own (engines/containment.py: a cgroup, or
where none can be made, a variable every process inherits) under a hard limit; on expiry or interrupt
every process of the job (also those in sessions of their own, as Hydra's proxies and ranks are) and every
container carrying the case's label get SIGTERM, then SIGKILL after a short grace. What a case leaves
behind when it ends by itself is ended too.

While a case runs, a marker file in the launcher's state directory names its job and label, so that what a
killed mpistack left running (the job's processes, the label's containers) is found and ended when the
campaign next starts (`end_leftovers`).

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
import subprocess
import tempfile
from datetime import datetime, timezone
from pathlib import Path

from ..cache import write_file_atomically
from ..engines import Engine
from ..engines.base import STOP_GRACE_SECONDS
from ..engines.containment import Job
from ..registry import LAUNCHERS
from ..runtime import mpiexec_argv
from ..spec.campaign import Placement
from . import machine
from .base import Execution, LaunchPlan, PerRankStart, captured_outputs, recorded_environment

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


@LAUNCHERS.register("local", max_nodes=1, starter=Mpiexec())
class LocalLauncher:
    def __init__(self, engine: Engine | None = None, state_dir: Path | None = None, cgroups: bool = True,
                 output_dir: Path | None = None):
        self.engine = engine  # removes a killed case's containers
        self.state_dir = state_dir  # markers of the running case (None: none kept)
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
        outputs = self.output_dir / (plan.label or "case")
        try:
            outputs.mkdir(parents=True, exist_ok=True)
            with open(outputs / "stdout", "wb") as stdout, open(outputs / "stderr", "wb") as stderr:
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
        # cpus: what the ranks may run on (this process's affinity, which they inherit), for the doctor's
        # oversubscription check of stored runs
        facts = {"containment": job.mechanism, "cpus": str(len(os.sched_getaffinity(0))),
                 **machine.facts(before, after)}
        if job.mechanism != "cgroup":
            facts["containment_note"] = job.note
        if quiet is not None:
            facts.update(quiet.facts())
        return Execution(exit_code=process.returncode if ended_by_itself else None, timed_out=timed_out,
                         interrupted=self._interrupted, started=started, finished=datetime.now(timezone.utc),
                         environment=recorded_environment(env), facts=facts, **captured_outputs(outputs))

    def _end_rest(self, job: Job, label: str | None) -> None:
        if job.members():
            self._kill(None, job, label)
        elif label and self.engine is not None and self.engine.available():
            self.engine.remove_containers(f"mpistack.case={label}", STOP_GRACE_SECONDS)

    def _mark(self, plan: LaunchPlan, job: Job) -> Path | None:
        if self.state_dir is None:
            return None
        return write_file_atomically(self.state_dir / f"running-{os.getpid()}.json",
                                     json.dumps({"label": plan.label, "command": shlex.join(plan.argv)[:200],
                                                 **job.record()}))

    def end_leftovers(self) -> list[str]:
        """End what earlier, killed runs left running: each marker's job (its processes) and containers.
        Returns what was ended, for the user to read."""
        ended = []
        for marker in sorted(self.state_dir.glob("running-*.json")) if self.state_dir else []:
            if int(marker.stem.split("-")[1]) == os.getpid():
                continue
            try:
                left = json.loads(marker.read_text())
            except (OSError, ValueError):
                marker.unlink(missing_ok=True)
                continue
            if left.get("job"):  # every process of the case, wherever its session
                job = Job.from_record(left)
                count = job.end(STOP_GRACE_SECONDS)
                job.close()
                if count:
                    ended.append(f"{count} process(es) of `{left.get('command')}` (job {left['job']})")
            if left.get("label") and self.engine is not None and self.engine.available():
                removed = self.engine.remove_containers(f"mpistack.case={left['label']}")
                if removed:
                    ended.append(f"{removed} container(s) labelled {left['label']}")
            marker.unlink(missing_ok=True)
        return ended

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
