"""Loading a published reference into the store, replacing an earlier load of the same reference."""

from __future__ import annotations

from sqlalchemy import Engine, delete, select

from ..ingest import IngestReport
from ..parsers import ParseError, parse_file
from ..references import LoadedReference
from .schema import Run, RunTag
from .writer import write_runs


def replace_reference(engine: Engine, loaded: LoadedReference, tags: dict[str, str] | None = None) -> IngestReport:
    """All of a reference's files in one transaction: loading it twice leaves one copy."""
    report = IngestReport()
    name = loaded.reference.name
    parsed = []
    for path, file_tags in loaded.files():
        try:
            parsed.append((path, {**file_tags, **(tags or {})}, parse_file(path)))
        except ParseError as error:
            report.errors.append(str(error))
    if report.errors:
        return report
    with engine.begin() as connection:
        old_runs = select(RunTag.run_id).where(RunTag.key == "reference", RunTag.value == name)
        connection.execute(delete(Run).where(Run.id.in_(old_runs)))
        for path, file_tags, runs in parsed:
            write_runs(connection, runs, source=str(path), tags=file_tags)
            report.stored(runs)
    return report
