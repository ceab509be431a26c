"""The report's machine bounds: the section, the flag on figures above the memcpy bound, the plots' reference
lines; over the synthetic campaign of conftest.py (bw near 10 GB/s at 1 MiB) with bounds written to its store."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from mpistack.analysis.answers import Settings
from mpistack.report.bounds import ABOVE_MEMCPY
from mpistack.report.data import collect
from mpistack.report.plots import value_plot
from mpistack.report.write import write_report
from mpistack.store.bounds import write_bounds
from mpistack.store.query import Where
from tests.report.conftest import SIZES, build_store

MEMCPY_CACHE = 5000.0  # MB/s from 64 KiB on: below the synthetic bw of 1 MiB (about 10,000 MB/s)


def flat(kind, mpi, value_of):
    return {"kind": kind, "mpi": mpi, "command": f"measure {kind}", "library_version": "MPICH 4.0.2" if mpi else "",
            "measured_at": datetime(2026, 11, 26, 10, tzinfo=timezone.utc), "launches": 3, "status": "ok",
            "message": "", "figures": [{"size": s, "value": value_of(s), "low": value_of(s), "high": value_of(s),
                                        "launches": 3} for s in SIZES]}


@pytest.fixture(scope="module")
def reported(tmp_path_factory):
    directory = tmp_path_factory.mktemp("bounds")
    engine = build_store(directory / "r.db")
    write_bounds(engine, 1, {"host": "node-a", "cpu_model": "Test CPU", "kernel": "6.1.0"}, [
        flat("memcpy-cache", "", lambda s: 1e6 if s < 65536 else MEMCPY_CACHE),
        flat("memcpy-memory", "", lambda s: 3000.0),
        flat("tcp-bandwidth", "openmpi", lambda s: 100.0),
        flat("tcp-latency", "openmpi", lambda s: 3.5),
        {**flat("shm-latency", "mpich", lambda s: 0.3), "figures": [{"size": 1, "value": 0.3, "low": 0.3, "high": 0.3,
                                                                      "launches": 3}]}])
    report = collect(engine, [Where("campaign", "=", 1)], Settings(), title="t", campaign={"id": 1, "name": "s"})
    paths = write_report(report, directory / "report", ["md", "html"])
    return report, {path.suffix.lstrip("."): path.read_text() for path in paths}


def test_a_figure_above_the_memcpy_bound_is_flagged_never_called_faster(reported):
    report, texts = reported
    bw = next(group for group in report.groups if group.key.benchmark == "bw")
    flagged = [cell for table in bw.tables for row in table.rows for cell in row if cell.above_bound]
    assert flagged and all(cell.text.endswith("‡") and not cell.faster for cell in flagged)
    # only the sizes from 64 KiB on, where the bound is 5000 MB/s
    assert {item.size for item in _above(report)} == {s for s in SIZES if s >= 65536}
    for text in texts.values():
        assert "Machine bounds" in text and ABOVE_MEMCPY in text
        assert "node-a (Test CPU, Linux 6.1.0)" in text and "measure tcp-latency" in text


def _above(report):
    from mpistack.report.bounds import above_bound_figures

    return above_bound_figures(report)


def test_latency_is_never_flagged_and_a_report_without_bounds_has_no_section(reported, synthetic_db):
    report, _ = reported
    latency = next(group for group in report.groups if group.key.benchmark == "latency")
    assert not any(cell.above_bound for table in latency.tables for row in table.rows for cell in row)
    from mpistack.report.markdown import render_markdown
    from mpistack.store import open_database

    plain = collect(open_database(str(synthetic_db)), [Where("campaign", "=", 1)], Settings(), title="t",
                    campaign={"id": 1, "name": "s"})
    assert plain.bounds is None and "Machine bounds" not in render_markdown(plain)


def test_plots_carry_the_bounds_as_reference_lines(reported):
    report, _ = reported
    by_benchmark = {group.key.benchmark: group for group in report.groups}
    bandwidth = value_plot(by_benchmark["bw"], report.bounds)
    assert "memcpy in cache (upper bound)" in bandwidth and "TCP loopback (lower bound)" in bandwidth
    latency = value_plot(by_benchmark["latency"], report.bounds)
    assert "shared-memory floor (1 B)" in latency and "TCP loopback latency" in latency
    assert "memcpy" not in value_plot(by_benchmark["bw"])  # without bounds, none drawn
