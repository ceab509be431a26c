"""What a user or another process can do to a store and its input, with real processes, real SQLite and a
real full file system (a 2 MiB tmpfs): a password as a URL query parameter, a malformed URL, a full disk
during ingest and during a run, a FIFO given to ingest, an ingest parsing a large file beside a runner."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sqlalchemy import create_engine

from mpistack.campaign import journal
from mpistack.campaign.prepare import workdir_for
from mpistack.spec.campaign import Campaign
from mpistack.store.address import store_identity
from mpistack.store.database import display_url, hide_password
from tests.helpers import HOST_MPICH_ONE_RANK, MPISTACK, OSU_LATENCY, campaign_file, mpistack, osu_program

QUERY_URL = "postgresql://postgres@127.0.0.1:1/nothing?sslmode=disable&password=s3cr%40t-pw"


def test_a_password_given_as_a_query_parameter_is_never_printed_nor_written(tmp_path):
    assert "s3cr" not in display_url(QUERY_URL)
    assert "s3cr" not in hide_password(f"could not connect to '{QUERY_URL}': s3cr@t-pw refused", QUERY_URL)
    # what names the store in journal entries and work directories
    engine = create_engine(QUERY_URL.replace("postgresql://", "postgresql+psycopg://"))
    assert "s3cr" not in journal.store_identity(engine) and "s3cr" not in store_identity(QUERY_URL)
    assert journal.store_identity(engine) == store_identity(QUERY_URL)
    # the real command line, against a port nothing listens on
    listed = mpistack("runs", "--db", QUERY_URL, home=tmp_path, check=2)
    ran = mpistack("run", campaign_file(tmp_path, HOST_MPICH_ONE_RANK + '[[benchmark]]\nname = "latency"\n'),
                   "--db", QUERY_URL, home=tmp_path, check=2)
    for result in (listed, ran):
        assert "password=***" in result.stderr and "s3cr" not in result.stdout + result.stderr


@pytest.mark.parametrize("url", ["postgresql://u:pw@host:notaport/db", "postgresql://[::1"])
def test_a_malformed_store_url_is_one_line_naming_what_is_expected(tmp_path, url):
    path = campaign_file(tmp_path, HOST_MPICH_ONE_RANK + '[[benchmark]]\nname = "latency"\n')
    for verb in (["runs"], ["results"], ["run", path]):
        result = mpistack(*verb, "--db", url, home=tmp_path, check=2)
        assert "not a database URL" in result.stderr and "numeric PORT" in result.stderr, result.stderr
        assert "Traceback" not in result.stderr and "╭" not in result.stderr  # no traceback, plain or rich


@pytest.mark.parametrize("url", ["sqlite://", "sqlite:///", "sqlite:///:memory:"])
def test_a_store_url_naming_no_file_is_refused_not_filled_and_forgotten(tmp_path, url):
    good = tmp_path / "good.txt"
    good.write_text(OSU_LATENCY)
    for verb in (["runs"], ["ingest", good]):
        result = mpistack(*verb, "--db", url, home=tmp_path, check=2)
        assert "names no file" in result.stderr and "sqlite:///PATH" in result.stderr, result.stderr


def test_a_fifo_given_to_ingest_is_refused_at_once(tmp_path):
    fifo, good = tmp_path / "pipe", tmp_path / "good.txt"
    os.mkfifo(fifo)
    good.write_text(OSU_LATENCY)
    started = time.monotonic()
    result = mpistack("ingest", fifo, good, "--db", tmp_path / "s.db", home=tmp_path, check=1, timeout=120)
    assert time.monotonic() - started < 60  # it hung for ever
    assert f"{fifo}: a FIFO, not a regular file" in " ".join(result.stderr.split())
    assert "ingested: 1 file(s), 1 run(s)" in result.stderr  # the good file is stored


SLOW_PARSE = """
import sys, time
from mpistack.ingest import files
from mpistack.store import open_database
parse = files.parse_content
def slow(path, data):
    print("parsing", flush=True)
    time.sleep(6)  # a file large enough to take this long to parse
    return parse(path, data)
