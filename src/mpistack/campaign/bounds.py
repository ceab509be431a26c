"""Measuring a machine's bounds (analysis/bounds.py says what they are and why): a few short launches of the
host's mpistack-bench before a campaign's first timed case, and for `mpistack doctor --bounds`.

* memcpy: `mpistack-bench memcpy` on one rank, in cache and from memory;
* TCP: Open MPI forced onto TCP over the loopback (`--mca pml ob1 --mca btl tcp,self`: ob1, so that the UCX
  pml, which ignores the btl list, is not picked), latency and bw over the campaign's sizes;
* shm: each host MPI's own 1-byte latency, two ranks on this node.

Each is launched LAUNCHES times (the figure is the median over launches, with their range), each launch
bounded by a timeout: a hang or a failure is recorded with the bound (status timeout/failed), never stops
the caller.
"""

from __future__ import annotations

import os
import platform
import shlex
import socket
import statistics
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Callable

from rich.console import Console
from rich.markup import escape
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from sqlalchemy import Engine
from sqlalchemy.exc import SQLAlchemyError

from ..engines.containment import Job
from ..images.host_bench import build_host_bench
from ..launchers.local import HOST_LAUNCHERS
from ..parsers.bench_json import parse_bench_json
from ..parsers.model import ParseError, ParsedRun
from ..registry import LAUNCHERS
from ..spec.campaign import Campaign
from ..spec.case import Case
from ..store.bounds import copy_recent, measured, write_bounds

LAUNCHES = 3
#: bounds this recent, of this host, in the same store, are reused by a new campaign instead of measured again
REUSE_HOURS = 6
LAUNCH_TIMEOUT = 20.0  # seconds: each launch here takes about a second
#: kept short (a bound is the scale a figure is compared with, not a publication figure): a size stops once
#: its median is known to +-5%, after at most 20 iterations (OSU's count for large bw; a loaded machine may
#: never get to +-5%, and 4 MiB over TCP at 50 iterations took over 20 s on a loaded 2-core guest)
STOP = ["--stop", "ci:0.05", "--stop-max", "20"]
#: the sizes measured when a campaign does not say (`-m` in its benchmark options): the default campaign's
DEFAULT_SIZES = "1:1048576"
ROOT_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
TCP_MCA = ["--mca", "pml", "ob1", "--mca", "btl", "tcp,self"]
#: the memcpy test's figure names (its JSON "metrics") for a copy in cache and from memory
#: MPISTACK_BOUNDS=off: a campaign measures no bounds (the test suite's campaigns, which time nothing)
SWITCH = "MPISTACK_BOUNDS"
MEMCPY_METRICS = {"memcpy-cache": "in_cache", "memcpy-memory": "from_memory"}


@dataclass
class Measurement:
    """One kind of bound as measured: what store/bounds.write_bounds takes."""

    kind: str
    mpi: str
    command: str
    library_version: str = ""
    launches: int = 0
    status: str = "ok"
    message: str = ""
    measured_at: datetime = field(default_factory=lambda: datetime.now(timezone.utc))
    figures: list[dict] = field(default_factory=list)

    def record(self) -> dict:
        return {key: getattr(self, key) for key in ("kind", "mpi", "command", "library_version", "launches",
                                                     "status", "message", "measured_at", "figures")}


def machine() -> dict:
    """This host: name, CPU model, kernel."""
    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"host": socket.gethostname(), "cpu_model": cpu or platform.processor() or "unknown CPU",
            "kernel": platform.release()}


class LaunchFailed(RuntimeError):
    """A launch that timed out or failed; `status` says which (as stored)."""

    def __init__(self, status: str, message: str):
        super().__init__(message)
        self.status = status


def _launch(argv: list[str], timeout: float) -> list[ParsedRun]:
    """Run one launch writing --json to a temporary file; its tests, as the bench JSON parser reads them. The
    launch is a job of its own (engines/containment.py), so that a timeout ends the launcher and every rank it
    started, as a timed-out case is ended."""
    job = Job.create("bounds")
    with tempfile.TemporaryDirectory(prefix="mpistack-bounds-") as scratch:
        out = Path(scratch) / "out.json"
        process = job.start([*argv, "--json", str(out)], {**os.environ, **ROOT_ENV}, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, cwd=scratch)
        try:
            _, stderr = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            job.kill()
            process.communicate()
            raise LaunchFailed("timeout", f"no end after {timeout:g} s (killed)")
        finally:
            job.close()
        if process.returncode != 0 or not out.exists():
            tail = " / ".join(stderr.strip().splitlines()[-3:])
            raise LaunchFailed("failed", f"exit status {process.returncode}: {tail}"[:500])
        try:
            return parse_bench_json(out.read_text(), str(out))
        except ParseError as error:
            raise LaunchFailed("failed", str(error)[:500]) from None


