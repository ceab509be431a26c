"""Loading a published reference again: the same content is left as it is, new numbers or new tags (a newer
mpistack's copy) replace the earlier runs and say how many."""

from __future__ import annotations

from mpistack.ingest import published
from mpistack.store import open_database
from mpistack.store.query import Where, query_results, query_runs
from tests.parsers import osu_samples as s

MANIFEST = """name = "tiny"
title = "A two-file reference"
source = "tests"
[tags]
system = "{system}"
[[data]]
file = "latency.txt"
[[data]]
file = "bw.txt"
"""


def shipped(directory, system="alps-gh200", latency=s.LATENCY_5):
    """The reference `tiny` as an mpistack release would ship it."""
    (directory / "tiny").mkdir(exist_ok=True)
    (directory / "tiny" / "reference.toml").write_text(MANIFEST.format(system=system))
    (directory / "tiny" / "latency.txt").write_text(latency)
    (directory / "tiny" / "bw.txt").write_text(s.BW_5)
    (loaded,) = published.select(["tiny"], directory)
    return loaded


def run_ids(engine):
    return [run["run"] for run in query_runs(engine)]


def test_the_same_content_is_left_as_it_is_and_new_content_replaces_it(tmp_path):
    engine = open_database(str(tmp_path / "refs.db"))
    references = tmp_path / "references"
    references.mkdir()
    first = published.replace_reference(engine, shipped(references))
    assert (first.runs, first.replaced, first.skipped) == (2, 0, [])

    again = published.replace_reference(engine, shipped(references))
    assert again.runs == 0 and again.skipped == [
        "reference tiny: already stored, 2 run(s) (run 1..2); nothing changed (--replace stores it again)"]
    assert run_ids(engine) == [1, 2]

    newer = published.replace_reference(engine, shipped(references, latency=s.LATENCY_5.replace("0.23", "0.21")))
    assert (newer.runs, newer.replaced, newer.skipped) == (2, 2, [])
    assert len(query_runs(engine)) == 2
    (one_byte,) = query_results(engine, [Where.parse("benchmark=latency"), Where.parse("size=1")])
    assert one_byte["value"] == 0.21

    retagged = published.replace_reference(engine, shipped(references, system="lumi-g",
                                                           latency=s.LATENCY_5.replace("0.23", "0.21")))
    assert retagged.replaced == 2 and {run["tags"]["system"] for run in query_runs(engine)} == {"lumi-g"}

    forced = published.replace_reference(engine, shipped(references, system="lumi-g",
                                                         latency=s.LATENCY_5.replace("0.23", "0.21")), replace=True)
    assert forced.replaced == 2 and len(query_runs(engine)) == 2

    # tags given when loading (`ingest --reference tiny -t site=cscs`) are part of what is stored
    same = shipped(references, system="lumi-g", latency=s.LATENCY_5.replace("0.23", "0.21"))
    tagged = published.replace_reference(engine, same, {"site": "cscs"})
    assert (tagged.skipped, tagged.replaced) == ([], 2)
    assert {run["tags"]["site"] for run in query_runs(engine)} == {"cscs"}
    assert published.replace_reference(engine, same, {"site": "cscs"}).skipped  # and then it is the same again


def test_a_plain_ingest_of_a_data_file_is_not_taken_for_the_reference(tmp_path):
    from mpistack.ingest.files import ingest_files

    engine = open_database(str(tmp_path / "refs.db"))
    references = tmp_path / "references"
    references.mkdir()
    loaded = shipped(references)
    ingest_files(engine, [references / "tiny" / "latency.txt", references / "tiny" / "bw.txt"])
    report = published.replace_reference(engine, loaded)
    assert (report.runs, report.replaced, report.skipped) == (2, 0, [])
    assert len(query_runs(engine)) == 4  # the user's own two runs stay
