"""The report of a synthetic campaign whose classes are known: pip-mpich in a container is twice as slow for small
latencies and at speed elsewhere ((Y)), over tcp it fails (N), hybrid is at speed (Y), bind times out (N), and
debian-mpich in a container has a single launch (?)."""

from __future__ import annotations

import json
import math
import re
import shutil
import subprocess

import pytest

from mpistack.analysis.answers import SYSTEM
from mpistack.report.console import classes_lines


def test_markdown_has_size_tables_classes_matrix_and_failures(written):
    report, paths = written
    text = paths["md"].read_text()
    sections = ["## The answer: stacks × approaches", "## Results per benchmark", "## Classes",
                "## Failed and timed-out runs"]
    assert [text.index(section) for section in sections] == sorted(text.index(section) for section in sections)

    # the seed-style table: a row per size, the system median, then a column per approach with median and ratio
    latency = text[text.index("### latency"):text.index("### bw")]
    pip = latency[latency.index("#### pip-mpich (MPI 4.3.2, MPICH Version: 4.3.2)"):]
    assert "| size | host-mpich native (system) | container | hybrid |" in pip
    rows = {line.split(" | ")[0].strip("| "): line for line in pip.splitlines() if line.startswith("| ")}
    assert {"1 B", "4 KiB", "16 KiB", "1 MiB"} <= rows.keys()
    assert re.search(r"\| \*\*0\.7\d\d \(0\.[45]\d×\)\*\* \|", rows["1 B"])  # twice the latency, slower, in bold
    assert re.search(r"\| 1\.8\d \((0\.9\d|1\.0\d)×\) \|", rows["16 KiB"])  # at speed
    assert "container+tcp" not in pip  # every launch failed: listed with the failures, not as an empty column

    classes = text[text.index("## Classes"):text.index("## Regressions")]
    assert re.search(r"\| pip-mpich \| container \| default \| latency \| n2N1 H-H \| system \| \(Y\) \| "
                     r"small 1 B–4 KiB 0\.[45]\d?× \|", classes)
    assert "| pip-mpich | container | default | bw | n2N1 H-H | system | Y | at native speed in every regime" in classes
    assert "| pip-mpich | container | tcp | latency | n2N1 H-H | system | N | failed: MPIDI_OFI_mpi_init_hook" in classes
    assert "| pip-mpich | bind | default | bw | n2N1 H-H | system | N | timeout: no output in 180 s" in classes
    assert "| debian-mpich | container | default | latency | n2N1 H-H | system | ? | " in classes

    matrix = text[text.index("## The answer: stacks × approaches"):text.index("## Results per benchmark")]
    assert "| stack | MPI | library | native | container | container+tcp | hybrid | bind |" in matrix
    assert "| host-mpich |  |  | system |  |  |  |  |" in matrix  # the system baseline's own row
    assert "| pip-mpich | 4.3.2 | MPICH Version: 4.3.2 |  | (Y) | N | Y | N |" in matrix
    # the Debian image's MPICH is the system's own build: the same-build class is the system one
    assert "| debian-mpich | 4.0.2 | MPICH Version: 4.0.2 |  | ?·? |  |  |  |" in matrix
    assert "Legend: `Y` at native speed in every message-size regime; `(Y)` runs, but slower (where); `N` does not run" in matrix
    assert "**pip-mpich × container** `(Y)`: slower: latency small 1 B–4 KiB" in matrix

    failures = text[text.index("## Failed and timed-out runs"):]
    assert "| pip-mpich | bind | default | latency | n2N1 H-H | 2 of 2 | timeout: no output in 180 s |" in failures
    assert ("| pip-mpich | container | tcp | bw | n2N1 H-H | 8 of 8 | failed: MPIDI_OFI_mpi_init_hook(1570): OFI "
            "addrinfo() failed (provider tcp) |") in failures
    assert report.title in text.splitlines()[0]


def _no_nan(token):
    raise AssertionError(f"{token} in report.json")


