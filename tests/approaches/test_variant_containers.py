"""A variant's container options reach the containers of its cases only: a small /dev/shm, or a container per
rank without the host's IPC namespace (how the fault campaign, examples/faults.toml, takes them away)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mpistack.approaches import HostFacts, Resources, plan
from mpistack.campaign.matrix import expand, resolve_stacks
from mpistack.engines import Confinement, PodmanEngine
from mpistack.spec.campaign import CampaignError, load_campaign_text

CAMPAIGN = """
name = "options"
approaches = [{ name = "container", single_copy = true }, "hybrid"]
benchmarks = ["latency"]
[[stack]]
name = "pip-mpich"
[[variant]]
name = "small-shm"
shm_size = "4m"
approaches = ["container"]
[[variant]]
name = "confined"
single_copy = false
approaches = ["container"]
[[variant]]
name = "private-ipc"
share_ipc = false
approaches = ["hybrid"]
"""


@pytest.fixture
def confined():
    campaign = load_campaign_text(CAMPAIGN, "options.toml")
    stacks = resolve_stacks(campaign)
    resources = Resources(engine=PodmanEngine(runtime="runc"), workdir=Path("/scratch/options"),
                          host=HostFacts(is_root=True), images={"pip-mpich": "localhost/mpistack/pip-mpich:x"})

    def of(approach: str, variant: str) -> tuple[str, str]:
        case = next(case for case in expand(campaign, stacks)
                    if case.approach.name == approach and case.variant_name == variant)
        facts = plan(case, resources, None, [], "label").facts
        return facts["confinement"], Confinement.from_record(facts["confinement_record"])
    return of


MIB = 1024 ** 2


def test_shm_size_reaches_only_its_variant(confined):
    word, small = confined("container", "small-shm")
    assert word == "single-copy" and small.shm_bytes == 4 * MIB
    assert small.capabilities == ("SYS_PTRACE",) and not small.seccomp and "pid" in small.host
    assert confined("container", "default")[1].shm_bytes == 1024 * MIB


def test_a_variant_takes_the_approachs_single_copy_rights_away():
    campaign = load_campaign_text(CAMPAIGN, "options.toml")
    case = next(case for case in expand(campaign) if case.variant_name == "confined")
    assert not case.single_copy and case.key.startswith("pip-mpich/container/v:confined/")


def test_confined_is_podmans_default(confined):
    word, default = confined("container", "confined")
    assert word == "default" and default.capabilities == () and default.seccomp
    assert default.one_container and default.shm_bytes == 1024 * MIB


def test_per_rank_containers_without_the_hosts_ipc(confined):
    word, private = confined("hybrid", "private-ipc")
    assert word == "host-pid" and "ipc" not in private.shared and private.shm_bytes == 1024 * MIB
    word, default = confined("hybrid", "default")
    assert word == "host-ipc-pid" and {"ipc", "pid"} <= default.host and default.shm_bytes is None


@pytest.mark.parametrize("line, message", [('shm_size = "lots"', "shm_size"),
                                           ('expect = ["none", "single-copy"]', "cannot be listed beside"),
                                           ('expect = "TCP on node"', "expect")])
def test_bad_variant_options_are_refused(line, message):
    with pytest.raises(CampaignError, match=message):
        load_campaign_text(CAMPAIGN.replace('shm_size = "4m"', line), "options.toml")


def test_expect_is_kept_as_written():
    campaign = load_campaign_text(CAMPAIGN.replace('shm_size = "4m"', 'expect = "shm-target-full"'), "x.toml")
    assert campaign.variants[0].expect == "shm-target-full"
    listed = load_campaign_text(CAMPAIGN.replace('shm_size = "4m"', 'expect = ["a", "b"]'), "x.toml")
    assert listed.variants[0].expect == ["a", "b"]
