"""A campaign submitted to the demo cluster by a user without root: mpistack submits as that user, the jobs
run as that user (slurmd starts each job's steps with the submitter's ids), in a work directory of the user's
that the nodes read, and the results go to the user's own store."""

from __future__ import annotations

import json
import os

import pytest

from tests.accounts import unprivileged_account

from .conftest import SlurmCluster

pytestmark = pytest.mark.slurm

CAMPAIGN = """
name = "slurm-as-a-user"
launcher = "slurm"
timeout = 60
retries = 1
approaches = ["native"]
benchmark_options = ["-m", "1:1024", "-i", "50", "-x", "5"]

[slurm]
cases_per_job = 10
poll_interval = 0.3
max_poll_interval = 1.0

[[stack]]
name = "host-mpich"
host = "mpich"

[[benchmark]]
name = "latency"

[[placement]]
ranks = 2
nodes = 2
ranks_per_node = 1
"""


def test_a_user_without_root_submits_and_the_jobs_run_as_that_user(slurm_cluster: SlurmCluster):
    with unprivileged_account() as user:
        campaign = user.home / "campaign.toml"
        campaign.write_text(CAMPAIGN)
        os.chown(campaign, user.uid, user.gid)
        store = user.home / "results.db"
        ran = user.mpistack("--db", str(store), "run", str(campaign), timeout=900,
                            env={"SLURM_CONF": str(slurm_cluster.conf), "COLUMNS": "200"})
        said = ran.stdout + ran.stderr
        runs = json.loads(user.mpistack("--db", str(store), "runs", "-w", "campaign=slurm-as-a-user",
                                        "-f", "json").stdout)
        assert runs and all(run["status"] == "ok" for run in runs), said
        assert {run["launcher"] for run in runs} == {"slurm"}
        # the jobs ran as the user: Slurm's completion records name the user
        completions = (slurm_cluster.dir / "log" / "jobcomp.txt").read_text()
        mine = [line for line in completions.splitlines() if f"UserId={user.name}(" in line]
        assert mine and all("JobState=COMPLETED" in line for line in mine), completions[-2000:]
