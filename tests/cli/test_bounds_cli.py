"""`mpistack doctor --bounds --campaign` and `mpistack show` read a campaign's stored bounds (the real command
line, a real SQLite store; measuring for real is tests/campaign/test_bounds.py's)."""

from __future__ import annotations

import json
from datetime import datetime, timezone

from mpistack.parsers.model import ParsedRow, ParsedRun
from mpistack.store import open_database
from mpistack.store.bounds import write_bounds
from mpistack.store.campaigns import start_campaign
from mpistack.store.database import write_transaction
from mpistack.store.writer import write_runs
from tests.helpers import mpistack

SIZES = (1, 1024, 1048576)


def store_with_bounds(path) -> str:
    engine = open_database(str(path))
    campaign = start_campaign(engine, "nightly", {"name": "nightly", "benchmark_options": ["-m", "1:1048576"]})
    run = ParsedRun("bw", "OSU MPI Bandwidth Test", {"bandwidth": "MB/s"},
                    [ParsedRow(size, {"bandwidth": 10.0 * size}) for size in SIZES])
    with write_transaction(engine) as connection:
        write_runs(connection, [run], campaign_id=campaign)

    def measured(kind, mpi, value):
        return {"kind": kind, "mpi": mpi, "command": f"measure {kind}", "library_version": "v1" if mpi else "",
                "measured_at": datetime(2026, 11, 26, tzinfo=timezone.utc), "launches": 3, "status": "ok",
                "message": "", "figures": [{"size": s, "value": value, "low": value, "high": value, "launches": 3}
                                           for s in (SIZES if kind != "shm-latency" else (1,))]}

    write_bounds(engine, campaign, {"host": "node-a", "cpu_model": "Test CPU", "kernel": "6.1.0"},
                 [measured("memcpy-cache", "", 16000.0), measured("memcpy-memory", "", 7000.0),
                  measured("tcp-bandwidth", "openmpi", 1500.0), measured("tcp-latency", "openmpi", 3.5),
                  measured("shm-latency", "mpich", 0.3)])
    return str(path)


def test_doctor_prints_a_campaigns_stored_bounds_without_measuring(tmp_path):
    db = store_with_bounds(tmp_path / "r.db")
    text = mpistack("doctor", "--bounds", "--campaign", "nightly", "--db", db, home=tmp_path).stdout
    assert "campaign #1, stored: node-a (Test CPU, Linux 6.1.0)" in text
    assert "16,000" in text and "7,000" in text and "mpich 0.3 us" in text
    assert "measure tcp-latency" in text
    document = json.loads(mpistack("doctor", "--bounds", "--campaign", "1", "--json", "--db", db, home=tmp_path).stdout)
    assert {f["kind"] for f in document["figures"]} == {"memcpy-cache", "memcpy-memory", "tcp-bandwidth",
                                                        "tcp-latency", "shm-latency"}
    assert mpistack("doctor", "--bounds", "--campaign", "nope", "--db", db, home=tmp_path, check=2)


def test_show_gives_the_bounds_of_the_runs_campaign_at_its_sizes(tmp_path):
    db = store_with_bounds(tmp_path / "r.db")
    text = mpistack("show", "1", "--db", db, home=tmp_path).stdout
    assert "machine bounds: node-a (Test CPU, Linux 6.1.0)" in text
    assert "1 MiB: memcpy 16,000 MB/s in cache, 7,000 from memory; TCP 1,500 MB/s" in text
