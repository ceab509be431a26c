"""`mpistack report` as a user runs it: which runs, where the files go, the analysis options."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from sqlalchemy import update

from mpistack.store import open_database
from mpistack.store.schema import CampaignRow

MPISTACK = [sys.executable, "-m", "mpistack.cli"]


def mpistack(*args, check=True):
    result = subprocess.run([*MPISTACK, *map(str, args)], capture_output=True, text=True, timeout=120)
    if check and result.returncode != 0:
        raise AssertionError(f"{args} exited {result.returncode}:\n{result.stdout}\n{result.stderr}")
    return result


def test_latest_campaign_by_default_written_beside_the_database_with_its_analysis_settings(synthetic_db, tmp_path):
    db = tmp_path / "mine.db"
    shutil.copy(synthetic_db, db)
    engine = open_database(str(db))
    with engine.begin() as connection:  # the campaign file's [analysis] table, as `mpistack run` records it
        connection.execute(update(CampaignRow.__table__).values(spec={"analysis": {"floor": 0.2, "small_below": 1024}}))
    engine.dispose()
    result = mpistack("--db", db, "report")
    folder = tmp_path / "mine-report"
    assert [line for line in result.stdout.splitlines() if line.startswith(str(folder))] == [
        str(folder / "report.md"), str(folder / "report.html"), str(folder / "report.json")]
    assert all((folder / name).stat().st_size > 0 for name in ("report.md", "report.html", "report.json"))
    settings = json.loads((folder / "report.json").read_text())["settings"]
    assert (settings["floor"], settings["floor_us"], settings["small_below"]) == (0.2, 0.05, 1024)
    assert json.loads((folder / "report.json").read_text())["settings_from"] == "the campaign's [analysis] table"
    # the answer at a glance: the matrix, the slower cell under it with its regime
    assert "synthetic (campaign #1)" in result.stdout and "pip-mpich container (Y): latency small" in result.stdout
    # a line per row on request: small messages now end below 1 KiB
    rows = mpistack("--db", db, "report", "--rows")
    assert "small 1 B–256 B" in rows.stdout and "Y at native speed, (Y) slower" not in rows.stdout  # not the matrix


def test_campaign_by_name_with_filters_format_and_settings(synthetic_db, tmp_path):
    out = tmp_path / "out"
    mpistack("--db", synthetic_db, "report", "synthetic", "--where", "approach=container", "--format", "json",
             "--out", out, "--floor", "0.6", "--floor-us", "0", "--small-below", "1024", "--large-from", "65536")
    assert sorted(path.name for path in out.iterdir()) == ["report.json"]
    data = json.loads((out / "report.json").read_text())
    assert data["campaign"] == {"id": 1, "name": "synthetic"} and data["filters"] == ["approach=container"]
    assert {k: data["settings"][k] for k in ("floor", "floor_us", "small_below", "large_from")} == {
        "floor": 0.6, "floor_us": 0.0, "small_below": 1024, "large_from": 65536}
    assert {answer["approach"] for answer in data["answers"]} == {"container"}
    classes = {(a["stack"], a["variant"], a["benchmark"]): a["class"] for a in data["answers"]}
    # half the speed is within a 60% floor: at native speed now
    assert classes[("pip-mpich", "default", "latency")] == "Y"


def test_unknown_campaigns_and_bad_options_are_refused(synthetic_db, tmp_path):
    missing = mpistack("--db", synthetic_db, "report", "99", "--out", tmp_path, check=False)
    assert missing.returncode == 2 and "no campaign #99" in missing.stderr
    unknown = mpistack("--db", synthetic_db, "report", "nightly", "--out", tmp_path, check=False)
    assert unknown.returncode == 2 and "no campaign named 'nightly'" in unknown.stderr
    floor = mpistack("--db", synthetic_db, "report", "--floor", "1.5", "--out", tmp_path, check=False)
    assert floor.returncode == 2 and "relative floor" in floor.stderr
    assert not list(tmp_path.iterdir())


def test_one_format_to_stdout_and_nothing_else_there(synthetic_db, tmp_path):
    data = json.loads(mpistack("--db", synthetic_db, "report", "synthetic", "-f", "json", "-o", "-",
                               "--floor", "0.2").stdout)  # the whole of stdout is the JSON document
    assert data["settings"]["floor"] == 0.2 and data["settings_from"] == "--floor 0.2"
    markdown = mpistack("--db", synthetic_db, "report", "synthetic", "-f", "md", "-o", "-").stdout
    assert markdown.startswith("# synthetic (campaign #1)\n")
    # the file opens with the answer: the matrix comes before the per-benchmark tables, the settings before both
    assert markdown.index("Settings: practical floor 10%") < markdown.index("## The answer") < markdown.index(
        "## Results per benchmark")
    assert not (tmp_path / "-").exists() and not list(tmp_path.iterdir())


def test_a_bad_out_is_a_clear_error(synthetic_db, tmp_path):
    a_file = tmp_path / "report.txt"
    a_file.write_text("mine")
    for out, expected in ((a_file, "a file, not a directory"), (a_file / "sub", "is a file, not a directory"),
                          ("-", "--out - writes one format to stdout: give --format")):
        result = mpistack("--db", synthetic_db, "report", "synthetic", "-o", out, check=False)
        assert result.returncode == 2 and expected in result.stderr, result.stderr
        assert "Traceback" not in result.stderr and result.stdout == ""
    assert a_file.read_text() == "mine"


def test_one_row_per_size_against_both_baselines(synthetic_db):
    result = mpistack("--db", synthetic_db, "report", "synthetic", "--row", "pip-mpich/container/latency")
    lines = result.stdout.splitlines()
    assert any(line.startswith("against the system MPI (host-mpich native, 8 launches): (Y)") for line in lines)
    one_byte = next(line.split() for line in lines if line.strip().startswith("1 B "))
    # size, candidate median, baseline median, ratio, interval, verdict
    assert one_byte[4] == "0.50×" and one_byte[-1] == "slower"
    assert float(one_byte[2]) == pytest.approx(2 * float(one_byte[3]), rel=0.05)
    variant = mpistack("--db", synthetic_db, "report", "synthetic", "--row", "pip-mpich/container+tcp/latency")
    assert "against the system MPI" in variant.stdout and ": N " in variant.stdout
    baseline = mpistack("--db", synthetic_db, "report", "synthetic", "--row", "host-mpich/native/latency")
    assert "the baseline of " in baseline.stdout and "99%" in baseline.stdout  # 8 launches: the range, 99.2 %
    missing = mpistack("--db", synthetic_db, "report", "synthetic", "--row", "pip-mpich/hybrid/alltoall", check=False)
    assert missing.returncode == 2 and "pip-mpich/hybrid/latency" in missing.stderr and missing.stdout == ""
