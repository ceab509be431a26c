"""Pip stacks run natively too (their wheel on the host): which cases the matrix makes, what a dry run
prints without building, and how a failed native build fails only the cases that run it. Unit tests:
nothing is downloaded (the real run is in test_campaign_runs.py)."""

from __future__ import annotations

import subprocess

from rich.console import Console

from mpistack.approaches import HostFacts
from mpistack.campaign import prepare as prepare_stage
from mpistack.campaign import session
from mpistack.campaign.matrix import expand, resolve_stacks
from mpistack.campaign.prepare import planning_resources, prepare
from mpistack.engines import PodmanEngine
from mpistack.spec.campaign import load_campaign_text

CAMPAIGN = """name = "w"
approaches = ["native", "container"]
benchmarks = ["latency"]
[[stack]]
name = "host-mpich"
host = "mpich"
[[stack]]
name = "pip-mpich"
[[stack]]
name = "debian-mpich"
"""


class PresentEngine(PodmanEngine):
    """Every image is there already: prepare builds none."""

    def image_exists(self, tag):
        return True

    def inspect_digest(self, tag):
        return "sha256:0"


def test_the_native_approach_runs_the_host_and_pip_stacks_and_each_run_names_its_origin():
    cases = expand(load_campaign_text(CAMPAIGN))
    assert {(case.stack.name, case.approach.name, case.origin) for case in cases} == {
        ("host-mpich", "native", "host"), ("pip-mpich", "native", "venv"), ("pip-mpich", "container", "image"),
        ("debian-mpich", "container", "image")}
    assert {case.stack.name: case.stack.native_form for case in cases} == {
        "host-mpich": "host", "pip-mpich": "venv", "debian-mpich": None}


def test_a_dry_run_prints_the_wheels_paths_and_builds_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    campaign = load_campaign_text(CAMPAIGN.replace('"native", "container"', '"native"'))
    console = Console(record=True, width=400)
    session.dry_run(campaign, console, HostFacts())
    native = tmp_path / "mpistack" / "native" / "mpich-4.3.2"
    assert f"{native}/venv/bin/mpiexec -n 2 {native}/build/mpistack-bench latency" in console.export_text()
    assert not (tmp_path / "mpistack").exists()


def test_a_failed_native_build_fails_the_native_cases_only(tmp_path, monkeypatch):
    def no_index(stack):
        raise subprocess.CalledProcessError(1, ["pip"], stderr="ERROR: No matching distribution found for mpich")

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(prepare_stage, "build_native", no_index)
    monkeypatch.setattr(prepare_stage, "build_host_bench", lambda mpi: tmp_path / "mpistack-bench")
    campaign = load_campaign_text(CAMPAIGN)
    stacks = resolve_stacks(campaign)
    cases = expand(campaign, stacks)
    resources = planning_resources(campaign, stacks, HostFacts())
    resources.engine = PresentEngine()
    prepare(cases, resources, say=lambda text: None)
    assert resources.failed_native == {
        "pip-mpich": "cannot build pip-mpich natively: ERROR: No matching distribution found for mpich"}
    assert resources.failed_builds == {} and "pip-mpich" not in resources.native_bench
    failures = {(case.stack.name, case.origin): resources.build_failure(case) for case in cases}
    assert failures == {("host-mpich", "host"): None, ("pip-mpich", "venv"): resources.failed_native["pip-mpich"],
                        ("pip-mpich", "image"): None, ("debian-mpich", "image"): None}


def test_a_campaign_without_native_pip_cases_installs_no_wheel(tmp_path, monkeypatch):
    def must_not_build(stack):
        raise AssertionError(f"{stack.name}'s wheel installed for container cases")

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(prepare_stage, "build_native", must_not_build)
    campaign = load_campaign_text(CAMPAIGN.replace('"native", "container"', '"container"'))
    stacks = resolve_stacks(campaign)
    resources = planning_resources(campaign, stacks, HostFacts())
    resources.engine = PresentEngine()
    prepare(expand(campaign, stacks), resources, say=lambda text: None)
    assert resources.failed_native == {} and set(resources.digests) == {"pip-mpich", "debian-mpich"}
