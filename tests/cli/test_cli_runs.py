"""`mpistack runs`, `campaigns` and `show`: read-only views of a real store filled by the real writer."""

import io
import json
import re
import subprocess
import sys

import pytest

from mpistack.parsers.model import ParsedRun
from mpistack.spec.provenance import Provenance
from mpistack.spec.status import RunStatus
from mpistack.store import open_database
from mpistack.store.campaigns import start_campaign
from mpistack.store.writer import write_runs
from tests.analysis.synthetic import record_campaign
from tests.helpers import plain_environment

MPISTACK = [sys.executable, "-m", "mpistack.cli"]
FAILURE = "exit status 139\nSegmentation fault in [/x] [bold]MPI_Init"


def mpistack(*args, db=None, check=True, env=None):
    command = [*MPISTACK, *(("--db", str(db)) if db else ()), *map(str, args)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120, env=env)
    if check and result.returncode != 0:
        raise AssertionError(f"{command} exited {result.returncode}:\n{result.stdout}\n{result.stderr}")
    return result


@pytest.fixture
def store(tmp_path):
    """A store with two campaigns: 3 ok runs, then one failed run (a message with markup-like brackets) and
    one skipped run. Returns (path, the failed run's id)."""
    path = tmp_path / "runs.db"
    engine = open_database(str(path))
    record_campaign(engine, "baseline", stack="mpich-4.2", approach="native", launches=3)
    campaign_id = start_campaign(engine, "nightly", {})
    provenance = Provenance(stack="ompi-5", approach="apptainer", launcher="mpirun", ranks=2, nodes=2,
                            command="mpirun -np 2 osu_latency", environment={"UCX_TLS": "rc", "FI_PROVIDER": "cxi"},
                            mpi_library_version="Open MPI v5.0.3\nhttps://www.open-mpi.org\nline 3\nline 4",
                            libfabric_version="1.22.0", libfabric_provider="cxi", image_digest="sha256:abc",
                            hosts=["nid001", "nid002"])
    with engine.begin() as connection:
        (failed,) = write_runs(connection, [ParsedRun.empty("latency")],
                               campaign_id=campaign_id, provenance=provenance, status=RunStatus.FAILED,
                               message=FAILURE, tags={"variant": "default", "case": "c1"})
        write_runs(connection, [ParsedRun.empty("bw")], campaign_id=campaign_id,
                   provenance=provenance, status=RunStatus.SKIPPED, message="needs 4 nodes",
                   tags={"variant": "default", "case": "c2"})
    engine.dispose()
    return path, failed


def test_runs_where_status_failed_lists_exactly_the_failed_run(store):
    path, failed = store
    out = mpistack("runs", "--where", "status=failed", db=path).stdout
    assert "# 1 run(s)" in out
    (line,) = [line for line in out.splitlines()[2:] if line[:1].isdigit()]  # (below it: what is not shown)
    assert line.split()[:8] == [str(failed), "2", "failed", "ompi-5", "apptainer", "default", "latency", "n2N2"]
    assert "exit status 139" in line and "Segmentation" not in line  # the message's first line only

    rows = json.loads(mpistack("runs", "-w", "status=failed", "-f", "json", db=path).stdout)
    assert [(row["run"], row["message"]) for row in rows] == [(failed, FAILURE)]
    assert "# 5 run(s)" in mpistack("runs", db=path).stdout
    assert "# showing 2 of 5 runs" in mpistack("runs", "--limit", "2", db=path).stdout
    csv_lines = mpistack("runs", "-w", "status!=ok", "-f", "csv", db=path).stdout.splitlines()
    # a column per tag after the run's own (the variant has its column already)
    assert csv_lines[0] == "run,campaign,status,stack,approach,variant,benchmark,placement,message,transport,case"
    assert len(csv_lines) == 3
    # where the width allows, tags are columns; one every row shares is said once below
    wide = mpistack("runs", "-w", "status!=ok", db=path, env={**plain_environment(), "COLUMNS": "250"}).stdout
    assert wide.splitlines()[1].split()[-1] == "case" and "c1" in wide and "c2" in wide
    assert re.search(r"^# every row: .*\bvariant default\b", wide, re.M)
    # a tag is a column one may name, even one the rows shown lack
    named = mpistack("runs", "-c", "run,case,origin", "-w", "status!=ok", db=path).stdout.splitlines()
    assert named[1].split() == ["run", "case", "origin"] and named[2].split() == [str(failed), "c1"]


def test_campaigns_shows_run_counts_by_state(store):
    path, _ = store
    out = mpistack("campaigns", db=path).stdout
    assert "# 2 campaign(s)" in out
    baseline, nightly = [line for line in out.splitlines() if "baseline" in line or "nightly" in line]
    assert baseline.split()[:2] == ["1", "baseline"] and baseline.split()[-3:] == ["3", "ok", "3"]
    assert nightly.split()[-5:] == ["2", "failed", "1,", "skipped", "1"]
    rows = json.loads(mpistack("campaigns", "-f", "json", db=path).stdout)
    assert [(row["name"], row["runs"], row["statuses"]) for row in rows] == [
        ("baseline", 3, {"ok": 3}), ("nightly", 2, {"failed": 1, "skipped": 1})]


