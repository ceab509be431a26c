"""`mpistack compare A B` as a user runs it: a real process on a real SQLite store of synthetic launches."""

from __future__ import annotations

import json

import pytest

from mpistack.store import open_database
from tests.analysis.synthetic import SIZES, record_campaign
from tests.cli.test_cli import mpistack

SMALL = 8192


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """Campaign 1: native (8 launches); 2: a container 2x slower below 8 KiB; 3: a container like native."""
    path = tmp_path_factory.mktemp("compare") / "compare.db"
    engine = open_database(str(path))
    record_campaign(engine, "native", stack="host-mpich", approach="native", origin="host", seed=1)
    record_campaign(engine, "slow-container", stack="debian-mpich", approach="container", seed=2,
                    scale=lambda size: 2.0 if size < SMALL else 1.0)
    record_campaign(engine, "same-container", stack="debian-mpich", approach="container", seed=3)
    engine.dispose()
    return path


def test_a_2x_small_message_latency_loss_is_Y_in_brackets_at_small_messages(store):
    result = json.loads(mpistack("compare", "slow-container", "campaign:1", "--format", "json", db=store).stdout)
    (row,) = result["rows"]
    assert row["class"] == "(Y)" and not row["descriptive"]
    assert [(r["regime"], r["sizes"]) for r in row["slow"]] == [("small", [s for s in SIZES if s < SMALL])]
    assert row["slow"][0]["worst_ratio"] == pytest.approx(0.5, abs=0.05)
    small = row["sizes"][0]
    assert small["verdict"] == "slower" and small["p_value"] < 0.05 and small["ci_low"] < 0.5 < small["ci_high"]
    assert (small["candidate_launches"], small["baseline_launches"]) == (8, 8)
    assert result["candidate"]["label"].startswith("campaign 2 (slow-container")
    assert result["unmatched"] == []


def test_the_table_is_readable_at_80_columns(store):
    out = mpistack("compare", "2", "native", db=store).stdout
    assert "\x1b[" not in out
    assert max(len(line) for line in out.splitlines()) <= 80
    assert "(Y)  slower at 1 B–4 KiB (small messages)" in out
    assert "8 against 8 launches" in out
    for column in ("size", "ratio", "90% CI", "verdict"):
        assert column in out


def test_identical_distributions_are_never_Y_in_brackets(store):
    result = json.loads(mpistack("compare", "campaign:3", "native", "-f", "json", db=store).stdout)
    (row,) = result["rows"]
    assert row["class"] in ("Y", "?")


def test_match_where_and_unmatched_rows(store):
    result = json.loads(mpistack("compare", "2", "1", "--match", "stack", "-f", "json", db=store, check=False).stdout)
    assert result["rows"] == []
    assert {(u["side"], u["stack"]) for u in result["unmatched"]} == {("candidate", "debian-mpich"),
                                                                      ("baseline", "host-mpich")}
    narrowed = mpistack("compare", "2", "1", "--where-a", "approach=native", db=store, check=False)
    assert narrowed.returncode == 2 and "no runs match" in narrowed.stderr


def test_a_single_run_selects_one_launch(store):
    result = json.loads(mpistack("compare", "run:9", "run:1", "-f", "json", db=store).stdout)
    (row,) = result["rows"]
    assert row["candidate"]["launches"] == row["baseline"]["launches"] == 1
    assert row["class"] == "?" and not row["descriptive"]  # campaign runs are never described from one launch


def test_bad_selectors_say_what_to_type(store, tmp_path):
    missing = mpistack("compare", "nowhere", "1", db=store, check=False)
    assert missing.returncode == 2 and "no campaign 'nowhere'" in missing.stderr and "ref:NAME" in missing.stderr
    unloaded = mpistack("compare", "ref:alps-gh200-mpich-ce", "1", db=store, check=False)
    assert "mpistack ingest --reference alps-gh200-mpich-ce" in unloaded.stderr
    bad_match = mpistack("compare", "1", "2", "--match", "stack,colour", db=store, check=False)
    assert bad_match.returncode == 2 and "unknown field colour" in bad_match.stderr


def test_published_references_from_the_command_line(tmp_path):
    db = tmp_path / "refs.db"
    mpistack("ingest", "--reference", "alps-gh200-mpich-ce", db=db)
    out = mpistack("compare", "ref:alps-gh200-mpich-ce", "ref:alps-gh200-mpich-ce", "--where-a", "cxi_hook=off",
                   "--where-b", "cxi_hook=on", db=db).stdout
    assert "single published figures on both sides" in out
    assert "3,764 │ 24,008 │  0.157 │      – │ slower*" in out
    assert "not compared (4)" in out
    assert "nan" not in out and "single figures: no interval" in out  # a single figure has no interval to print
