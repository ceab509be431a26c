"""`mpistack doctor FILE...`: output files as a user has them, read with no store (doctor/files.py), optionally
beside a shipped reference (--like ref:NAME); and `mpistack doctor --signatures`, the bank of known messages."""

from __future__ import annotations

import json

import typer

from .common import fail, out
from .doctor import _indented, _print_counts, _print_finding

STATUS_BAD_FILE = 2  # a file that is not output (a directory, a FIFO, binary, empty) is bad usage
# said when tables were read and no reference named: their figures alone prove nothing slow or fast
NOT_JUDGED = ("figures not judged: give --like ref:NAME to compare them with a published reference "
              "(mpistack references lists them)")


def doctor_files(files: list[str], like: str | None, signatures: bool, as_json: bool, others: list[str]) -> None:
    """Diagnose ``files`` (or list the signatures) and exit: 1 on a problem, 2 when a file could not be read
    (and nothing was a problem), else 0."""
    if others:
        fail(f"FILE and {' and '.join(others)}: choose one subject to diagnose")
    if signatures:
        if files or like:
            fail("--signatures lists the known messages; give it alone")
        _list_signatures(as_json)
        raise typer.Exit(0)
    if not files:
        fail("--like reads output files: give FILE... (or - for standard input)")
    from ..doctor import diagnose, exit_status
    from ..doctor.files import UnreadableFile, diagnose_file, read_file, unrecognised
    from ..doctor.like import UnknownReference, figure_of, load

    try:
        reference = load(like) if like is not None else None
    except UnknownReference as error:
        fail(str(error))
    readings, unreadable = [], []
    for name in files:
        try:
            readings.append(read_file(name))
        except UnreadableFile as error:
            unreadable.append(str(error))
    findings = [finding for reading in readings for finding in diagnose_file(reading)]
    if reference is not None:
        reference.figures = [figure for reading in readings for run in reading.runs
                             if (figure := figure_of(run, reading.subject(run))) is not None]
        findings += diagnose("file", reference)
    left = {reading.name: unrecognised(reading.messages.messages) for reading in readings}
    status = exit_status(findings) or (STATUS_BAD_FILE if unreadable else 0)
    judged = None if reference is not None or not any(run.rows for reading in readings for run in reading.runs) \
        else NOT_JUDGED
    if as_json:
        from ..doctor import to_json

        document = to_json(findings, [reading.name for reading in readings])
        document["files"] = [_file_json(reading, left[reading.name]) for reading in readings]
        document["unreadable"] = unreadable
        document["status"] = status  # the command's exit status, a file not read included
        if judged:
            document["figures"] = judged
        print(json.dumps(document, indent=2))
    else:
        _print_files(readings, findings, left, unreadable, judged)
    raise typer.Exit(status)


def _tests(reading) -> str:
    parts = []
    for run in reading.runs:
        facts = run.provenance
        placed = ", ".join(part for part in (_count(facts.ranks, "rank"), _count(facts.nodes, "node")) if part)
        parts.append(f"{run.benchmark} at line {run.line}" + (f" ({placed})" if placed else "")
                     + (f", {run.status.value}" if run.status.value != "ok" else "") if run.line
                     else f"no table ({run.status.value})")
    return "; ".join(parts) or "no table, no message"


def _count(number: int | None, noun: str) -> str:
    return "" if not number else f"{number} {noun}" + ("s" if number > 1 else "")


def _file_json(reading, left: list[str]) -> dict:
    return {"file": reading.name, "problem": reading.problem,
            "tests": [{"benchmark": run.benchmark, "line": run.line, "status": run.status.value,
                       "ranks": run.provenance.ranks, "nodes": run.provenance.nodes} for run in reading.runs],
            "messages": {"seen": reading.messages.found, "kept": len(reading.messages.messages),
                         "repeats": reading.messages.repeats},
            "unrecognised": {"count": len(left), "lines": left}}


def _print_files(readings, findings, left, unreadable, judged: str | None) -> None:
    from rich.text import Text

    from ..doctor import by_cause

    out.print(Text.assemble(("mpistack doctor", "bold"), ": ",
                            ", ".join(reading.name for reading in readings) or "no readable file"), highlight=False)
    for line in unreadable:
        _indented(f"not read: {line}", "bold red", by=2)
    for reading in readings:
        _indented(f"{reading.name}: {_tests(reading)}", "cyan", by=2)
        if reading.problem:
            _indented(f"no table read: {reading.problem}", "dim", by=4)
    causes, sources = [], set()
    for group in by_cause(findings).values():
        subjects = list(dict.fromkeys(finding.subject for finding in group if finding.subject))
        _print_finding(group[0], f"in {', '.join(subjects)}" if subjects else "", sources)
        causes.append(group[0])
    for reading in readings:
        _print_unrecognised(reading.name, left[reading.name])
    if judged:
        _indented(judged, "dim", by=0)
    _print_counts(causes)


def _print_unrecognised(where: str, lines: list[str]) -> None:
    from ..doctor.files import UNRECOGNISED_SHOWN

    if not lines:
        return
    shown = lines[:UNRECOGNISED_SHOWN]
    more = f", the first {len(shown)} shown" if len(lines) > len(shown) else ""
    _indented(f"unrecognised in {where}: {len(lines)} line(s) that read like errors or warnings match no known "
              f"message{more}:", "yellow", by=0)
    for line in shown:
        _indented(line, by=2)


def print_unrecognised_run(store, run_id: int) -> None:
    """The unrecognised messages of a stored run mpistack did not launch (an ingested output), listed as
    `doctor FILE` lists them for its file."""
    from ..doctor.files import unrecognised
    from ..store.query import Where, run_diagnostics

    for run in run_diagnostics(store, [Where("run", "=", run_id)]):
        if run["campaign"] is None and run["message"]:
            _print_unrecognised(f"run {run_id}", unrecognised(_messages(run["message"])))


def _messages(text: str) -> list[str]:
    """A stored message as the messages it was kept from: Open MPI's help texts are folded back by the bank's
    matching anyway, so each line is one message here."""
    return [line for line in text.splitlines() if line.strip()]


def _list_signatures(as_json: bool) -> None:
    from rich.text import Text

    from ..doctor.signatures import shipped_bank

    bank = shipped_bank()
    if as_json:
        print(json.dumps({"schema": "mpistack-signatures/1", "signatures": [
            {"id": s.id, "verdict": s.verdict, "pattern": s.pattern.pattern, "meaning": s.meaning, "fix": s.fix,
             "source": s.source} for s in bank]}, indent=2))
        return
    out.print(Text.assemble(("mpistack doctor", "bold"), f": {len(bank)} known messages (data/doctor/signatures.toml)"),
              highlight=False)
    for signature in bank:
        out.print(Text.assemble((f"{signature.verdict:>7}", "yellow" if signature.verdict == "warning" else "red"),
                                "  ", (signature.id, "bold")), highlight=False, soft_wrap=True)
        _indented(signature.meaning)
        _indented(f"fix: {signature.fix}", "bold")
        _indented(f"source: {signature.source}", "dim")