def _figures(launches: list[list[ParsedRun]], metric: str) -> dict[int | None, list[float]]:
    """Per size, one figure of `metric` per launch: the median over the launch's iterations where the bench
    gives it (its statistics are of the primary metric), so that the iterations a loaded machine's scheduler
    pre-empted do not make the bound (a 1-byte latency averaged over 20 iterations was 6.5 ms in two launches
    of three on a loaded 2-core guest, 0.33 us in the third); else the launch's figure."""
    per_size: dict[int | None, list[float]] = {}
    for launch in launches:
        for run in launch:
            primary = next(iter(run.units), None)
            for row in run.rows:
                value = row.values.get(metric)
                if metric == primary and row.stats.get("median") is not None:
                    value = row.stats["median"]
                if value is not None and value > 0:
                    per_size.setdefault(row.size, []).append(float(value))
    return per_size


def _summarised(per_size: dict[int | None, list[float]]) -> list[dict]:
    return [{"size": size, "value": statistics.median(values), "low": min(values), "high": max(values),
             "launches": len(values)} for size, values in sorted(per_size.items(), key=lambda item: item[0] or 0)]


def _measure(kinds: dict[str, str], mpi: str, argv: list[str], launches: int, timeout: float) -> list[Measurement]:
    """`launches` launches of `argv`; a Measurement per kind (kind -> the metric it reads from the JSON)."""
    results = [Measurement(kind, mpi, shlex.join(argv)) for kind in kinds]
    documents: list[list[ParsedRun]] = []
    for _ in range(launches):
        try:
            documents.append(_launch(argv, timeout))
        except (LaunchFailed, OSError) as error:
            for result in results:
                result.status = getattr(error, "status", "failed")
                result.message = str(error)
            break  # a hang is not tried again: the campaign is waiting
    version = next((run.provenance.mpi_library_version or "" for launch in documents for run in launch), "")
    for result, metric in zip(results, kinds.values()):
        result.figures = _summarised(_figures(documents, metric))
        result.launches = len(documents)
        result.library_version = version.splitlines()[0] if (mpi and version) else ""
        if result.status == "ok" and not result.figures:
            result.status, result.message = "failed", f"no {metric} figures in the output"
        elif result.status != "ok" and result.figures:
            result.message = f"{result.message} (after {len(documents)} launch(es): their figures are kept)"
            result.status = "ok"
    return results


def _failed(kinds: list[str], mpi: str, command: str, message: str) -> list[Measurement]:
    return [Measurement(kind, mpi, command, status="failed", message=message) for kind in kinds]


def measure_bounds(mpis: list[str], sizes: str | None = None, skip: set[tuple[str, str]] = frozenset(),
                   launches: int = LAUNCHES, timeout: float = LAUNCH_TIMEOUT,
                   say: Callable[[str], None] = lambda _: None) -> list[Measurement]:
    """Measure this host's bounds: memcpy, TCP loopback (Open MPI) over `sizes` ("LOW:HIGH", as -m; None:
    DEFAULT_SIZES), and the shared-memory floor of each host MPI family in `mpis`. (kind, mpi) pairs
    in `skip` (already stored) are not measured again. `say` hears what is being measured."""
    size_options = ["-m", sizes or DEFAULT_SIZES]
    plans: list[tuple[dict[str, str], str, Callable[[Path], list[str]]]] = []
    memcpy_mpi = next((mpi for mpi in ("mpich", "openmpi") if mpi in mpis), "mpich")
    plans.append((MEMCPY_METRICS, memcpy_mpi, lambda bench: [
        HOST_LAUNCHERS[memcpy_mpi], "-n", "1", str(bench), "memcpy", *size_options, *STOP]))
    plans.append(({"tcp-latency": "latency"}, "openmpi", lambda bench: [
        HOST_LAUNCHERS["openmpi"], *TCP_MCA, "-n", "2", str(bench), "latency", *size_options, *STOP]))
    plans.append(({"tcp-bandwidth": "bandwidth"}, "openmpi", lambda bench: [
        HOST_LAUNCHERS["openmpi"], *TCP_MCA, "-n", "2", str(bench), "bw", *size_options, *STOP]))
    for mpi in sorted(set(mpis) & set(HOST_LAUNCHERS)):
        plans.append(({"shm-latency": "latency"}, mpi, lambda bench, mpi=mpi: [
            HOST_LAUNCHERS[mpi], "-n", "2", str(bench), "latency", "-m", "1:1", *STOP]))
    measurements: list[Measurement] = []
    for kinds, mpi, argv_of in plans:
        stored_mpi = "" if kinds is MEMCPY_METRICS else mpi  # memcpy is libc's, whichever MPI starts it
        kinds = {kind: metric for kind, metric in kinds.items() if (kind, stored_mpi) not in skip}
        if not kinds:
            continue
        say(f"bounds: {', '.join(kinds)}" + (f" ({mpi})" if stored_mpi else ""))
        try:
            bench = build_host_bench(mpi)
        except (OSError, subprocess.CalledProcessError) as error:
            detail = getattr(error, "stderr", "") or str(error)
            measurements += _failed(list(kinds), stored_mpi, f"build mpistack-bench with the host's {mpi}",
                                    f"cannot build mpistack-bench with the host's {mpi}: {detail.strip()[-300:]}")
            continue
        measurements += _measure(kinds, stored_mpi, argv_of(bench), launches, timeout)
    return measurements


