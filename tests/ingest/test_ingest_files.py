"""`ingest_files` on a real store (SQLite and a real PostgreSQL server): each file is its own unit. Among 200
good files, every kind of bad file is reported in one line naming it, and every good file is stored; the
same content is stored once unless replaced."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy import func, select

from mpistack.ingest import files as ingest
from mpistack.ingest.files import ingest_files
from mpistack.store import open_database
from mpistack.store.query import Where, query_results, query_runs
from mpistack.store.schema import ResultRow, RunRow

from tests.parsers import osu_samples as s
from tests.parsers.launcher_samples import ABORT_BLOCKS, LATENCY_VALIDATION_FAILED
from tests.parsers.test_impossible_values import bench_document

GOOD = 200


def osu_bw(index: int) -> str:
    rows = "".join(f"{size:<10d}{index + size / 1000:>18.2f}\n" for size in (1, 2, 4, 8))
    return f"$ srun -n 2 -N 2 ./osu_bw\n# OSU MPI Bandwidth Test v7.5\n# Size      Bandwidth (MB/s)\n{rows}"


def long_title_document() -> str:
    document = json.loads(bench_document(1.0))
    document["title"] = "OSU MPI Bandwidth Test " + "x" * 200
    return json.dumps(document)


# name -> (content, what the one error line says after 'name:')
BAD_FILES = {
    "overflow.txt": (s.BW_5.replace("4194304 ", "99999999999999999999 "),
                     "5: size 99999999999999999999 in column Size is beyond 2^63-1"),
    "deep.json": ('{"schema": ' + "[" * 50_000 + "]" * 50_000 + "}", "1: JSON nested too deeply"),
    "title.json": (long_title_document(), "1: title 'OSU MPI Bandwidth Test xxxxxxxxxxxxxx...' is 223 characters"
                                          " long; the store holds at most 200"),
    "device.txt": (s.LATENCY_5.replace("OSU MPI Latency", "OSU MPI-ACCELERATORXYZABCDEF Latency"),
                   "1: device 'acceleratorxyzabcdef' is 20 characters long; the store holds at most 16"),
    "nul.txt": ("# a long preamble\n" * 600 + s.BW_5.replace("Bandwidth Test", "Bandwidth\x00Test"),
                "601: NUL character in the text"),
    "nul.json": (bench_document(1.0).replace("Bandwidth Test", "Bandwidth\\u0000Test"),
                 "1: title 'OSU MPI Bandwidth\\x00Test' holds a NUL character"),
    "nan.txt": (s.LATENCY_5.replace("0.23", "nan"), "4: 'nan' is not a number in column Latency (us)"),
    "iterations.txt": (s.ALLREDUCE_FULL_5.replace(" 1000", " 9999999999", 1), "3: 9999999999 in column Iterations"),
    "empty.txt": ("", " empty file"),
    "prose.txt": ("not benchmark output\n", " no OSU benchmark output found"),
}


def count(engine, table) -> int:
    with engine.connect() as connection:
        return connection.execute(select(func.count()).select_from(table)).scalar_one()


@pytest.fixture
def directory(tmp_path) -> Path:
    folder = tmp_path / "outputs"
    folder.mkdir()
    for index in range(GOOD):
        (folder / f"bw_{index:03d}.txt").write_text(osu_bw(index))
    for name, (content, _said) in BAD_FILES.items():
        (folder / name).write_text(content)
    (folder / "latin1.txt").write_bytes(s.BW_5.replace("Bandwidth Test", "Bandwidth Test \xe9").encode("latin-1"))
    return folder


def test_every_bad_file_is_one_line_and_every_good_file_is_stored(store_url, directory):
    engine = open_database(store_url)
    report = ingest_files(engine, sorted(directory.iterdir()), {"stack": "debian-mpich", "approach": "native"})
    assert report.files == GOOD and report.runs == GOOD and report.results == GOOD * 4
    assert len(report.errors) == len(BAD_FILES) + 1
    for name, (_content, said) in BAD_FILES.items():
        (line,) = [error for error in report.errors if error.startswith(f"{directory / name}:")]
        assert said in line and "\n" not in line
    assert any(error.startswith(f"{directory / 'latin1.txt'}:1: not UTF-8 text") for error in report.errors)
    assert count(engine, RunRow.__table__) == GOOD and count(engine, ResultRow.__table__) == GOOD * 4
    runs = query_runs(engine)
    assert {(run["ranks"], run["nodes"], run["launcher"]) for run in runs} == {(2, 2, "srun")}  # from the output
    assert report.warnings() == []  # stack and approach from tags, ranks and nodes from the output


def test_the_same_content_is_stored_once_unless_replaced(store_url, tmp_path):
    engine = open_database(store_url)
    files = []
    for index in range(3):
        files.append(tmp_path / f"f{index}.txt")
        files[-1].write_text(osu_bw(index))
    copy = tmp_path / "copy-of-f0.txt"
    copy.write_text(osu_bw(0))
    first = ingest_files(engine, [*files, copy])
    assert first.files == 3 and first.skipped == [f"{copy}: already stored (run 1); use --replace to store it again"]
    again = ingest_files(engine, files)
    assert again.files == 0 and not again.errors
    assert again.skipped == [f"{path}: already stored (run {index + 1}); use --replace to store it again"
                             for index, path in enumerate(files)]
    assert count(engine, RunRow.__table__) == 3

    replaced = ingest_files(engine, files[:1], replace=True)
    assert replaced.files == 1 and replaced.replaced == 1
    assert [run["run"] for run in query_runs(engine)] == [2, 3, 4]
    assert count(engine, ResultRow.__table__) == 12
    with engine.connect() as connection:
        digests = connection.execute(select(RunRow.content_sha256).order_by(RunRow.id)).scalars().all()
    assert len(set(digests)) == 3 and all(len(digest) == 64 for digest in digests)


def test_a_file_of_several_runs_names_its_run_range(store_url, tmp_path):
    engine = open_database(store_url)
    both = tmp_path / "both.txt"
    both.write_text(s.LATENCY_5 + s.BW_5)
    ingest_files(engine, [both])
    assert ingest_files(engine, [both]).skipped == [f"{both}: already stored (run 1..2); use --replace to store "
                                                    "it again"]


def test_abort_blocks_do_not_reject_a_file(store_url, tmp_path):
    engine = open_database(store_url)
    paths = []
    for launcher, block in sorted(ABORT_BLOCKS.items()):
        paths.append(tmp_path / f"{launcher}.out")
        paths[-1].write_text(LATENCY_VALIDATION_FAILED.replace("v7.3", f"v7.3 {launcher}") + block)
    report = ingest_files(engine, paths)
    assert report.files == 3 and not report.errors
    rows = query_results(engine)
    assert len(rows) == 12 and {row["status"] for row in rows} == {"validation-failed"}
    assert sorted({(row["size"], row["validation"]) for row in rows}) == [(1, "pass"), (2, "pass"), (4, "pass"),
                                                                         (8, "fail")]


def test_output_without_context_is_stored_with_the_tags_to_add(store_url, tmp_path):
    engine = open_database(store_url)
    paths = []
    for index in range(2):
        paths.append(tmp_path / f"plain{index}.txt")
        paths[-1].write_text(s.LATENCY_5.replace("0.22", f"0.2{index}"))
    report = ingest_files(engine, paths)
    assert report.files == 2
    assert report.warnings() == [f"2 files (the first {paths[0]}) stored without stack, approach, ranks, nodes; "
                                 "add -t stack=... -t approach=... -t ranks=... -t nodes=... to place the runs"]


def test_a_write_failing_midway_leaves_nothing_of_that_file(store_url, tmp_path, monkeypatch):
    """A failure the parsers cannot foresee (here: made to happen after the file's rows are written) rolls
    back that file alone."""
    engine = open_database(store_url)
    paths = []
    for index in range(3):
        paths.append(tmp_path / f"f{index}.txt")
        paths[-1].write_text(osu_bw(index))
    real_write = ingest.write_runs

    def failing_for_f1(connection, runs, **options):
        ids = real_write(connection, runs, **options)
        if options["source"].endswith("f1.txt"):
            raise RuntimeError("disk full\nsecond line")
        return ids

    monkeypatch.setattr(ingest, "write_runs", failing_for_f1)
    report = ingest_files(engine, paths)
    assert report.errors == [f"{paths[1]}: RuntimeError: disk full"] and report.files == 2
    assert [row["value"] for row in query_results(engine, [Where.parse("size=1")])] == [0.0, 2.0]
    assert count(engine, ResultRow.__table__) == 8


def test_a_tag_the_store_cannot_hold_is_refused_before_any_file(store_url, tmp_path):
    engine = open_database(store_url)
    path = tmp_path / "a.txt"
    path.write_text(osu_bw(1))
    with pytest.raises(ValueError, match="tag 'kkkk.*' is 101 characters long; the store holds at most 100"):
        ingest_files(engine, [path], {"k" * 101: "v"})
    with pytest.raises(ValueError, match="tag stack 'sss.*' is 201 characters long; the store holds at most 200"):
        ingest_files(engine, [path], {"stack": "s" * 201})
    with pytest.raises(ValueError, match=r"tag ranks 4294967296: expected a whole number in 1..2\^31-1"):
        ingest_files(engine, [path], {"ranks": str(2**32)})
    assert count(engine, RunRow.__table__) == 0


def _ingest_worker(args):
    url, paths = args
    return ingest_files(open_database(url), paths).files


def test_parallel_ingests_of_the_same_files_store_each_once(store_url, tmp_path):
    """Four processes ingest the same ten files at once: each content is stored by exactly one of them."""
    import multiprocessing

    open_database(store_url)  # the schema first, before the writers race
    paths = []
    for index in range(10):
        paths.append(tmp_path / f"f{index}.txt")
        paths[-1].write_text(osu_bw(index))
    with multiprocessing.get_context("spawn").Pool(4) as pool:
        stored = pool.map(_ingest_worker, [(store_url, paths[start:] + paths[:start]) for start in (0, 3, 5, 8)])
    assert sum(stored) == 10
    engine = open_database(store_url)
    assert count(engine, RunRow.__table__) == 10 and count(engine, ResultRow.__table__) == 40
