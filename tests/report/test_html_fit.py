"""The HTML page fits a screen and its plots say what each line is: over a campaign shaped like the default one
(campaign_like.py), the page is rendered in headless Chromium at 1024 and 1400 px and measured from inside the
page (a script in a test copy writes the matrix's widths and the plots' legend entries into the DOM, read back
with --dump-dom); the plots' styles, panels, ticks and bounds are checked in Python."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from mpistack.analysis.matrix import Column
from mpistack.report import plots
from mpistack.report.html import short_library
from mpistack.report.write import write_report
from tests.report.campaign_like import OPENMPI, campaign_like_report

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"

#: what the page measures about itself, once laid out: the matrix's widths, every cell that overflows, the plots'
#: right edges, each plot's legend entries (their text, as the SVG holds it) and the library lines on hover
PROBE = """<script>
(function () {
  const root = document.documentElement, matrix = document.querySelector("table.matrix");
  const overflowing = (element) => element.scrollWidth > element.clientWidth + 1;
  const result = {
    viewport: root.clientWidth, page: root.scrollWidth,
    matrix: {scroll: matrix.scrollWidth, client: matrix.clientWidth,
             right: matrix.getBoundingClientRect().right,
             cells: [...matrix.querySelectorAll("th, td")].filter(overflowing).map((c) => c.textContent)},
    plots_right: Math.max(...[...document.querySelectorAll(".plots svg")].map((s) => s.getBoundingClientRect().right)),
    legends: [...document.querySelectorAll('svg g[id^="legend-"]')].map((g) => {
      const own = g.getBoundingClientRect(), figure = g.closest("svg").getBoundingClientRect();
      return {id: g.id, labels: [...g.querySelectorAll("text")].map((t) => t.textContent.trim()),
              inside: own.left >= figure.left - 1 && own.right <= figure.right + 1 && own.bottom <= figure.bottom + 1};
    }),
    libraries: [...matrix.querySelectorAll(".lib")].map((l) => ({text: l.textContent, title: l.title})),
    tallest_row: Math.max(...[...matrix.rows].map((r) => r.getBoundingClientRect().height)),
    closed_findings: matrix.querySelectorAll(".doctor details:not([open])").length,
  };
  const out = document.createElement("pre");
  out.id = "fit-result";
  out.textContent = JSON.stringify(result);
  document.body.appendChild(out);
})();
</script>
"""


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    """The campaign-like report, written as `mpistack report` writes it: (Report, path of report.html)."""
    directory = tmp_path_factory.mktemp("fit")
    report = campaign_like_report(directory / "local.db")
    # a finding as the doctor hands it in, with evidence as long as the real rules' (their sources and citations)
    pip = next(row for row in report.matrix.rows if row.stack == "pip-mpich")
    report.findings = {(pip.key, ("container", "tcp")): [
        {"title": "TCP-class latency on one node: 26.6 us at 512 B (recorded: tcp)", "verdict": "problem",
         "rule": "tcp-class-latency", "source": "the path the MPI recorded and the machine bounds; " * 12,
         "evidence": {}}]}
    (path,) = write_report(report, directory / "report", ["html"])
    return report, path


def measure(page_path: Path, width: int, tmp_path: Path) -> dict:
    """Lay the page out in headless Chromium at ``width`` px and return what PROBE measured."""
    probe = tmp_path / f"probe-{width}.html"
    probe.write_text(page_path.read_text().replace("</body>", PROBE + "</body>"))
    profile = tmp_path / f"profile-{width}"
    profile.mkdir()
    result = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", f"--user-data-dir={profile}", "--hide-scrollbars",
         f"--window-size={width},900", "--virtual-time-budget=5000", "--dump-dom", probe.as_uri()],
        capture_output=True, text=True, timeout=180)
    found = re.search(r'<pre id="fit-result">(.*?)</pre>', result.stdout, re.S)
    assert found, f"chromium did not run the probe (exit {result.returncode}): {result.stderr[-2000:]}"
    return json.loads(html.unescape(found.group(1)))


def expected_legends(report) -> dict[str, set[str]]:
    """Per SVG (by its legend's id), the labels its legend must have: one per kind of line drawn in it."""
    styles = plots.report_styles(report)
    expected = {}
    for group in plots.plotted_groups(report):
        slug = group.key.slug
        lines = {plots._style_of(s, styles)[0] for s in group.candidates if plots._sized(s)}
        bounds = {label for label, *_ in plots._bound_lines(group, report.bounds)}
        if plots._above_bound(group, report.bounds, [*group.baselines, *group.candidates]):
            bounds.add(plots.ABOVE_LABEL)
        expected[f"legend-{slug}-value"] = lines | bounds | {plots.SYSTEM_LABEL}
        floor = f"practical floor ({report.settings.floor.describe(higher_is_better=group.higher_is_better)})"
        compared = {plots._style_of(s, styles)[0] for s in group.candidates if plots._comparisons(s.answer)}
        expected[f"legend-{slug}-ratio"] = compared | {plots.PARITY_LABEL, floor}
        deployed = {plots._style_of(s, styles)[0] for s in group.candidates
                    if plots._comparisons(plots.deployment_answer(s))}
        if deployed:
            expected[f"legend-{slug}-deployment"] = deployed | {plots.PARITY_LABEL, floor}
    return expected


@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="chromium is not installed (scripts/setup-host.sh)")
@pytest.mark.parametrize("width", [1024, 1400])
def test_the_matrix_fits_the_window_and_every_series_has_its_legend_entry(page, width, tmp_path):
    report, path = page
    measured = measure(path, width, tmp_path)
    assert width - 20 <= measured["viewport"] <= width
    matrix = measured["matrix"]
    # the default campaign's 7 approach columns and 5 stacks, the 120-character Open MPI line among them
    assert len(report.matrix.columns) == 7 and len(report.matrix.rows) == 5
    assert matrix["scroll"] <= matrix["client"] and matrix["right"] <= measured["viewport"], matrix
    assert matrix["cells"] == [], "cells whose text overflows them"
    assert measured["page"] <= measured["viewport"], "the page scrolls sideways"
    assert measured["plots_right"] <= measured["viewport"]
    # a cell's finding shows its title; its long evidence opens on demand, so no row grows a screen tall
    assert measured["closed_findings"] == 1 and measured["tallest_row"] < 450, measured["tallest_row"]
    # the long library line shortened, the whole line on hover
    openmpi = next(item for item in measured["libraries"] if item["title"].startswith("Open MPI v4.1.4"))
    assert openmpi == {"text": "Open MPI v4.1.4", "title": OPENMPI}
    assert all(len(item["text"]) <= 32 for item in measured["libraries"])
    # every plot has a legend; in each, one entry per kind of line drawn, none twice
    legends = {legend["id"]: legend["labels"] for legend in measured["legends"]}
    expected = expected_legends(report)
    assert legends.keys() == expected.keys()
    assert any(key.endswith("-deployment") for key in legends)
    for key, labels in legends.items():
        assert len(labels) == len(set(labels)), (key, labels)
        assert set(labels) == expected[key], key
    assert all(legend["inside"] for legend in measured["legends"]), "a legend reaches out of its figure"


