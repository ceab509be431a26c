"""Under Slurm, leftovers only of this run: a job an earlier session submitted is taken up by the id in its
bundle file, or by its name only among this user's jobs, and its name carries the run's work directory (store
and campaign id), so that a same-name campaign of another store, or another user's job, is never collected or
cancelled as this one's. The Slurm client is faked here (its argv is what is checked); the demo cluster runs
the rest (tests/slurm)."""

from __future__ import annotations

import os
import subprocess

from mpistack.launchers.slurm import SlurmLauncher, settings


def test_jobs_are_found_by_name_only_among_this_users(monkeypatch):
    asked = []

    def squeue(argv, **_):
        asked.append(argv)
        return subprocess.CompletedProcess(argv, 0, stdout="41|mpistack-c-abc-1-1\n", stderr="")

    monkeypatch.setattr(subprocess, "run", squeue)
    found = SlurmLauncher(settings(None)).jobs_named(["mpistack-c-abc-1-1"])
    assert found == {"mpistack-c-abc-1-1": "41"}
    assert f"--user={os.getuid()}" in asked[0] and "--name=mpistack-c-abc-1-1" in asked[0]


def test_job_names_carry_the_runs_store_and_campaign_id(tmp_path):
    from mpistack.approaches import HostFacts
    from mpistack.campaign import stages
    from mpistack.campaign.batch import BatchRun
    from mpistack.campaign.matrix import resolve_stacks
    from mpistack.campaign.prepare import planning_resources, workdir_for
    from mpistack.spec.campaign import Campaign

    campaign = Campaign.model_validate({"name": "local", "launcher": "slurm", "approaches": ["native"],
                                        "stack": [{"name": "h", "host": "mpich"}],
                                        "benchmark": [{"name": "latency"}]})
    prefixes = []
    for store in ("sqlite:////a.db", "sqlite:////b.db"):
        resources = planning_resources(campaign, resolve_stacks(campaign), HostFacts(),
                                       tmp_path / workdir_for(campaign, store, 1).name)
        context = stages.CaseContext(campaign, 1, resources, None, None)
        run = BatchRun(context, SlurmLauncher(settings(None)), tmp_path / resources.workdir.name / "jobs",
                       lambda *_: None, lambda: False)
        prefixes.append(run.bundle_files.job_prefix)
    assert prefixes[0] != prefixes[1] and all(prefix.startswith("mpistack-local-") for prefix in prefixes)
