"""The end of `mpistack run`: the answer at 80 columns within a screen, and the report beside the database."""

from __future__ import annotations

import io

from rich.console import Console

from mpistack.cli import run as run_verb
from tests.report.campaign_like import build_campaign_like


def test_the_run_ends_with_the_matrix_and_the_report_path(tmp_path, monkeypatch):
    db = tmp_path / "mpistack.db"
    engine = build_campaign_like(db)
    stdout, stderr = io.StringIO(), io.StringIO()
    monkeypatch.setattr(run_verb, "out", Console(file=stdout, width=80))
    monkeypatch.setattr(run_verb, "err", Console(file=stderr, width=80))
    run_verb._report(engine, 1, "local", {"floor": 0.1, "floor_us": 0.05}, str(db))
    engine.dispose()
    lines = stdout.getvalue().splitlines()
    # with the run's own summary line above, a screen of 40 lines
    assert len(lines) <= 39 and max(map(len, lines)) <= 80, stdout.getvalue()
    assert lines[0].startswith("A/A (host-mpich against itself): Y") and stderr.getvalue() == ""
    assert any(line.startswith("pip-mpich     (Y)") for line in lines)  # the matrix: the wheel natively slower
    said = " ".join(stdout.getvalue().split())  # (a long path folds onto the next line)
    assert said.endswith(f"report: {tmp_path / 'mpistack-report'}/ (report.md, report.html, report.json)")
    markdown = (tmp_path / "mpistack-report" / "report.md").read_text()
    assert "by the 90% interval of each message regime (each one-sided test at 0.05); from the campaign's" in \
        " ".join(markdown.split())
