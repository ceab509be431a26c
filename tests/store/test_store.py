"""The results store on SQLite and on a real PostgreSQL server: the same suite on both."""

import multiprocessing
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import func, select, text

from mpistack.ingest.files import ingest_files
from mpistack.store import SCHEMA_REVISION, StoreError, current_revision, open_database
from mpistack.store.campaigns import CampaignLocked, lock_campaign, unlock_campaign
from mpistack.store.query import Where, WhereError, query_results
from mpistack.store.schema import CampaignLockRow, ResultRow, RunRow, RunTagRow

SAMPLES = Path(__file__).resolve().parents[1] / "parsers"


def write(tmp_path, name, content):
    path = tmp_path / name
    path.write_text(content)
    return path


def osu_bw(values, version="7.5"):
    rows = "".join(f"{size:<10d}{value:>18.2f}\n" for size, value in values)
    return f"\n# OSU MPI Bandwidth Test v{version}\n# Datatype: MPI_CHAR.\n# Size      Bandwidth (MB/s)\n{rows}"


def count(engine, table):
    with engine.connect() as connection:
        return connection.execute(select(func.count()).select_from(table)).scalar_one()


def test_new_store_is_at_current_schema(store_url):
    engine = open_database(store_url)
    assert current_revision(engine) == SCHEMA_REVISION


def test_ingest_and_filter_by_result_run_and_tag(store_url, tmp_path):
    engine = open_database(store_url)
    a = write(tmp_path, "a.txt", osu_bw([(1, 1.5), (2, 3.0), (4, 6.0)]))
    b = write(tmp_path, "b.txt", osu_bw([(1, 0.5), (2, 1.0)]))
    assert ingest_files(engine, [a], {"system": "alps", "approach": "container", "nodes": "2"}).files == 1
    assert ingest_files(engine, [b], {"system": "lumi", "approach": "native"}).files == 1

    alps = query_results(engine, [Where.parse("system=alps")])
    assert [(row["size"], row["value"]) for row in alps] == [(1, 1.5), (2, 3.0), (4, 6.0)]
    assert alps[0]["benchmark"] == "bw" and alps[0]["metric"] == "bandwidth" and alps[0]["unit"] == "MB/s"
    assert alps[0]["nodes"] == 2 and alps[0]["approach"] == "container" and alps[0]["system"] == "alps"
    assert alps[0]["tags"] == {"system": "alps"}  # context tags fill the run's fields, not its tags

    assert [row["value"] for row in query_results(engine, [Where.parse("approach=native"), Where.parse("size>=2")])] \
        == [1.0]
    assert len(query_results(engine, [Where.parse("system!=alps")])) == 2
    assert query_results(engine, [Where.parse("system=nowhere")]) == []
    assert len(query_results(engine, [Where.parse("benchmark=bw"), Where.parse("value<2")])) == 3


def test_statistics_and_validation_are_stored(store_url, tmp_path):
    engine = open_database(store_url)
    path = write(tmp_path, "coll.txt", (SAMPLES / "osu_samples.py").read_text().split('ALLTOALL_7_FULL = """\\\n')[1]
                 .split('"""')[0])
    ingest_files(engine, [path])
    (first, second) = query_results(engine, [Where.parse("benchmark=alltoall")])
    assert first["min"] == 21.0 and first["max"] == 23.5 and first["iterations"] == 1000
    assert first["validation"] == "pass" and second["value"] == 22.34


def test_bad_file_is_rejected_whole_and_others_are_stored(store_url, tmp_path):
    engine = open_database(store_url)
    good = write(tmp_path, "good.txt", osu_bw([(1, 1.0)]))
    # The first test in this file is fine; the second has a garbled row: nothing of the file is written.
    bad = write(tmp_path, "bad.txt", osu_bw([(1, 1.0)]) + osu_bw([(1, 2.0)]).replace("2.00", "2.0O") +
                osu_bw([(2, 3.0)]))
    empty = write(tmp_path, "empty.txt", "")
    binary = tmp_path / "core.bin"
    binary.write_bytes(b"\x7fELF\x00\x01\x02")
    report = ingest_files(engine, [good, bad, empty, binary])
    assert report.files == 1 and len(report.errors) == 3
    assert report.errors[0] == f"{bad}:10: '2.0O' is not a number in column Bandwidth (MB/s)"
    assert "empty file" in report.errors[1] and "binary file" in report.errors[2]
    assert count(engine, RunRow.__table__) == 1 and count(engine, ResultRow.__table__) == 1


