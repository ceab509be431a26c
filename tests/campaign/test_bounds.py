"""Measuring machine bounds for real: the host's mpistack-bench under Debian's MPICH and Open MPI."""

from __future__ import annotations

import io
import shutil
from datetime import datetime, timedelta, timezone

import pytest
from rich.console import Console

from mpistack.analysis.bounds import load_bounds
from mpistack.campaign import bounds
from mpistack.campaign.matrix import expand, resolve_stacks
from mpistack.spec.campaign import load_campaign_text
from mpistack.store import open_database
from mpistack.store.bounds import bounds_table, read_bounds
from mpistack.store.campaigns import start_campaign
from mpistack.store.database import write_transaction

pytestmark = pytest.mark.skipif(not (shutil.which("mpiexec.mpich") and shutil.which("mpirun.openmpi")),
                                reason="needs Debian's MPICH and Open MPI")

CAMPAIGN = """
name = "bounds"
approaches = ["native"]
benchmark_options = ["-m", "1:4096"]
[[stack]]
name = "host-mpich"
host = "mpich"
[[benchmark]]
name = "latency"
"""


def run_for_campaign(database, campaign_id, monkeypatch) -> str:
    monkeypatch.setenv(bounds.SWITCH, "on")
    campaign = load_campaign_text(CAMPAIGN)
    cases = expand(campaign, resolve_stacks(campaign))
    out = io.StringIO()
    bounds.measure_for_campaign(campaign, campaign_id, cases, database, Console(file=out, width=200))
    return out.getvalue()


@pytest.mark.slow  # 10 to 40 s, with the machine's load
def test_a_campaign_measures_stores_and_reads_its_bounds(tmp_path, monkeypatch):
    database = open_database(str(tmp_path / "r.db"))
    campaign = start_campaign(database, "bounds", {})
    said = run_for_campaign(database, campaign, monkeypatch)
    assert "machine bounds: 5 of 5 measured" in said, said
    machine = load_bounds(database, campaign)
    # the kinds the campaign needs, at its sizes (1:4096), with their provenance
    assert {f.size for f in machine.of("tcp-latency")} == {2 ** n for n in range(13)}
    assert machine.shm_latency_us("mpich") is not None and machine.shm_latency_us("openmpi") is None
    assert machine.mpi_versions()["openmpi"].startswith("Open MPI")
    assert all(s.launches == bounds.LAUNCHES and s.status == "ok" for s in machine.sources)
    tcp = next(s for s in machine.sources if s.kind == "tcp-latency")
    assert "btl tcp,self" in tcp.command and tcp.mpi == "openmpi"
    # what the machine must obey whatever its load: memory below cache, shared memory before TCP
    assert machine.memcpy_mbs(4096, "memory") < machine.memcpy_mbs(4096, "cache")
    # (the fastest launches: a busy-polling ping-pong's median on a loaded 2-core machine is the scheduler's)
    assert machine.figure_at("shm-latency", 1, which="low") < machine.figure_at("tcp-latency", 1, which="low")
    assert machine.tcp_bandwidth_mbs(4096) < machine.memcpy_mbs(4096, "cache")
    assert machine.describe().startswith(machine.host)

    # resumed: nothing measured again, nothing lost
    rows = _count(database)
    assert "measured" not in run_for_campaign(database, campaign, monkeypatch)
    assert _count(database) == rows
    # a new campaign of the same store soon after reuses them (with their first measurement's time)
    again = start_campaign(database, "bounds", {})
    assert "5 measured on" in run_for_campaign(database, again, monkeypatch)
    _, _, sources = read_bounds(database, again)
    assert {s["message"] for s in sources} == {f"measured for campaign {campaign}"}


def _count(database) -> int:
    with database.connect() as connection:
        return len(connection.execute(bounds_table().select()).all())


def test_a_hang_is_recorded_and_the_rest_measured(tmp_path):
    """A launch past its limit is killed and recorded as a timeout; the next kinds are still measured."""
    # 1 ms: on a quiet machine a one-rank MPICH launch of memcpy at 1 to 8 B can end within 50 ms
    out = bounds.measure_bounds(["mpich"], "1:8", launches=1, timeout=0.001)
    assert {m.status for m in out} == {"timeout"}, [(m.kind, m.status, m.message) for m in out]
    assert all("no end after 0.001 s" in m.message for m in out)
    measured = bounds.measure_bounds(["mpich"], "1:8", skip={("memcpy-cache", ""), ("memcpy-memory", ""),
                                                             ("tcp-bandwidth", "openmpi")}, launches=1,
                                      timeout=120)  # a loaded machine's Open MPI start can take longer than 20 s
    assert [(m.kind, m.mpi, m.status) for m in measured] == [("tcp-latency", "openmpi", "ok"),
                                                            ("shm-latency", "mpich", "ok")]


def test_old_bounds_of_another_campaign_are_measured_again(tmp_path):
    database = open_database(str(tmp_path / "r.db"))
    first, second = start_campaign(database, "a", {}), start_campaign(database, "a", {})
    old = datetime.now(timezone.utc) - timedelta(hours=bounds.REUSE_HOURS + 1)
    with write_transaction(database) as connection:
        connection.execute(bounds_table().insert(), {"campaign_id": first, "host": "h", "kind": "memcpy-cache", "mpi": "",
                                             "measured_at": old, "launches": 3, "status": "ok", "figures": []})
    assert bounds.reuse_recent(database, second, "h", set()) == []
    assert bounds.reuse_recent(database, second, "other-host", set()) == []
