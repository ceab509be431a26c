"""Parser for published OSU tables in Markdown, where several runs stand side by side as columns
('Docker build pipeline for 4 different container approaches on LUMI' (2025-03-07): 'Host to Host | Host to Device | Device to Host | Device to Device | RCCL').

The first cell of the first row is the OSU title; the rows that start with '#' carry the datatype, the
size label, the figure's header and the variant of each column; numeric rows follow. Each variant
column becomes one run.
"""

from __future__ import annotations

import math
import re

from .model import ParsedRow, ParsedRun, ParseError, RowError, is_count
from ..registry import FORMATS
from ..spec.benchmarks import metric_of
from ..spec.provenance import Provenance
from .osu_names import parse_title

_SEPARATOR_RE = re.compile(r"^\|?\s*:?-{3,}")
_VARIANTS = {
    "host to host": ("H-H", None),
    "host to device": ("H-D", None),
    "device to host": ("D-H", None),
    "device to device": ("D-D", None),
    "managed to managed": ("M-M", None),
    "rccl": ("D-D", "rccl"),
    "nccl": ("D-D", "nccl"),
}


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def _number(cell: str) -> float | None:
    try:
        value = float(cell)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def looks_like_markdown_table(text: str) -> bool:
    """True when the text holds a Markdown table whose first cell is an OSU title."""
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("|") and parse_title(_cells(stripped)[0]) is not None:
            return True
    return False


def _table_runs(lines: list[tuple[int, str]], source: str) -> list[ParsedRun]:
    first_line, first = lines[0]
    title = parse_title(_cells(first)[0])
    assert title is not None
    metric = metric_of(title.benchmark)
    variant_names: list[str] = []
    runs: list[ParsedRun] = []
    for lineno, line in lines[1:]:
        if _SEPARATOR_RE.match(line.strip()):
            continue
        cells = _cells(line)
        if cells[0].startswith("#") or not cells[0]:
            labels = [cell for cell in cells[1:]]
            if sum(1 for cell in labels if cell.lower() in _VARIANTS) > len(variant_names):
                variant_names = labels
            continue
        if not runs:
            if not variant_names:
                raise ParseError(source, lineno, "table has no header row naming its columns "
                                                 "(expected e.g. '| # Size | Host to Host | ... |')")
            for name in variant_names:
                buffers, library = _VARIANTS.get(name.lower(), (None, None))
                benchmark = f"xccl_{title.benchmark}" if library else title.benchmark
                run = ParsedRun(benchmark=benchmark, title=title.text, units={metric.name: metric.unit},
                                suite=title.suite, line=first_line,
                                provenance=Provenance(device=title.device, buffers=buffers))
                run.tags["column"] = name
                if library:
                    run.tags["library"] = library
                runs.append(run)
        if not is_count(cells[0]):
            raise ParseError(source, lineno, f"expected a message size in bytes in the first cell, got {cells[0]!r}")
        size = int(cells[0])
        if len(cells) - 1 != len(runs):
            raise ParseError(source, lineno, f"expected {len(runs)} figures ({', '.join(variant_names)}), "
                                             f"got {len(cells) - 1}")
        for run, cell in zip(runs, cells[1:]):
            if cell in {"", "-", "NA", "n/a"}:
                continue
            value = _number(cell)
            if value is None:
                raise ParseError(source, lineno, f"expected a number in column {run.tags['column']!r}, got {cell!r}")
            try:
                run.rows.append(ParsedRow(size=size, values={metric.name: value}, line=lineno))
            except RowError as error:
                raise ParseError(source, lineno, str(error)) from None
    for run in runs:
        if not run.rows:
            run.incomplete = True
    return runs


@FORMATS.register("markdown-tables", order=20, detect=looks_like_markdown_table)
def parse_markdown_tables(text: str, source: str = "<text>") -> list[ParsedRun]:
    """Every OSU table in a Markdown text, one run per variant column."""
    tables: list[list[tuple[int, str]]] = []
    current: list[tuple[int, str]] | None = None
    for lineno, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if stripped.startswith("|"):
            if current is None:
                if parse_title(_cells(stripped)[0]) is None:
                    continue  # a table that is not OSU output (e.g. a compatibility matrix)
                current = []
                tables.append(current)
            current.append((lineno, stripped))
        else:
            current = None
    runs = [run for table in tables for run in _table_runs(table, source)]
    if not runs:
        raise ParseError(source, 0, "no OSU table found: expected a Markdown table whose first cell is an "
                                    "OSU title such as '# OSU MPI Bandwidth Test v7.5'")
    return runs
