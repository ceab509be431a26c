"""benchmarks/agreement.py's replay: campaigns drawn from stored launches, whole launches at a time, judged by the
product's own answers; and how agreement and contradictions are counted. A real SQLite store, filled by the
real writer."""

from __future__ import annotations

import importlib.util
import random
import subprocess
import sys
from pathlib import Path

import pytest

from mpistack.analysis.answers import Settings
from mpistack.store import open_database
from tests.analysis.synthetic import record_campaign

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "agreement.py"


@pytest.fixture(scope="module")
def agreement():
    spec = importlib.util.spec_from_file_location("agreement", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def store(tmp_path):
    """Two stored sets of one system baseline (the host's MPICH natively) and one container twice as slow."""
    path = tmp_path / "agreement.db"
    engine = open_database(str(path))
    for seed in (1, 2):
        record_campaign(engine, "local", stack="host-mpich", approach="native", origin="host", launches=6, seed=seed)
        record_campaign(engine, "local", stack="pip-mpich", approach="container", launches=6, seed=seed + 10,
                        scale=lambda size: 2.0)
    return path, engine


def test_the_pool_keeps_each_launch_whole_and_draws_only_launches_it_holds(agreement, store):
    _, engine = store
    pool = agreement.pooled_launches(engine, agreement.stored_campaigns(engine))
    assert {key.stack for key in pool} == {"host-mpich", "pip-mpich"}
    assert all(len(launches) == 12 for _, launches in pool.values())  # 6 launches of each of two campaigns
    drawn = agreement.drawn_campaign(pool, 9, random.Random(3))
    for key, row in drawn.items():
        pooled = {tuple(sorted(launch.items())) for launch in pool[key][1]}
        assert row.launches == 9
        sizes = sorted(row.figures)
        for index in range(9):  # every drawn launch is one stored launch, all its sizes together
            assert tuple((size, row.figures[size][index]) for size in sizes) in pooled


def test_drawn_campaigns_are_judged_as_the_product_judges(agreement, store):
    _, engine = store
    pool = agreement.pooled_launches(engine, agreement.stored_campaigns(engine))
    classes = agreement.classes_of(agreement.drawn_campaign(pool, 8, random.Random(1)), Settings())
    ((key, label),) = classes.items()  # the container against the system MPI; the baseline is not a row
    assert key[:2] == ("pip-mpich", "container") and key[-1] == "system" and label == "(Y)"


def test_agreement_counts_rows_with_one_class_and_rows_that_contradict_themselves(agreement):
    runs = [{"a": "Y", "b": "?", "c": "(Y)"}, {"a": "Y", "b": "(Y)", "c": "Y"}, {"a": "Y", "b": "(Y)", "c": "(Y)"}]
    rows, same, contradicting = agreement.agreement(runs)
    assert (rows, same, contradicting) == (["a", "b", "c"], ["a"], ["c"])  # b only could not decide once


def test_unknown_campaigns_and_bad_counts_are_usage_errors(store):
    path, _ = store
    for args, message in ((["--campaigns", "1,99"], "no campaign 99 in the store (it holds 1, 2, 3, 4)"),
                          (["--modes", "7"], "no campaign 7"), (["--replay", "0"], "at least 2"),
                          (["--floor", "2", "--campaigns", "1,2"], "expected a fraction")):
        result = subprocess.run([sys.executable, str(SCRIPT), "--db", str(path), *args], capture_output=True,
                                text=True, timeout=120)
        assert result.returncode == 2 and message in result.stderr, (args, result.stderr)
