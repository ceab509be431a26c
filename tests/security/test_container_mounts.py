"""Every approach that starts containers mounts the case's own directory of the work directory and nothing
else of it: not the runner's markers (`running/`), not the journal, not other cases' directories. Planned
for a made-up host (planning is pure), checked on the exact command line the run executes."""

from __future__ import annotations

import pytest

from mpistack.approaches import HostFacts
from mpistack.campaign import stages
from mpistack.campaign.matrix import expand, resolve_stacks
from mpistack.campaign.prepare import planning_resources, workdir_for
from mpistack.spec.campaign import load_campaign_text

CAMPAIGN = """name = "m"
approaches = ["container", "hybrid", "bind"]
benchmarks = ["latency"]
[[stack]]
name = "debian-mpich"
[[stack]]
name = "pip-mpich"
[[placement]]
ranks = 2
"""


def test_containers_get_their_case_directory_alone(tmp_path):
    campaign = load_campaign_text(CAMPAIGN)
    stacks = resolve_stacks(campaign)
    host = HostFacts(mpi_library_files={"mpich": (("/usr/lib/libmpich.so.12", "libmpich.so.12"),)})
    workdir = tmp_path / workdir_for(campaign, "sqlite:////s.db", 3).name
    resources = planning_resources(campaign, stacks, host, workdir)
    planned = 0
    for case in expand(campaign, stacks):
        try:
            launch = stages.plan(campaign, case, resources)
        except Exception:  # noqa: BLE001 - a combination this host cannot run: nothing to mount
            continue
        own = resources.case_directory(launch.label)
        mentions = [arg for arg in launch.argv if str(workdir) in arg]
        assert mentions, launch.argv
        for arg in mentions:
            paths = [part for part in arg.replace("=", ":").replace(",", ":").split(":") if str(workdir) in part]
            assert all(path == str(own) or path.startswith(f"{own}/") for path in paths), (case.key, arg)
        planned += 1
    assert planned >= 3


@pytest.mark.parametrize("run", ["sqlite:////a.db", "sqlite:////b.db"])
def test_case_labels_differ_between_runs_of_one_campaign_name(run, tmp_path):
    campaign = load_campaign_text(CAMPAIGN)
    case = expand(campaign, resolve_stacks(campaign))[0]
    mine = stages.case_label(campaign, case, workdir_for(campaign, run, 1).name)
    other = stages.case_label(campaign, case, workdir_for(campaign, "postgresql://h/other", 1).name)
    assert mine != other  # neither run removes the other's containers by label
