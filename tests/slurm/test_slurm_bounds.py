"""Machine bounds of a Slurm campaign, measured for real on the two-node demo cluster: srun from here (outside an
allocation), the host-built bench on the nodes through the shared file system, the network between node1 and
node2 (Open MPI forced onto TCP, one rank per node); then the doctor compares a row between the nodes with
those figures. Nothing here mocks Slurm, MPI or the store.

Runs before test_slurm_cluster.py (file order), whose last test stops the cluster.
"""

from __future__ import annotations

import io
import shlex
import shutil
from datetime import datetime, timedelta, timezone

import pytest
from rich.console import Console

from mpistack.analysis.bounds import load_bounds
from mpistack.analysis.classes import format_size
from mpistack.campaign import bounds
from mpistack.campaign.matrix import expand, resolve_stacks
from mpistack.doctor import diagnose_runs
from mpistack.spec.campaign import load_campaign_text
from mpistack.store import open_database
from mpistack.store.bounds import copy_recent
from mpistack.store.campaigns import start_campaign
from mpistack.store.query import Where

from ..doctor.test_paths import BW_SIZES, LATENCY_SIZES, rows
from ..doctor.test_stored import store_runs
from .conftest import SlurmCluster

pytestmark = [pytest.mark.slurm, pytest.mark.skipif(
    not (shutil.which("mpicc.mpich") and shutil.which("mpicc.openmpi")), reason="needs Debian's MPICH and Open MPI")]


def campaign_text(workdir, inter_node: bool) -> str:
    apart = "\n[[placement]]\nranks = 2\nnodes = 2\nranks_per_node = 1\n" if inter_node else ""
    return f"""
name = "slurm-bounds"
launcher = "slurm"
approaches = ["native"]
benchmark_options = ["-m", "1:1024"]
[slurm]
workdir = "{workdir}"
[[stack]]
name = "host-mpich"
host = "mpich"
[[benchmark]]
name = "latency"
[[placement]]
ranks = 2
nodes = 1
{apart}"""


def measure(cluster: SlurmCluster, monkeypatch, tmp_path, database, campaign_id, inter_node=True) -> str:
    for key, value in cluster.env(MPISTACK_SLURM_DEFAULTS=str(tmp_path / "no-defaults.toml"),
                                  MPISTACK_BOUNDS="on").items():
        monkeypatch.setenv(key, value)
    campaign = load_campaign_text(campaign_text(tmp_path / "work", inter_node))
    out = io.StringIO()
    bounds.measure_for_campaign(campaign, campaign_id, expand(campaign, resolve_stacks(campaign)), database,
                                Console(file=out, width=200))
    return out.getvalue()


@pytest.mark.slow  # about a minute on a busy 2-core guest
def test_a_slurm_campaign_measures_the_nodes_and_the_network_between_them(slurm_cluster, monkeypatch, tmp_path):
    database = open_database(str(tmp_path / "r.db"))
    campaign = start_campaign(database, "slurm-bounds", {})
    said = measure(slurm_cluster, monkeypatch, tmp_path, database, campaign)
    # memcpy (2), TCP on one node (2), MPICH's shared memory, the network (2)
    assert "machine bounds: 7 of 7 measured on node" in said, said
    machine = load_bounds(database, campaign)
    assert machine.host in ("node1", "node2")
    assert all(source.status == "ok" and source.launches == bounds.LAUNCHES for source in machine.sources), \
        machine.sources
    assert machine.network == "TCP between node1 and node2 (Open MPI pml ob1, btl tcp)"
    assert {f.size for f in machine.of("net-latency")} == {2 ** n for n in range(11)}
    assert {f.size for f in machine.of("net-bandwidth")} == {2 ** n for n in range(11)}
    net = next(source for source in machine.sources if source.kind == "net-latency")
    words = shlex.split(net.command)
    assert "OMPI_MCA_btl=tcp,self" in words and "--nodes=2" in words and "--ntasks-per-node=1" in words
    assert net.library_version.startswith("Open MPI")
    # what holds whatever the load (the fastest launches: a loaded machine's medians are its scheduler's):
    # shared memory before any TCP, a copy in cache above the network
    assert machine.figure_at("shm-latency", 1, "mpich", "low") < machine.figure_at("net-latency", 1, which="low")
    assert machine.net_bandwidth_mbs(1024) < machine.memcpy_mbs(1024, "cache")
    # the other node has the network's figures too
    other = load_bounds(database, campaign, "node2" if machine.host == "node1" else "node1")
    assert other.net_latency_us(1) == machine.net_latency_us(1) and other.network == machine.network

    # resumed: nothing measured again
    assert "measured" not in measure(slurm_cluster, monkeypatch, tmp_path, database, campaign)

    # the doctor: a row between the nodes whose figures are the network's TCP (half as fast again) is blamed on
    # TCP against the network's figures, which it names
    network_latency = [machine.net_latency_us(size) * 1.5 for size in LATENCY_SIZES]
    network_bandwidth = [machine.net_bandwidth_mbs(size) / 1.5 for size in BW_SIZES]
    system = rows("host-mpich", "native", [value / 20 for value in network_latency],
                  [value * 20 for value in network_bandwidth], {"mpi": "mpich", "origin": "host"}, {}, nodes=2)
    candidate = rows("pip-mpich", "container", network_latency, network_bandwidth, {"mpi": "mpich"}, {},
                     variant="tcp", nodes=2)
    diagnosed = store_runs(database, *system, *candidate)
    copy_recent(database, diagnosed, machine.host, datetime.now(timezone.utc) - timedelta(hours=1), set())
    found = [f for f in diagnose_runs(database, [Where("campaign", "=", diagnosed)]) if f.rule == "tcp-class-latency"]
    assert found and found[0].evidence["network"] == machine.network, found
    assert found[0].title.startswith("TCP-class latency between nodes")
    bound = float(found[0].evidence["tcp_bound"].split()[0])
    worst = next(size for size in LATENCY_SIZES if found[0].evidence["at"] == format_size(size))
    assert bound == pytest.approx(machine.net_latency_us(worst), rel=0.01)


def test_without_an_inter_node_placement_the_network_is_not_measured(slurm_cluster, monkeypatch, tmp_path):
    database = open_database(str(tmp_path / "r.db"))
    campaign = start_campaign(database, "slurm-bounds", {})
    said = measure(slurm_cluster, monkeypatch, tmp_path, database, campaign, inter_node=False)
    assert "of 5 measured" in said, said
    machine = load_bounds(database, campaign)
    assert machine.network == "not measured" and machine.net_latency_us(1) is None

