"""The evidence the analysis works from: launches (one stored run each) grouped into rows, read from the store.

A *row* is everything that is compared as one: a stack, deployed one way, in one variant, running one benchmark
metric at one placement and buffer placement, within one scope (a campaign, or one published reference). Its
*launches* give one figure per message size each; the launch, not the iteration, is the unit of evidence.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import statistics
import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Iterable

from sqlalchemy import Engine

from ..spec.benchmarks import HIGHER_IS_BETTER, metric_of
from ..spec.campaign import DEFAULT_VARIANT
from ..spec.status import RunStatus
from ..store.query import Where, launch_evidence
from .bulk import collector_paused


@dataclass(frozen=True, order=True)
class RowKey:
    """What one row compares: one scope, stack, approach, variant, benchmark metric, placement and buffers."""

    scope: str  # "campaign 3", or "reference lumi-container-approaches"
    stack: str
    approach: str
    variant: str
    benchmark: str
    metric: str
    ranks: int
    nodes: int
    buffers: str

    @property
    def higher_is_better(self) -> bool:
        return self.metric in HIGHER_IS_BETTER

    @property
    def placement(self) -> str:
        """``n2N1``: ranks and nodes as case labels write them, ``?`` for what the source did not say (published
        tables often give neither)."""
        return f"n{self.ranks}N{self.nodes or '?'}" if self.ranks else "n?"

    def with_(self, **changes) -> "RowKey":
        return dataclasses.replace(self, **changes)


@dataclass(frozen=True)
class Slot:
    """Where a launch ran in its campaign's schedule: its round (the repeat), its block within the round (the
    launches scheduled next to each other to be compared), and its position in the run order."""

    round: int
    block: str | None = None
    position: int | None = None


def _slot(tags: dict) -> Slot | None:
    round_ = tags.get("round", tags.get("repeat"))
    if round_ is None or not str(round_).isdigit():
        return None
    position = tags.get("position")
    return Slot(int(round_), tags.get("block"), int(position) if str(position).isdigit() else None)


def pair_launches(candidate: "Row", baseline: "Row") -> dict[int, int]:
    """Each candidate launch's partner among the baseline's launches: the one of the same round and block, else
    the one of the same round nearest in the run order (the first, without positions). Launches without a slot,
    or whose round has no baseline launch, stay unpaired."""
    by_block: dict[tuple[int, str], int] = {}
    by_round: dict[int, list[tuple[int, int]]] = {}
    for run, slot in baseline.schedule.items():
        if slot.block is not None:
            by_block.setdefault((slot.round, slot.block), run)
        by_round.setdefault(slot.round, []).append((slot.position if slot.position is not None else 0, run))
    partners: dict[int, int] = {}
    for run, slot in candidate.schedule.items():
        partner = by_block.get((slot.round, slot.block)) if slot.block is not None else None
        if partner is None and slot.round in by_round:
            here = slot.position if slot.position is not None else 0
            partner = min(by_round[slot.round], key=lambda item: (abs(item[0] - here), item[0]))[1]
        if partner is not None:
            partners[run] = partner
    return partners


@dataclass
class Row:
    """The launches of one row: figures per size (one per successful launch) and what went wrong in the others."""

    key: RowKey
    origin: str  # host (the system's MPI), venv (a stack installed natively), image, or published
    mpi: str  # the MPI family (mpich, openmpi), as tagged
    variant_baseline: str = DEFAULT_VARIANT  # the variant whose native runs this row is compared with
    figures: dict[int | None, list[float]] = field(default_factory=dict)
    launches: int = 0  # successful launches
    failures: list[str] = field(default_factory=list)  # "status: first line of the message", one per failed launch
    skipped: list[str] = field(default_factory=list)  # why the cases were not run
    library_versions: set[str] = field(default_factory=set)  # what MPI_Get_library_version said, first line
    #: the whole of what it said, which tells builds apart (MPICH's first line is its release alone; its device and
    #: configure line follow)
    library_builds: set[str] = field(default_factory=set)
    declared_version: str | None = None
    runs: list[int] = field(default_factory=list)
    #: per size, the run id of each figure in ``figures`` (the same order): which launch gave it
    launch_of: dict[int | None, list[int]] = field(default_factory=dict)
    control: bool = False  # the campaign's A/A control: the system MPI against itself, with a harmless setting
    #: per successful launch (run id), where it ran in the campaign's schedule: (round, block, position); a launch
    #: without rounds (an ingested file, a reference) is absent
    schedule: dict[int, "Slot"] = field(default_factory=dict)

    def slow_launch_share(self, threshold: float = 0.25) -> float:
        """The share of this row's launches that ran in a slow mode: whose figures, over the sizes they have, were
        more than ``threshold`` worse than the row's median at those sizes (geometric mean of the per-size
        ratios). NaN without launches. The machine's slow modes are reported, never dropped."""
        if not self.launches:
            return math.nan
        higher = self.key.higher_is_better
        logs: dict[int, list[float]] = {}
        for size, values in self.figures.items():
            middle = statistics.median(values)
            for run, value in zip(self.launch_of.get(size) or range(len(values)), values):
                logs.setdefault(run, []).append(math.log(middle / value if higher else value / middle))
        slow = sum(math.fsum(ratios) / len(ratios) > math.log1p(threshold) for ratios in logs.values())
        return slow / len(logs)

    @property
    def library_version(self) -> str | None:
        """The one library version the row's launches reported (None when none or several)."""
        return next(iter(self.library_versions)) if len(self.library_versions) == 1 else None

    @property
    def library_build(self) -> str | None:
        """The one library build the row's launches ran (the whole version string; None when none or several)."""
        return next(iter(self.library_builds)) if len(self.library_builds) == 1 else None


