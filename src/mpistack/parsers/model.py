"""What every parser returns: runs of one benchmark, each with its rows (one per message size).

Rows are kept column by column (`RowTable`: machine numbers in arrays, not a Python object per figure), so
that a table of millions of rows takes a few tens of bytes per row: a 200 MB OSU output fits in memory a
small multiple of its size.
"""

from __future__ import annotations

import math
from array import array
from dataclasses import dataclass, field
from typing import Iterable, Iterator

from ..spec.benchmarks import metric_of
from ..spec.provenance import Provenance
from ..spec.status import RunStatus

# What the store's integer columns hold (BIGINT for sizes, INTEGER for counts): a parser refuses more.
INT64_MAX = 2**63 - 1
INT32_MAX = 2**31 - 1
# Larger than any benchmark reports, whatever its unit: 10^15 µs is 31 years, 10^15 MB/s a zettabyte a
# second. A figure beyond it (1.7e308 is finite) is a corrupt or forged file, and would overflow the
# analysis's sums of squares.
FIGURE_LIMIT = 1e15


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


class NoBenchmarkOutput(ParseError):
    """Text without any benchmark output (an output that ended before its first table, a log)."""


class RowError(ValueError):
    """A row the store cannot hold (a size beyond 64 bits, an infinite figure); parsers add file and line."""


@dataclass
class ParsedRow:
    """One message size: the figures (metric -> value) and the statistics of the primary metric."""

    size: int | None
    values: dict[str, float]
    stats: dict[str, float | int] = field(default_factory=dict)
    validation: str | None = None  # "pass", "fail" or None when not validated
    line: int = 0


VALIDATION_NAMES = (None, "pass", "fail")  # by the code a row table stores
_VALIDATION_CODES = {name: code for code, name in enumerate(VALIDATION_NAMES)}
NO_SIZE = -1  # barrier rows have no message size; sizes are never negative
_MISSING = math.nan  # figures are finite, so NaN marks a metric or statistic a row does not have
INTEGER_STATS = frozenset({"iterations"})


def check_row(row: ParsedRow) -> None:
    """Raise RowError when the store cannot hold the row as it is."""
    size = row.size
    if size is not None and not 0 <= size <= INT64_MAX:
        raise RowError(f"message size {size} is outside 0..2^63-1, the range a store holds")
    if row.validation not in _VALIDATION_CODES:
        raise RowError(f"validation {row.validation!r}: expected pass or fail")
    for name, value in row.values.items():
        if not math.isfinite(value):
            raise RowError(f"figure {name} = {value}: expected a finite number")
        if abs(value) > FIGURE_LIMIT:
            raise RowError(f"figure {name} = {value:g}: larger than any benchmark reports (at most {FIGURE_LIMIT:g})")
    for name, value in row.stats.items():
        if name in INTEGER_STATS:
            if not (math.isfinite(value) and 0 <= value <= INT32_MAX and value == int(value)):
                raise RowError(f"{name} {value} is not a whole number in 0..2^31-1, the range a store holds")
        elif not math.isfinite(value):
            raise RowError(f"statistic {name} = {value}: expected a finite number")
        elif abs(value) > FIGURE_LIMIT:
            raise RowError(f"statistic {name} = {value:g}: larger than any benchmark reports (at most "
                           f"{FIGURE_LIMIT:g})")


