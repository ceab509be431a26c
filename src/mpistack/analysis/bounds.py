"""Machine bounds: what the machine a campaign ran on can do at all, measured there before its first case.

A figure means something only against what the machine allows (T. Hoefler and R. Belli, "Scientific
Benchmarking of Parallel Computing Systems", SC15, rule 11: "If possible, show upper performance bounds to
facilitate interpretability of the measured results", https://doi.org/10.1145/2807591.2807644):

* ``memcpy``: one core copying a message, in cache (the same buffers again and again) and from memory (buffers
  larger than the caches). No transport between two ranks of one node moves bytes faster than a copy in
  cache: a bandwidth above it is an in-cache figure (the benchmark reused a buffer that stayed in cache), not
  a faster transport.
* ``tcp``: an MPI forced onto TCP over the loopback (Open MPI, ``--mca btl tcp,self``), latency and bandwidth
  per size: the lower bound. A figure on TCP's side says the run fell back to sockets (or to something no
  better).
* ``shm``: the host MPI's own 1-byte latency between two ranks of one node, per MPI family: the shared-memory
  floor.
* ``net``: under a batch launcher, when the campaign has an inter-node placement, the network between two
  nodes: one rank per node, Open MPI forced onto TCP, latency and bandwidth per size. What a row between
  nodes that fell back to TCP is compared with (``MachineBounds.network`` names the link).

Units as OSU: bandwidth in MB/s (1e6 bytes per second), latency in microseconds. Every figure is the median
over a few launches (each launch's figure the median over its iterations) with the launches' minimum and maximum
(the machine is noisy; the launch is the unit of evidence).

Pure: no I/O except ``load_bounds``, which reads the store (store/bounds.py); campaign/bounds.py measures and
stores them, the doctor and the report read them through ``MachineBounds``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Iterable, Literal

if TYPE_CHECKING:
    from sqlalchemy import Engine

    from ..store.reading import SqliteStore

#: Kinds of bound, as stored (one ``BoundFigure.kind`` each).
MEMCPY_CACHE = "memcpy-cache"
MEMCPY_MEMORY = "memcpy-memory"
TCP_LATENCY = "tcp-latency"
TCP_BANDWIDTH = "tcp-bandwidth"
SHM_LATENCY = "shm-latency"
NET_LATENCY = "net-latency"
NET_BANDWIDTH = "net-bandwidth"
KINDS = (MEMCPY_CACHE, MEMCPY_MEMORY, TCP_LATENCY, TCP_BANDWIDTH, SHM_LATENCY, NET_LATENCY, NET_BANDWIDTH)
UNITS = {MEMCPY_CACHE: "MB/s", MEMCPY_MEMORY: "MB/s", TCP_LATENCY: "us", TCP_BANDWIDTH: "MB/s", SHM_LATENCY: "us",
         NET_LATENCY: "us", NET_BANDWIDTH: "MB/s"}

#: A bandwidth this much above the in-cache memcpy figure of its size is above the bound: a copy measured on a
#: noisy machine varies by this much between launches, so a figure within it is not called impossible.
MEMCPY_TOLERANCE = 0.10
#: The margin around TCP's figure within which a figure is "on TCP's side", at most: it shrinks when the
#: measured gap between the shared-memory floor and TCP is narrower (see ``MachineBounds.tcp_margin``).
MAX_TCP_MARGIN = 0.25


@dataclass(frozen=True)
class BoundFigure:
    """One bound at one message size (None for a bound without one): the median over ``launches`` launches."""

    kind: str  # one of KINDS
    size: int | None
    value: float  # median over launches: MB/s or microseconds (UNITS[kind])
    low: float  # the smallest and largest launch's figure: the spread
    high: float
    launches: int
    mpi: str = ""  # the MPI family measured (shm-latency: one per family; tcp: openmpi); "" for memcpy

    @property
    def unit(self) -> str:
        return UNITS[self.kind]

    @property
    def spread(self) -> float:
        """(high - low) / median: how far apart the launches were, relative."""
        return (self.high - self.low) / self.value if self.value else math.inf


@dataclass(frozen=True)
class BoundSource:
    """How one kind of bound was measured: provenance for the report and the doctor."""

    kind: str  # one of KINDS
    mpi: str  # the MPI family measured, "" for memcpy
    host: str
    command: str  # the exact command line of one launch
    library_version: str  # MPI_Get_library_version's first line ("" for memcpy: libc)
    measured_at: datetime
    launches: int  # launches that gave figures
    status: str = "ok"  # ok, timeout, failed: a hang or a failure is recorded, never fatal
    message: str = ""  # what went wrong, first lines


@dataclass(frozen=True)
class MachineBounds:
    """The bounds measured on one node (locally: this host) for one campaign.

    Look-ups take a message size and answer for it: the figure at that size when measured, else interpolated
    on a log-log scale between the measured sizes around it, else the nearest measured size's (a bound is
    flat beyond the measured range to the precision that matters here); None when that kind was not measured.
    """

    host: str
    cpu_model: str
    kernel: str
    figures: tuple[BoundFigure, ...] = ()
    sources: tuple[BoundSource, ...] = ()
    network: str = "not measured"  # the inter-node link (net-* kinds) measured under a batch launcher, or not

    # -- look-ups ---------------------------------------------------------------------------------------

    def of(self, kind: str, mpi: str | None = None) -> tuple[BoundFigure, ...]:
        """The figures of one kind (and MPI family, when given), by size."""
        return tuple(sorted((f for f in self.figures if f.kind == kind and (mpi is None or f.mpi == mpi)),
                            key=lambda f: f.size or 0))

    def figure_at(self, kind: str, size: int, mpi: str | None = None, which: str = "value") -> float | None:
        """The bound of `kind` at `size` (interpolated as the class says), None when not measured. `which`:
        "value" (the median over launches), "low" or "high" (the launches' extremes)."""
        return _at(self.of(kind, mpi), size, which)

    def memcpy_mbs(self, size: int, where: Literal["cache", "memory"] = "cache") -> float | None:
        """One core's memcpy bandwidth (MB/s) for a message of `size` bytes, in cache or from memory."""
        return self.figure_at(MEMCPY_CACHE if where == "cache" else MEMCPY_MEMORY, size)

    def tcp_latency_us(self, size: int) -> float | None:
        """The latency (us) of an MPI over TCP loopback at `size` bytes."""
        return self.figure_at(TCP_LATENCY, size)

    def tcp_bandwidth_mbs(self, size: int) -> float | None:
        """The bandwidth (MB/s) of an MPI over TCP loopback at `size` bytes."""
        return self.figure_at(TCP_BANDWIDTH, size)

    def net_latency_us(self, size: int) -> float | None:
        """The latency (us) between two nodes (one rank each, MPI over TCP) at `size` bytes."""
        return self.figure_at(NET_LATENCY, size)

    def net_bandwidth_mbs(self, size: int) -> float | None:
        """The bandwidth (MB/s) between two nodes (one rank each, MPI over TCP) at `size` bytes."""
        return self.figure_at(NET_BANDWIDTH, size)

    def tcp_bound(self, metric: str, size: int, nodes: int = 1) -> float | None:
        """TCP's figure a row of `metric` ("latency", else bandwidth) on `nodes` nodes is compared with: between
        nodes the network's where it was measured, else (and on one node) the loopback's."""
        if metric == "latency":
            between = self.net_latency_us(size) if nodes > 1 else None
            return between if between is not None else self.tcp_latency_us(size)
        between = self.net_bandwidth_mbs(size) if nodes > 1 else None
        return between if between is not None else self.tcp_bandwidth_mbs(size)

    def shm_latency_us(self, mpi: str | None = None) -> float | None:
        """The shared-memory floor: the host MPI's native 1-byte latency (us), of the family `mpi` when given,
        else the lowest of the families measured."""
        values = [f.value for f in self.of(SHM_LATENCY, mpi)]
        return min(values) if values else None

    # -- judgements -------------------------------------------------------------------------------------

    def above_memcpy(self, size: int, mbs: float, copies: int = 1) -> bool:
        """Whether a bandwidth of `mbs` MB/s at `size` bytes is above one core's in-cache memcpy of that size
        (by more than MEMCPY_TOLERANCE, and above its fastest launch): an in-cache figure, not a faster
        transport. `copies`: cores copying at
        once (2 for a bi-directional bandwidth, each rank copying its direction). False when memcpy was not
        measured."""
        bound = self.memcpy_mbs(size, "cache")
        if bound is None:
            return False
        # above every launch of memcpy too: on a noisy machine one launch may copy faster than the median
        best = max(bound * (1 + MEMCPY_TOLERANCE), self.figure_at(MEMCPY_CACHE, size, which="high") or 0.0)
        return mbs > best * copies

    def tcp_margin(self, nodes: int = 1) -> float:
        """The relative margin around TCP's figures within which a figure counts as "on TCP's side": a quarter
        of the measured gap between the shared-memory floor and TCP's 1-byte latency (on a log scale; between
        `nodes` > 1, the network's where measured), at most MAX_TCP_MARGIN, so that a margin never reaches
        halfway to the shared-memory side. MAX_TCP_MARGIN when either was not measured."""
        shm, tcp = self.shm_latency_us(), self.tcp_bound("latency", 1, nodes)
        if not shm or not tcp or tcp <= shm:
            return MAX_TCP_MARGIN
        return min(MAX_TCP_MARGIN, math.exp(math.log(tcp / shm) / 4) - 1)

    def tcp_side(self, metric: str, size: int, figure: float, directions: int = 1, nodes: int = 1) -> bool | None:
        """Whether `figure` for `metric` at `size` bytes is on TCP's side: a "latency" (us) no better than TCP
        loopback's less the margin, a "bandwidth" (MB/s) no better than TCP's plus the margin. `directions`: 2
        for a bi-directional bandwidth (bibw moves both ways at once: TCP's one-way figure doubled is its
        counterpart; metric "bi-bandwidth" says the same). `nodes` > 1: a row between nodes, compared with the
        network's TCP figures where they were measured (tcp_bound). None when TCP was not measured for that
        metric, or for another metric (no claim either way)."""
        margin = self.tcp_margin(nodes)
        if metric == "latency":
            tcp = self.tcp_bound("latency", size, nodes)
            return None if tcp is None else figure >= tcp * (1 - margin)
        if metric not in ("bandwidth", "bi-bandwidth"):
            return None
        tcp = self.tcp_bound("bandwidth", size, nodes)
        if tcp is None:
            return None
        directions = 2 if metric == "bi-bandwidth" else directions
        return figure <= tcp * directions * (1 + margin)

    # -- words ------------------------------------------------------------------------------------------

    def mpi_versions(self) -> dict[str, str]:
        """The MPI library versions measured, by family."""
        return {s.mpi: s.library_version for s in self.sources if s.mpi and s.library_version}

    def describe(self) -> str:
        """One line naming the machine and the MPI libraries the bounds were measured with."""
        versions = "; ".join(f"{mpi}: {version}" for mpi, version in sorted(self.mpi_versions().items()))
        # a batch system's node is known by its name only (its CPU and kernel are not asked)
        what = ", ".join(part for part in (self.cpu_model, f"Linux {self.kernel}" if self.kernel else "") if part)
        return self.host + (f" ({what})" if what else "") + (f", {versions}" if versions else "")

    def failures(self) -> tuple[BoundSource, ...]:
        """The kinds whose measurement timed out or failed."""
        return tuple(s for s in self.sources if s.status != "ok")


def _at(figures: tuple[BoundFigure, ...], size: int, which: str = "value") -> float | None:
    """Log-log interpolation of `which` (value, low, high) between the figures around `size`, the nearest end's
    outside them."""
    sized = [f for f in figures if f.size is not None and f.size > 0]
    if not sized:
        return getattr(figures[0], which) if figures else None
    for figure in sized:
        if figure.size == size:
            return getattr(figure, which)
    if size <= sized[0].size:
        return getattr(sized[0], which)
    if size >= sized[-1].size:
        return getattr(sized[-1], which)
    below = max((f for f in sized if f.size < size), key=lambda f: f.size)
    above = min((f for f in sized if f.size > size), key=lambda f: f.size)
    weight = (math.log(size) - math.log(below.size)) / (math.log(above.size) - math.log(below.size))
    low, high = getattr(below, which), getattr(above, which)
    return math.exp(math.log(low) + weight * (math.log(high) - math.log(low)))


def bounds_from(host: dict, figures: Iterable[BoundFigure], sources: Iterable[BoundSource]) -> MachineBounds:
    """A MachineBounds from a host record (host, cpu_model, kernel, network) and its figures and sources."""
    return MachineBounds(host=host.get("host", ""), cpu_model=host.get("cpu_model", ""),
                         kernel=host.get("kernel", ""), figures=tuple(figures), sources=tuple(sources),
                         network=host.get("network") or "not measured")


def load_bounds(store: "Engine | SqliteStore", campaign_id: int, host: str | None = None) -> MachineBounds | None:
    """The bounds measured for a campaign on `host` (default: the first node measured; locally the only one),
    the newest per kind when several were; None when none were. `store`: an Engine, or the plain SQLite reader
    of store/reading.py (`open_reader`)."""
    from ..store.bounds import read_bounds

    stored = read_bounds(store, campaign_id, host)
    if stored is None:
        return None
    host, figures, sources = stored
    return bounds_from(host, (BoundFigure(**f) for f in figures), (BoundSource(**s) for s in sources))


__all__ = ["KINDS", "MAX_TCP_MARGIN", "MEMCPY_CACHE", "MEMCPY_MEMORY", "MEMCPY_TOLERANCE", "NET_BANDWIDTH",
           "NET_LATENCY", "SHM_LATENCY",
           "TCP_BANDWIDTH", "TCP_LATENCY", "UNITS", "BoundFigure", "BoundSource", "MachineBounds", "bounds_from",
           "load_bounds"]
