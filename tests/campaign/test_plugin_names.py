"""Approach, launcher and engine names are checked against their registries when a campaign's matrix is
resolved (the campaign stage), not when its file is read: the spec stage comes before the plug-in packages,
and a registry lookup loads its package (tests/test_architecture.py counts it as an import)."""

from __future__ import annotations

import pytest

from mpistack.campaign.matrix import resolve_stacks
from mpistack.spec.campaign import CampaignError, load_campaign_text

BASE = 'name = "t"\napproaches = ["native"]\nbenchmarks = ["latency"]\n[[stack]]\nname = "h"\nhost = "mpich"\n'


@pytest.mark.parametrize("change, expected", [
    (('["native"]', '["native", "hybird"]'),
     "c.toml: approaches.1.name: unknown approach: expected one of native, container, hybrid, bind, fabric-swap "
     "(got 'hybird')"),
    (('name = "t"', 'name = "t"\nlauncher = "pbs"'), "c.toml: launcher: unknown launcher: expected one of local, slurm "
                                                      "(got 'pbs')"),
    (('name = "t"', 'name = "t"\nengine = "lxc"'), "c.toml: engine: unknown container engine: expected one of "),
    (('host = "mpich"', 'host = "mpich"\n[[variant]]\nname = "v"\nengine = "apptainr"'),
     "c.toml: variant.0.engine: unknown container engine: expected one of docker, podman, charliecloud, cscs-ce, "
     "pyxis, apptainer (got 'apptainr')"),
])
def test_a_misspelt_plugin_name_names_the_file_the_field_and_the_known_names(change, expected):
    campaign = load_campaign_text(BASE.replace(*change), "c.toml")  # reading does not load the plug-ins
    with pytest.raises(CampaignError) as error:
        resolve_stacks(campaign)
    assert expected in str(error.value)


def test_registered_names_pass():
    campaign = load_campaign_text(BASE.replace('["native"]', '["native", "bind"]')
                                  .replace('name = "t"', 'name = "t"\nlauncher = "slurm"'), "c.toml")
    assert [stack.name for stack in resolve_stacks(campaign)] == ["h"]


def test_a_runtime_that_cannot_run_here_stops_the_campaign_before_anything_is_built(monkeypatch):
    """$USER unset under Charliecloud, and no name to take for it: one error naming the fix, before any build or
    launch."""
    from mpistack.campaign.matrix import expand
    from mpistack.campaign.prepare import planning_resources
    from mpistack.campaign.session import check_runtime
    from mpistack.approaches import HostFacts
    from mpistack.engines import CharliecloudEngine

    text = BASE.replace('name = "t"', 'name = "t"\nengine = "charliecloud"').replace(
        '["native"]', '["hybrid"]').replace('name = "h"\nhost = "mpich"', 'name = "debian-mpich"')
    campaign = load_campaign_text(text, "c.toml")
    stacks = resolve_stacks(campaign)
    resources = planning_resources(campaign, stacks, host=HostFacts())
    monkeypatch.setattr(CharliecloudEngine, "runner", "/bin/true")  # installed, as far as this test goes
    monkeypatch.delenv("USER", raising=False)

    def nameless(uid):
        raise KeyError(uid)

    monkeypatch.setattr("pwd.getpwuid", nameless)
    said = r"(?s)c.toml: engine charliecloud: \$USER is not set.*export USER=.*nothing was launched"
    with pytest.raises(CampaignError, match=said):
        check_runtime(campaign, expand(campaign, stacks), resources)


@pytest.mark.parametrize("engine", ["pyxis", "apptainer", "cscs-ce"])
def test_a_runtime_rendered_for_a_cluster_stops_the_campaign_before_anything_is_built(engine):
    """cscs-ce, pyxis and apptainer are engines like podman, but mpistack writes their commands, never runs them."""
    from mpistack.campaign.matrix import expand
    from mpistack.campaign.prepare import planning_resources
    from mpistack.campaign.session import check_runtime
    from mpistack.approaches import HostFacts

    text = BASE.replace('name = "t"', f'name = "t"\nengine = "{engine}"').replace(
        '["native"]', '["hybrid"]').replace('name = "h"\nhost = "mpich"', 'name = "debian-mpich"')
    campaign = load_campaign_text(text, "c.toml")
    stacks = resolve_stacks(campaign)
    said = (rf"(?s)c.toml: engine {engine} runs on a cluster's Slurm.*mpistack stack render STACK --srun {engine}"
            r".*nothing was launched")
    with pytest.raises(CampaignError, match=said):
        check_runtime(campaign, expand(campaign, stacks), planning_resources(campaign, stacks, host=HostFacts()))
