"""Published reference results shipped with mpistack: each a TOML manifest naming its source and the
verbatim OSU output (or tables) it holds, with the tags that place it (system, approach, ...); and
loading one into the store, in place of an earlier load of the same reference unless that holds the same
content."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from sqlalchemy import Engine

from ..data import data_path
from ..parsers import ParsedRun, ParseError
from ..store.database import write_transaction
from ..store.writer import delete_runs, runs_tagged, stored_content, write_runs
from .files import IngestReport, parse_content, read_content, run_ids, split_tags
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


def _content(path: Path, tags: dict[str, str]) -> tuple[str, list[ParsedRun]]:
    """A reference file's runs, and what identifies their stored copy (runs.content_sha256): the sha256 of the
    file's bytes and of the tags it is stored with (its manifest's, and those given when loading it), as a newer
    mpistack or the user may change either."""
    digest, data = read_content(path)
    runs = parse_content(path, data, messages=False)  # the page's prose is not the run's output
    return hashlib.sha256(f"{digest} {json.dumps(tags, sort_keys=True)}".encode()).hexdigest(), runs


def replace_reference(database: Engine, loaded: LoadedReference, tags: dict[str, str] | None = None,
                      replace: bool = False) -> IngestReport:
    """All of a reference's files in one transaction, in place of its earlier copy. A copy of the same content
    is left as it is (one line in `skipped`), unless `replace`."""
    name = loaded.reference.name
    report = IngestReport()
    parsed = []
    for path, file_tags in loaded.files():
        try:
            merged = {**file_tags, **(tags or {})}
            context, plain = split_tags(merged)
            parsed.append((path, context, plain, *_content(path, merged)))
        except ParseError as error:
            report.errors.append(str(error))
        except ValueError as error:
            report.errors.append(f"{path}: {error}")
    if report.errors:
        return report
    with write_transaction(database) as connection:
        earlier = runs_tagged(connection, "reference", name)
        ours = set(earlier)
        copies = [ours.intersection(stored_content(connection, digest)) for *_, digest, _runs in parsed]
        if not replace and earlier and all(copies) and set().union(*copies) == ours:
            report.skipped.append(f"reference {name}: already stored, {len(earlier)} run(s) ({run_ids(earlier)}); "
                                  "nothing changed (--replace stores it again)")
            return report
        report.replaced = delete_runs(connection, earlier)
        for path, context, plain, digest, runs in parsed:
            ids = write_runs(connection, runs, source=str(path), tags=plain, provenance=context,
                             content_sha256=digest)
            report.stored(runs, ids)
    return report
