"""`mpistack report` as a user runs it: which runs, where the files go, the analysis options."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

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
    # the classes, as on the terminal after a run: small messages now end below 1 KiB
    assert "synthetic (campaign #1)" in result.stdout and "small 1 B–256 B" in result.stdout


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
