"""Ingesting benchmark output files: each file is its own unit. It is hashed, looked up (the same content is
stored once, unless replaced), parsed and written inside a savepoint; whatever goes wrong with one file is
one line of the report, and the other files are stored. The warnings and errors its libraries and launcher
printed among the output are stored with its runs (`parsers.parse_output`), as a launched case's output is, so
that `mpistack doctor --run N` reads them; an output of such messages and no table is stored as a failed run.
"""

from __future__ import annotations

import copy
import hashlib
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

from sqlalchemy import Connection, Engine

from ..cache import UnsafePath, open_regular_file
from ..parsers import HEAD_BYTES, ParsedRun, ParseError, parse_bytes, parse_file, parse_output
from ..parsers.storable import COUNT_FIELDS, RUN_TEXT_LIMITS, TAG_KEY_LIMIT, count_problem, text_problem
from ..spec.provenance import CONTEXT_FIELDS, Provenance
from ..store.database import driver_message, write_connection
from ..store.writer import delete_runs, savepoint, stored_content, write_runs

# Files are committed in groups: a commit costs about as much as writing a whole file's results, and
# ingest can be repeated, so a crash loses at most one group (a second of work). Each file is still
# all or nothing: it is written inside a savepoint, rolled back if anything in it fails.
COMMIT_EVERY_FILES = 200
COMMIT_EVERY_SECONDS = 1.0
# What places a run for the analysis; ingested text rarely says the first two.
PLACING_FIELDS = ("stack", "approach", "ranks", "nodes")


@dataclass
class IngestReport:
    files: int = 0
    results: int = 0
    incomplete: int = 0
    replaced: int = 0  # runs removed because their file was stored again (--replace) or their reference changed
    errors: list[str] = field(default_factory=list)  # one line per file that was not stored
    skipped: list[str] = field(default_factory=list)  # one line per file already stored
    unplaced: dict[tuple[str, ...], list[str]] = field(default_factory=dict)  # missing fields -> files
    run_ids: list[int] = field(default_factory=list)  # the runs stored, in order

    def stored(self, runs: list[ParsedRun], ids: list[int]) -> None:
        """Count one file's runs, once they are written as `ids`."""
        self.files += 1
        self.run_ids.extend(ids)
        self.results += sum(run.result_count for run in runs)
        self.incomplete += sum(1 for run in runs if run.incomplete)

    @property
    def runs(self) -> int:
        return len(self.run_ids)

    def warnings(self) -> list[str]:
        """One line per set of missing context: which files, which tags to add."""
        lines = []
        for fields, files in self.unplaced.items():
            add = " ".join(f"-t {name}=..." for name in fields)
            what = f"{files[0]}:" if len(files) == 1 else f"{len(files)} files (the first {files[0]})"
            lines.append(f"{what} stored without {', '.join(fields)}; add {add} to place the runs")
        return lines


def split_tags(tags: dict[str, str] | None) -> tuple[Provenance, dict[str, str]]:
    """User tags -> the run context they set (stack, approach, ranks, ...) and the plain tags.
    Raises ValueError for a malformed context value, a tag that names a recorded field, or a value the store
    cannot hold."""
    for key, value in (tags or {}).items():
        limit = RUN_TEXT_LIMITS.get(key) if key in CONTEXT_FIELDS else None
        problem = text_problem("tag", key, TAG_KEY_LIMIT) or text_problem(f"tag {key}", value, limit)
        if problem:
            raise ValueError(problem)
    context = Provenance()
    plain = context.split_tags(tags or {})
    for name in COUNT_FIELDS:
        problem = count_problem(f"tag {name}", getattr(context, name))
        if problem:
            raise ValueError(problem)
    return context, plain


def read_content(path: Path) -> tuple[str, bytes | None]:
    """The sha256 of a file's bytes, and the bytes themselves when the file is small (parsed from that one
    read); a large file is hashed in blocks and parsed later as a stream. Only a regular file is read: a FIFO
    or a device would block or never end."""
    try:
        with os.fdopen(open_regular_file(path), "rb") as handle:
            if os.fstat(handle.fileno()).st_size <= HEAD_BYTES:
                data = handle.read()
                return hashlib.sha256(data).hexdigest(), data
            return hashlib.file_digest(handle, "sha256").hexdigest(), None
    except UnsafePath as error:
        raise ParseError(str(path), 0, f"{error.reason}; expected a benchmark output file") from None
    except OSError as error:
        raise ParseError(str(path), 0, f"cannot read: {error.strerror}") from None


def parse_content(path: Path, data: bytes | None, messages: bool = True) -> list[ParsedRun]:
    """The runs of a file `read_content` read: from its bytes when it kept them, else streamed from the path;
    with the warnings and errors printed among them (`messages`: a user's output, not a published page's prose)."""
    if messages:
        return parse_output(path, data)
    return parse_file(path) if data is None else parse_bytes(data, str(path))


def run_ids(ids: list[int]) -> str:
    """`run 7`, or `run 7..20` for the first and last of several (ids of one ingest are consecutive)."""
    return f"run {ids[0]}" if len(ids) == 1 else f"run {ids[0]}..{ids[-1]}"


