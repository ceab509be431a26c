"""Measuring a machine's bounds (analysis/bounds.py says what they are and why): a few short launches of the
host's mpistack-bench before a campaign's first timed case, and for `mpistack doctor --bounds`.

* memcpy: `mpistack-bench memcpy` on one rank, in cache and from memory;
* TCP: Open MPI forced onto TCP over the loopback (`--mca pml ob1 --mca btl tcp,self`: ob1, so that the UCX
  pml, which ignores the btl list, is not picked), latency and bw over the campaign's sizes;
* shm: each host MPI's own 1-byte latency, two ranks on this node.

Under a batch launcher (Slurm) the same kinds are measured on the batch system's nodes, started from here by
the launcher's own rank starter (srun outside an allocation makes one of its own; the nodes must see this
host's file system, where the bench is built), Open MPI forced onto TCP by its environment
(OMPI_MCA_pml=ob1, OMPI_MCA_btl=tcp,self) rather than by mpirun's options; and when the campaign has an
inter-node placement, also the network between two nodes (net-latency, net-bandwidth: one rank per node,
Open MPI over TCP). Each is stored under the node it ran on (the bench's JSON names it).

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
from ..spec.campaign import Campaign, Placement
from ..spec.case import Case
from ..store.bounds import LINK_PREFIX, bound_hosts, copy_recent, measured, write_bounds

LAUNCHES = 3
#: bounds this recent, of this host, in the same store, are reused by a new campaign instead of measured again
REUSE_HOURS = 6
LAUNCH_TIMEOUT = 20.0  # seconds: each launch here takes about a second
#: a batch launch waits for its allocation and wires its ranks up through the batch system's PMI first
BATCH_LAUNCH_TIMEOUT = 60.0
#: kept short (a bound is the scale a figure is compared with, not a publication figure): a size stops once
#: its median is known to +-5%, after at most 20 iterations (OSU's count for large bw; a loaded machine may
#: never get to +-5%, and 4 MiB over TCP at 50 iterations took over 20 s on a loaded 2-core guest)
STOP = ["--stop", "ci:0.05", "--stop-max", "20"]
#: the sizes measured when a campaign does not say (`-m` in its benchmark options): the default campaign's
DEFAULT_SIZES = "1:1048576"
ROOT_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
TCP_MCA = ["--mca", "pml", "ob1", "--mca", "btl", "tcp,self"]
#: the same through the environment, for a rank starter that is not Open MPI's mpirun (srun passes it on)
TCP_ENV = {"OMPI_MCA_pml": "ob1", "OMPI_MCA_btl": "tcp,self"}
#: the kinds measured between two nodes, and what each reads from the JSON
NETWORK_KINDS = {"latency": {"net-latency": "latency"}, "bw": {"net-bandwidth": "bandwidth"}}
UNKNOWN_NODE = "unknown node"
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
    hosts: list[str] = field(default_factory=list)  # the nodes its ranks ran on, as the bench says (not stored)

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


def _launch(argv: list[str], timeout: float, env: dict[str, str] | None = None) -> list[ParsedRun]:
    """Run one launch writing --json to a temporary file; its tests, as the bench JSON parser reads them. The
    launch is a job of its own (engines/containment.py), so that a timeout ends the launcher and every rank it
    started, as a timed-out case is ended."""
    job = Job.create("bounds")
    with tempfile.TemporaryDirectory(prefix="mpistack-bounds-") as scratch:
        out = Path(scratch) / "out.json"
        process = job.start([*argv, "--json", str(out)], {**os.environ, **ROOT_ENV, **(env or {})},
                            stdout=subprocess.DEVNULL,
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


def _measure(kinds: dict[str, str], mpi: str, argv: list[str], launches: int, timeout: float,
             env: dict[str, str] | None = None) -> list[Measurement]:
    """`launches` launches of `argv`; a Measurement per kind (kind -> the metric it reads from the JSON)."""
    # the environment it needs is part of the command as stored: `env K=V ... argv`, runnable as it is
    command = shlex.join(["env", *(f"{key}={value}" for key, value in env.items()), *argv]) if env else \
        shlex.join(argv)
    results = [Measurement(kind, mpi, command) for kind in kinds]
    documents: list[list[ParsedRun]] = []
    for _ in range(launches):
        try:
            documents.append(_launch(argv, timeout, env))
        except (LaunchFailed, OSError) as error:
            for result in results:
                result.status = getattr(error, "status", "failed")
                result.message = str(error)
            break  # a hang is not tried again: the campaign is waiting
    version = next((run.provenance.mpi_library_version or "" for launch in documents for run in launch), "")
    hosts = next((run.provenance.hosts for launch in documents for run in launch if run.provenance.hosts), [])
    for result, metric in zip(results, kinds.values()):
        result.hosts = list(dict.fromkeys(hosts))
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


@dataclass(frozen=True)
class BoundPlan:
    """How one kind (or pair of kinds) of bound is measured: the launch, less the bench's path (known once
    built), and the environment it needs on top of this process's."""

    kinds: dict[str, str]  # kind -> the metric it reads from the bench's JSON
    mpi: str  # the host MPI family whose bench runs (and whose starter starts it)
    stored_mpi: str  # as stored: "" for memcpy (libc's, whichever MPI starts it)
    argv_of: Callable[[Path], list[str]]
    env: dict[str, str] = field(default_factory=dict)

    def argv(self, bench: Path) -> list[str]:
        return self.argv_of(bench)