def test_truncated_file_keeps_rows_and_marks_run(store_url, tmp_path):
    engine = open_database(store_url)
    cut = write(tmp_path, "cut.txt", osu_bw([(1, 1.0), (2, 2.0)]) + "4         3.")
    ingest_files(engine, [cut])
    rows = query_results(engine, [Where.parse("incomplete=true")])
    assert [row["size"] for row in rows] == [1, 2] and rows[0]["status"] == "failed"


def test_filter_errors():
    with pytest.raises(WhereError, match="expected KEY=VALUE"):
        Where.parse("benchmark")
    with pytest.raises(WhereError, match="size takes a number"):
        Where.parse("size=big")
    with pytest.raises(WhereError, match="needs a numeric field"):
        Where.parse("system>alps")


def test_bad_tag_value_names_the_tag(store_url, tmp_path):
    engine = open_database(store_url)
    with pytest.raises(ValueError, match="^tag nodes='two': expected a whole number$"):
        ingest_files(engine, [write(tmp_path, "a.txt", osu_bw([(1, 1.0)]))], {"nodes": "two"})
    with pytest.raises(ValueError, match="image_digest is recorded by mpistack"):
        ingest_files(engine, [write(tmp_path, "a.txt", osu_bw([(1, 1.0)]))], {"image_digest": "sha256:forged"})
    assert count(engine, RunRow.__table__) == 0


def _ingest_worker(args):
    url, paths = args
    engine = open_database(url)
    return ingest_files(engine, paths, {"writer": "parallel"}).files


def test_parallel_writers_lose_no_rows(store_url, tmp_path):
    open_database(store_url)  # create the schema once, before the writers race
    paths = [write(tmp_path, f"f{index}.txt", osu_bw([(size, float(index)) for size in (1, 2, 4, 8)]))
             for index in range(40)]
    chunks = [(store_url, paths[start::4]) for start in range(4)]
    with multiprocessing.get_context("spawn").Pool(4) as pool:
        assert sum(pool.map(_ingest_worker, chunks)) == 40
    engine = open_database(store_url)
    assert count(engine, RunRow.__table__) == 40 and count(engine, ResultRow.__table__) == 160


def test_store_from_a_newer_mpistack_is_refused(tmp_path):
    url = str(tmp_path / "future.db")
    engine = open_database(url)
    with engine.begin() as connection:
        connection.execute(text("UPDATE alembic_version SET version_num = '9999'"))
    with pytest.raises(StoreError, match="newer than this mpistack"):
        open_database(url)


def test_migrations_keep_stored_runs_both_ways(store_url, tmp_path):
    """Undoing the revisions and applying them again keeps every run, result and tag (on SQLite a migration
    that rebuilt the runs table would take results and tags with it: foreign keys are on, deletes cascade)."""
    from alembic import command

    from mpistack.store.database import _alembic_config, upgrade, write_transaction

    engine = open_database(store_url)
    ingest_files(engine, [write(tmp_path, "a.txt", osu_bw([(1, 1.0), (2, 2.0)]))], {"system": "alps"})
    with write_transaction(engine) as connection:
        command.downgrade(_alembic_config(connection), "0001")
    assert current_revision(engine) == "0001"
    stored = [count(engine, table) for table in (RunRow.__table__, ResultRow.__table__, RunTagRow.__table__)]
    assert stored == [1, 2, 1]
    upgrade(engine)
    assert current_revision(engine) == SCHEMA_REVISION
    assert [count(engine, table) for table in (RunRow.__table__, ResultRow.__table__, RunTagRow.__table__)] == stored


def test_sqlite_uses_wal(tmp_path):
    engine = open_database(str(tmp_path / "wal.db"))
    with engine.connect() as connection:
        assert connection.execute(text("PRAGMA journal_mode")).scalar_one() == "wal"
        assert connection.execute(text("PRAGMA busy_timeout")).scalar_one() > 0


def test_launch_evidence_reads_positive_figures_and_the_tags_asked_for(store_url, tmp_path):
    from mpistack.store.query import launch_evidence

    engine = open_database(store_url)
    alps = write(tmp_path, "alps.txt", osu_bw([(1, 1.5), (2, 0.0), (4, 6.0)]))
    lumi = write(tmp_path, "lumi.txt", osu_bw([(1, 0.5)]))
    ingest_files(engine, [alps], {"system": "alps", "approach": "container", "mpi": "mpich"})
    ingest_files(engine, [lumi], {"system": "lumi", "approach": "native", "mpi": "mpich"})

    with launch_evidence(engine, [Where.parse("system=alps")], tags=["mpi"]) as (runs, results):
        results = sorted(results)
    (run,) = runs.values()
    assert run["approach"] == "container" and run["tags"] == {"mpi": "mpich"}
    assert results == [(run["run"], 1, "bandwidth", 1.5), (run["run"], 4, "bandwidth", 6.0)]  # 0.0 is no figure

    with launch_evidence(engine) as (runs, results):
        assert len(list(results)) == 3
    assert sorted(run["tags"]["system"] for run in runs.values()) == ["alps", "lumi"]


