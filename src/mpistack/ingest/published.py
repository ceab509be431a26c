"""Published reference results shipped with mpistack: each a TOML manifest naming its source and the
verbatim OSU output (or tables) it holds, with the tags that place it (system, approach, ...); and
loading one into the store, replacing an earlier load of the same reference."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from sqlalchemy import Engine

from ..data import data_path
from ..parsers import ParseError, parse_file
from ..store.writer import delete_runs_tagged, write_runs
from .files import IngestReport, split_tags
from ..spec.toml_files import load_model, read_text

REFERENCES_DIR = data_path("references")


class ReferenceData(BaseModel):
    model_config = ConfigDict(extra="forbid")
    file: str
    description: str = ""
    tags: dict[str, str] = Field(default_factory=dict)


class Reference(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    title: str
    source: str
    url: str | None = None
    tags: dict[str, str] = Field(default_factory=dict)
    data: list[ReferenceData]


class ReferenceError(Exception):
    pass


@dataclass
class LoadedReference:
    reference: Reference
    directory: Path

    def files(self) -> list[tuple[Path, dict[str, str]]]:
        """Each data file with its tags (the reference's tags, then the file's own, then its name)."""
        return [
            (self.directory / data.file, {**self.reference.tags, **data.tags, "reference": self.reference.name})
            for data in self.reference.data
        ]


def _load(path: Path) -> LoadedReference:
    reference = load_model(Reference, read_text(path, ReferenceError), str(path), ReferenceError)
    return LoadedReference(reference, path.parent)


def available(directory: Path = REFERENCES_DIR) -> dict[str, LoadedReference]:
    return {loaded.reference.name: loaded for loaded in map(_load, sorted(directory.glob("*/reference.toml")))}


def select(names: list[str], directory: Path = REFERENCES_DIR) -> list[LoadedReference]:
    """References by name; 'all' selects every one."""
    known = available(directory)
    if "all" in names:
        return list(known.values())
    missing = [name for name in names if name not in known]
    if missing:
        raise ReferenceError(f"unknown reference {', '.join(missing)}; available: {', '.join(known) or 'none'}")
    return [known[name] for name in names]


def replace_reference(database: Engine, loaded: LoadedReference, tags: dict[str, str] | None = None) -> IngestReport:
    """All of a reference's files in one transaction: loading it twice leaves one copy."""
    report = IngestReport()
    parsed = []
    for path, file_tags in loaded.files():
        try:
            context, plain = split_tags({**file_tags, **(tags or {})})
            parsed.append((path, context, plain, parse_file(path)))
        except ParseError as error:
            report.errors.append(str(error))
        except ValueError as error:
            report.errors.append(f"{path}: {error}")
    if report.errors:
        return report
    with database.begin() as connection:
        delete_runs_tagged(connection, "reference", loaded.reference.name)
        for path, context, plain, runs in parsed:
            write_runs(connection, runs, source=str(path), tags=plain, provenance=context)
            report.stored(runs)
    return report
