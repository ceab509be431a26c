"""What every parser returns: runs of one benchmark, each with its rows (one per message size)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..spec.benchmarks import metric_of
from ..spec.provenance import Provenance
from ..spec.status import RunStatus


def is_count(token: str) -> bool:
    """ASCII digits only: str.isdigit() also takes '¹' and other digits int() refuses."""
    return token.isascii() and token.isdigit()


class ParseError(Exception):
    """The one error a parser raises: names the file, the line and what was expected."""

    def __init__(self, source: str, line: int, message: str):
        self.source = source
        self.line = line
        self.message = message
        where = f"{source}:{line}" if line else source
        super().__init__(f"{where}: {message}")


@dataclass
class ParsedRow:
    """One message size: the figures (metric -> value) and the statistics of the primary metric."""

    size: int | None
    values: dict[str, float]
    stats: dict[str, float | int] = field(default_factory=dict)
    validation: str | None = None  # "pass", "fail" or None when not validated
    line: int = 0


@dataclass
class ParsedRun:
    """One benchmark's output: a title, its columns and its rows."""

    benchmark: str  # OSU test name without the osu_ prefix: latency, bw, allreduce, ...
    title: str
    units: dict[str, str]  # metric -> unit, primary metric first
    rows: list[ParsedRow] = field(default_factory=list)
    suite: str | None = None  # "osu 7.5", "mpistack-bench 0.1"
    incomplete: bool = False
    validation_failed: bool = False
    messages: list[str] = field(default_factory=list)
    line: int = 0  # where the run starts in its file
    provenance: Provenance = field(default_factory=Provenance)  # what the output says about the run
    tags: dict[str, str] = field(default_factory=dict)

    @property
    def result_count(self) -> int:
        """Results this run stores: one per metric per message size."""
        return sum(len(row.values) for row in self.rows)

    @property
    def primary_metric(self) -> str:
        return next(iter(self.units))

    @property
    def status(self) -> RunStatus:
        if self.validation_failed or any(row.validation == "fail" for row in self.rows):
            return RunStatus.VALIDATION_FAILED
        if self.incomplete:
            return RunStatus.FAILED
        return RunStatus.OK

    @classmethod
    def empty(cls, benchmark: str) -> "ParsedRun":
        """A run with no figures: what is recorded for a case that failed before printing any."""
        metric = metric_of(benchmark)
        return cls(benchmark=benchmark, title=benchmark, units={metric.name: metric.unit})