#: The run tags a row is made of (its scope, origin, variant, MPI family and version): the only ones read.
ROW_TAGS = ("reference", "system", "origin", "variant", "variant_baseline", "mpi", "mpi_version", "repeat", "round",
            "block", "position", "control")


def row_scope(run: dict) -> str:
    """What a run is compared within: its campaign, the published reference it came from, or its system."""
    if run["campaign"] is not None:
        return f"campaign {run['campaign']}"
    tags = run["tags"]
    return f"reference {tags['reference']}" if "reference" in tags else f"system {tags.get('system', 'unknown')}"


def _first_line(text: str | None) -> str:
    for line in (text or "").splitlines():
        if line.strip():
            return line.strip()
    return ""


@functools.lru_cache(maxsize=1024)  # every launch of a stack reports the same string: read it once
def library_line(version: str | None) -> str | None:
    """The first line of an MPI library version string ('MPICH Version:  4.0.2', 'Open MPI v4.1.4, ...')."""
    line = _first_line(version)
    return re.sub(r"\s+", " ", line) if line else None


def _origin(run: dict) -> str:
    tags = run["tags"]
    if "origin" in tags:
        return tags["origin"]
    if run["campaign"] is None:
        return "published"
    return "host" if run["approach"] == "native" else "image"


def rows_from(runs: dict[int, dict], results: Iterable[tuple]) -> dict[RowKey, Row]:
    """Group runs and their results (``(run, size, metric, figure)`` tuples with positive figures, as
    ``store.query.launch_evidence`` reads them) into rows: one figure per launch and size."""
    rows: dict[RowKey, Row] = {}
    row_of_fields: dict[tuple, Row] = {}  # the key's fields as read: one RowKey per row, not one per launch

    def row_for(run: dict, benchmark: str, metric: str) -> Row:
        tags = run["tags"]
        fields = (run["campaign"], tags.get("reference"), tags.get("system"), run["stack"], run["approach"],
                  tags.get("variant"), benchmark, metric, run["ranks"], run["nodes"], run["buffers"])
        row = row_of_fields.get(fields)
        if row is None:
            key = RowKey(row_scope(run), run["stack"] or "", run["approach"] or "", tags.get("variant", DEFAULT_VARIANT),
                         benchmark, metric, run["ranks"] or 0, run["nodes"] or 0, run["buffers"] or "H-H")
            row = rows.get(key)
            if row is None:
                row = rows[key] = Row(key, _origin(run), tags.get("mpi", ""),
                                      tags.get("variant_baseline", DEFAULT_VARIANT),
                                      declared_version=tags.get("mpi_version"), control="control" in tags)
            row_of_fields[fields] = row
        return row

    # per launch and metric, its figure per size (the last one read, should a launch report a size twice)
    figures: dict[int, dict[str, dict[int | None, float]]] = defaultdict(dict)
    for run_id, size, metric, figure in results:
        by_metric = figures[run_id]
        by_size = by_metric.get(metric)
        if by_size is None:
            by_size = by_metric[metric] = {}
        by_size[size] = figure

    for run_id, run in runs.items():
        status = run["status"]
        by_metric = figures.get(run_id)
        if status == RunStatus.OK.value and by_metric:
            version = library_line(run["mpi_library_version"])
            build = " ".join((run["mpi_library_version"] or "").split()) or None
            slot = _slot(run["tags"])
            for metric, by_size in by_metric.items():
                row = row_for(run, run["benchmark"], metric)
                row_figures, launch_of = row.figures, row.launch_of
                for size, value in by_size.items():
                    values = row_figures.get(size)
                    if values is None:
                        row_figures[size] = [value]
                        launch_of[size] = [run_id]
                    else:
                        values.append(value)
                        launch_of[size].append(run_id)
                row.launches += 1
                row.runs.append(run_id)
                if slot is not None:
                    row.schedule[run_id] = slot
                if version:
                    row.library_versions.add(version)
                    row.library_builds.add(build)
            continue
        row = row_for(run, run["benchmark"], metric_of(run["benchmark"]).name)
        row.runs.append(run_id)
        reason = _first_line(run["message"])
        if status == RunStatus.SKIPPED.value:
            row.skipped.append(reason or "skipped")
        else:
            state = status if status != RunStatus.OK.value else "no results"
            row.failures.append(f"{state}: {reason}" if reason else state)
    return rows


@collector_paused()
def load_rows(engine: Engine, filters: list[Where] | None = None) -> dict[RowKey, Row]:
    """The rows of every run matching the filters (a campaign: ``Where("campaign", "=", id)``)."""
    with launch_evidence(engine, filters, tags=ROW_TAGS) as (runs, results):
        return rows_from(runs, results)
