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
        write_file_atomically(path, render_report(report, kind))
        written.append(path)
    return written


def render_report(report: Report, kind: str) -> str:
    """One format's text (``--out -`` writes it to stdout)."""
    if kind == "md":
        from .markdown import render_markdown

        return render_markdown(report)
    if kind == "html":
        from .html import render_html
        from .plots import group_plots

        return render_html(report, group_plots(report))
    if kind == "json":
        from .json_report import render_json

        return render_json(report)
    raise ValueError(f"unknown report format {kind!r}; known: {', '.join(FORMATS)}")