def local_plans(mpis: list[str], sizes: str | None = None) -> list[BoundPlan]:
    """This host's bounds, started by the host MPIs' own mpiexec: memcpy, TCP loopback (Open MPI) over
    `sizes`, the shared-memory floor of each family in `mpis`."""
    size_options = ["-m", sizes or DEFAULT_SIZES]
    memcpy_mpi = next((mpi for mpi in ("mpich", "openmpi") if mpi in mpis), "mpich")
    plans = [BoundPlan(MEMCPY_METRICS, memcpy_mpi, "", lambda bench: [
        HOST_LAUNCHERS[memcpy_mpi], "-n", "1", str(bench), "memcpy", *size_options, *STOP])]
    for test, kinds in (("latency", {"tcp-latency": "latency"}), ("bw", {"tcp-bandwidth": "bandwidth"})):
        plans.append(BoundPlan(kinds, "openmpi", "openmpi", lambda bench, test=test: [
            HOST_LAUNCHERS["openmpi"], *TCP_MCA, "-n", "2", str(bench), test, *size_options, *STOP]))
    for mpi in sorted(set(mpis) & set(HOST_LAUNCHERS)):
        plans.append(BoundPlan({"shm-latency": "latency"}, mpi, mpi, lambda bench, mpi=mpi: [
            HOST_LAUNCHERS[mpi], "-n", "2", str(bench), "latency", "-m", "1:1", *STOP]))
    return plans


def batch_plans(starter, step_env: Callable[[str], dict[str, str]], mpis: list[str], sizes: str | None = None,
                inter_node: bool = False) -> list[BoundPlan]:
    """The same kinds on a batch system's nodes, each launch started by the launcher's rank starter
    (`starter.ranks(mpi, placement)`, with `step_env(mpi)` set): memcpy on one node, TCP between two ranks
    of one node and the shared-memory floor there; with `inter_node`, the network between two nodes (one
    rank on each, Open MPI forced onto TCP)."""
    size_options = ["-m", sizes or DEFAULT_SIZES]
    one, two = Placement(ranks=1, nodes=1), Placement(ranks=2, nodes=1)
    memcpy_mpi = next((mpi for mpi in ("mpich", "openmpi") if mpi in mpis), "mpich")
    plans = [BoundPlan(MEMCPY_METRICS, memcpy_mpi, "", lambda bench: [
        *starter.ranks(memcpy_mpi, one), str(bench), "memcpy", *size_options, *STOP], step_env(memcpy_mpi))]
    tcp_env = {**step_env("openmpi"), **TCP_ENV}
    for test, kinds in (("latency", {"tcp-latency": "latency"}), ("bw", {"tcp-bandwidth": "bandwidth"})):
        plans.append(BoundPlan(kinds, "openmpi", "openmpi", lambda bench, test=test: [
            *starter.ranks("openmpi", two), str(bench), test, *size_options, *STOP], tcp_env))
    for mpi in sorted(set(mpis) & set(HOST_LAUNCHERS)):
        plans.append(BoundPlan({"shm-latency": "latency"}, mpi, mpi, lambda bench, mpi=mpi: [
            *starter.ranks(mpi, two), str(bench), "latency", "-m", "1:1", *STOP], step_env(mpi)))
    if inter_node:
        apart = Placement(ranks=2, nodes=2, ranks_per_node=1)
        for test, kinds in NETWORK_KINDS.items():
            plans.append(BoundPlan(kinds, "openmpi", "openmpi", lambda bench, test=test: [
                *starter.ranks("openmpi", apart), str(bench), test, *size_options, *STOP], tcp_env))
    return plans