def campaign_sizes(options: list[str]) -> str | None:
    """The message sizes ("LOW:HIGH") a campaign's benchmark options ask for, None for the bench's default."""
    for flag, value in zip(options, options[1:]):
        if flag in ("-m", "--message-size"):
            return value
    return None


def reuse_recent(database: Engine, campaign_id: int, host: str, skip: set[tuple[str, str]]) -> list[str]:
    """Bounds of this host measured in the last REUSE_HOURS for another campaign of the store, copied to this
    one (a campaign run again soon after does not measure the machine twice); their names."""
    since = datetime.now(timezone.utc) - timedelta(hours=REUSE_HOURS)
    return [kind + (f" ({mpi})" if mpi else "") for kind, mpi in copy_recent(database, campaign_id, host, since, skip)]


def measure_for_campaign(campaign: Campaign, campaign_id: int, cases: list[Case], database: Engine,
                         console: Console) -> None:
    """Measure and store this host's bounds for the campaign before its first timed case (what a resumed run
    has stored already is not measured again). Under a batch launcher the campaign's nodes are the batch
    system's: not measured, and said so."""
    if os.environ.get(SWITCH, "").lower() in ("0", "off", "no"):
        console.print(f"[dim]machine bounds: not measured ({SWITCH}={os.environ[SWITCH]})[/dim]")
        return
    if LAUNCHERS.get(campaign.launcher).can.batch:
        console.print("[dim]machine bounds: not measured (the campaign's nodes are the batch system's; "
                      "`mpistack doctor --bounds` on a node measures them)[/dim]")
        return
    runnable = [case for case in cases if not case.skip]
    if not runnable:
        return  # nothing will be timed
    mpis = sorted({case.stack.mpi_impl for case in runnable} & set(HOST_LAUNCHERS))
    host = machine()
    skip = measured(database, campaign_id, host["host"])
    reused = reuse_recent(database, campaign_id, host["host"], skip)
    if reused:
        console.print(f"machine bounds: {len(reused)} measured on {escape(host['host'])} within the last "
                      f"{REUSE_HOURS} h reused ({escape(', '.join(sorted(reused)))})", highlight=False)
        skip = measured(database, campaign_id, host["host"])
    started = time.monotonic()
    with Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(), console=console,
                  transient=True) as progress:
        task = progress.add_task("machine bounds")
        results = measure_bounds(mpis, campaign_sizes(campaign.benchmark_options), skip,
                                 say=lambda text: progress.update(task, description=escape(text)))
    try:
        write_bounds(database, campaign_id, host, [result.record() for result in results])
    except SQLAlchemyError as error:  # bounds are not results: the campaign goes on without them
        console.print(f"[yellow]machine bounds not stored[/yellow]: {escape(str(error).splitlines()[0])}",
                      highlight=False)
        return
    if results:
        failed = [f"{r.kind}{' (' + r.mpi + ')' if r.mpi else ''}: {r.status}" for r in results if r.status != "ok"]
        console.print(f"machine bounds: {len(results) - len(failed)} of {len(results)} measured in "
                      f"{time.monotonic() - started:.0f} s" + (f"; [yellow]{escape('; '.join(failed))}[/yellow]"
                                                              if failed else ""), highlight=False)
