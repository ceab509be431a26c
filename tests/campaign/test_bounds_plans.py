"""The launches that measure bounds under a batch launcher: built through the launcher registry's rank
starter, the environment forcing Open MPI onto TCP, every value quoted in the stored command; and how
the measurements are stored by the node they ran on. No launch here (tests/slurm/test_slurm_bounds.py
measures them on the demo cluster)."""

from __future__ import annotations

import io
import shlex
from pathlib import Path

from rich.console import Console

from mpistack.campaign import bounds
from mpistack.campaign.matrix import expand, resolve_stacks
from mpistack.registry import LAUNCHERS
from mpistack.spec.campaign import Placement, load_campaign_text
from mpistack.store import open_database
from mpistack.store.bounds import read_bounds, write_bounds
from mpistack.store.campaigns import start_campaign

BENCH = Path("/opt/odd dir/it's/mpistack-bench")


def slurm_plans(inter_node: bool):
    entry = LAUNCHERS.get("slurm")
    scheduler = entry.open(type("Campaign", (), {"slurm": None})(), None)
    return entry.starter, bounds.batch_plans(entry.starter, scheduler.step_env, ["mpich", "openmpi"], "1:4096",
                                             inter_node)


def test_batch_plans_start_through_the_registrys_starter(monkeypatch, tmp_path):
    monkeypatch.setenv("MPISTACK_SLURM_DEFAULTS", str(tmp_path / "none.toml"))
    starter, plans = slurm_plans(inter_node=True)
    by_kind = {kind: plan for plan in plans for kind in plan.kinds}
    assert set(by_kind) == {"memcpy-cache", "memcpy-memory", "tcp-latency", "tcp-bandwidth", "shm-latency",
                            "net-latency", "net-bandwidth"}
    apart = starter.ranks("openmpi", Placement(ranks=2, nodes=2, ranks_per_node=1))
    net = by_kind["net-latency"]
    assert net.argv(BENCH)[:len(apart)] == apart and "--ntasks-per-node=1" in apart and "--nodes=2" in apart
    assert net.argv(BENCH)[len(apart):len(apart) + 4] == [str(BENCH), "latency", "-m", "1:4096"]
    assert by_kind["net-bandwidth"].argv(BENCH)[len(apart) + 1] == "bw"
    # Open MPI forced onto TCP by the environment srun passes on, with the PMIx settings of its steps
    for kind in ("net-latency", "tcp-latency", "tcp-bandwidth"):
        assert by_kind[kind].env["OMPI_MCA_pml"] == "ob1" and by_kind[kind].env["OMPI_MCA_btl"] == "tcp,self"
        assert by_kind[kind].env["PMIX_MCA_psec"] == "native"
    one_node = starter.ranks("openmpi", Placement(ranks=2, nodes=1))
    assert by_kind["tcp-latency"].argv(BENCH)[:len(one_node)] == one_node
    assert by_kind["memcpy-cache"].argv(BENCH)[:3] == ["srun", "--mpi=pmi2", "--nodes=1"]
    assert "OMPI_MCA_btl" not in by_kind["shm-latency"].env  # the MPI's own shared memory
    # no inter-node placement: no inter-node launch
    _, plans = slurm_plans(inter_node=False)
    assert not [kind for plan in plans for kind in plan.kinds if kind.startswith("net-")]


def test_the_stored_command_quotes_every_value(monkeypatch, tmp_path):
    """A failing launch (the bench path does not exist) is recorded with its command; the command, run by a
    shell, is the same argv and environment."""
    monkeypatch.setenv("MPISTACK_SLURM_DEFAULTS", str(tmp_path / "none.toml"))
    _, plans = slurm_plans(inter_node=True)
    net = next(plan for plan in plans if "net-latency" in plan.kinds)
    monkeypatch.setattr(bounds, "_launch", lambda argv, timeout, env: (_ for _ in ()).throw(
        bounds.LaunchFailed("failed", "exit status 1: srun: error")))
    [measured] = bounds._measure(net.kinds, "openmpi", net.argv(BENCH), 1, 1.0, net.env)
    words = shlex.split(measured.command)
    assert words[0] == "env" and words[words.index("srun") - 2:words.index("srun")] == \
        ["OMPI_MCA_pml=ob1", "OMPI_MCA_btl=tcp,self"]
    assert words[words.index("srun"):] == net.argv(BENCH) and str(BENCH) in words
    assert measured.status == "failed" and measured.figures == []


