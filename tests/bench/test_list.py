"""mpistack-bench --list: the JSON description of every test (bench/README.md), checked against
what the binary does: its rank rules against the launches it accepts and refuses, its titles and
metrics against the result documents."""
from __future__ import annotations

import json
import re
import subprocess

import pytest

from conftest import load_benchlib  # noqa: E402  (tests/bench/conftest.py)

lib = load_benchlib()
ALL_TESTS = lib.PT2PT + lib.COLLECTIVES + lib.LOCAL
FAMILIES = {**dict.fromkeys(lib.PT2PT, "pt2pt"), **dict.fromkeys(lib.COLLECTIVES, "collective"),
            **dict.fromkeys(lib.LOCAL, "local")}
MPI_NAMES = ["mpich", "openmpi"]
TEST_KEYS = {"name", "title", "family", "metric", "unit", "metrics", "ranks", "sizes", "buffers",
             "window", "validation"}
REFUSED_RE = re.compile(r"^mpistack-bench: error: (\w+) requires ", re.MULTILINE)


def listing(binary) -> dict:
    """--list run as a plain command: no launcher, no MPI."""
    proc = subprocess.run([str(binary), "--list"], capture_output=True, text=True, timeout=60,
                          env=lib.bench_env())
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    return json.loads(proc.stdout)


def allowed(ranks: dict, nranks: int) -> bool:
    """The rank rule as bench/README.md defines it."""
    if ranks["rule"] == "exactly":
        return nranks == ranks["count"]
    if ranks["rule"] == "even":
        return nranks >= ranks["count"] and nranks % 2 == 0
    assert ranks["rule"] == "at-least", ranks
    return nranks >= ranks["count"]


@pytest.mark.parametrize("mpi", MPI_NAMES)
def test_list_describes_every_test(builds, mpi):
    doc = listing(builds(mpi))
    assert set(doc) == {"suite", "version", "tests"}
    assert (doc["suite"], doc["version"]) == ("mpistack-bench", "0.1")
    assert [t["name"] for t in doc["tests"]] == ALL_TESTS
    for t in doc["tests"]:
        name = t["name"]
        assert set(t) == TEST_KEYS, name
        assert t["title"] == lib.TITLES[name]
        assert t["family"] == FAMILIES[name]
        bandwidth = name in lib.BANDWIDTH
        assert t["metrics"][0] == {"name": t["metric"], "unit": t["unit"]}
        if name == "memcpy":
            assert t["metrics"] == [{"name": "in_cache", "unit": "MB/s"},
                                    {"name": "from_memory", "unit": "MB/s"}]
            assert t["ranks"] == {"rule": "at-least", "count": 1}
        else:
            assert (t["metric"], t["unit"]) == (("bandwidth", "MB/s") if bandwidth else ("latency", "us"))
            assert t["metrics"][1:] == ([{"name": "message_rate", "unit": "messages/s"}]
                                        if name == "mbw_mr" else [])
            assert t["ranks"]["rule"] in ("exactly", "even", "at-least") and t["ranks"]["count"] == 2
        assert t["sizes"] is (name != "barrier")
        assert t["buffers"] is (name in lib.PT2PT)
        assert t["window"] is bandwidth
        assert t["validation"] is (name != "barrier")
    assert doc == listing(builds("openmpi" if mpi == "mpich" else "mpich"))  # one suite, any MPI


@pytest.mark.parametrize("nranks", [1, 2, 3, 4])
@pytest.mark.parametrize("mpi", MPI_NAMES)
def test_list_rank_rules_are_what_the_binary_enforces(builds, run_bench, mpi, nranks):
    tests = {t["name"]: t for t in listing(builds(mpi))["tests"]}
    res = run_bench(mpi, nranks, ["--suite", ",".join(tests), "--format", "json", "-m", "1:1",
                                  "-i", "1", "-x", "0"])
    expected = [name for name, t in tests.items() if allowed(t["ranks"], nranks)]
    docs = [json.loads(line) for line in res.stdout.splitlines() if line.startswith("{")]
    assert [d["benchmark"] for d in docs] == expected, res.stderr
    assert REFUSED_RE.findall(res.stderr) == [name for name in tests if name not in expected]
    assert res.rc == (0 if len(expected) == len(tests) else 3)
    for d in docs:  # what a run reports is what --list announced
        t = tests[d["benchmark"]]
        assert d["title"] == t["title"]
        assert d["metrics"] == t["metrics"]
        assert (d["results"][0]["size"] is not None) is t["sizes"]
    # the cases the rules exist for
    if nranks == 1:
        assert expected == ["memcpy"]
    if nranks == 3:
        assert "mbw_mr" not in expected and "multi_lat" not in expected and "bcast" in expected
    if nranks == 4:
        assert "mbw_mr" in expected and "latency" not in expected and "bibw" not in expected
