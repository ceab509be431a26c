"""The run order: rounds of blocks in which every candidate launch sits next to its baselines' launches.

Launch slowness on a shared machine is correlated from one launch to the next, so the log ratio of two
adjacent launches cancels the machine's slow modes where the ratio of two launches minutes apart does not.
The order is that of randomised multiple interleaved trials (A. Abedi and T. Brecht, "Conducting Repeatable
Experiments in Highly Variable Cloud Computing Environments", ICPE 2017,
https://doi.org/10.1145/3030207.3030229), with the cases that are compared with each other made adjacent:

- rounds follow each other by repeat: round r holds the r-th launch of every case;
- within a round, the cases that are compared (one benchmark, placement and buffers: a comparison group)
  stay together, the groups in a random order;
- within a group, the cases come in blocks: a candidate, its baselines, and a second candidate with the same
  baselines (C1 S C2, or C1 S V C2 for a pip stack's image, compared with the system S and with its own
  native build V), so that every candidate is at distance 1 or 2 of a launch of each of its baselines and a
  baseline launch serves the candidates on both sides of it. A baseline runs once per block it serves: its
  launches after the first in a round are extra launches, with keys of their own (`.../r3/launch2`);
- the blocks come in a random order and orientation, and every second round repeats the round before it with
  each block reversed, so that over each pair of rounds every candidate runs once before and once after each
  of its baselines (counterbalanced: a carry-over from the launch before, such as the first bandwidth launch
  after a latency launch running slow, falls on both sides alike).

Who is compared with whom is what the analysis answers against: the system baseline of a case is the host's
own MPI of its family run natively, in the variant the case is compared with; the same-stack baseline of a
pip stack's image case is that stack's wheel run natively. Baselines are compared too (a pip stack's native
build with the system), which the blocks honour where the two sit side by side.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, fields
from functools import cached_property
from typing import Hashable, Sequence, TypeVar

from ..approaches.apptainer import refusal
from ..spec.campaign import DEFAULT_VARIANT
from ..spec.case import Case

Member = TypeVar("Member", bound=Hashable)


@dataclass(frozen=True)
class ScheduledCase(Case):
    """A case at its place in the run order."""

    launch: int = 1  # the case's launch within its round: 2 and on are a baseline's extra launches
    block: int = 0  # the block within its round and comparison group, from 1
    position: int = 0  # 1-based index in the campaign's run order

    @cached_property
    def key(self) -> str:
        """The case's key; an extra launch in a round adds its number, so that --resume tells it apart."""
        key = Case.key.func(self)
        return key if self.launch == 1 else f"{key}/launch{self.launch}"

    def schedule_tags(self) -> dict[str, str]:
        """What the analysis pairs launches on: a candidate with the baseline launch of its (round, block)."""
        return {"round": str(self.repeat), "block": str(self.block), "position": str(self.position)}


def comparison_group(case: Case) -> tuple:
    """The cases compared with each other: one benchmark, placement and buffers."""
    return (case.benchmark.name, case.placement.label, case.buffers)


def identity(case: Case) -> tuple:
    """A case within its comparison group and round."""
    return (case.stack.name, case.approach_label, case.variant_name)


def baselines(case: Case, group: Sequence[Case]) -> list[Case]:
    """The cases of the group `case` is compared with: the system baseline (the host's MPI of its family,
    natively, in the variant it is compared with) and, for a pip stack's image, its own native build."""
    variant = case.variant.baseline if case.variant else DEFAULT_VARIANT
    system = next((other for other in group if identity(other) != identity(case) and other.stack.is_host
                   and other.approach_label == "native" and other.stack.mpi_impl == case.stack.mpi_impl
                   and other.variant_name == variant), None)
    own = None
    if case.origin == "image" and case.stack.native_form == "venv":
        own = next((other for other in group if other.stack.name == case.stack.name and other.origin == "venv"
                    and other.variant_name == variant), None)
    return [found for found in (system, own) if found is not None]


def launches_here(case: Case) -> bool:
    """Whether the case will launch, as far as the matrix knows: not skipped, and not refused by its approach
    from the stack file alone (planning may refuse more: such a block runs its baselines all the same)."""
    return not case.skip and (case.stack.spec is None or refusal(case.stack.spec, case.approach.name) is None)


