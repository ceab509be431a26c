"""Machine bounds as the report, `mpistack show` and `mpistack doctor --bounds` print them: a table per size,
who measured them, and which figures lie above the memcpy bound (analysis/bounds.py says what they are)."""

from __future__ import annotations

from dataclasses import dataclass

from ..analysis.bounds import (MEMCPY_CACHE, MEMCPY_MEMORY, NET_BANDWIDTH, NET_LATENCY, SHM_LATENCY, TCP_BANDWIDTH,
                               TCP_LATENCY, MachineBounds)
from ..analysis.classes import format_size

#: what a figure above the in-cache memcpy bound is called, wherever it is shown
ABOVE_MEMCPY = "above the memcpy bound: an in-cache figure, not a faster transport"
#: the benchmarks whose bandwidth is bounded by memcpy, with the cores copying at once (bibw: both directions)
COPIES = {"bw": 1, "bibw": 2}
#: the benchmarks whose latency is bounded by the shared-memory floor and TCP's latency (point-to-point)
LATENCY_BENCHMARKS = frozenset({"latency"})
HEADERS = ["size", "memcpy in cache (MB/s)", "memcpy from memory (MB/s)", "TCP latency (us)", "TCP bandwidth (MB/s)"]
#: the columns of the network between two nodes, where a batch campaign measured it
NET_HEADERS = ["network latency (us)", "network bandwidth (MB/s)"]
NAMES = {MEMCPY_CACHE: "memcpy in cache", MEMCPY_MEMORY: "memcpy from memory", TCP_LATENCY: "TCP latency",
         TCP_BANDWIDTH: "TCP bandwidth", SHM_LATENCY: "shared-memory 1-byte latency",
         NET_LATENCY: "network latency between nodes", NET_BANDWIDTH: "network bandwidth between nodes"}


def headers(machine: MachineBounds) -> list[str]:
    """bounds_rows' columns: HEADERS, and NET_HEADERS where the network between nodes was measured."""
    return HEADERS + (NET_HEADERS if _networked(machine) else [])


def _networked(machine: MachineBounds) -> bool:
    return bool(machine.of(NET_LATENCY) or machine.of(NET_BANDWIDTH))


def number(value: float | None) -> str:
    """A bound with the digits that matter (3 significant), or an em dash when not measured."""
    if value is None:
        return "—"
    return f"{value:.3g}" if value < 1000 else f"{value:,.0f}"


def measured_sizes(machine: MachineBounds) -> list[int]:
    return sorted({f.size for f in machine.figures if f.size is not None and f.kind != SHM_LATENCY})


def bounds_rows(machine: MachineBounds, sizes: list[int] | None = None) -> list[list[str]]:
    """One row per size (default: the sizes measured): headers(machine)'s columns as text."""
    networked = _networked(machine)
    return [[format_size(size), number(machine.memcpy_mbs(size, "cache")), number(machine.memcpy_mbs(size, "memory")),
             number(machine.tcp_latency_us(size)), number(machine.tcp_bandwidth_mbs(size))]
            + ([number(machine.net_latency_us(size)), number(machine.net_bandwidth_mbs(size))] if networked else [])
            for size in (sizes if sizes is not None else measured_sizes(machine))]


def floor_line(machine: MachineBounds) -> str:
    """The shared-memory floor per MPI family, on one line."""
    floors = [f"{f.mpi} {number(f.value)} us" for f in machine.of(SHM_LATENCY)]
    return "shared-memory floor (1-byte latency, native): " + (", ".join(floors) if floors else "not measured")


def source_lines(machine: MachineBounds) -> list[str]:
    """Who measured each bound: how, when, how many launches and how far apart they were; or why it is missing."""
    lines = []
    for source in sorted(machine.sources, key=lambda s: (s.kind, s.mpi)):
        name = NAMES.get(source.kind, source.kind) + (f" ({source.mpi})" if source.mpi else "")
        when = source.measured_at.strftime("%Y-%m-%d %H:%M UTC") if hasattr(source.measured_at, "strftime") else ""
        if source.status != "ok":
            lines.append(f"{name}: {source.status}, {source.message}".rstrip(", "))
            continue
        spreads = sorted(f.spread for f in machine.of(source.kind, source.mpi))
        spread = (f", launches {spreads[len(spreads) // 2]:.0%} apart at the median size, {spreads[-1]:.0%} at most"
                  if len(spreads) > 1 else f", launches {spreads[0]:.0%} apart" if spreads else "")
        note = f" ({source.message})" if source.message else ""
        lines.append(f"{name}: median of {source.launches} launches{spread}, {when}{note}: {source.command}")
    return lines


@dataclass(frozen=True)
class AboveBound:
    """A figure above the in-cache memcpy bound of its size."""

    where: str  # the benchmark group and row
    size: int
    value: float
    bound: float  # the in-cache memcpy figure at that size, times the cores copying

    @property
    def size_text(self) -> str:
        return format_size(self.size)


def above_memcpy(machine: MachineBounds | None, benchmark: str, metric: str, size: int | None,
                 value: float | None) -> bool:
    """Whether a benchmark's figure at a size is above the memcpy bound (only bw and bibw bandwidths are)."""
    if machine is None or size is None or value is None or metric != "bandwidth" or benchmark not in COPIES:
        return False
    return machine.above_memcpy(size, value, COPIES[benchmark])


def above_bound_figures(report) -> list[AboveBound]:
    """Every median of the report (the system MPI's included) above the memcpy bound of its size, in the groups'
    order."""
    machine = report.bounds
    found = []
    for group in report.groups if machine is not None else []:
        for series in [*group.baselines, *group.candidates]:
            system = " (system)" if series in group.baselines else ""
            for size, value in sorted(series.median.items(), key=lambda item: item[0] or 0):
                if above_memcpy(machine, group.key.benchmark, group.key.metric, size, value):
                    found.append(AboveBound(f"{group.key.title}: {series.label}{system}", size, value,
                                            machine.memcpy_mbs(size, "cache") * COPIES[group.key.benchmark]))
    return found


@dataclass(frozen=True)
class BoundsView:
    """What the report's "Machine bounds" section shows (templates/bounds.md and bounds.html)."""

    machine: str  # MachineBounds.describe()
    headers: list[str]
    rows: list[list[str]]
    floor: str
    sources: list[str]
    network: str
    above: list[AboveBound]
    note: str = ABOVE_MEMCPY


def bounds_view(report) -> BoundsView | None:
    """The section of a report whose campaign has bounds, at the sizes its groups have; None without bounds."""
    machine = report.bounds
    if machine is None:
        return None
    sizes = sorted({size for group in report.groups for series in [*group.baselines, *group.candidates]
                    for size in series.median if size})
    return BoundsView(machine.describe(), headers(machine), bounds_rows(machine, sizes or None), floor_line(machine),
                      source_lines(machine), machine.network, above_bound_figures(report))
