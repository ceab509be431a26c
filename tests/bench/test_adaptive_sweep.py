"""Adaptive stopping from six samples on, and bench/sweep.py (paired fixed vs adaptive launches):
real runs under Debian's MPICH, and the sweep's noise judgement on hand-made documents."""
from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys

import jsonschema
import pytest

from conftest import load_benchlib  # noqa: E402  (tests/bench/conftest.py)

lib = load_benchlib()
SWEEP = lib.BENCH / "sweep.py"


def checkpoints(nmin: int, nmax: int) -> set[int]:
    """where the stop rule may end a size: the checkpoints below nmax, and nmax itself"""
    out, n = set(), nmin
    while n < nmax:
        out.add(n)
        n += max(4, n // 2)
    return out | {nmax}


def load_sweep():
    spec = importlib.util.spec_from_file_location("mpistack_bench_sweep", SWEEP)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("test, nmax", [("latency", 10000), ("bw", 100)])
def test_adaptive_mode_stops_from_six_samples(run_bench, schema, tmp_path, test, nmax):
    out = tmp_path / "a.json"
    # a loose rule, so that most sizes stop at the first checkpoint
    res = run_bench("mpich", 2, [test, "--stop", "ci:0.99", "-m", "1:1024", "-f", "--json", out],
                    use_cache=False)
    assert res.rc == 0, res.stderr
    doc = json.loads(out.read_text())
    jsonschema.validate(doc, schema)
    assert doc["options"]["stop_min"] == 6
    allowed = checkpoints(6, nmax)
    rows = doc["results"]
    assert all(r["iterations"] in allowed for r in rows), [r["iterations"] for r in rows]
    six = [r for r in rows if r["iterations"] == 6]
    assert six, "no size stopped at the first checkpoint"
    for r in six:  # six samples: the interval is [min, max], and it met the rule
        st = r["stats"]
        assert st["samples"] == 6
        assert st["ci95_low"] == st["min"] and st["ci95_high"] == st["max"]
        assert st["ci95_high"] <= 1.99 * st["median"] + 1e-9


def test_stop_check_measures_both_arms_block_by_block_in_one_launch(run_bench, schema, tmp_path):
    """--stop-check N: before each size's own figure, N fixed-count and N adaptive blocks, their medians kept."""
    out = tmp_path / "c.json"
    res = run_bench("mpich", 2, ["bw", "--stop", "ci:0.99", "--stop-check", "3", "-m", "1:4", "--json", out],
                    use_cache=False)
    assert res.rc == 0, res.stderr
    doc = json.loads(out.read_text())
    jsonschema.validate(doc, schema)
    for row in doc["results"]:
        check = row["stop_check"]
        assert len(check["fixed"]) == len(check["adaptive"]) == 3
        # (a block of 1-byte windows stalled behind a descheduled rank reads 0.00 MB/s at two decimals)
        assert all(value >= 0 for value in check["fixed"] + check["adaptive"]), check
        assert sorted(check["fixed"])[1] > 0 and sorted(check["adaptive"])[1] > 0, check
        assert row["iterations"] in checkpoints(6, 100)  # the size's own figure is the adaptive one
    plain = run_bench("mpich", 2, ["bw", "-m", "1:4", "--format", "json"], use_cache=False)
    assert all("stop_check" not in row for row in json.loads(plain.stdout)["results"])  # only when asked for


def _doc(sizes_medians: dict[int, float], test: str = "bw") -> dict:
    return {"benchmark": test, "results": [
        {"size": s, "iterations": 20, "stats": {"median": m}} for s, m in sizes_medians.items()]}


def _fixed(path, sizes_medians: dict[int, float]):
    """one OSU-style launch: one document"""
    path.write_text(json.dumps(_doc(sizes_medians)))


def _suite(path, sizes_medians: dict[int, float]):
    """one suite launch: the array of its documents"""
    path.write_text(json.dumps([_doc({1: 1.0}, "latency"), _doc(sizes_medians)]))


def test_sweep_judges_adaptive_medians_against_the_fixed_count_noise(tmp_path, capsys):
    sweep = load_sweep()
    # fixed-count medians 100 and 110 at size 1 (noise 10%); 100 and 100 at size 2 (none)
    _fixed(tmp_path / "fixed0.bw.json", {1: 100.0, 2: 100.0})
    _fixed(tmp_path / "fixed1.bw.json", {1: 110.0, 2: 100.0})
    _fixed(tmp_path / "adapt0.bw.json", {1: 109.0, 2: 102.0})  # inside the noise; inside the floor
    _fixed(tmp_path / "adapt1.bw.json", {1: 108.0, 2: 103.0})  # size 2: median 102.5 <= 100 + 3%
    a = argparse.Namespace(rounds=2, tolerance=0.03, form="osu")
    within, total, worst, noises, _ = sweep.compare_medians(a, ["bw"], tmp_path)
    assert (within, total) == (2, 2), capsys.readouterr().out
    assert [round(n, 2) for n in noises] == [9.52, 0.0]  # (110 - 100) / 105: the spread between launches
    _fixed(tmp_path / "adapt1.bw.json", {1: 108.0, 2: 106.0})  # size 2: median 104 > 103
    within, total, worst, _, _ = sweep.compare_medians(a, ["bw"], tmp_path)
    assert (within, total) == (1, 2)
    assert [(t, s) for _, t, s, _ in worst] == [("bw", 2)]


def test_in_launch_blocks_are_the_rounds_of_both_arms(tmp_path):
    """--form in-launch: each block of --stop-check is a round of its arm; the chance reading counts blocks."""
    sweep = load_sweep()
    doc = {"benchmark": "bw", "results": [{"size": 1, "iterations": 6, "stats": {"median": 100.0},
                                           "stop_check": {"fixed": [100.0, 110.0], "adaptive": [104.0, 150.0]}}]}
    (tmp_path / "check0.bw.json").write_text(json.dumps(doc))
    a = argparse.Namespace(rounds=1, pairs=2, tolerance=0.03, form="in-launch")
    fixed, adaptive = sweep.arms_of(a, "bw", tmp_path)
    assert [f[1]["stats"]["median"] for f in fixed] == [100.0, 110.0]
    assert [d[1]["stats"]["median"] for d in adaptive] == [104.0, 150.0]
    within, total, _, _, diffs = sweep.compare_medians(a, ["bw"], tmp_path)
    assert (within, total) == (0, 1) and diffs[0][0] > 0  # median 127 beyond 110 + 3%
    assert round(sweep.chance_within(3), 2) == 0.60  # the median of 3 inside the range of 3 others


def test_one_step_of_the_figures_resolution_is_within(tmp_path):
    """Block medians are written with two decimals: 0.22 against 0.23 us is one step (4.5 %, beyond the 3 %
    floor) and no evidence of a difference; two steps are."""
    sweep = load_sweep()
    a = argparse.Namespace(rounds=1, pairs=2, tolerance=0.03, form="in-launch")
    for adaptive, within in (([0.22, 0.22], 1), ([0.21, 0.21], 0)):
        doc = {"benchmark": "latency", "results": [{"size": 4, "iterations": 6, "stats": {"median": 0.23},
                                                    "stop_check": {"fixed": [0.23, 0.23], "adaptive": adaptive}}]}
        (tmp_path / "check0.latency.json").write_text(json.dumps(doc))
        assert sweep.compare_medians(a, ["latency"], tmp_path)[0] == within


def test_sweep_names_a_broken_document(tmp_path):
    sweep = load_sweep()
    (tmp_path / "fixed0.bw.json").write_text("{not json")
    with pytest.raises(SystemExit, match="fixed0.bw.json: not an mpistack-bench result document"):
        sweep.compare_medians(argparse.Namespace(rounds=2, tolerance=0.03, form="osu"), ["bw"], tmp_path)


def test_sweep_runs_paired_rounds(builds, tmp_path):
    binary = builds("mpich")
    proc = subprocess.run(
        [sys.executable, str(SWEEP), "--bin", str(binary), "--tests", "latency,allreduce",
         "--extra", "-m 1:16", "--rounds", "2", "--keep", str(tmp_path)],
        capture_output=True, text=True, timeout=300, env=lib.bench_env())
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "# round 1/2: fixed" in out and "# round 2/2: fixed" in out
    rows = [line.split() for line in out.splitlines()
            if line.split()[:1] in (["latency"], ["allreduce"])]
    assert [(r[0], int(r[1])) for r in rows] == [
        (t, s) for t in ("latency", "allreduce") for s in (1, 2, 4, 8, 16)]
    assert all(int(float(r[2])) in (10000, 1000) for r in rows)  # OSU's fixed counts
    assert "speed-up: x" in out and "adaptive medians within the fixed-count noise:" in out
    assert "fixed-count launches differ between rounds by" in out
    for r in range(2):  # both arms of both rounds left their documents
        assert (tmp_path / f"fixed{r}.latency.json").is_file()
        suite = json.loads((tmp_path / f"adapt{r}.json").read_text())
        assert (tmp_path / f"adapt{r}.allreduce.json").is_file()  # split per test, as the fixed arm's
        assert [doc["benchmark"] for doc in suite] == ["latency", "allreduce"]
