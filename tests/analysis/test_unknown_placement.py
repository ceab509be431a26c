"""Published references without ranks or nodes (the LUMI tables) keep them unknown, and `compare` matches them
with runs of a known placement only where the user states it by narrowing the other side (`--where`): a
table of unknown placement read as one node would be compared with single-node runs by accident."""

from __future__ import annotations

import pytest

from mpistack.analysis.compare import compare
from mpistack.analysis.evidence import load_rows
from mpistack.ingest import published
from mpistack.ingest.files import ingest_files
from mpistack.store import open_database
from mpistack.store.query import Where, query_runs

LUMI = "lumi-container-approaches"
OSU_BW = "# OSU MPI Bandwidth Test v7.5\n# Size      Bandwidth (MB/s)\n" + "".join(
    f"{2 ** k:<10d}{100.0 * 2 ** k:.2f}\n" for k in range(23))


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    directory = tmp_path_factory.mktemp("placement")
    engine = open_database(str(directory / "s.db"))
    report = published.replace_reference(engine, published.available()[LUMI])
    assert not report.errors, report.errors
    for name, tags in (("one-node.txt", {"nodes": "1"}), ("two-ranks.txt", {"nodes": "1", "ranks": "2"})):
        (directory / name).write_text(OSU_BW + f"# {name}\n")  # distinct content: both are stored
        ingested = ingest_files(engine, [directory / name], {"stack": "mine", "approach": "container",
                                                             "system": name, **tags})
        assert not ingested.errors, ingested.errors
    return engine


def test_the_lumi_tables_keep_ranks_and_nodes_unknown(store):
    rows = load_rows(store, [Where("reference", "=", LUMI)])
    assert rows and {(key.ranks, key.nodes) for key in rows} == {(0, 0)}


def test_an_unknown_placement_is_not_matched_with_a_single_node_run_unless_stated(store):
    plain = compare(store, "ref:" + LUMI, "ref:" + LUMI, where_a=["approach=bind"], where_b=["approach=native"])
    assert plain.rows  # within the reference, unknown matches unknown as before
    (one_node,) = load_rows(store, [Where("system", "=", "one-node.txt")])
    assert (one_node.ranks, one_node.nodes) == (0, 1)
    # the run known to be on one node (its ranks unknown) and the table of unknown placement: no match
    unstated = compare(store, _run_of(store, "one-node.txt"), f"ref:{LUMI}",
                       where_b=["approach=native", "buffers=H-H"])
    assert not any(row.candidate.key.benchmark == "bw" for row in unstated.rows)
    reasons = [entry.reason for entry in unstated.unmatched
               if entry.side == "baseline" and entry.row.key.benchmark == "bw"]
    assert reasons and "number of nodes is unknown (its source did not give it)" in reasons[0]
    assert "--where-a nodes=1" in reasons[0] and "ranks=" not in reasons[0]  # the run's ranks are unknown too
    # stated: the candidate side narrowed to one node, so the table is compared as one node
    stated = compare(store, _run_of(store, "one-node.txt"), f"ref:{LUMI}", where_a=["nodes=1"],
                     where_b=["approach=native", "buffers=H-H"])
    matched = [row for row in stated.rows if row.candidate.key.benchmark == "bw"]
    assert len(matched) == 1 and matched[0].baseline.key.nodes == 0


def test_both_ranks_and_nodes_must_be_stated_for_a_run_that_knows_both(store):
    run = _run_of(store, "two-ranks.txt")
    only_nodes = compare(store, run, f"ref:{LUMI}", where_a=["nodes=1"], where_b=["approach=native", "buffers=H-H"])
    assert not only_nodes.rows
    assert any("number of ranks is unknown" in entry.reason and "--where-a ranks=2" in entry.reason
               for entry in only_nodes.unmatched if entry.side == "baseline")
    both = compare(store, run, f"ref:{LUMI}", where_a=["nodes=1", "ranks=2"],
                   where_b=["approach=native", "buffers=H-H"])
    assert [row.candidate.key.benchmark for row in both.rows] == ["bw"]


def _run_of(store, system: str) -> str:
    """The selector of the one run ingested with this system tag."""
    (run,) = query_runs(store, [Where("system", "=", system)])
    return f"run:{run['run']}"


def test_an_unknown_placement_is_written_with_question_marks_not_zeros():
    from mpistack.analysis.evidence import RowKey

    key = RowKey("reference x", "s", "container", "default", "bw", "bandwidth", 2, 0, "H-H")
    assert key.placement == "n2N?" and key.with_(ranks=0).placement == "n?"
    assert key.with_(nodes=1).placement == "n2N1"
