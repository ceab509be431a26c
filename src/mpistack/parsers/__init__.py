"""Parsers: OSU text (5.x to 7.x), published Markdown tables, mpistack-bench JSON.

`parse_file` picks the parser from the content, never from the file name: from the first MiB of the file,
which holds a JSON document's start and a Markdown table's first title. A format that reads line by line (a
`lines` capability: OSU text) is given the file as a stream of lines, so that a large output is never held
whole in memory; the others get the whole text. Every run is checked against what a store can hold
(`storable`) before it is returned.

`parse_output` does the same and keeps what the output's libraries and launcher said among its lines
(warnings, errors, Open MPI's help texts: `launcher_messages.MessageLines`, bounded) with each of its runs, in
one pass over the file; an output with such messages and no table is one failed run carrying them.
"""

from __future__ import annotations

import codecs
from pathlib import Path
from typing import IO, Iterator

from ..registry import FORMATS
# each module registers its input format when imported
from .bench_json import parse_bench_json
from .markdown_tables import parse_markdown_tables
from .launcher_messages import MessageLines
from .model import NoBenchmarkOutput, ParsedRow, ParsedRun, ParseError, RowTable
from . import osu_text
from .osu_text import parse_osu_text
from .storable import check_runs

__all__ = ["HEAD_BYTES", "MessageLines", "NoBenchmarkOutput", "ParseError", "ParsedRow", "ParsedRun", "RowTable",
           "parse_bench_json", "parse_bytes",
           "parse_file",
           "parse_markdown_tables", "parse_output", "parse_osu_text", "parse_text"]

HEAD_BYTES = 1 << 20  # what format detection reads of a file
_BINARY_PROBE = 8192


def _detect(text: str, source: str):
    for entry in sorted(FORMATS, key=lambda entry: entry.order):
        if entry.detect(text):
            return entry
    raise ParseError(source, 0, "no input format recognises this text")


def _nul_problem(text: str, source: str) -> None:
    position = text.find("\x00")
    if position >= 0:
        raise ParseError(source, text.count("\n", 0, position) + 1,
                         "NUL character in the text: expected benchmark output as text")


def parse_text(text: str, source: str = "<text>", collector: MessageLines | None = None) -> list[ParsedRun]:
    """The runs in `text`, read by the first registered input format (FORMATS, by order) that detects it.
    `collector`: fed every line of a text read line by line (OSU text), before it is parsed."""
    text = text.removeprefix("\ufeff")  # a byte order mark some editors write at the start
    entry = _detect(text, source)
    if collector is not None and "lines" in entry.capabilities:
        for line in osu_text._text_lines(text):
            collector.feed(line)
    _nul_problem(text, source)
    return check_runs(entry.plugin(text, source), source)


def _decoded_lines(handle: IO[bytes], source: str, errors: str = "strict") -> Iterator[str]:
    """The lines of a binary stream as text, each decoded on its own so that a byte that is not UTF-8 is a
    ParseError naming its line (`errors="replace"`: a replacement character); a byte order mark at the start is
    dropped."""
    for count, data in enumerate(handle, start=1):
        if count == 1:
            data = data.removeprefix(codecs.BOM_UTF8)
        try:
            yield data.decode("utf-8", errors)
        except UnicodeDecodeError:
            raise ParseError(source, count, "not UTF-8 text: expected OSU benchmark output") from None


def _not_utf8(data: bytes, error: UnicodeDecodeError, source: str) -> ParseError:
    return ParseError(source, data[: error.start].count(b"\n") + 1, "not UTF-8 text: expected OSU benchmark output")


def parse_bytes(data: bytes, source: str, errors: str = "strict",
                collector: MessageLines | None = None) -> list[ParsedRun]:
    """The runs in a file's bytes already read (a small file: ingest hashes and parses one read). `errors`: how
    bytes that are not UTF-8 are decoded ("strict": a ParseError; "replace" for a launched program's own output,
    where a library's stray byte must not lose the benchmark's rows)."""
    if not data.strip():
        raise ParseError(source, 0, "empty file: expected OSU benchmark output")
    if b"\x00" in data[:_BINARY_PROBE]:
        raise ParseError(source, 0, "binary file: expected OSU benchmark output as text")
    try:
        text = data.decode("utf-8", errors)
    except UnicodeDecodeError as error:
        raise _not_utf8(data, error, source) from None
    return parse_text(text, source, collector)


def _fed(lines: Iterator[str], collector: MessageLines | None) -> Iterator[str]:
    for line in lines:
        if collector is not None:
            collector.feed(line)
        yield line


def parse_file(path: str | Path, errors: str = "strict", collector: MessageLines | None = None) -> list[ParsedRun]:
    """The runs in a file, a large one read as a stream (`errors`: see parse_bytes; `collector`: see
    parse_text, fed to the file's end even where its parse fails)."""
    path = Path(path)
    source = str(path)
    try:
        with path.open("rb") as handle:
            head = handle.read(HEAD_BYTES)
            if len(head) < HEAD_BYTES or not handle.peek(1):
                return parse_bytes(head, source, errors, collector)  # the whole file
            if b"\x00" in head[:_BINARY_PROBE]:
                raise ParseError(source, 0, "binary file: expected OSU benchmark output as text")
            # a large file: detect from its head (cut at a character boundary), then read it as the format needs
            head_text = codecs.getincrementaldecoder("utf-8")(errors="replace").decode(head).removeprefix("\ufeff")
            entry = _detect(head_text, source)
            handle.seek(0)
            if "lines" in entry.capabilities:
                lines = _fed(_decoded_lines(handle, source, errors), collector)
                try:
                    return check_runs(entry.lines(lines, source), source)
                finally:
                    if collector is not None:
                        _drain(lines)
            data = handle.read()
            try:
                text = data.decode("utf-8", errors)
            except UnicodeDecodeError as error:
                raise _not_utf8(data, error, source) from None
            del data  # one copy of the file at a time
            return parse_text(text, source, collector)
    except OSError as error:
        raise ParseError(source, 0, f"cannot read: {error.strerror}") from None


def _drain(lines: Iterator[str]) -> None:
    """Read what is left of a stream of lines (its collector sees each), past a line that does not decode."""
    try:
        for _ in lines:
            pass
    except ParseError:
        pass


def parse_output(path: str | Path, data: bytes | None = None, errors: str = "strict",
                 collector: MessageLines | None = None) -> list[ParsedRun]:
    """The runs of a file (from `data`, its bytes, when already read), each carrying the messages its output
    holds besides the launcher's abort lines (bounded, escaped: `MessageLines`); an output that holds messages but
    no benchmark table is one failed run of the benchmark its command line names, carrying them."""
    source = str(path)
    collector = collector if collector is not None else MessageLines()
    try:
        runs = parse_file(path, errors, collector) if data is None else parse_bytes(data, source, errors, collector)
    except NoBenchmarkOutput:
        if not collector.close().messages:
            raise
        run = ParsedRun.empty(collector.test or "unknown")
        run.aborted = True  # it printed messages and never got to its table
        run.title = "no benchmark output"
        runs = [run]
    collector.close()
    if collector.messages:
        for run in runs:
            said = set(run.messages)
            run.messages = [*run.messages, *(line for line in collector.text().splitlines() if line not in said)]
    return check_runs(runs, source)

