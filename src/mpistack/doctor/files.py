"""The doctor on output files as a user has them (``mpistack doctor FILE...``): OSU text among launcher and library
noise, mpistack-bench JSON, a batch job's whole ``slurm-N.out``, several tests per file; no store.

A file is read once, as a stream (``parsers.parse_output``: its tests, and the warnings and errors printed among
them, bounded), and each test is handed to the rules as a stored run would be (``as_run``: the fields
``store.query.run_diagnostics`` gives), so that a file and the same file ingested (``mpistack ingest FILE``, then
``mpistack doctor --run N``) get the same findings. What looks like an error or a warning and matches no known
message is listed as unrecognised (``unrecognised``), never dropped.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from ..cache import UnsafePath, open_regular_file
from ..parsers import MessageLines, ParsedRun, ParseError, parse_output
from ..parsers.launcher_messages import abort_line, detail_line, generic_failure, looks_like_message
from ..parsers.model import VALIDATION_NAMES, NoBenchmarkOutput
from ..spec.provenance import Provenance
from .model import Finding, diagnose
from .signatures import shipped_bank

STDIN = "-"
# lines that read like errors and say nothing about one: Open MPI's note under aggregated help messages
_NOTES = re.compile(r'Set MCA parameter "(?:orte|prte)_base_help_aggregate" to 0 to see all help')
# the command a job ran, echoed by the shell (`set -x`'s `+ `) or pasted after a prompt: its options may read like
# a message (FI_LOG_LEVEL=warn), but it says what was run, not what went wrong
_COMMAND = re.compile(r"^(?:\++ |\$ |[\w.-]+@[\w.-]+:\S*[$#>] |\[[\w.-]+@[\w.-]+ [^\]]*\][$#] )")
UNRECOGNISED_SHOWN = 5  # unrecognised messages listed by name; the rest are counted


class UnreadableFile(Exception):
    """A file the doctor cannot read as output: one line naming it and why (a directory, a FIFO, binary, empty)."""


@dataclass
class FileReading:
    """One file as the doctor read it: its tests, the messages among them, and why no test was read (when so)."""

    name: str  # as the user named it ('-': <stdin>)
    runs: list[ParsedRun] = field(default_factory=list)
    messages: MessageLines = field(default_factory=MessageLines)
    problem: str | None = None  # the parse's complaint, when the file has messages but no readable test

    def subject(self, run: ParsedRun) -> str:
        return f"{self.name}:{run.line} ({run.benchmark})" if run.line else f"{self.name} ({run.benchmark})"


def read_file(name: str, tags: dict[str, str] | None = None) -> FileReading:
    """Read ``name`` (a path, or ``-`` for standard input, copied to a temporary file as it streams in, so that
    memory stays bounded). Raises UnreadableFile with one line for anything that is not benchmark output."""
    if name == STDIN:
        with tempfile.NamedTemporaryFile(prefix="mpistack-doctor-stdin-") as copy:
            shutil.copyfileobj(sys.stdin.buffer, copy, 1 << 20)
            copy.flush()
            return _read(Path(copy.name), "<stdin>", tags)
    path = Path(name)
    try:
        # a link is followed (reading one harms nothing); what it leads to must be a regular file
        descriptor = open_regular_file(path.resolve())
    except UnsafePath as error:
        raise UnreadableFile(f"{name}: {error.reason}; expected a benchmark output file") from None
    except OSError as error:
        raise UnreadableFile(f"{name}: cannot read: {error.strerror}") from None
    os.close(descriptor)
    return _read(path.resolve(), name, tags)


def _read(path: Path, name: str, tags: dict[str, str] | None) -> FileReading:
    reading = FileReading(name)
    try:
        # a library's stray byte must not hide the lines around it: decoded as a launched case's output is
        reading.runs = parse_output(path, errors="replace", collector=reading.messages)
    except ParseError as error:
        said = str(error).replace(str(path), name, 1)
        reading.problem = said
        if not reading.messages.close().messages:
            if isinstance(error, NoBenchmarkOutput):
                return reading  # text, though neither a table nor a message: read, with nothing to say of it
            raise UnreadableFile(said) from None  # not text (empty, binary, not UTF-8)
        # the messages are still read against the bank, as one failed output
        run = ParsedRun.empty(reading.messages.test or "unknown")
        run.aborted, run.title, run.messages = True, "unreadable output", reading.messages.text().splitlines()
        reading.runs = [run]
    for run in reading.runs:
        run.tags = {**run.tags, **(tags or {})}
    return reading


def as_run(run: ParsedRun, source: str) -> dict:
    """A parsed test as the doctor's runs rules read a stored one (``store.query.run_diagnostics``): what the
    store would hold of it, with no run id and no campaign."""
    facts = Provenance().update(run.provenance)
    context, tags = Provenance(), dict(run.tags)
    try:
        tags = context.split_tags(tags)  # user tags that name a run field (stack, approach, ranks ...) set it
    except ValueError:  # a tag the store would refuse: the rules read it as a plain tag
        context = Provenance()
    facts.update(context)
    sizes, validations, _metrics, _stats = run.rows.columns()
    failed = sorted({sizes[index] for index, code in enumerate(validations) if VALIDATION_NAMES[code] == "fail"})
    return {"run": None, "campaign": None, "benchmark": run.benchmark, "status": run.status.value,
            "message": "\n".join(run.messages) or None, "stack": facts.stack, "approach": facts.approach,
            "launcher": facts.launcher, "ranks": facts.ranks, "nodes": facts.nodes, "buffers": facts.buffers,
            "command": facts.command, "environment": facts.environment or {}, "transport": facts.transport or {},
            "mpi_library_version": facts.mpi_library_version, "libfabric_provider": facts.libfabric_provider,
            "tags": tags, "failed_sizes": failed, "source": source}


def diagnose_file(reading: FileReading) -> list[Finding]:
    """The runs rules on each test of a file, each finding named by the file and line of its test."""
    found = []
    for run in reading.runs:
        subject = reading.subject(run)
        found += [dataclasses.replace(finding, subject=subject, cell=None)
                  for finding in diagnose("runs", as_run(run, subject))]
    return found


def unrecognised(messages: list[str], bank=None) -> list[str]:
    """The messages that read like warnings or errors and match no signature of the bank and no launcher abort
    line (those say how the job ended), first line of each, in order. An MPI library's generic words that a call
    failed are left out too when a known problem among the messages says why; with none, they are all there is
    to read and are listed."""
    bank = bank if bank is not None else shipped_bank()
    # a message wrapped over two lines (a terminal's or a mail's width) is known when the two read together are
    # (the bank matches a run's messages as one text, so its finding was made from both)
    known = [(message, [signature for signature in bank if _matches(signature, message)
                        or any(_spans(signature, *pair) for pair in _pairs(messages, index))])
             for index, message in enumerate(messages)]
    text = "\n".join(messages)
    explained = any(signature.verdict_in(text) == "problem" for _message, signatures in known
                    for signature in signatures)
    left = []
    for message, signatures in known:
        lines = message.splitlines()
        if signatures or any(abort_line(line) for line in lines):
            continue  # a known message, or the launcher's words on how the job ended
        if explained and all(generic_failure(line) for line in lines if looks_like_message(line)):
            continue  # the library's banner that MPI_Init failed, below the known message saying why
        shown = next((line for line in lines if looks_like_message(line) and not abort_line(line)
                      and not detail_line(line) and not _NOTES.search(line) and not _COMMAND.match(line)), None)
        if not any(looks_like_message(line) for line in lines):
            shown = message  # a help text kept whole for its frame, with no error's word in it: still not understood
        if shown is not None:
            left.append(shown)
    return left


def _pairs(messages: list[str], index: int) -> list[tuple[str, str]]:
    """The message at ``index`` with the one before it and with the one after it."""
    return [(messages[at], messages[at + 1]) for at in (index - 1, index) if 0 <= at and at + 1 < len(messages)]


def _spans(signature, first: str, second: str) -> bool:
    """True when the signature matches the two messages read as one, across the join (not in one of them alone)."""
    joined = f"{first} {second}"
    return any(hit.start() < len(first) < hit.end() - 1 for hit in signature.pattern.finditer(joined))


def _matches(signature, message: str) -> bool:
    lines = message.splitlines()
    return bool(signature.pattern.search(" ".join(lines)) or any(signature.pattern.search(line) for line in lines))