def test_json_is_valid_with_answers_and_matrix_and_nan_as_null(written):
    _, paths = written
    text = paths["json"].read_text()
    data = json.loads(text, parse_constant=_no_nan)
    assert data["campaign"] == {"id": 1, "name": "synthetic"}
    assert data["settings"] == {"floor": 0.1, "floor_us": 0.05, "small_below": 8192, "large_from": 524288,
                                "alpha": 0.05, "confidence": 0.9, "seed": 0,
                                "rule": "a class is decided by the 90% interval of each message regime (each "
                                        "one-sided test at 0.05)"}
    for item in data["answers"]:
        assert {"stack", "approach", "variant", "benchmark", "ranks", "nodes", "buffers", "baseline", "class", "slow",
                "sizes"} <= item.keys()
        for size in item["sizes"]:
            assert {"size", "ratio", "ci_low", "ci_high", "p_value", "verdict"} <= size.keys()
    by_row = {(a["stack"], a["approach"], a["variant"], a["benchmark"]): a for a in data["answers"]}
    slow = by_row[("pip-mpich", "container", "default", "latency")]
    assert slow["class"] == "(Y)" and slow["baseline"] == "system"
    assert slow["slow"][0]["regime"] == "small" and slow["slow"][0]["sizes"] == [1, 4, 16, 64, 256, 1024, 4096]
    assert 0.45 < slow["slow"][0]["worst_ratio"] < 0.55
    assert all(s["verdict"] == "slower" for s in slow["sizes"] if s["size"] < 8192)
    assert by_row[("pip-mpich", "hybrid", "default", "bw")]["class"] == "Y"
    single = by_row[("debian-mpich", "container", "default", "latency")]
    assert single["class"] == "?" and single["sizes"][0]["ci_low"] is None  # one launch: no interval, null not NaN
    cells = {(cell["stack"], cell["column"]): cell["class"] for cell in data["matrix"]}
    assert cells == {("debian-mpich", "container"): "?", ("pip-mpich", "container"): "(Y)",
                     ("pip-mpich", "container+tcp"): "N", ("pip-mpich", "hybrid"): "Y", ("pip-mpich", "bind"): "N"}
    assert all(cell["reason"] and "\n" not in cell["reason"] for cell in data["matrix"])


def test_html_is_self_contained_with_one_svg_per_plot(written):
    report, paths = written
    html = paths["html"].read_text()
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", html, re.I)
    assert "<script" not in html.lower() and "<link" not in html.lower() and "@import" not in html
    assert not re.search(r"""url\(\s*["']?(?!#)""", html)  # only references within the page (clip paths)
    sized = [group for group in report.groups if group.sized]
    assert len(sized) == 2  # latency and bw
    # values and ratio against size for each, and the deployment effect (debian-mpich runs the host's own build)
    assert html.count("<svg") == 3 * len(sized)
    assert "<?xml" not in html and "<metadata>" not in html
    # plots keep their text as text, ids are distinct across the page
    assert "message size" in html and "parity (native speed)" in html and "practical floor" in html
    ids = re.findall(r'\bid="([^"]+)"', html)
    assert len(ids) == len(set(ids))
    # the coloured matrix, the classes, failures and provenance
    assert 'class="cell c-pY"' in html and 'class="cell c-N"' in html and 'class="cell c-Y"' in html
    assert 'class="cell c-q"' in html
    assert "OFI addrinfo() failed (provider tcp)" in html
    assert "<details><summary><b>pip-mpich</b> container" in html
    assert "localhost/mpistack/pip-mpich" in html and "sha256:abab" in html and "node-a" in html
    assert "MPIR_CVAR_CH4_NETMOD=ofi" in html


def test_html_escapes_what_the_runs_said(synthetic_db, tmp_path):
    from mpistack.analysis.answers import Settings
    from mpistack.report.data import collect
    from mpistack.report.html import render_html
    from mpistack.store import open_database
    from mpistack.store.query import Where

    from tests.report.conftest import add_runs

    path = tmp_path / "escape.db"
    shutil.copy(synthetic_db, path)
    engine = open_database(str(path))
    add_runs(engine, stack="evil", approach="container", benchmark="latency", origin="image", library=None,
             launches=1, status=__import__("mpistack.spec.status", fromlist=["RunStatus"]).RunStatus.FAILED,
             message='<img src="https://example.org/x.png"> | broke')
    report = collect(engine, [Where("campaign", "=", 1)], Settings(), title="<b>t</b>")
    html = render_html(report)
    assert '<img src="https' not in html and "&lt;img src=&#34;https://example.org/x.png&#34;&gt;" in html
    assert "<title>&lt;b&gt;t&lt;/b&gt;</title>" in html
    from mpistack.report.markdown import render_markdown

    markdown = render_markdown(report)
    assert "\\| broke" in markdown  # a pipe in a reason does not break the table


