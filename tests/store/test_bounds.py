"""Machine bounds in the store: written with a campaign, read back newest-first per kind, kept across a
resume, and gone with their campaign."""

from __future__ import annotations

from datetime import datetime, timezone

from sqlalchemy import delete, func, select

from mpistack.store import open_database
from mpistack.store.bounds import bound_hosts, bounds_table, measured, read_bounds, write_bounds
from mpistack.store.campaigns import start_campaign
from mpistack.store.database import write_transaction
from mpistack.store.reading import open_reader
from mpistack.store.schema import CampaignRow

MACHINE = {"host": "node1", "cpu_model": "Test CPU", "kernel": "6.1.0"}


def measurement(kind, mpi="", status="ok", value=10.0, sizes=(1, 1024)):
    figures = [] if status != "ok" else [{"size": size, "value": value, "low": value * 0.9, "high": value * 1.1,
                                          "launches": 3} for size in sizes]
    return {"kind": kind, "mpi": mpi, "command": f"measure {kind}", "library_version": "Open MPI v4.1.4" if mpi else "",
            "measured_at": datetime(2026, 11, 26, 10, tzinfo=timezone.utc), "launches": 3 if figures else 0,
            "status": status, "message": "" if status == "ok" else "timed out after 20 s", "figures": figures}


def test_bounds_round_trip_with_provenance(store_url):
    engine = open_database(store_url)
    campaign = start_campaign(engine, "c", {})
    write_bounds(engine, campaign, MACHINE, [measurement("memcpy-cache", value=9000.0),
                                             measurement("tcp-latency", "openmpi", value=3.5)])
    machine, figures, sources = read_bounds(engine, campaign)
    assert machine == {**MACHINE, "network": "not measured"}  # no inter-node bound was stored
    assert {(f["kind"], f["size"], f["value"]) for f in figures} == {
        ("memcpy-cache", 1, 9000.0), ("memcpy-cache", 1024, 9000.0), ("tcp-latency", 1, 3.5), ("tcp-latency", 1024, 3.5)}
    tcp = next(s for s in sources if s["kind"] == "tcp-latency")
    assert tcp["mpi"] == "openmpi" and tcp["command"] == "measure tcp-latency" and tcp["launches"] == 3
    assert read_bounds(engine, start_campaign(engine, "other", {})) is None
    if "://" not in store_url:  # the plain SQLite reader of `mpistack show` reads the same
        assert read_bounds(open_reader(store_url), campaign) == (machine, figures, sources)


def test_a_resume_measures_only_what_failed_and_a_failure_never_hides_an_earlier_figure(store_url):
    engine = open_database(store_url)
    campaign = start_campaign(engine, "c", {})
    write_bounds(engine, campaign, MACHINE, [measurement("tcp-latency", "openmpi", value=3.5),
                                             measurement("shm-latency", "mpich", status="timeout")])
    assert measured(engine, campaign, "node1") == {("tcp-latency", "openmpi")}
    assert measured(engine, campaign, "node2") == set()
    # the resumed run measures the one that timed out; a later failure of the other keeps its figures
    write_bounds(engine, campaign, MACHINE, [measurement("shm-latency", "mpich", value=0.3),
                                             measurement("tcp-latency", "openmpi", status="failed")])
    _, figures, sources = read_bounds(engine, campaign)
    assert {(f["kind"], f["value"]) for f in figures} == {("tcp-latency", 3.5), ("shm-latency", 0.3)}
    assert {s["status"] for s in sources} == {"ok"}


def test_bounds_are_per_host_and_go_with_their_campaign(store_url):
    engine = open_database(store_url)
    campaign = start_campaign(engine, "c", {})
    write_bounds(engine, campaign, MACHINE, [measurement("memcpy-cache")])
    write_bounds(engine, campaign, {**MACHINE, "host": "node2"}, [measurement("memcpy-cache", value=5.0)])
    assert bound_hosts(engine, campaign) == ["node1", "node2"]
    assert read_bounds(engine, campaign, "node2")[1][0]["value"] == 5.0
    with write_transaction(engine) as connection:
        connection.execute(delete(CampaignRow.__table__).where(CampaignRow.__table__.c.id == campaign))
    with engine.connect() as connection:
        assert connection.execute(select(func.count()).select_from(bounds_table())).scalar() == 0