def measure_plans(plans: list[BoundPlan], skip: set[tuple[str, str]] = frozenset(), launches: int = LAUNCHES,
                  timeout: float = LAUNCH_TIMEOUT, say: Callable[[str], None] = lambda _: None) -> list[Measurement]:
    """Measure each plan's kinds but the (kind, mpi) pairs in `skip` (already stored); `say` hears what is
    being measured."""
    measurements: list[Measurement] = []
    for plan in plans:
        kinds = {kind: metric for kind, metric in plan.kinds.items() if (kind, plan.stored_mpi) not in skip}
        if not kinds:
            continue
        say(f"bounds: {', '.join(kinds)}" + (f" ({plan.mpi})" if plan.stored_mpi else ""))
        try:
            bench = build_host_bench(plan.mpi)
        except (OSError, subprocess.CalledProcessError) as error:
            detail = getattr(error, "stderr", "") or str(error)
            measurements += _failed(list(kinds), plan.stored_mpi, f"build mpistack-bench with the host's {plan.mpi}",
                                    f"cannot build mpistack-bench with the host's {plan.mpi}: "
                                    f"{detail.strip()[-300:]}")
            continue
        measurements += _measure(kinds, plan.stored_mpi, plan.argv(bench), launches, timeout, plan.env)
    return measurements


def measure_bounds(mpis: list[str], sizes: str | None = None, skip: set[tuple[str, str]] = frozenset(),
                   launches: int = LAUNCHES, timeout: float = LAUNCH_TIMEOUT,
                   say: Callable[[str], None] = lambda _: None) -> list[Measurement]:
    """Measure this host's bounds: memcpy, TCP loopback (Open MPI) over `sizes` ("LOW:HIGH", as -m; None:
    DEFAULT_SIZES), and the shared-memory floor of each host MPI family in `mpis`. (kind, mpi) pairs
    in `skip` (already stored) are not measured again. `say` hears what is being measured."""
    return measure_plans(local_plans(mpis, sizes), skip, launches, timeout, say)