def test_the_rows_listing_reads_at_80_columns_grouped_by_stack_with_both_baselines(written):
    """`report --rows`: a heading per stack, then an entry per approach and benchmark of at most two lines (both
    baselines: tests/report/test_answer_text.py)."""
    report, _ = written
    lines = [line.plain for line in classes_lines(report.answers, 80)]
    assert max(map(len, lines)) <= 80
    flat = " ".join(" ".join(lines).split())
    assert re.search(r"small 1 B–4 KiB 0\.[45]\d?×", flat)
    assert "timeout: no output in 180 s (2 launches)" in flat
    assert "too few launches (as few as 1 on a side; a verdict needs 6)" in flat
    headings = [line for line in lines if line and not line.startswith(" ")]
    assert headings == sorted(set(headings)) and len(headings) == len({a.key.stack for a in report.answers
                                                                       if a.baseline == SYSTEM and not a.control})
    runs = "".join("c" if line.startswith("   ") else "e" for line in lines).split("e")
    assert max(map(len, runs)) <= 2  # an entry's text on two lines at most (a long name on a line before them)


@pytest.mark.skipif(shutil.which("chromium") is None, reason="chromium is not installed (scripts/setup-host.sh)")
def test_headless_chromium_shows_the_plots(written, tmp_path):
    import numpy as np
    from matplotlib import image

    from mpistack.report.plots import APPROACH_COLOURS

    _, paths = written
    shot = tmp_path / "shot.png"
    # a profile of its own: chromium runs of other tests (or users) at the same time do not share a lock
    result = subprocess.run(["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                             "--disable-background-networking", "--disable-component-update", "--disable-sync",
                             f"--user-data-dir={tmp_path / 'profile'}", "--hide-scrollbars",
                             f"--screenshot={shot}", "--window-size=1200,2000", paths["html"].as_uri()],
                            capture_output=True, text=True, timeout=120)
    assert shot.is_file(), result.stderr[-2000:]
    pixels = image.imread(str(shot))[..., :3]  # floats in [0, 1]
    assert pixels.shape[:2] == (2000, 1200)

    def near(hex_colour: str, tolerance: float = 0.12):
        target = np.array([int(hex_colour[i:i + 2], 16) / 255 for i in (1, 3, 5)])
        return np.abs(pixels - target).max(axis=2) < tolerance

    container = near(APPROACH_COLOURS["container"])
    hybrid = near(APPROACH_COLOURS["hybrid"])
    # the lines of the first plots (latency against size, and its ratio) are drawn: many pixels of the approach
    # colours, spread over a plot's width
    assert container.sum() > 400 and hybrid.sum() > 200, (container.sum(), hybrid.sum())
    columns = np.nonzero(container.any(axis=0))[0]
    assert columns.max() - columns.min() > 300
    # and the matrix is coloured: amber for (Y) and red for N above the plots
    first_plot_row = np.nonzero(container.any(axis=1))[0].min()
    assert near("#ffe08a", 0.03)[:first_plot_row].sum() > 500
    assert near("#ffcdd2", 0.03)[:first_plot_row].sum() > 500
    assert not math.isnan(float(pixels.mean()))


def test_plots_drawn_in_worker_processes_are_the_serial_ones(written, monkeypatch):
    from mpistack.report import plots

    report, _ = written
    serial = plots.group_plots(report)
    monkeypatch.setattr(plots, "PARALLEL_FROM", 1)
    monkeypatch.setattr(plots, "_cpus", lambda: 2)
    parallel = plots.group_plots(report)
    assert list(parallel) == list(serial) and parallel == serial
    assert all(svg.startswith("<svg") for pair in serial.values() for svg in pair)


def test_many_lines_are_drawn_dense_with_one_legend_entry_per_approach(written, monkeypatch):
    from mpistack.report import plots

    report, _ = written
    monkeypatch.setattr(plots, "DENSE", 1)
    latency = next(group for group in report.groups if group.key.benchmark == "latency")
    value, ratio = plots.value_plot(latency), plots.ratio_plot(latency, report)
    for svg in (value, ratio):
        assert "container (2 stacks)" in svg and "hybrid (1 stack)" in svg and "pip-mpich container" not in svg
    assert "host-mpich native (system, median)" in value


def test_a_slow_cell_the_doctor_cannot_explain_says_so(written):
    """Every slower or failing cell names a cause, or says that none is known."""
    report, _ = written
    diagnosed = [(row, column) for row in report.matrix.rows for column in report.matrix.columns
                 if (cell := report.matrix.cell(row, column)) is not None and cell.label in ("(Y)", "N")]
    assert diagnosed
    for row, column in diagnosed:
        assert report.findings_of(row, column) or report.unexplained(row, column)
