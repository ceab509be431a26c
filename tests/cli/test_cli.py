"""The mpistack command as a user runs it (a real process, a real SQLite file)."""

import csv
import io
import json
import subprocess
import sys

import pytest

from tests.helpers import plain_environment
from tests.parsers import osu_samples

MPISTACK = [sys.executable, "-m", "mpistack.cli"]


def mpistack(*args, db=None, check=True):
    command = [*MPISTACK, *(("--db", str(db)) if db else ()), *map(str, args)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120, env=plain_environment())
    if check and result.returncode != 0:
        raise AssertionError(f"{command} exited {result.returncode}:\n{result.stdout}\n{result.stderr}")
    return result


@pytest.fixture
def db(tmp_path):
    return tmp_path / "cli.db"


def test_help_lists_every_verb():
    out = mpistack("--help").stdout
    for verb in ("ingest", "results", "references", "db"):
        assert verb in out
    assert "--where" in mpistack("results", "--help").stdout
    assert "--reference" in mpistack("ingest", "--help").stdout


def test_ingest_then_results_as_json_csv_and_plain(tmp_path, db):
    bw = tmp_path / "bw.txt"
    bw.write_text(osu_samples.BW_5)
    mbw = tmp_path / "mbw.txt"
    mbw.write_text(osu_samples.MBW_MR_5)
    barrier = tmp_path / "barrier.txt"
    barrier.write_text(osu_samples.BARRIER_5)
    result = mpistack("ingest", bw, mbw, barrier, "--tag", "system=testbox", "-t", "approach=native", db=db)
    assert "3 file(s), 3 run(s)" in result.stderr

    rows = json.loads(mpistack("results", "--where", "system=testbox", "--format", "json", db=db).stdout)
    assert {row["benchmark"] for row in rows} == {"bw", "mbw_mr", "barrier"}
    for row in rows:
        assert {"benchmark", "size", "metric", "value", "unit", "run"} <= row.keys()
        assert row["tags"]["system"] == "testbox" and "system" not in row  # tags once, under "tags"
        assert row["approach"] == "native" and "approach" not in row["tags"]
    rates = [row for row in rows if row["metric"] == "message_rate"]
    assert [(row["size"], row["value"], row["unit"]) for row in rates] == [(1, 4450446.96, "messages/s"),
                                                                           (2, 4463186.20, "messages/s")]
    (barrier_row,) = [row for row in rows if row["benchmark"] == "barrier"]
    assert barrier_row["size"] is None and barrier_row["metric"] == "latency"

    table = list(csv.DictReader(io.StringIO(mpistack("results", "-w", "benchmark=bw", "-f", "csv", db=db).stdout)))
    assert [(row["size"], row["value"]) for row in table] == [("1", "5.29"), ("2", "10.61"), ("4194304", "11250.21")]

    plain = mpistack("results", "-w", "benchmark=bw", db=db).stdout
    assert "\x1b[" not in plain and "11250.21" in plain and "testbox" in plain


def test_bad_files_are_named_and_the_rest_is_stored(tmp_path, db):
    good = tmp_path / "good.txt"
    good.write_text(osu_samples.LATENCY_5)
    garbled = tmp_path / "garbled.txt"
    garbled.write_text(osu_samples.LATENCY_5.replace("0.23", "0.2.3"))
    prose = tmp_path / "notes.txt"
    prose.write_text("this is not benchmark output\n")
    result = mpistack("ingest", good, garbled, prose, tmp_path / "missing.txt", db=db, check=False)
    assert result.returncode == 1
    assert f"{garbled}:4: '0.2.3' is not a number in column Latency (us)" in result.stderr
    assert f"{prose}: no OSU benchmark output found" in result.stderr
    assert f"{tmp_path / 'missing.txt'}: cannot read" in result.stderr
    rows = json.loads(mpistack("results", "-f", "json", db=db).stdout)
    assert [row["value"] for row in rows] == [0.22, 0.23, 0.24, 512.5]


def test_usage_errors_exit_2_with_a_reason(tmp_path, db):
    result = mpistack("ingest", "--reference", "nowhere", db=db, check=False)
    assert result.returncode == 2 and "unknown reference nowhere" in result.stderr
    result = mpistack("results", "--where", "size", db=db, check=False)
    assert result.returncode == 2 and "expected KEY=VALUE" in result.stderr
    result = mpistack("ingest", tmp_path / "x.txt", "--tag", "novalue", db=db, check=False)
    assert result.returncode == 2 and "--tag 'novalue'" in result.stderr


def test_references_load_and_db_version(db, monkeypatch):
    mpistack("ingest", "--reference", "lumi-container-approaches", db=db)
    assert "lumi-container-approaches" in mpistack("references").stdout
    monkeypatch.setenv("MPISTACK_DB", str(db))  # the environment variable stands for --db
    rows = json.loads(mpistack("results", "-w", "source_label=opensource", "-w", "benchmark=bw",
                               "-w", "size=4194304", "-w", "buffers=D-D", "-f", "json").stdout)
    assert [row["value"] for row in rows] == [23914.85]  # LUMI pipeline document, Opensource, Device to Device
    (row,) = rows  # tags once, under "tags": not again beside the fields
    assert row["tags"]["source_label"] == "opensource" and "source_label" not in row
    from mpistack.store.revision import SCHEMA_REVISION

    assert mpistack("db", "version").stdout.strip() == SCHEMA_REVISION
