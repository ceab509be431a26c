"""A campaign whose store goes away: a real PostgreSQL server stopped while a case finishes (by the case's own
program), real processes, the real command line. Finished cases are kept in the campaign's journal and
stored by the next start; none is lost, none stored twice."""

from __future__ import annotations

import shutil
import threading
import time
from pathlib import Path

import pytest
from sqlalchemy import text

from mpistack.store import open_database
from tests.helpers import HOST_MPICH_ONE_RANK, OSU_LATENCY, campaign_file, mpistack, osu_program

pytestmark = [pytest.mark.postgres,
              pytest.mark.skipif(shutil.which("mpiexec.mpich") is None, reason="Debian's mpich not installed")]


def stop_command(server) -> str:
    argv = [*server.as_user, str(server.bindir / "pg_ctl"), "-D", str(server.data), "-m", "fast", "-w", "stop"]
    return " ".join(f"'{arg}'" for arg in argv)


def campaign(tmp_path: Path, scripts: list[Path]) -> Path:
    benchmarks = "".join(f'[[benchmark]]\nname = "{script.stem}"\nprogram = "{script}"\n' for script in scripts)
    return campaign_file(tmp_path, 'order = "matrix"\n' + HOST_MPICH_ONE_RANK + benchmarks, name="faults")


def stored_cases(url: str) -> list[str]:
    with open_database(url).connect() as connection:
        return sorted(connection.execute(text(
            "SELECT t.value FROM run_tags t JOIN runs r ON r.id = t.run_id WHERE t.key = 'case'")).scalars())


def test_the_store_stopped_mid_campaign_loses_no_case_and_resume_stores_none_twice(tmp_path, postgres_server):
    url = postgres_server.new_database()
    first, second = osu_program(tmp_path, "first"), osu_program(tmp_path, "second", stop_command(postgres_server))
    path = campaign(tmp_path, [first, second, osu_program(tmp_path, "third")])
    try:
        stopped = mpistack("run", str(path), "--db", url, home=tmp_path, check=None)
    finally:
        postgres_server.serve()
    (journal,) = (tmp_path / "cache" / "mpistack" / "work").glob("*-1/journal")  # the store's campaign #1
    assert stopped.returncode == 3, stopped.stdout + stopped.stderr
    assert "trying again in 1 s" in stopped.stdout and "did not answer through 6 tries" in stopped.stderr
    assert f"1 finished case(s) the store did not take are kept in {journal}" in " ".join(stopped.stderr.split())
    assert len(list(journal.glob("*.json"))) == 1
    assert stored_cases(url) == ["h/native/first/n1N1/H-H/r1"]  # the second finished; the store was gone

    resumed = mpistack("run", str(path), "--db", url, "--resume", home=tmp_path, check=None)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "stored 1 finished case(s) an earlier run kept" in resumed.stdout
    assert "1 case(s) to run, 2 already done" in resumed.stdout
    assert stored_cases(url) == [f"h/native/{name}/n1N1/H-H/r1" for name in ("first", "second", "third")]
    assert not journal.exists(), resumed.stdout  # the campaign ended well: its work directory is gone


def test_a_store_back_within_the_retries_loses_nothing(tmp_path, postgres_server):
    url = postgres_server.new_database()
    flag = tmp_path / "stopped"
    path = campaign(tmp_path, [osu_program(tmp_path, "first", f"{stop_command(postgres_server)} && touch {flag}"),
                               osu_program(tmp_path, "second")])

    def restart_soon():  # the server comes back 2 s after the case stopped it
        deadline = time.monotonic() + 120
        while not flag.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(2)
        postgres_server.serve()

    restarter = threading.Thread(target=restart_soon)
    restarter.start()
    try:
        result = mpistack("run", str(path), "--db", url, home=tmp_path, check=None)
    finally:
        restarter.join()
    assert result.returncode == 0, result.stdout + result.stderr
    assert "results store unreachable" in result.stdout
    assert stored_cases(url) == ["h/native/first/n1N1/H-H/r1", "h/native/second/n1N1/H-H/r1"]


def test_a_journal_entry_whose_commit_happened_is_not_stored_twice(tmp_path):
    """The commit went through but the entry stayed (killed in between): the next start drops it."""
    from mpistack.campaign import journal
    from mpistack.parsers import parse_text
    from mpistack.spec.provenance import Provenance
    from mpistack.store.campaigns import start_campaign

    database = open_database(str(tmp_path / "j.db"))
    campaign_id = start_campaign(database, "j", {})
    entry = journal.Entry(journal.store_identity(database), campaign_id, "case-1", parse_text(OSU_LATENCY, "out"), "test",
                          {"case": "case-1"}, Provenance(stack="s", ranks=1), None, None)
    kept = journal.Journal(tmp_path / "journal")
    assert journal.commit(database, entry, kept)
    path = kept.keep("left", entry)  # as if the process died after the commit, before removing it
    other = kept.keep("other-store", journal.Entry(**{**entry.__dict__, "store": "sqlite:////elsewhere.db"}))
    replayed = journal.replay(database, kept)
    assert (replayed.stored, replayed.already) == (0, 1) and not path.exists()
    assert other.exists() and replayed.left == [f"{other}: belongs to the store sqlite:////elsewhere.db"]
    with database.connect() as connection:
        (run,) = connection.execute(text("SELECT stack, ranks FROM runs")).all()
        assert tuple(run) == ("s", 1)
        assert connection.execute(text("SELECT count(*) FROM results")).scalar() == 2
