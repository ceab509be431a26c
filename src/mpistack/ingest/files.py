"""Ingesting benchmark output files: parse, then write each file in its own transaction.

A file that fails to parse is reported with its line and skipped; the others are still stored.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

from sqlalchemy import Engine

from ..parsers import ParsedRun, ParseError, parse_file
from ..spec.provenance import Provenance
from ..store.writer import write_runs

# Files are committed in groups: a commit costs about as much as writing a whole file's results, and
# ingest can be repeated, so a crash loses at most one group (a second of work). Each file is still
# all or nothing: it is parsed and checked completely before its first row is written.
COMMIT_EVERY_FILES = 200
COMMIT_EVERY_SECONDS = 1.0


@dataclass
class IngestReport:
    files: int = 0
    runs: int = 0
    results: int = 0
    incomplete: int = 0
    errors: list[str] = field(default_factory=list)

    def stored(self, runs: list[ParsedRun]) -> None:
        """Count one file's runs, once they are written."""
        self.files += 1
        self.runs += len(runs)
        self.results += sum(run.result_count for run in runs)
        self.incomplete += sum(1 for run in runs if run.incomplete)


def split_tags(tags: dict[str, str] | None) -> tuple[Provenance, dict[str, str]]:
    """User tags -> the run context they set (stack, approach, ranks, ...) and the plain tags.
    Raises ValueError for a malformed context value or a tag that names a recorded field."""
    context = Provenance()
    plain = context.split_tags(tags or {})
    return context, plain


def ingest_files(database: Engine, paths: Iterable[str | Path], tags: dict[str, str] | None = None,
                 on_file: Callable[[Path], None] | None = None) -> IngestReport:
    """Parse and store each file in turn; `tags` may set the run context (see `split_tags`)."""
    context, plain_tags = split_tags(tags)
    report = IngestReport()
    with database.connect() as connection:
        transaction = connection.begin()
        started = time.monotonic()
        pending = 0
        for path in paths:
            path = Path(path)
            try:
                runs = parse_file(path)
                # write_runs checks everything before its first insert: a file is written whole or not at all
                write_runs(connection, runs, source=str(path), tags=plain_tags, provenance=context)
            except ParseError as error:
                report.errors.append(str(error))
            else:
                report.stored(runs)
                pending += 1
            if pending >= COMMIT_EVERY_FILES or time.monotonic() - started > COMMIT_EVERY_SECONDS:
                transaction.commit()
                transaction, started, pending = connection.begin(), time.monotonic(), 0
            if on_file:
                on_file(path)
        transaction.commit()
    return report


def parse_tags(pairs: Iterable[str]) -> dict[str, str]:
    """'key=value' strings -> dict; a malformed pair is a ValueError naming it."""
    tags = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--tag {pair!r}: expected KEY=VALUE, e.g. system=alps")
        tags[key.strip()] = value.strip()
    return tags