def by_node(measurements: list[Measurement]) -> dict[str, list[dict]]:
    """The measurements as stored, by the node they ran on: a per-node kind under its node (one that gave no
    figures under the node the others ran on); an inter-node kind under each of its two nodes, its message
    naming the link."""
    nodes = [m.hosts[0] for m in measurements if m.hosts and not m.kind.startswith("net-")]
    fallback = max(set(nodes), key=nodes.count) if nodes else UNKNOWN_NODE
    stored: dict[str, list[dict]] = {}
    for m in measurements:
        record = m.record()
        if m.kind.startswith("net-"):
            hosts = m.hosts or [fallback]
            named = " and ".join(hosts) if len(hosts) > 1 else "two nodes (not named: no output)"
            link = f"TCP between {named} (Open MPI pml ob1, btl tcp)"
            record["message"] = f"{LINK_PREFIX}{link}" + (f"; {m.message}" if m.message else "")
        else:
            hosts = [m.hosts[0] if m.hosts else fallback]
        for host in hosts:
            stored.setdefault(host, []).append(record)
    return dict(sorted(stored.items(), key=lambda item: item[0] != fallback))  # the per-node kinds' node first


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
    """Measure and store the machine's bounds for the campaign before its first timed case (what a resumed run
    has stored already is not measured again). Under a batch launcher, on the batch system's nodes, through
    its rank starter (batch_plans)."""
    if os.environ.get(SWITCH, "").lower() in ("0", "off", "no"):
        console.print(f"[dim]machine bounds: not measured ({SWITCH}={os.environ[SWITCH]})[/dim]")
        return
    runnable = [case for case in cases if not case.skip]
    if not runnable:
        return  # nothing will be timed
    mpis = sorted({case.stack.mpi_impl for case in runnable} & set(HOST_LAUNCHERS))
    launcher = LAUNCHERS.get(campaign.launcher)
    if launcher.can.batch:
        _measure_on_nodes(campaign, campaign_id, runnable, mpis, launcher, database, console)
        return
    host = machine()
    skip = measured(database, campaign_id, host["host"])
    reused = reuse_recent(database, campaign_id, host["host"], skip)
    if reused:
        console.print(f"machine bounds: {len(reused)} measured on {escape(host['host'])} within the last "
                      f"{REUSE_HOURS} h reused ({escape(', '.join(sorted(reused)))})", highlight=False)
        skip = measured(database, campaign_id, host["host"])
    started = time.monotonic()
    results = _with_progress(console, lambda say: measure_bounds(mpis, campaign_sizes(campaign.benchmark_options),
                                                                 skip, say=say))
    try:
        write_bounds(database, campaign_id, host, [result.record() for result in results])
    except SQLAlchemyError as error:  # bounds are not results: the campaign goes on without them
        _not_stored(console, error)
        return
    _said(console, results, started)


def _measure_on_nodes(campaign: Campaign, campaign_id: int, runnable: list[Case], mpis: list[str], launcher,
                      database: Engine, console: Console) -> None:
    """The batch launcher's half of measure_for_campaign: what no node of the campaign has stored yet,
    measured through the launcher's starter, stored under the node(s) each kind ran on."""
    skip: set[tuple[str, str]] = set()
    for host in bound_hosts(database, campaign_id):
        skip |= measured(database, campaign_id, host)
    scheduler = launcher.open(campaign, None)
    # srun from here makes an allocation of its own: it needs the campaign's account, partition, ... too
    allocation = getattr(scheduler, "allocation_env", dict)()
    step_env = getattr(scheduler, "step_env", lambda mpi: {})
    step_env = (lambda mpi, of=step_env: {**allocation, **of(mpi)})
    inter_node = any((case.placement.nodes or 1) > 1 for case in runnable)
    plans = batch_plans(launcher.starter, step_env, mpis, campaign_sizes(campaign.benchmark_options), inter_node)
    started = time.monotonic()
    results = _with_progress(console, lambda say: measure_plans(plans, skip, timeout=BATCH_LAUNCH_TIMEOUT, say=say))
    nodes = by_node(results)
    try:
        for host, records in nodes.items():
            write_bounds(database, campaign_id, {"host": host}, records)
    except SQLAlchemyError as error:
        _not_stored(console, error)
        return
    _said(console, results, started, f" on {', '.join(nodes)}" if nodes else "")


def _with_progress(console: Console, measure: Callable[[Callable[[str], None]], list[Measurement]]):
    with Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(), console=console,
                  transient=True) as progress:
        task = progress.add_task("machine bounds")
        return measure(lambda text: progress.update(task, description=escape(text)))


def _not_stored(console: Console, error: SQLAlchemyError) -> None:
    # bounds are not results: the campaign goes on without them
    console.print(f"[yellow]machine bounds not stored[/yellow]: {escape(str(error).splitlines()[0])}",
                  highlight=False)


def _said(console: Console, results: list[Measurement], started: float, where: str = "") -> None:
    if results:
        failed = [f"{r.kind}{' (' + r.mpi + ')' if r.mpi else ''}: {r.status}" for r in results if r.status != "ok"]
        console.print(f"machine bounds: {len(results) - len(failed)} of {len(results)} measured{escape(where)} in "
                      f"{time.monotonic() - started:.0f} s" + (f"; [yellow]{escape('; '.join(failed))}[/yellow]"
                                                              if failed else ""), highlight=False)