def plan_blocks(members: Sequence[Member], compared: dict[Member, Sequence[Member]],
                rng: random.Random | None) -> list[list[Member]]:
    """The blocks of one comparison group in one round, in run order. `compared[m]`: the members m is
    compared with (its baselines: at most two). Every member appears at least once; a baseline once per
    block it serves. `rng` None keeps the listed order and orientation.

    A candidate whose baselines all sit side by side in another candidate's block (a pip stack's native
    build, next to the system in the block of its image) needs no block of its own. The other candidates go
    in pairs around their common baselines; an odd one out with two baselines takes in an odd one out with
    one of them, at that baseline's end (C1 V S C2)."""
    present = set(members)
    cores = {member: tuple(other for other in compared.get(member, ()) if other in present and other != member)
             for member in members}
    candidates = [member for member in members if cores[member]]

    def covered(candidate: Member) -> bool:
        return any(candidate in cores[other] and set(cores[candidate]) <= set(cores[other])
                   for other in candidates if other != candidate)

    def ordered(core: Sequence[Member]) -> list[Member]:
        core = list(core)
        if rng is not None:
            rng.shuffle(core)
        return core

    by_core: dict[frozenset, list[Member]] = {}
    for candidate in (candidate for candidate in candidates if not covered(candidate)):
        by_core.setdefault(frozenset(cores[candidate]), []).append(candidate)
    blocks: list[list[Member]] = []
    odd: list[Member] = []
    for group in by_core.values():
        if rng is not None:
            rng.shuffle(group)
        blocks += [[group[index], *ordered(cores[group[index]]), group[index + 1]]
                   for index in range(0, len(group) - 1, 2)]
        if len(group) % 2:
            odd.append(group[-1])
    odd.sort(key=lambda member: -len(cores[member]))  # stable: the two-baseline ones first
    while odd:
        first = odd.pop(0)
        partner = next((other for other in odd if len(cores[first]) == 2 and len(cores[other]) == 1
                        and cores[other][0] in cores[first]), None)
        if partner is None:
            blocks.append([*ordered(cores[first]), first])
            continue
        odd.remove(partner)
        shared = cores[partner][0]
        blocks.append([first, *(other for other in cores[first] if other != shared), shared, partner])
    placed = {member for block in blocks for member in block}
    blocks += [[member] for member in members if member not in placed]
    if rng is not None:
        blocks = [block[::-1] if rng.random() < 0.5 else block for block in blocks]
        rng.shuffle(blocks)
    return blocks


def schedule(cases: Sequence[Case], seed: int | None, blocks: bool = True) -> list[ScheduledCase]:
    """The cases in run order (see the module's description), the extra launches of baselines added.
    `seed`: the random order (None: the listed order); `blocks` False: every case once per round, alone in
    its block, in the listed order (`order = "matrix"`)."""
    rng = random.Random(seed) if seed is not None and blocks else None
    ordered: list[ScheduledCase] = []
    earlier: dict[tuple, tuple[list[tuple], list[list[tuple]]]] = {}  # group -> the round before's members, blocks
    for round_index, repeat in enumerate(sorted({case.repeat for case in cases})):
        groups: dict[tuple, list[Case]] = {}
        for case in (case for case in cases if case.repeat == repeat):
            groups.setdefault(comparison_group(case), []).append(case)
        order = list(groups)
        if rng is not None:
            rng.shuffle(order)
        for group in order:
            members = groups[group]
            by_identity = {identity(case): case for case in members}
            launching = [identity(case) for case in members if launches_here(case)]
            if not blocks:
                planned = [[identity(case)] for case in members]
            else:
                before = earlier.get(group)
                if round_index % 2 == 1 and before is not None and before[0] == launching:
                    planned = [block[::-1] for block in before[1]]  # the round before, mirrored
                    if rng is not None:
                        rng.shuffle(planned)
                else:
                    launchable = [by_identity[member] for member in launching]
                    compared = {identity(case): [identity(other) for other in baselines(case, launchable)]
                                for case in launchable}
                    planned = plan_blocks(launching, compared, rng)
                earlier[group] = (launching, planned)
                planned = planned + [[identity(case)] for case in members if not launches_here(case)]
            launches: dict[tuple, int] = {}
            for number, block in enumerate(planned, start=1):
                for member in block:
                    launches[member] = launches.get(member, 0) + 1
                    ordered.append(_scheduled(by_identity[member], launches[member], number, len(ordered) + 1))
    return ordered


def _scheduled(case: Case, launch: int, block: int, position: int) -> ScheduledCase:
    return ScheduledCase(**{field.name: getattr(case, field.name) for field in fields(Case)},
                         launch=launch, block=block, position=position)


def heading(case: Case, before: Case | None) -> str | None:
    """For a listing in run order: a line above the first launch of each comparison group in a round."""
    if before is not None and (before.repeat, comparison_group(before)) == (case.repeat, comparison_group(case)):
        return None
    return f"round {case.repeat} · {case.benchmark.name} · {case.placement.label} · {case.buffers}"


def describe_order(order: str, seed: int | None, cases: Sequence[Case]) -> str:
    """How the cases are ordered, for the dry run: blocks and their cost, and where the order comes from."""
    if order == "matrix":
        return 'in the listed order (order = "matrix"), each case alone in its block'
    extra = extra_launches(cases)
    blocks = (f"in blocks, every candidate beside its baselines ({extra} of the launches are a baseline's extra "
              "launches)" if extra else "in blocks, every candidate beside its baselines")
    if seed is None:
        return f"{blocks}; listed unshuffled: the run draws a random order (set seed = N to fix it)"
    return f"{blocks}, in the random order of seed {seed}"


def extra_launches(cases: Sequence[Case]) -> int:
    """How many of the launches are a baseline's extra launches in a round (what the blocks cost)."""
    return sum(1 for case in cases if isinstance(case, ScheduledCase) and case.launch > 1)