class RowTable:
    """A run's rows, stored by column: sizes, lines and validation in typed arrays, each metric and statistic
    in an array of doubles (NaN where a row has none). Reads back as ParsedRow objects, like a list."""

    __slots__ = ("_sizes", "_lines", "_validation", "_values", "_stats", "_gaps")

    def __init__(self, rows: Iterable[ParsedRow] = ()):
        self._sizes = array("q")
        self._lines = array("q")
        self._validation = bytearray()
        self._values: dict[str, array] = {}
        self._stats: dict[str, array] = {}
        self._gaps: dict[str, int] = {}  # per metric: rows without a figure for it
        self.extend(rows)

    def __len__(self) -> int:
        return len(self._sizes)

    def _column(self, columns: dict[str, array], name: str) -> array:
        column = columns.get(name)
        if column is None:
            column = columns[name] = array("d", [_MISSING]) * len(self._sizes)
            if columns is self._values:
                self._gaps[name] = len(self._sizes)
        return column

    def append(self, row: ParsedRow) -> None:
        check_row(row)
        values, stats = row.values, row.stats
        if values.keys() == self._values.keys() and stats.keys() == self._stats.keys() and self._sizes:
            # the usual row: the same metrics and statistics as the rows before it
            for name, value in values.items():
                self._values[name].append(value)
            for name, value in stats.items():
                self._stats[name].append(value)
        else:
            self._add_columns(row)
        self._sizes.append(NO_SIZE if row.size is None else row.size)
        self._lines.append(row.line)
        self._validation.append(_VALIDATION_CODES[row.validation])

    def _add_columns(self, row: ParsedRow) -> None:
        """Append a row whose metrics or statistics differ from the rows before it (NaN where one lacks one)."""
        count = len(self._sizes)
        for columns, figures in ((self._values, row.values), (self._stats, row.stats)):
            for name, value in figures.items():
                self._column(columns, name).append(value)
            if len(figures) != len(columns):
                for name, column in columns.items():  # metrics this row lacks
                    if len(column) == count:
                        column.append(_MISSING)
                        if columns is self._values:
                            self._gaps[name] += 1

    def extend(self, rows: Iterable[ParsedRow]) -> None:
        for row in rows:
            self.append(row)

    def _row(self, index: int) -> ParsedRow:
        size = self._sizes[index]
        values = {name: value for name, column in self._values.items() if (value := column[index]) == value}
        stats: dict[str, float | int] = {}
        for name, column in self._stats.items():
            value = column[index]
            if value == value:  # not NaN
                stats[name] = int(value) if name in INTEGER_STATS else value
        return ParsedRow(size=None if size == NO_SIZE else size, values=values, stats=stats,
                         validation=VALIDATION_NAMES[self._validation[index]], line=self._lines[index])

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self._row(position) for position in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError("row index out of range")
        return self._row(index)

    def __iter__(self) -> Iterator[ParsedRow]:
        for index in range(len(self)):
            yield self._row(index)

    def __eq__(self, other) -> bool:
        if isinstance(other, (RowTable, list)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    def __repr__(self) -> str:
        return f"RowTable({list(self)!r})"

    def pop(self) -> ParsedRow:
        """Remove and return the last row."""
        row = self[-1]
        for column in (self._sizes, self._lines, *self._values.values(), *self._stats.values()):
            column.pop()
        self._validation.pop()
        for name in row.values.keys() ^ self._values.keys():
            self._gaps[name] -= 1
        return row

    def mark_failed(self, size: int) -> bool:
        """Mark the last row of `size` as failing validation; False when no row has that size."""
        for index in range(len(self) - 1, -1, -1):
            if self._sizes[index] == size:
                self._validation[index] = _VALIDATION_CODES["fail"]
                return True
        return False

    def columns(self) -> tuple[array, bytearray, dict[str, array], dict[str, array]]:
        """The columns themselves, for readers of millions of rows (the store's writer): sizes (NO_SIZE for
        none), validation codes (indexes into VALIDATION_NAMES), and each metric's and statistic's doubles (NaN
        where a row has none). Read-only."""
        return self._sizes, self._validation, self._values, self._stats

    def to_data(self) -> dict:
        """The table as plain lists, column by column (JSON with NaN for a missing figure): a few numbers per
        row rather than an object per row, for the campaign's journal."""
        return {"sizes": self._sizes.tolist(), "lines": self._lines.tolist(), "validation": list(self._validation),
                "values": {name: column.tolist() for name, column in self._values.items()},
                "stats": {name: column.tolist() for name, column in self._stats.items()},
                "gaps": dict(self._gaps)}

    @classmethod
    def from_data(cls, data: dict) -> "RowTable":
        """The table `to_data` wrote; every column must have one entry per row."""
        table = cls()
        table._sizes, table._lines = array("q", data["sizes"]), array("q", data["lines"])
        table._validation = bytearray(data["validation"])
        table._values = {name: array("d", column) for name, column in data["values"].items()}
        table._stats = {name: array("d", column) for name, column in data["stats"].items()}
        table._gaps = {name: int(count) for name, count in data["gaps"].items()}
        count = len(table._sizes)
        lengths = {len(table._lines), len(table._validation), *map(len, table._values.values()),
                   *map(len, table._stats.values())}
        if lengths - {count} or set(table._gaps) != set(table._values):
            raise ValueError("columns of different lengths")
        return table

    def any_failed(self) -> bool:
        return _VALIDATION_CODES["fail"] in self._validation

    def figure_count(self) -> int:
        """Figures stored: one per metric per row that has it."""
        return len(self) * len(self._values) - sum(self._gaps.values())


@dataclass
class ParsedRun:
    """One benchmark's output: a title, its columns and its rows."""

    benchmark: str  # OSU test name without the osu_ prefix: latency, bw, allreduce, ...
    title: str
    units: dict[str, str]  # metric -> unit, primary metric first
    rows: RowTable = field(default_factory=RowTable)  # a list of ParsedRow is accepted and stored as a RowTable
    suite: str | None = None  # "osu 7.5", "mpistack-bench 0.1"
    incomplete: bool = False
    validation_failed: bool = False
    aborted: bool = False  # the launcher reported the job's end as abnormal (Open MPI, MPICH, srun messages)
    messages: list[str] = field(default_factory=list)
    line: int = 0  # where the run starts in its file
    provenance: Provenance = field(default_factory=Provenance)  # what the output says about the run
    tags: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.rows, RowTable):
            self.rows = RowTable(self.rows)

    @property
    def result_count(self) -> int:
        """Results this run stores: one per metric per message size."""
        return self.rows.figure_count()

    @property
    def primary_metric(self) -> str:
        return next(iter(self.units))

    @property
    def status(self) -> RunStatus:
        if self.validation_failed or self.rows.any_failed():
            return RunStatus.VALIDATION_FAILED
        if self.incomplete or self.aborted:
            return RunStatus.FAILED
        return RunStatus.OK

    @classmethod
    def empty(cls, benchmark: str) -> "ParsedRun":
        """A run with no figures: what is recorded for a case that failed before printing any."""
        metric = metric_of(benchmark)
        return cls(benchmark=benchmark, title=benchmark, units={metric.name: metric.unit})