def _unplaced(runs: list[ParsedRun], context: Provenance) -> tuple[str, ...]:
    missing: dict[str, None] = {}
    for run in runs:
        facts = Provenance().update(run.provenance).update(context)
        missing.update((name, None) for name in PLACING_FIELDS if getattr(facts, name) in (None, ""))
    return tuple(missing)


def _describe(error: Exception) -> str:
    """One line for an unexpected error: the database's own message (not SQLAlchemy's statement dump)."""
    cause = getattr(error, "orig", None) or error
    return f"{type(cause).__name__}: {driver_message(error) or 'no message'}"


def _ingest_one(connection: Connection, path: Path, context: Provenance, tags: dict[str, str], replace: bool,
                report: IngestReport, digest: str, runs: list[ParsedRun] | None, data: bytes | None) -> None:
    with savepoint(connection):  # a failure below leaves nothing of this file
        existing = stored_content(connection, digest)
        if existing and not replace:
            report.skipped.append(f"{path}: already stored ({run_ids(existing)}); use --replace to store it again")
            return
        if runs is None:
            runs = parse_content(path, data)
        replaced = delete_runs(connection, existing) if existing else 0
        ids = write_runs(connection, runs, source=str(path), tags=tags, provenance=context, content_sha256=digest)
    report.stored(runs, ids)
    report.replaced += replaced
    missing = _unplaced(runs, context)
    if missing:
        report.unplaced.setdefault(missing, []).append(str(path))


def ingest_files(database: Engine, paths: Iterable[str | Path], tags: dict[str, str] | None = None,
                 on_file: Callable[[Path], None] | None = None, replace: bool = False) -> IngestReport:
    """Parse and store each file in turn; `tags` may set the run context (see `split_tags`). A file whose
    content is stored already is skipped, or with `replace` stored again in place of its earlier runs."""
    context, plain_tags = split_tags(tags)
    report = IngestReport()
    # SQLite: take the write lock when each group begins, so that looking a file up and writing it are one
    # step for parallel ingests (they wait on the lock instead of failing to upgrade a read). A file is read
    # and parsed before that, with no lock held: a large one takes long, and a runner beside the ingest
    # would wait for the lock all that time.
    with write_connection(database) as connection:
        transaction, started, pending, before = None, 0.0, 0, copy.deepcopy(report)
        for path in paths:
            path = Path(path)
            try:
                digest, data = read_content(path)
                if data is None and transaction is not None:  # a large file: let the waiting writers in first
                    if not _committed(transaction, pending, before):
                        return before
                    transaction, pending = None, 0
                # parsed here, unless stored already (then skipped under the lock, or parsed there if it went)
                runs = parse_content(path, data) if replace or not _stored_already(database, digest) else None
                if transaction is None:
                    before = copy.deepcopy(report)  # what stands if this group's commit fails
                    transaction, started = connection.begin(), time.monotonic()
                _ingest_one(connection, path, context, plain_tags, replace, report, digest, runs, data)
            except ParseError as error:
                report.errors.append(str(error))
            except Exception as error:  # noqa: BLE001 - any failure of one file is that file's, reported in one line
                report.errors.append(f"{path}: {_describe(error)}")
            else:
                pending += 1
            if transaction is not None and (pending >= COMMIT_EVERY_FILES
                                            or time.monotonic() - started > COMMIT_EVERY_SECONDS):
                if not _committed(transaction, pending, before):
                    return before
                transaction, pending = None, 0
            if on_file:
                on_file(path)
        if transaction is not None and not _committed(transaction, pending, before):
            return before
    return report


def _committed(transaction, files: int, before: IngestReport) -> bool:
    """Commit a group of files; when the store refuses (a full disk, the store gone), `before` (the report as
    it stood before the group) gets one line saying so, and False: the ingest stops there, nothing of the
    group is stored, and the files after it are not tried."""
    try:
        transaction.commit()
        return True
    except Exception as error:  # noqa: BLE001 - the driver's errors differ; the message is the driver's
        try:
            transaction.rollback()
        except Exception:  # noqa: BLE001 - the connection may be gone with it
            pass
        before.errors.append(f"the store did not take the last {files} file(s) ({_describe(error)}): none of them "
                             "is stored, and the ingest stopped there; ingest them again once the store takes "
                             f"writes ({before.files} file(s) stored before them are kept)")
        return False


def _stored_already(database: Engine, digest: str) -> bool:
    """Whether content of this digest is stored (read without the write lock; checked again under it). No
    content lock either: the ingest's own open transaction may hold it (the same file given twice), and this
    second connection would wait for it for ever."""
    with database.connect() as reading:
        return bool(stored_content(reading, digest, lock=False))


def parse_tags(pairs: Iterable[str]) -> dict[str, str]:
    """'key=value' strings -> dict; a malformed pair is a ValueError naming it."""
    tags = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--tag {pair!r}: expected KEY=VALUE, e.g. system=alps")
        tags[key.strip()] = value.strip()
    return tags