HOLD_LOCK = """
import sys, time
from mpistack.store import open_database
from mpistack.store.campaigns import lock_campaign
lock_campaign(open_database(sys.argv[1]), "c")
print("held", flush=True)
time.sleep(300)
"""


def test_one_runner_per_campaign_and_a_dead_holder_is_taken_over(store_url):
    engine = open_database(store_url)
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, store_url], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(CampaignLocked, match=rf"campaign c is being run by process {holder.pid} on "):
            lock_campaign(engine, "c")
        lock_campaign(engine, "other")  # another campaign is free
    finally:
        holder.kill()
        holder.wait()
    lock_campaign(engine, "c")  # its holder is gone: taken over
    lock_campaign(engine, "c")  # holding it already is fine
    unlock_campaign(engine, "c")
    with engine.connect() as connection:
        assert connection.execute(select(CampaignLockRow.name)).scalars().all() == ["other"]


def _open_worker(url):
    return current_revision(open_database(url))


def test_processes_creating_one_store_at_once(store_url):
    """Six processes open the same new store together: one creates the schema, the others wait and find it."""
    with multiprocessing.get_context("spawn").Pool(6) as pool:
        assert pool.map(_open_worker, [store_url] * 6) == [SCHEMA_REVISION] * 6
    engine = open_database(store_url)
    with engine.connect() as connection:
        assert connection.execute(text("SELECT count(*) FROM alembic_version")).scalar() == 1


def _take_over_stale_locks(args):
    """A runner starting campaigns whose lock a dead process left: the take-over reads, then writes."""
    import socket
    from datetime import datetime, timezone

    from sqlalchemy import insert

    url, index = args
    engine = open_database(url)
    for round_ in range(25):
        name = f"c{index}-{round_}"
        with engine.begin() as connection:
            connection.execute(insert(CampaignLockRow.__table__), {"name": name, "host": socket.gethostname(),
                                                                   "pid": 2**22 + 1, "since": datetime.now(timezone.utc)})
        lock_campaign(engine, name)
        unlock_campaign(engine, name)
    return 25


def test_runners_beside_long_ingests_wait_instead_of_failing_with_database_is_locked(tmp_path):
    """SQLite refuses a read transaction's upgrade to a write at once (no busy wait) when another process
    committed meanwhile; the store's writers take the write lock when they begin."""
    url = str(tmp_path / "busy.db")
    open_database(url)
    paths = [write(tmp_path, f"f{index}.txt", osu_bw([(size, float(index)) for size in range(1, 200)]))
             for index in range(300)]
    context = multiprocessing.get_context("spawn")
    with context.Pool(5) as pool:
        ingests = pool.map_async(_ingest_worker, [(url, paths[:150]), (url, paths[150:])])
        assert pool.map(_take_over_stale_locks, [(url, index) for index in range(3)]) == [25] * 3
        assert ingests.get() == [150, 150]
    engine = open_database(url)
    assert count(engine, CampaignLockRow.__table__) == 0 and count(engine, RunRow.__table__) == 300


def test_recorded_podman_flags_become_a_typed_confinement(tmp_path):
    """Runs stored before 0005 recorded their containers' podman flags; the migration reads them, once, into the
    typed record the doctor reads (engines.Confinement)."""
    from alembic import command

    from mpistack.engines import Confinement
    from mpistack.store.database import _alembic_config, upgrade, write_transaction

    engine = open_database(str(tmp_path / "old.db"))
    ingest_files(engine, [write(tmp_path, "a.txt", osu_bw([(1, 1.0)]))], {"approach": "hybrid"})
    with write_transaction(engine) as connection:
        command.downgrade(_alembic_config(connection), "0004")
        connection.execute(text("INSERT INTO run_tags (run_id, key, value) SELECT id, 'container_flags', "
                                "'--shm-size 4m --pid host --cap-add SYS_PTRACE --security-opt seccomp=unconfined'"
                                " FROM runs"))
    upgrade(engine)
    with engine.connect() as connection:
        tags = dict(connection.execute(text("SELECT key, value FROM run_tags")).all())
    assert "container_flags" not in tags
    confinement = Confinement.from_record(tags["confinement_record"])
    assert confinement.shm_bytes == 4 * 1024 ** 2 and confinement.capabilities == ("SYS_PTRACE",)
    assert "pid" in confinement.host and "ipc" not in confinement.shared and not confinement.one_container
