"""Parsers: OSU text (5.x to 7.x), published Markdown tables, mpistack-bench JSON.

`parse_file` picks the parser from the content, never from the file name.
"""

from __future__ import annotations

from pathlib import Path

from ..registry import FORMATS
# each module registers its input format when imported
from .bench_json import parse_bench_json
from .markdown_tables import parse_markdown_tables
from .model import ParsedRow, ParsedRun, ParseError
from .osu_text import parse_osu_text

__all__ = ["ParseError", "ParsedRow", "ParsedRun", "parse_bench_json", "parse_file", "parse_markdown_tables",
           "parse_osu_text", "parse_text"]


def parse_text(text: str, source: str = "<text>") -> list[ParsedRun]:
    """The runs in `text`, read by the first registered input format (FORMATS, by order) that detects it."""
    for entry in sorted(FORMATS, key=lambda entry: entry.order):
        if entry.detect(text):
            return entry.plugin(text, source)
    raise ParseError(source, 0, "no input format recognises this text")


def parse_file(path: str | Path) -> list[ParsedRun]:
    path = Path(path)
    source = str(path)
    try:
        data = path.read_bytes()
    except OSError as error:
        raise ParseError(source, 0, f"cannot read: {error.strerror}") from None
    if not data.strip():
        raise ParseError(source, 0, "empty file: expected OSU benchmark output")
    if b"\x00" in data[:8192]:
        raise ParseError(source, 0, "binary file: expected OSU benchmark output as text")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise ParseError(source, line, "not UTF-8 text: expected OSU benchmark output") from None
    return parse_text(text, source)
