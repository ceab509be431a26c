"""What a results store can hold, checked when a run is parsed, so that a value the database would refuse is
reported with its file and line instead of failing a write (or, on PostgreSQL, a whole transaction).

The lengths are those of the store's columns (store/schema.py; tests/parsers/test_storable.py keeps the two
equal): parsers come before the store and may not import it. Text must hold no NUL character (PostgreSQL
refuses it in any text), counts must fit the store's 32-bit integer columns.
"""

from __future__ import annotations

import math

from .model import INT32_MAX, ParsedRun, ParseError

# run fields (the Provenance field or ParsedRun attribute of the same name) -> the column's length
RUN_TEXT_LIMITS = {
    "benchmark": 64, "title": 200, "suite": 64,  # suite is stored as runs.benchmark_suite
    "stack": 200, "approach": 64, "launcher": 64, "buffers": 16, "device": 16,
    "libfabric_version": 64, "libfabric_provider": 64, "image_digest": 128, "tool_version": 32,
}
METRIC_NAME_LIMIT = 32
UNIT_LIMIT = 16
TAG_KEY_LIMIT = 100
COUNT_FIELDS = ("ranks", "nodes")


def text_problem(name: str, value: object, limit: int | None = None) -> str | None:
    """Why `value` cannot be stored as the text field `name`, or None."""
    if value is None:
        return None
    text = str(value)
    if "\x00" in text:
        return f"{name} {_shown(text)} holds a NUL character: expected text"
    if limit is not None and len(text) > limit:
        return f"{name} {_shown(text)} is {len(text)} characters long; the store holds at most {limit}"
    return None


def count_problem(name: str, value: object) -> str | None:
    """Why `value` cannot be stored as the count `name` (ranks, nodes), or None."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= INT32_MAX:
        return f"{name} {value!r}: expected a whole number in 1..2^31-1"
    return None


def _shown(text: str) -> str:
    return repr(text if len(text) <= 40 else text[:37] + "...")


def _nested_text(name: str, value) -> str | None:
    """NUL characters anywhere in JSON-like data (environment, hosts, transport)."""
    if isinstance(value, str):
        return text_problem(name, value)
    if isinstance(value, dict):
        for key, item in value.items():
            problem = text_problem(f"{name} key", key) or _nested_text(f"{name}[{key!r}]", item)
            if problem:
                return problem
    if isinstance(value, (list, tuple)):
        for item in value:
            problem = _nested_text(name, item)
            if problem:
                return problem
    if isinstance(value, float) and not math.isfinite(value):
        return f"{name} {value}: expected a finite number"
    return None


def run_problem(run: ParsedRun) -> str | None:
    """The first thing about a run (besides its rows, checked as they are added) that a store cannot hold."""
    facts = run.provenance
    for name, limit in RUN_TEXT_LIMITS.items():
        value = getattr(run, name) if name in ("benchmark", "title", "suite") else getattr(facts, name)
        problem = text_problem(name, value, limit)
        if problem:
            return problem
    for name in COUNT_FIELDS:
        problem = count_problem(name, getattr(facts, name))
        if problem:
            return problem
    for metric, unit in run.units.items():
        problem = text_problem("metric", metric, METRIC_NAME_LIMIT) or text_problem(f"unit of {metric}", unit, UNIT_LIMIT)
        if problem:
            return problem
    for key, value in run.tags.items():
        problem = text_problem("tag", key, TAG_KEY_LIMIT) or text_problem(f"tag {key}", value)
        if problem:
            return problem
    for name, value in (("command", facts.command), ("MPI library version", facts.mpi_library_version),
                        ("environment", facts.environment), ("hosts", facts.hosts), ("transport", facts.transport),
                        ("message", run.messages)):
        problem = _nested_text(name, value)
        if problem:
            return problem
    return None


def check_runs(runs: list[ParsedRun], source: str) -> list[ParsedRun]:
    """`runs`, or a ParseError naming the file, the run's line and the value a store cannot hold."""
    for run in runs:
        problem = run_problem(run)
        if problem:
            raise ParseError(source, run.line, f"{problem} (in {run.title[:60]!r})")
    return runs
