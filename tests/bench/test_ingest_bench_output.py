"""mpistack-bench output read by mpistack's own parsers: the text and the JSON of one real run agree,
and the JSON brings its provenance into the store."""

import pytest

from mpistack.ingest.files import ingest_files
from mpistack.parsers import parse_file
from mpistack.store import open_database
from mpistack.store.query import Where, query_results

SUITE = "latency,bw,mbw_mr,allreduce,barrier"


@pytest.mark.parametrize("mpi", ["mpich", "openmpi"])
def test_text_and_json_of_one_run_agree(run_bench, tmp_path, mpi):
    json_path = tmp_path / "suite.json"
    result = run_bench(mpi, 2, ["--suite", SUITE, "-m", "1:256", "-i", "30", "-x", "3", "-f", "--json", json_path],
                       use_cache=False)
    assert result.rc == 0, result.stderr
    text_path = tmp_path / "suite.txt"
    text_path.write_text(result.stdout)
    json_files = sorted(tmp_path.glob("suite*.json"))
    assert json_files == [json_path]  # one file holds the suite
    from_text = parse_file(text_path)
    from_json = [run for path in json_files for run in parse_file(path)]
    assert sorted(run.benchmark for run in from_text) == sorted(run.benchmark for run in from_json) \
        == sorted(SUITE.split(","))
    by_benchmark = {run.benchmark: run for run in from_json}
    for text_run in from_text:
        json_run = by_benchmark[text_run.benchmark]
        assert text_run.suite == json_run.suite == "mpistack-bench 0.1"
        assert [row.size for row in text_run.rows] == [row.size for row in json_run.rows]
        for text_row, json_row in zip(text_run.rows, json_run.rows):
            for metric, value in text_row.values.items():
                assert value == pytest.approx(json_row.values[metric], abs=0.006)  # text has 2 decimals
            assert text_row.stats["iterations"] == json_row.stats["iterations"] == 30

    engine = open_database(str(tmp_path / "store.db"))
    report = ingest_files(engine, json_files, {"mpi": mpi})
    assert report.files == len(json_files) and not report.errors
    rows = query_results(engine, [Where.parse("benchmark=latency"), Where.parse("size=1")])
    assert len(rows) == 1 and rows[0]["ranks"] == 2 and rows[0]["nodes"] == 1
    assert rows[0]["median"] > 0 and rows[0]["ci95_low"] <= rows[0]["median"] <= rows[0]["ci95_high"]
    from sqlalchemy import text

    with engine.connect() as connection:
        version = connection.execute(text("SELECT mpi_library_version FROM runs LIMIT 1")).scalar_one()
    assert ("MPICH" in version) if mpi == "mpich" else ("Open MPI" in version)