def test_each_approach_and_variant_has_its_own_colour_blind_safe_style(page):
    report, _ = page
    styles = plots.report_styles(report)
    columns = [column for column in report.matrix.columns if column != plots.SAME_STACK_COLUMN]
    drawn = [styles[column] for column in columns] + [plots.SYSTEM_STYLE, plots.SAME_STACK_STYLE]
    assert len({(s.colour, str(s.linestyle), s.marker, s.filled) for s in drawn}) == len(drawn)
    # 6 columns besides the stacks' own native runs: each its own Okabe-Ito colour, baselines in black
    assert len({styles[column].colour for column in columns}) == len(columns) == 6
    assert {styles[column].colour for column in columns} <= set(plots.OKABE_ITO)
    assert plots.SYSTEM_STYLE.colour == plots.SAME_STACK_STYLE.colour == "#000000"
    assert plots.SYSTEM_STYLE.linestyle != plots.SAME_STACK_STYLE.linestyle and plots.SAME_STACK_STYLE.marker
    # a variant is dashed, its approach solid; the same colour in every plot of the report
    assert styles[Column("container", "tcp")].linestyle == "--" and styles[Column("container")].linestyle == "-"
    assert plots.report_styles(report) == styles


def test_plots_are_small_multiples_with_bounds_readable_ratio_ticks_and_the_deployment_effect(page):
    report, _ = page
    figures = plots.group_plots(report)
    latency = next(group for group in report.groups if group.key.benchmark == "latency")
    value, ratio, deployment = figures[latency.key.slug]
    stacks = ["debian-mpich", "host-mpich", "host-openmpi", "pip-mpich", "pip-openmpi"]
    assert [panel.stack for panel in plots.panels(latency)] == stacks
    for stack in stacks:
        assert f">{stack}" in value and f">{stack}" in ratio
    assert "pip-mpich (system: host-mpich)" in value and "pip-openmpi (system: host-openmpi)" in value
    # the machine's bounds as reference lines, in every panel of the value plot
    assert "shared-memory floor (1 B)" in value and "TCP loopback latency" in value
    bw = next(group for group in report.groups if group.key.benchmark == "bw")
    assert "memcpy in cache (upper bound)" in figures[bw.key.slug][0]
    # a figure above the memcpy bound is marked as such (the rows 2.5-3.3x faster than the system's 10 GB/s, from
    # 16 KiB on, against 20 GB/s in cache), the system MPI's own never; nothing on latency
    assert plots.ABOVE_LABEL in figures[bw.key.slug][0] and plots.ABOVE_LABEL not in value
    above = plots._above_bound(bw, report.bounds, bw.candidates)
    assert above and min(size for size, _ in above) == 16384
    assert not plots._above_bound(bw, report.bounds, bw.baselines)
    # ratio ticks a reader can read: the wheel's MPICH over TCP is ~30x slower, the others near parity
    ticks = set(re.findall(r">([0-9.]+)</text>", ratio))
    assert {"0.1", "0.5", "1", "2"} <= ticks and "0.01" not in ticks
    assert plots.ratio_ticks(0.7, 1.4) == [0.8, 1.0, 1.25]
    assert plots.ratio_ticks(0.4, 2.5) == [0.5, 0.8, 1.0, 1.25, 2.0]
    # the deployment effect: the PyPI MPICH container against the wheel natively is at speed, though ~0.5x
    # against the system MPI (the loss is the build's); debian-mpich against the host's MPICH, the same build
    container = next(s for s in latency.candidates if (s.key.stack, s.key.approach, s.key.variant)
                     == ("pip-mpich", "container", "default"))
    assert plots.deployment_answer(container).label == "Y" and container.answer.label == "(Y)"
    assert ">pip-mpich<" in deployment and ">debian-mpich<" in deployment
    assert "ratio to the same build natively" in deployment


