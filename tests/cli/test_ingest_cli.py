"""`mpistack ingest` as a user runs it: one line per bad, skipped or unplaced file, values printed literally
(never read as rich markup), --replace, and the exit status."""

from __future__ import annotations

import json
import sqlite3

from tests.parsers import osu_samples as s

from .test_cli import mpistack


def test_bad_files_are_one_line_each_printed_literally(tmp_path):
    db = tmp_path / "cli.db"
    good = tmp_path / "good.txt"
    good.write_text("$ mpirun -np 2 ./osu_latency\n" + s.LATENCY_5)
    folder = tmp_path / "[bold]runs[/bold]"
    folder.mkdir(parents=True)  # the path reads as rich markup: "[bold]runs[/bold]"
    markup = folder / "[red]x.txt"
    markup.write_text(s.LATENCY_5.replace("0.23", "[/x]"))
    result = mpistack("ingest", good, markup, "-t", "stack=debian-mpich", "-t", "approach=native", "-t", "nodes=1",
                      db=db, check=False)
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert f"error: {markup}:4: '[/x]' is not a number in column Latency (us)" in lines
    assert lines[-1] == "ingested: 1 file(s), 1 run(s) (run 1), 4 result(s) stored; 1 file(s) rejected"
    assert "Traceback" not in result.stderr


def test_already_stored_files_are_skipped_and_replace_stores_them_again(tmp_path):
    db = tmp_path / "cli.db"
    first = tmp_path / "a.txt"
    first.write_text(s.LATENCY_5)
    second = tmp_path / "b.txt"
    second.write_text(s.BW_5)
    mpistack("ingest", first, second, "-t", "stack=x", "-t", "approach=native", "-t", "ranks=2", "-t", "nodes=1", db=db)

    again = mpistack("ingest", first, second, db=db)  # nothing new: not a failure
    assert again.stderr.splitlines() == [
        f"{first}: already stored (run 1); use --replace to store it again",
        f"{second}: already stored (run 2); use --replace to store it again",
        "ingested: 0 file(s), 0 run(s), 0 result(s) stored; 2 file(s) already stored",
    ]
    replaced = mpistack("ingest", "--replace", second, "-t", "stack=y", "-t", "approach=native", "-t", "ranks=2",
                        "-t", "nodes=1", db=db)
    assert replaced.stderr.splitlines()[-1] == \
        "ingested: 1 file(s), 1 run(s) (run 2), 3 result(s) stored, replacing 1 earlier run(s)"
    runs = json.loads(mpistack("runs", "-f", "json", db=db).stdout)
    assert [run["stack"] for run in runs] == ["x", "y"]  # b.txt's earlier run is gone


def test_output_without_context_warns_with_the_tags_to_add(tmp_path):
    db = tmp_path / "cli.db"
    plain = tmp_path / "osu_latency.out"
    plain.write_text("$ mpirun -np 2 ./osu_latency\n" + s.LATENCY_5)
    result = mpistack("ingest", plain, db=db)
    assert f"warning: {plain}: stored without stack, approach, nodes; add -t stack=... -t approach=... " \
           "-t nodes=... to place the runs" in result.stderr.splitlines()


def test_a_tag_too_long_for_the_store_is_a_usage_error(tmp_path):
    path = tmp_path / "a.txt"
    path.write_text(s.LATENCY_5)
    result = mpistack("ingest", path, "-t", "k" * 101 + "=v", db=tmp_path / "cli.db", check=False)
    assert result.returncode == 2 and "is 101 characters long; the store holds at most 100" in result.stderr


def reference_runs(db) -> dict[str, list[int]]:
    """The run numbers of each stored reference."""
    runs = json.loads(mpistack("runs", "-f", "json", db=db).stdout)
    numbers: dict[str, list[int]] = {}
    for run in runs:
        numbers.setdefault(run["tags"]["reference"], []).append(run["run"])
    return numbers


def test_a_reference_loaded_again_is_left_as_it_is_unless_its_content_changed(tmp_path):
    db = tmp_path / "cli.db"
    mpistack("ingest", "--reference", "all", db=db)
    first = reference_runs(db)
    again = mpistack("ingest", "--reference", "all", db=db)
    assert again.stderr.splitlines() == [
        f"reference {name}: already stored, {len(ids)} run(s) (run {ids[0]}..{ids[-1]}); nothing changed "
        "(--replace stores it again)" for name, ids in first.items()]
    assert reference_runs(db) == first  # the same run numbers
    # as an earlier mpistack stored it: no content hash, so not known to be the same content
    with sqlite3.connect(db) as connection:
        connection.execute("UPDATE runs SET content_sha256 = NULL WHERE id IN (SELECT run_id FROM run_tags "
                           "WHERE key = 'reference' AND value = 'cscs-mpich-guide')")
    connection.close()
    changed = mpistack("ingest", "--reference", "cscs-mpich-guide", db=db)
    last = max(max(ids) for ids in first.values())
    assert changed.stderr.splitlines() == [
        f"reference cscs-mpich-guide: 1 file(s), 4 run(s) (run {last + 1}..{last + 4}), 92 result(s) stored, "
        "replacing 4 earlier run(s)"]
    assert reference_runs(db) == {**first, "cscs-mpich-guide": [last + 1, last + 2, last + 3, last + 4]}
    forced = mpistack("ingest", "--reference", "cscs-mpich-guide", "--replace", db=db)
    assert forced.stderr.splitlines()[-1].endswith("stored, replacing 4 earlier run(s)")