def test_show_prints_command_environment_message_and_provenance(store):
    path, failed = store
    out = mpistack("show", failed, db=path).stdout
    assert f"run {failed}: latency" in out and "status: failed" in out
    assert "    exit status 139\n    Segmentation fault in [/x] [bold]MPI_Init" in out  # the whole message
    assert "command: mpirun -np 2 osu_latency" in out
    assert "environment:\n    FI_PROVIDER=cxi\n    UCX_TLS=rc\n" in out  # sorted
    assert "Open MPI v5.0.3" in out and "line 3" in out and "line 4" not in out and "1 more line(s)" in out
    assert "libfabric: 1.22.0 provider cxi" in out and "image digest: sha256:abc" in out
    assert "hosts: nid001, nid002" in out and "campaign: 2 (nightly)" in out
    assert "results: 0" in out

    ok = mpistack("show", 1, db=path).stdout
    assert "status: ok" in ok and "results: 23 (sizes 1 .. 4194304)" in ok
    record = json.loads(mpistack("show", failed, "--format", "json", db=path).stdout)
    assert record["environment"] == {"UCX_TLS": "rc", "FI_PROVIDER": "cxi"} and record["message"] == FAILURE


def test_show_an_unknown_run_fails_clearly(store):
    path, _ = store
    result = mpistack("show", 99999, db=path, check=False)
    assert result.returncode == 2 and "no run 99999" in result.stderr and not result.stdout


def test_read_only_verbs_do_not_create_a_store(tmp_path):
    missing = tmp_path / "absent.db"
    for verb in (["runs"], ["campaigns"], ["show", "1"]):
        result = mpistack(*verb, db=missing, check=False)
        assert result.returncode == 2 and "no results store at" in result.stderr, verb
    assert not missing.exists()


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def _rendered(rows, columns, monkeypatch):
    from mpistack.report.tables import print_table

    monkeypatch.setenv("COLUMNS", "80")
    stream = _Terminal()
    print_table(rows, columns, title=f"{len(rows)} run(s) [/x]", stream=stream)
    return re.sub(r"\x1b\[[0-9;]*m", "", stream.getvalue())


def test_runs_table_on_an_80_column_terminal_is_readable_and_escapes_markup(store, monkeypatch):
    from mpistack.cli.runs import RUN_COLUMNS, run_lines
    from mpistack.store.query import query_runs

    path, failed = store
    engine = open_database(str(path), migrate=False)
    lines = run_lines(query_runs(engine))
    engine.dispose()
    text = _rendered(lines, RUN_COLUMNS, monkeypatch)
    assert all(len(line) <= 80 for line in text.splitlines())
    assert "[/x]" in text  # printed as text, not read as markup
    header = next(line for line in text.splitlines() if "run" in line and "status" in line)
    for column in RUN_COLUMNS:
        assert column[:4] in header, column  # no header squeezed to a character or two
    assert "failed" in text and "ompi-5" in text and "apptai" in text and "n2N2" in text


def test_an_unknown_where_key_is_an_error_that_lists_the_known_keys_and_tags(store):
    path, _ = store
    result = mpistack("results", "-w", "sytem=x", db=path, check=False)
    assert result.returncode == 2
    assert "--where sytem: no such field" in result.stderr and "tags in this store:" in result.stderr
    assert "variant" in result.stderr and "benchmark" in result.stderr
    known = mpistack("runs", "-w", "variant=nope", db=path, check=False)
    assert known.returncode == 0  # a known tag with no match is an empty answer, not an error


def test_runs_refuse_a_result_field_and_a_campaign_that_is_not_there(store):
    path, _ = store
    for where in ("size>99999999", "value<1", "unit=us", "iterations>5"):
        result = mpistack("runs", "-w", where, db=path, check=False)
        assert result.returncode == 2 and "a field of results, not of runs" in result.stderr, (where, result.stdout)
    for where in ("campaign=99", "campaign=weekly"):
        result = mpistack("results", "-w", where, db=path, check=False)
        assert result.returncode == 2 and "no campaign of that" in result.stderr, where
        assert "campaigns in this store, newest 10: 1 " in result.stderr


def test_no_read_only_verb_creates_a_store(tmp_path):
    for verb in (["report", "local"], ["compare", "ref:a", "ref:b"], ["db", "version"], ["results"], ["runs"],
                 ["campaigns"], ["show", "1"]):
        result = mpistack(*verb, db=tmp_path / "absent.db", check=False)
        assert result.returncode == 2 and "no results store at" in result.stderr, verb
        assert not (tmp_path / "absent.db").exists(), verb
