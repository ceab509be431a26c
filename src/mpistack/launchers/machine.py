"""The machine's state around a launch, from procfs: what else wanted the CPUs, recorded with every run.

On a shared or virtual machine a launch is slow when something else runs: the hypervisor giving the CPUs to
another guest (the `steal` column of the `cpu` line of /proc/stat, in clock ticks) or more runnable
processes than cores (`procs_running`, which counts the reader itself). Both are read just before and just
after a launch; before it, a settle gate waits (briefly, never dropping the launch) until the previous
launch's processes are gone and no more processes are runnable than the launch will start, plus the reader.
See proc(5), "/proc/stat", https://man7.org/linux/man-pages/man5/proc.5.html.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

PROC_STAT = Path("/proc/stat")
SETTLE_POLL_SECONDS = 0.05
SETTLE_LIMIT_SECONDS = 2.0
# The columns of the cpu line that make up elapsed CPU time (guest time is counted in user time already).
_CPU_COLUMNS = 8
_STEAL_COLUMN = 7


@dataclass(frozen=True)
class Sample:
    """One reading of /proc/stat: CPU time of every CPU together, in clock ticks, and runnable processes."""

    total_ticks: int
    steal_ticks: int
    runnable: int


def sample(path: Path = PROC_STAT) -> Sample | None:
    """The machine's state now; None where /proc/stat is not there or not as proc(5) describes."""
    try:
        text = path.read_text()
    except OSError:
        return None
    cpu, runnable = None, None
    for line in text.splitlines():
        name, _, rest = line.partition(" ")
        if name == "cpu":
            cpu = [int(value) for value in rest.split()]
        elif name == "procs_running":
            runnable = int(rest)
    if cpu is None or runnable is None:
        return None
    cpu += [0] * (_CPU_COLUMNS - len(cpu))  # kernels before 2.6.11 had no steal column
    return Sample(sum(cpu[:_CPU_COLUMNS]), cpu[_STEAL_COLUMN], runnable)


def facts(before: Sample | None, after: Sample | None) -> dict[str, str]:
    """The tags of a launch from the samples around it: steal over the launch (ticks, and its share of the
    CPU time that elapsed) and the runnable processes before and after."""
    found: dict[str, str] = {}
    if before is not None:
        found["runnable_before"] = str(before.runnable)
    if after is not None:
        found["runnable_after"] = str(after.runnable)
    if before is not None and after is not None:
        steal, total = after.steal_ticks - before.steal_ticks, after.total_ticks - before.total_ticks
        found["steal_ticks"] = str(steal)
        found["steal_share"] = f"{steal / total:.4f}" if total > 0 else "0"
    return found


@dataclass(frozen=True)
class Quiet:
    """How the settle gate ended: the wait for a quiet machine before a launch."""

    waited: float  # seconds
    gave_up: bool  # the limit passed with the machine still busy; the launch went ahead

    def facts(self) -> dict[str, str]:
        return {"settle_ms": str(round(self.waited * 1000)), "settle_gave_up": "yes" if self.gave_up else "no"}


def wait_until_quiet(ranks: int, clear: Callable[[], bool] = lambda: True, path: Path = PROC_STAT,
                     poll: float = SETTLE_POLL_SECONDS, limit: float = SETTLE_LIMIT_SECONDS,
                     clock: Callable[[], float] = time.monotonic,
                     sleep: Callable[[float], None] = time.sleep) -> Quiet:
    """Wait until `clear()` (the previous launch's processes are gone) and at most `ranks` + 1 processes are
    runnable (the reader is one), polling every `poll` seconds for at most `limit` seconds."""
    start = clock()
    while True:
        now = sample(path)
        if clear() and (now is None or now.runnable <= ranks + 1):
            return Quiet(clock() - start, False)
        if clock() - start >= limit:
            return Quiet(clock() - start, True)
        sleep(poll)
