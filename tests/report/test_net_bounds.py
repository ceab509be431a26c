"""The network between nodes in the bounds the report, `mpistack doctor --bounds` and `mpistack show` print:
two columns, and the link, only where a batch campaign measured it."""

from __future__ import annotations

from datetime import datetime, timezone

from mpistack.cli.bounds import show_section
from mpistack.report.bounds import HEADERS, NET_HEADERS, bounds_rows, headers
from mpistack.store import open_database
from mpistack.store.bounds import LINK_PREFIX, write_bounds
from mpistack.store.campaigns import start_campaign

from ..analysis.test_bounds import MACHINE, NETWORKED


def test_the_network_columns_are_there_only_where_measured():
    assert headers(MACHINE) == HEADERS and len(bounds_rows(MACHINE, [1])[0]) == len(HEADERS)
    assert headers(NETWORKED) == HEADERS + NET_HEADERS
    assert bounds_rows(NETWORKED, [1])[0][-2:] == ["30", "0.1"]


def test_show_names_the_network_figures_and_the_link(tmp_path):
    database = open_database(str(tmp_path / "r.db"))
    campaign = start_campaign(database, "c", {})
    link = "TCP between node1 and node2 (Open MPI pml ob1, btl tcp)"
    figures = [{"size": 1, "value": 30.0, "low": 29.0, "high": 31.0, "launches": 3}]
    write_bounds(database, campaign, {"host": "node1"}, [
        {"kind": kind, "mpi": "openmpi", "command": "srun ...", "launches": 3, "status": "ok", "figures": figures,
         "message": LINK_PREFIX + link if kind.startswith("net-") else "", "measured_at": datetime.now(timezone.utc)}
        for kind in ("tcp-latency", "net-latency")])
    text = show_section(database, campaign, "latency", [1])
    assert "1 B: TCP latency 30 us, between nodes 30" in text and f"network: {link}" in text


def test_the_terminal_answer_says_the_network_under_the_loopback_bounds():
    from types import SimpleNamespace

    from mpistack.report.matrix_text import network_line

    assert network_line(SimpleNamespace(bounds=MACHINE, rows={})) is None  # one node: loopback only
    line = network_line(SimpleNamespace(bounds=NETWORKED, rows={}))
    assert line == "TCP between node1 and node2: 400 MB/s at 1 MiB, 30 us at 1 B"