def measurement(kind, hosts, status="ok", mpi="openmpi"):
    figures = [{"size": 1, "value": 30.0, "low": 29.0, "high": 31.0, "launches": 3}] if status == "ok" else []
    return bounds.Measurement(kind, mpi, "srun ...", launches=3 if figures else 0, status=status,
                              figures=figures, hosts=hosts)


def test_measurements_are_stored_under_their_nodes_and_the_link_is_the_networks(tmp_path):
    measurements = [measurement("memcpy-cache", ["node1"], mpi=""), measurement("tcp-latency", ["node1"]),
                    measurement("shm-latency", [], status="timeout"),  # no output: under the others' node
                    measurement("net-latency", ["node1", "node2"])]
    nodes = bounds.by_node(measurements)
    assert list(nodes) == ["node1", "node2"]
    assert [r["kind"] for r in nodes["node1"]] == ["memcpy-cache", "tcp-latency", "shm-latency", "net-latency"]
    assert [r["kind"] for r in nodes["node2"]] == ["net-latency"]
    database = open_database(str(tmp_path / "r.db"))
    campaign = start_campaign(database, "c", {})
    for host, records in nodes.items():
        write_bounds(database, campaign, {"host": host}, records)
    machine, figures, sources = read_bounds(database, campaign)
    assert machine["host"] == "node1"
    assert machine["network"] == "TCP between node1 and node2 (Open MPI pml ob1, btl tcp)"
    assert {f["kind"] for f in figures} == {"memcpy-cache", "tcp-latency", "net-latency"}
    assert read_bounds(database, campaign, "node2")[0]["network"].startswith("TCP between node1 and node2")
    # a local campaign's host record says no network was measured
    other = start_campaign(database, "d", {})
    write_bounds(database, other, {"host": "vm"}, [measurement("tcp-latency", ["vm"]).record()])
    assert read_bounds(database, other)[0]["network"] == "not measured"


def test_the_campaigns_slurm_table_reaches_sruns_allocation(monkeypatch, tmp_path):
    """srun outside a job reads SLURM_PARTITION, SLURM_ACCOUNT, ... for the allocation it makes; measuring the
    bounds sets them from the campaign's [slurm] table."""
    monkeypatch.setenv("MPISTACK_SLURM_DEFAULTS", str(tmp_path / "none.toml"))
    campaign = load_campaign_text('name = "c"\nlauncher = "slurm"\napproaches = ["native"]\n[slurm]\n'
                                  'partition = "debug"\naccount = "proj-1"\n[[stack]]\nname = "host-mpich"\n'
                                  'host = "mpich"\n[[benchmark]]\nname = "latency"\n')
    seen = []
    monkeypatch.setattr(bounds, "measure_plans", lambda plans, *a, **k: seen.extend(plans) or [])
    monkeypatch.setenv(bounds.SWITCH, "on")
    database = open_database(str(tmp_path / "r.db"))
    bounds.measure_for_campaign(campaign, start_campaign(database, "c", {}), expand(campaign, resolve_stacks(campaign)),
                                database, Console(file=io.StringIO()))
    assert seen and all(plan.env["SLURM_PARTITION"] == "debug" and plan.env["SLURM_ACCOUNT"] == "proj-1"
                        for plan in seen)
    # the command as stored gives the same environment to a shell
    monkeypatch.setattr(bounds, "_launch", lambda argv, timeout, env: (_ for _ in ()).throw(OSError("no srun")))
    [measured] = bounds._measure({"net-latency": "latency"}, "openmpi", ["srun", "x"], 1, 1.0, seen[0].env)
    assert "SLURM_ACCOUNT=proj-1" in shlex.split(measured.command)
