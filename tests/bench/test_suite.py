"""Suite mode (--suite): one launch runs several tests; --json FILE holds all of them."""
from __future__ import annotations

import json

import jsonschema
import pytest

from mpistack.parsers.bench_json import parse_bench_json

MPI_NAMES = ["mpich", "openmpi"]


@pytest.mark.parametrize("mpi", MPI_NAMES)
def test_suite_json_file_holds_every_test(run_bench, schema, tmp_path, mpi):
    out = tmp_path / "out.json"
    res = run_bench(mpi, 2, ["--suite", "latency,bw", "-m", "1:8", "--json", out], use_cache=False)
    assert res.rc == 0, res.stderr
    docs = json.loads(out.read_text())
    assert [doc["benchmark"] for doc in docs] == ["latency", "bw"]
    for doc in docs:
        jsonschema.validate(doc, schema)
        assert [r["size"] for r in doc["results"]] == [1, 2, 4, 8]
    runs = parse_bench_json(out.read_text(), str(out))
    assert [(run.benchmark, len(run.rows)) for run in runs] == [("latency", 4), ("bw", 4)]


def test_suite_json_file_keeps_the_tests_that_ran(run_bench, tmp_path):
    """A test the rank count refuses is skipped (exit 3); the file still holds the others."""
    out = tmp_path / "out.json"
    res = run_bench("mpich", 3, ["--suite", "allreduce,latency,bcast", "-m", "1:4", "-i", "5", "-x", "1",
                                 "--json", out], use_cache=False)
    assert res.rc == 3 and "latency requires exactly two processes" in res.stderr
    assert [doc["benchmark"] for doc in json.loads(out.read_text())] == ["allreduce", "bcast"]


def test_unwritable_json_file_fails_the_launch(run_bench, tmp_path):
    res = run_bench("mpich", 2, ["--suite", "latency,bw", "-m", "1:2", "-i", "5", "-x", "1",
                                 "--json", tmp_path / "missing" / "out.json"], use_cache=False)
    assert res.rc == 4 and "cannot write" in res.stderr
