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