files.parse_content = slow
report = files.ingest_files(open_database(sys.argv[1]), sys.argv[2:])
print("stored", report.files, flush=True)
"""


def test_an_ingest_parsing_a_file_holds_no_write_lock(tmp_path):
    """A runner beside an ingest waits for the write lock at most the time of one commit, not the time the
    ingest takes to parse a file (60 s of parsing made a run beside it fail with "database is locked")."""
    db = tmp_path / "s.db"
    mpistack("ingest", osu_program(tmp_path, "first").with_suffix(".txt"), "--db", db, home=tmp_path)
    second = tmp_path / "second.txt"
    second.write_text(OSU_LATENCY.replace("1.50", "1.70"))
    ingest = subprocess.Popen([sys.executable, "-c", SLOW_PARSE, str(db), str(second)], stdout=subprocess.PIPE,
                              text=True, cwd=Path(__file__).resolve().parents[2])
    try:
        assert ingest.stdout.readline().strip() == "parsing"
        with sqlite3.connect(db, timeout=1, isolation_level=None) as connection:
            connection.execute("BEGIN IMMEDIATE")  # "database is locked" after 1 s while the ingest held it
            connection.execute("ROLLBACK")
    finally:
        output, _ = ingest.communicate(timeout=120)
    assert ingest.returncode == 0 and "stored 1" in output


@pytest.fixture
def full_disk(tmp_path):
    """A 2 MiB tmpfs, filled by `fill()`; emptied again by `free()`."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a tmpfs needs root")
    mount = tmp_path / "small"
    mount.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m,mode=0700", "tmpfs", str(mount)]).returncode != 0:
        pytest.skip("cannot mount a tmpfs here")

    class Disk:
        path = mount
        filler = mount / "filler"

        def fill(self, leave_kib: int = 0) -> None:
            descriptor = os.open(self.filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
            try:
                while os.write(descriptor, b"\0" * 4096):
                    pass
            except OSError:  # full
                pass
            finally:
                os.close(descriptor)
            if leave_kib:
                os.truncate(self.filler, max(0, self.filler.stat().st_size - leave_kib * 1024))

        def free(self) -> None:
            self.filler.unlink(missing_ok=True)
    yield Disk()
    subprocess.run(["umount", "-l", str(mount)])


def test_a_full_disk_during_ingest_is_one_line_and_the_store_keeps_what_it_had(tmp_path, full_disk):
    db = full_disk.path / "s.db"
    first = tmp_path / "first.txt"
    first.write_text(OSU_LATENCY)
    mpistack("ingest", first, "--db", db, home=tmp_path)
    files = []
    for number in range(40):
        path = tmp_path / f"f{number}.txt"
        path.write_text(OSU_LATENCY.replace("1.50", f"{1 + number / 100:.2f}") + "".join(
            f"{2 ** size} {size}.5\n" for size in range(2, 22)))
        files.append(path)
    full_disk.fill(leave_kib=100)
    result = mpistack("ingest", *files, "--db", db, home=tmp_path, check=1)
    assert "Traceback" not in result.stderr and "╭" not in result.stderr, result.stderr
    assert "did not take the last" in result.stderr and "disk is full" in result.stderr, result.stderr
    full_disk.free()
    with sqlite3.connect(db) as connection:  # intact, with what it had
        assert connection.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert connection.execute("SELECT count(*) FROM runs").fetchone()[0] >= 1
    mpistack("ingest", *files, "--db", db, home=tmp_path)  # and takes the rest once there is room


@pytest.mark.skipif(shutil.which("mpiexec.mpich") is None, reason="Debian's mpich not installed")
def test_a_full_work_disk_stops_a_run_and_its_resume_with_one_line(tmp_path, full_disk):
    path = campaign_file(tmp_path, HOST_MPICH_ONE_RANK + "".join(
        f'[[benchmark]]\nname = "b{number}"\nprogram = "{osu_program(tmp_path, f"b{number}")}"\n'
        for number in range(2)), name="full")
    env = {**os.environ, "XDG_CACHE_HOME": str(full_disk.path / "cache"), "MPISTACK_BOUNDS": "off"}
    env.pop("MPISTACK_DB", None)
    command = [*MPISTACK, "run", str(path), "--db", str(tmp_path / "r.db")]
    full_disk.fill()
    for argv in (command, [*command, "--resume"]):
        stopped = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
        assert stopped.returncode in (2, 3), stopped.stdout + stopped.stderr
        assert "No space left on device" in stopped.stderr and "--resume" in stopped.stderr, stopped.stderr
        assert "Traceback" not in stopped.stderr and "╭" not in stopped.stderr
    full_disk.free()
    done = subprocess.run([*command, "--resume"], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    with sqlite3.connect(tmp_path / "r.db") as connection:
        assert connection.execute("SELECT count(*) FROM runs WHERE status = 'ok'").fetchone() == (2,)


def test_the_work_directory_is_keyed_by_store_and_campaign_id_not_by_name(tmp_path):
    campaign = Campaign.model_validate({"name": "local", "approaches": ["native"],
                                        "stack": [{"name": "h", "host": "mpich"}],
                                        "benchmark": [{"name": "latency"}]})
    one, other = store_identity(str(tmp_path / "a.db")), store_identity(str(tmp_path / "b.db"))
    assert workdir_for(campaign, one, 1) != workdir_for(campaign, other, 1) != workdir_for(campaign, one, 2)
    assert "local" not in workdir_for(campaign, one, 1).name
