"""local: launches on this machine. Each launch runs in a process session of its own under a hard
limit; on expiry or interrupt the whole group gets SIGTERM, then SIGKILL after a grace period, and the
containers carrying the case's label are removed."""

from __future__ import annotations

import os
import signal
import subprocess
from datetime import datetime, timezone

from ..engines import Engine
from ..registry import LAUNCHERS
from ..spec.campaign import Placement
from .base import Execution, LaunchPlan, PerRankStart, recorded_environment

KILL_GRACE_SECONDS = 3
HOST_LAUNCHERS = {
    "mpich": ["mpiexec.mpich"],
    # --oversubscribe: campaigns here may run more ranks than cores (2-core CI machines)
    "openmpi": ["mpirun.openmpi", "--oversubscribe"],
}


class Mpiexec:
    """Ranks on this machine, started by the host's mpiexec (or a wheel's)."""

    def ranks(self, mpi: str, placement: Placement, program: str | None = None) -> list[str]:
        launcher, *options = HOST_LAUNCHERS[mpi]
        argv = [program or launcher, *options, "-n", str(placement.ranks)]
        if placement.binding != "none":
            argv += ["-bind-to", placement.binding] if mpi == "mpich" else ["--bind-to", placement.binding]
        return argv

    def ranks_in_containers(self, mpi: str, placement: Placement) -> PerRankStart:
        """MPICH's Hydra in its PMI_PORT mode: the process-management wire protocol goes over TCP, which
        crosses into a container on the host network."""
        argv = self.ranks(mpi, placement)
        return PerRankStart([argv[0], "-pmi-port", *argv[1:]])

    def one_task(self, placement: Placement) -> list[str]:
        return []


@LAUNCHERS.register("local", max_nodes=1, starter=Mpiexec())
class LocalLauncher:
    def __init__(self, engine: Engine | None = None):
        self.engine = engine  # removes a killed case's containers
        self._current: subprocess.Popen | None = None
        self._current_label: str | None = None
        self._interrupted = False

    def execute(self, plan: LaunchPlan, timeout: float) -> Execution:
        env = {**os.environ, **plan.env}
        started = datetime.now(timezone.utc)
        process = subprocess.Popen(plan.argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                   errors="replace", start_new_session=True)
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
        ended_by_itself = not timed_out and not self._interrupted
        return Execution(exit_code=process.returncode if ended_by_itself else None, timed_out=timed_out,
                         interrupted=self._interrupted, stdout=stdout, stderr=stderr, started=started,
                         finished=datetime.now(timezone.utc), environment=recorded_environment(env))

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
