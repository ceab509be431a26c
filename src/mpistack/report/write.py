"""Writing a report's files: report.md, report.html and report.json in one directory."""

from __future__ import annotations

from pathlib import Path

from ..cache import write_file_atomically
from .data import Report

FORMATS = ("md", "html", "json")


def write_report(report: Report, directory: Path, formats: tuple[str, ...] | list[str] = FORMATS) -> list[Path]:
    """Write the requested formats (all by default) into ``directory`` (created); returns the paths written."""
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for kind in formats:
        path = directory / f"report.{kind}"
        if kind == "md":
            from .markdown import render_markdown

            text = render_markdown(report)
        elif kind == "html":
            from .html import render_html
            from .plots import group_plots

            text = render_html(report, group_plots(report))
        elif kind == "json":
            from .json_report import render_json

            text = render_json(report)
        else:
            raise ValueError(f"unknown report format {kind!r}; known: {', '.join(FORMATS)}")
        write_file_atomically(path, text)
        written.append(path)
    return written
