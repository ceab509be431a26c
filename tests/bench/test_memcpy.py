"""mpistack-bench memcpy: one core's copy bandwidth, in cache and from memory, the bound of intra-node
bandwidth. Real launches of the real binary; the JSON read by mpistack's own parser and stored by ingest."""
from __future__ import annotations

import json

import jsonschema
import pytest

from mpistack.ingest.files import ingest_files
from mpistack.parsers import parse_file
from mpistack.spec.benchmarks import BENCHMARKS, HIGHER_IS_BETTER
from mpistack.store import open_database
from mpistack.store.query import Where, query_results

HEADER = "# Size       In-cache (MB/s)  From-memory (MB/s)"
FULL_RANGE = [2 ** k for k in range(23)]  # 1 B .. 4 MiB


def rows_of(stdout: str) -> dict[int, tuple[float, float]]:
    """The table under the header: size -> (in cache, from memory)."""
    lines = stdout.splitlines()
    start = lines.index(next(line for line in lines if line.startswith("# Size"))) + 1
    table = {}
    for line in lines[start:]:
        size, in_cache, from_memory = line.split()[:3]
        table[int(size)] = (float(in_cache), float(from_memory))
    return table


@pytest.fixture(scope="module")
def full_run(run_bench, tmp_path_factory):
    """The documented command: one rank, 1 B to 4 MiB, --json."""
    path = tmp_path_factory.mktemp("memcpy") / "x.json"
    res = run_bench("mpich", 1, ["memcpy", "-m", "1:4194304", "--json", path], use_cache=False)
    assert res.rc == 0, res.stderr
    return res, path


def test_text_is_an_osu_style_table(full_run):
    res, _ = full_run
    lines = res.stdout.splitlines()
    assert lines[0] == "" and lines[1] == "# mpistack-bench memcpy"
    assert lines[2].startswith("# From memory: copies walk 2 x ")
    assert lines[3] == HEADER
    table = rows_of(res.stdout)
    assert list(table) == FULL_RANGE
    assert all(in_cache > 0 and from_memory > 0 for in_cache, from_memory in table.values())
    # 64 KiB source and destination stay in L1/L2; the walk's data comes from DRAM
    assert table[65536][0] > table[65536][1]


def test_json_has_two_metrics_per_size_and_ingests(full_run, schema, tmp_path):
    res, path = full_run
    doc = json.loads(path.read_text())
    jsonschema.validate(doc, schema)
    assert doc["benchmark"] == "memcpy" and doc["title"] == "mpistack-bench memcpy"
    assert doc["metrics"] == [{"name": "in_cache", "unit": "MB/s"}, {"name": "from_memory", "unit": "MB/s"}]
    assert doc["options"]["buffers"] == "H"
    table = rows_of(res.stdout)
    assert [r["size"] for r in doc["results"]] == FULL_RANGE
    for result in doc["results"]:
        # the JSON holds the figures the text prints; the stats are the in-cache batches'
        assert (result["values"]["in_cache"], result["values"]["from_memory"]) == table[result["size"]]
        assert result["stats"]["samples"] == result["iterations"] == (100 if result["size"] <= 8192 else 20)
        assert result["stats"]["min"] <= result["values"]["in_cache"] <= result["stats"]["max"]

    (run,) = parse_file(path)
    assert run.benchmark == "memcpy" and run.units == {"in_cache": "MB/s", "from_memory": "MB/s"}
    engine = open_database(str(tmp_path / "store.db"))
    report = ingest_files(engine, [path], {"mpi": "mpich"})
    assert report.files == 1 and not report.errors
    stored = query_results(engine, [Where.parse("benchmark=memcpy"), Where.parse("size=4194304")])
    assert {row["metric"]: row["value"] for row in stored} == dict(
        zip(("in_cache", "from_memory"), table[4194304]))


def test_python_table_knows_memcpy_as_a_bound():
    memcpy = BENCHMARKS["memcpy"]
    assert memcpy.refuses(1) is None and memcpy.refuses(3) is None
    assert not memcpy.takes_buffer_placement
    assert {"in_cache", "from_memory"} <= HIGHER_IS_BETTER


@pytest.mark.parametrize("mpi", ["mpich", "openmpi"])
def test_rank_zero_measures_under_any_rank_count(run_bench, mpi, schema, tmp_path):
    path = tmp_path / "m.json"
    res = run_bench(mpi, 3, ["memcpy", "-m", "1024:4096", "-f", "-c", "--json", path], use_cache=False)
    assert res.rc == 0, res.stderr
    assert res.stdout.count("# mpistack-bench memcpy") == 1  # only rank 0 prints
    header = next(line for line in res.stdout.splitlines() if line.startswith("# Size"))
    assert header.split("  ")[-1].strip() == "Validation" and "Min In-cache (MB/s)" in header
    assert [line.split()[-1] for line in res.stdout.splitlines()[-3:]] == ["Pass"] * 3
    doc = json.loads(path.read_text())
    jsonschema.validate(doc, schema)
    assert doc["mpi"]["ranks"] == 3 and [r["validation"] for r in doc["results"]] == ["pass"] * 3


def test_corrupt_build_fails_validation(run_bench):
    res = run_bench("mpich", 1, ["memcpy", "-m", "8:8", "-i", "3", "-x", "0", "-c"], corrupt=True)
    assert res.rc == 1
    assert res.stdout.splitlines()[-1].split()[-1] == "Fail"


def test_adaptive_stop_and_counts_apply(run_bench, tmp_path):
    path = tmp_path / "a.json"
    res = run_bench("mpich", 1, ["memcpy", "-m", "4096:8192", "--stop", "ci:0.5", "--stop-min", "7",
                                 "--stop-max", "40", "--json", path], use_cache=False)
    assert res.rc == 0, res.stderr
    counts = [r["iterations"] for r in json.loads(path.read_text())["results"]]
    # never fewer than --stop-min nor more than --stop-max; a 50% interval is met long before the maximum
    # (mostly at the first check, after 7; an outlier batch now and then widens it for a few more)
    assert all(7 <= count <= 40 for count in counts) and min(counts) < 40, counts
    res = run_bench("mpich", 1, ["memcpy", "-m", "16:16", "-i", "9", "-x", "1", "--format", "json"])
    assert json.loads(res.stdout)["results"][0]["iterations"] == 9