def test_short_library_keeps_the_name_and_version():
    assert short_library(OPENMPI) == "Open MPI v4.1.4"
    assert short_library("MPICH Version:\t4.0.2\nMPICH Release date:\tThu Apr  7 2022") == "MPICH 4.0.2"
    assert short_library("Intel(R) MPI Library 2021.10 for Linux* OS") == "Intel(R) MPI Library 2021.10…"
    assert short_library(None) == ""


def test_a_campaign_of_the_system_mpi_alone_is_plotted_without_ratios(tmp_path):
    """Nothing compared (a centre characterising its own MPI): a value panel per MPI with its bounds, no ratio."""
    from tests.report.campaign_like import ROWS

    native = [row for row in ROWS if row[1] == "native" and row[2] == "default" and row[4] == "host"]
    report = campaign_like_report(tmp_path / "native.db", rows=native)
    figures = plots.group_plots(report)
    assert figures and all(len(svgs) == 1 for svgs in figures.values())
    latency = next(group for group in report.groups if group.key.benchmark == "latency")
    assert [panel.stack for panel in plots.panels(latency)] == ["host-mpich", "host-openmpi"]
    (value,) = figures[latency.key.slug]
    assert ">host-openmpi<" in value and plots.SYSTEM_LABEL in value and "TCP loopback latency" in value
    (path,) = write_report(report, tmp_path / "report", ["html"])
    assert path.read_text().count("<svg") == len(figures)


def test_cases_not_run_are_listed_once_per_reason(synthetic_db, tmp_path):
    """A refusal that kept eight cases from running (two approaches, four benchmarks) is one row with its count."""
    from mpistack.analysis.answers import Settings
    from mpistack.report.data import collect
    from mpistack.report.html import render_html
    from mpistack.spec.status import RunStatus
    from mpistack.store import open_database
    from mpistack.store.query import Where
    from tests.report.conftest import add_runs

    path = tmp_path / "skips.db"
    shutil.copy(synthetic_db, path)
    engine = open_database(str(path))
    refusal = "bind refused: the image's openmpi uses libmpi.so.40, the host's mpich provides libmpi.so.12"
    for approach in ("bind", "hybrid"):
        for benchmark in ("latency", "bw", "bibw", "allreduce"):
            add_runs(engine, stack="pip-openmpi", approach=approach, benchmark=benchmark, origin="image",
                     library=None, launches=1, status=RunStatus.SKIPPED, message=refusal)
    page = render_html(collect(engine, [Where("campaign", "=", 1)], Settings(), title="t"))
    not_run = page[page.index("<h3>Not run</h3>"):page.index('<h2 id="provenance">')]
    assert not_run.count("bind refused") == 1
    assert '<td class="num">8</td><td>pip-openmpi bind, pip-openmpi hybrid</td>' in not_run


def test_a_system_mpi_nothing_was_compared_with_gets_its_own_panel(tmp_path):
    from tests.report.campaign_like import ROWS

    rows = [row for row in ROWS if row[0] in ("host-mpich", "host-openmpi", "pip-mpich") and row[2] != "a-a"
            and row[2] != "no-single-copy"]
    report = campaign_like_report(tmp_path / "two.db", rows=rows)
    latency = next(group for group in report.groups if group.key.benchmark == "latency")
    found = plots.panels(latency)
    assert [(panel.stack, [s.key.stack for s in panel.baselines]) for panel in found] == [
        ("pip-mpich", ["host-mpich"]), ("host-openmpi", ["host-openmpi"])]
    assert ">host-openmpi<" in plots.value_plot(latency, report.bounds)


def test_the_ratio_axis_follows_the_ratios_not_an_interval_of_a_thousandfold():
    from types import SimpleNamespace

    def answer(*points):
        return SimpleNamespace(sizes=[SimpleNamespace(size=1 << i, ratio=r, ci_low=lo, ci_high=hi)
                                      for i, (r, lo, hi) in enumerate(points)])

    noisy = answer((0.5, 0.001, 1000.0), (0.9, 0.8, 1.1))
    bottom, top = plots._ratio_limits([noisy])
    assert 0.1 < bottom < 0.5 / 1.2 and 1.35 <= top < 10  # the ratios fill the panel; the wide band is cut
    assert plots._ratio_limits([answer((0.03, 0.02, 0.04))])[0] < 0.02  # an interval near its ratio is shown
