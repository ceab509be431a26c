"""Known answers from the shipped published references, loaded with the real ingest code into a real store.

Each reference gives one figure per size (an OSU table), so these rows are compared descriptively: the ratio
against the practical floor, no test of significance. The expectations are what the sources themselves say.
"""

from __future__ import annotations

import math

import pytest

from mpistack.analysis import Verdict
from mpistack.analysis.answers import SYSTEM, answer
from mpistack.analysis.compare import CompareError, compare
from mpistack.analysis.evidence import load_rows
from mpistack.ingest import published
from mpistack.store import open_database
from mpistack.store.query import Where

LUMI = "lumi-container-approaches"
ALPS_MPICH = "alps-gh200-mpich-ce"
LUMI_OPENSOURCE = "mpich4.2.3-ofi1.22.0-libcxi"
LARGE = 512 * 1024


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    engine = open_database(str(tmp_path_factory.mktemp("published") / "references.db"))
    for loaded in published.available().values():
        report = published.replace_reference(engine, loaded)
        assert not report.errors, report.errors
    return engine


@pytest.fixture(scope="module")
def lumi_answers(store):
    rows = load_rows(store, [Where("reference", "=", LUMI)])
    # two container rows, told apart by their stack: the source's "basic container" and its "opensource" image
    return {("opensource" if a.key.stack == LUMI_OPENSOURCE else a.key.approach, a.key.benchmark, a.key.buffers): a
            for a in answer(rows) if a.baseline == SYSTEM}


def by_size(comparisons):
    return {c.size: c for c in comparisons}


def test_alps_mpich_without_the_cxi_hook_is_slower_at_large_bandwidth(store):
    result = compare(store, f"ref:{ALPS_MPICH}", f"ref:{ALPS_MPICH}", where_a=["cxi_hook=off"],
                     where_b=["cxi_hook=on"])
    rows = {(r.candidate.key.benchmark, r.candidate.key.buffers, r.candidate.key.nodes): r for r in result.rows}
    cpu = rows[("bw", "H-H", 2)]
    assert (cpu.candidate.key.approach, cpu.baseline.key.approach) == ("container", "fabric-swap")
    assert cpu.row_class.label == "(Y)"
    assert "large" in {r.regime for r in cpu.row_class.slow}
    four_mib = by_size(cpu.sizes)[4 * 1024 * 1024]
    # cxi-hook-off.txt and cxi-hook-on.txt, osu_bw CPU-to-CPU inter-node, 4194304 B
    assert (four_mib.median_candidate, four_mib.median_baseline) == (3764.11, 24007.69)
    assert four_mib.ratio == pytest.approx(0.157, abs=0.001)
    assert four_mib.verdict is Verdict.SLOWER and four_mib.descriptive and math.isnan(four_mib.p_value)
    assert "single published figures, no test of significance" in four_mib.reason
    assert all(c.verdict is Verdict.SLOWER for c in cpu.sizes if c.size >= LARGE)
    assert cpu.descriptive and "single published figures on both sides" in cpu.evidence()
    assert rows[("bw", "H-H", 2)].row_class.label == rows[("bw", "D-D", 2)].row_class.label == "(Y)"
    # the hook-on runs on one node and bibw have no hook-off counterpart: listed, not dropped
    assert {(u.side, u.row.key.benchmark, u.row.key.nodes) for u in result.unmatched} == {
        ("baseline", "bibw", 2), ("baseline", "bw", 1)}


def test_lumi_basic_container_is_slower_than_native(lumi_answers):
    basic = {key: a for key, a in lumi_answers.items() if key[0] == "container"}
    assert len(basic) == 10  # bw and latency at four buffer placements, RCCL bandwidth and latency
    assert {a.baseline_row.stack for a in basic.values()} == {"cray-mpich8.1.29"}
    for a in basic.values():
        assert a.label == "(Y)", a.row_class.reason
        assert "descriptive: single published figures" in a.row_class.reason
    bandwidth = by_size(basic[("container", "bw", "H-H")].sizes)[4 * 1024 * 1024]
    assert bandwidth.median_candidate == 2131.71 and bandwidth.ratio < 0.1  # TCP against Slingshot


def test_lumi_open_source_container_is_slow_for_small_device_messages_and_at_speed_for_large(lumi_answers):
    for buffers in ("D-D", "D-H", "H-D"):
        latency = lumi_answers[("opensource", "latency", buffers)]
        assert latency.label == "(Y)"
        assert "small" in {r.regime for r in latency.row_class.slow}
        assert "large" not in {r.regime for r in latency.row_class.slow}
        assert all(c.verdict is Verdict.AT_SPEED for c in latency.sizes if c.size >= LARGE), buffers
    device = by_size(lumi_answers[("opensource", "latency", "D-D")].sizes)
    assert (device[1].median_candidate, device[1].median_baseline) == (21.05, 2.54)
    assert device[1].verdict is Verdict.SLOWER
    bandwidth = lumi_answers[("opensource", "bw", "D-D")]
    assert all(c.verdict is Verdict.AT_SPEED for c in bandwidth.sizes if c.size >= LARGE)


def test_lumi_bind_mount_is_at_native_speed(lumi_answers):
    for (approach, benchmark, buffers), a in lumi_answers.items():
        if approach == "bind" and benchmark in ("bw", "latency"):
            assert a.label == "Y", (benchmark, buffers, a.row_class.reason)


def test_a_reference_that_is_not_loaded_says_how_to_load_it(tmp_path):
    empty = open_database(str(tmp_path / "empty.db"))
    with pytest.raises(CompareError, match=f"mpistack ingest --reference {ALPS_MPICH}"):
        compare(empty, f"ref:{ALPS_MPICH}", f"ref:{ALPS_MPICH}")
    with pytest.raises(CompareError, match="unknown reference 'nowhere'"):
        compare(empty, "ref:nowhere", f"ref:{ALPS_MPICH}")
