"""The TCP rule between nodes reads the network's measured bounds (net-latency, net-bandwidth) where a batch
campaign stored them, the loopback's where it did not. Runs and bounds go through the real store writers."""

from __future__ import annotations

from datetime import datetime, timezone

from mpistack.store import open_database
from mpistack.store.bounds import LINK_PREFIX, write_bounds

from .test_paths import BW_SIZES, LATENCY_SIZES, MPICH, by_rule, diagnosed, probed, rows
from .test_stored import store_runs

#: the system's MPICH natively between the two nodes (its own shared memory across the namespaces)
SYSTEM_BETWEEN_NODES = rows("host-mpich", "native", (0.33, 0.35, 0.6, 1.2, 6.0, 80.0),
                            (4000.0, 12000.0, 20000.0, 9000.0), {"mpi": "mpich", "origin": "host"},
                            probed("mpich402-ucx-native.txt"), mpi_library_version="MPICH Version:\t4.0.2", nodes=2)
#: the network between the nodes, per size of LATENCY_SIZES and BW_SIZES
NET_LATENCY = (30.0, 31.0, 40.0, 55.0, 180.0, 1800.0)
NET_BANDWIDTH = (150.0, 300.0, 380.0, 400.0)
LINK = "TCP between node1 and node2 (Open MPI pml ob1, btl tcp)"


def store_node_bounds(engine, campaign, network: bool):
    """A node's bounds as campaign/bounds.py stores them under Slurm: loopback TCP 3.5 us / 2500 MB/s, and with
    `network` the link between the nodes (NET_LATENCY, NET_BANDWIDTH)."""
    def measured(kind, values, sizes, mpi="openmpi", message=""):
        values = values if isinstance(values, tuple) else (values,) * len(sizes)
        return {"kind": kind, "mpi": mpi, "command": "env OMPI_MCA_pml=ob1 OMPI_MCA_btl=tcp,self srun ...",
                "launches": 3, "status": "ok", "library_version": "Open MPI v4.1.4", "message": message,
                "measured_at": datetime.now(timezone.utc),
                "figures": [{"size": size, "value": value, "low": value * 0.95, "high": value * 1.05, "launches": 3}
                            for size, value in zip(sizes, values)]}
    records = [measured("tcp-latency", 3.5, LATENCY_SIZES), measured("tcp-bandwidth", 2500.0, BW_SIZES),
               measured("shm-latency", 0.3, (1,))]
    if network:
        records += [measured("net-latency", NET_LATENCY, LATENCY_SIZES, message=LINK_PREFIX + LINK),
                    measured("net-bandwidth", NET_BANDWIDTH, BW_SIZES, message=LINK_PREFIX + LINK)]
    write_bounds(engine, campaign, {"host": "node1"}, records)


def between_nodes(engine, latency, bandwidth):
    """A row between two nodes whose path was not recorded, beside the system MPI's."""
    return store_runs(engine, *SYSTEM_BETWEEN_NODES,
                      *rows("pip-mpich", "container", latency, bandwidth, MPICH, {}, variant="tcp", nodes=2))


def test_a_row_between_nodes_faster_than_the_networks_tcp_is_not_blamed_on_tcp(tmp_path):
    """8 us between nodes is on the TCP side of the loopback (3.5 us), not of the network (30 us): a warning
    against the loopback alone, no TCP claim once the network's bounds are there."""
    engine = open_database(str(tmp_path / "r.db"))
    figures = ((8.0, 8.2, 9.0, 12.0, 60.0, 700.0), (600.0, 1500.0, 2000.0, 2200.0))
    loopback_only = between_nodes(engine, *figures)
    store_node_bounds(engine, loopback_only, network=False)
    [latency] = by_rule(diagnosed(engine, loopback_only))["tcp-class-latency"]
    assert latency.title.startswith("TCP-class latency between nodes") and latency.evidence["tcp_bound"] == "3.50 us"
    measured = between_nodes(engine, *figures)
    store_node_bounds(engine, measured, network=True)
    assert not [f for f in diagnosed(engine, measured) if f.rule.startswith("tcp-class")]


def test_a_row_between_nodes_on_the_networks_tcp_side_names_the_network_bound_and_the_link(tmp_path):
    engine = open_database(str(tmp_path / "r.db"))
    campaign = between_nodes(engine, (31.0, 32.0, 41.0, 57.0, 190.0, 1900.0), (140.0, 290.0, 370.0, 390.0))
    store_node_bounds(engine, campaign, network=True)
    found = by_rule(diagnosed(engine, campaign))
    [latency], [bandwidth] = found["tcp-class-latency"], found["tcp-class-bandwidth"]
    assert latency.evidence["tcp_bound"] == "30.0 us" and latency.evidence["network"] == LINK
    assert bandwidth.cause == "tcp-inter" and bandwidth.evidence["network"] == LINK
    assert float(bandwidth.evidence["tcp_bound"].split()[0]) in NET_BANDWIDTH
    assert latency.evidence["bounds_measured_on"].startswith("node1")
