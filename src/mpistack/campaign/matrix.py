"""Matrix expansion: every stack x approach x benchmark x placement x buffers x repeat that applies.

The host's own MPI runs natively; an image runs as a container, hybrid (host launcher, one container per
rank) or bind (host MPI mounted over the image's). Filters in the campaign narrow the matrix.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from functools import cached_property

from ..catalogue import load as load_catalogue_stack
from ..spec.campaign import ApproachEntry, BenchmarkEntry, Campaign, Filter, Placement, StackEntry
from ..spec.stack import Stack

@dataclass(frozen=True)
class CampaignStack:
    """A stack as a campaign uses it: the host's MPI, or an image built from a stack spec."""

    entry: StackEntry
    spec: Stack | None  # None for the host's own MPI

    @property
    def name(self) -> str:
        return self.entry.name

    @property
    def is_host(self) -> bool:
        return self.entry.host is not None

    @property
    def mpi(self) -> str:
        return self.entry.host if self.entry.host else self.spec.mpi.impl

    @property
    def has_gpu(self) -> bool:
        return self.spec is not None and self.spec.gpu.kind != "none"


def resolve_stack(entry: StackEntry) -> CampaignStack:
    if entry.host:
        return CampaignStack(entry, None)
    spec = _inline_stack(entry) if entry.inline is not None else load_catalogue_stack(entry.name)
    return CampaignStack(entry, spec)


def _inline_stack(entry: StackEntry) -> Stack:
    """An inline [stack.inline] table, validated as the same model as catalogue files."""
    return Stack.model_validate({"name": entry.name, **entry.inline})


@dataclass(frozen=True)
class Case:
    campaign: str
    stack: CampaignStack
    approach: ApproachEntry
    benchmark: BenchmarkEntry
    placement: Placement
    buffers: str
    repeat: int
    skip: str | None = None  # why this case cannot run here (recorded as skipped)

    @cached_property
    def key(self) -> str:
        """Stable identity of a case within its campaign: --resume skips keys already done."""
        approach = self.approach.name + ("+single-copy" if self.approach.single_copy else "")
        return "/".join([self.stack.name, approach, self.benchmark.name, self.placement.label, self.buffers,
                         f"r{self.repeat}"])

    def fields(self) -> dict[str, str]:
        return {"stack": self.stack.name, "approach": self.approach.name, "benchmark": self.benchmark.name,
                "ranks": str(self.placement.ranks), "nodes": str(self.placement.nodes), "buffers": self.buffers}

    def describe(self) -> str:
        return f"{self.stack.name} · {self.approach.name} · {self.benchmark.name} · {self.placement.label} · {self.buffers}"


def _matches(case: Case, condition: Filter) -> bool:
    fields = case.fields()
    for key, pattern in condition.model_dump(exclude_none=True).items():
        if not fnmatch.fnmatchcase(fields[key], str(pattern)):
            return False
    return True


def _skip_reason(stack: CampaignStack, approach: ApproachEntry, benchmark: BenchmarkEntry, placement: Placement,
                 buffers: str) -> str | None:
    if "D" in buffers and not stack.has_gpu:
        return f"buffers {buffers} need a GPU stack; {stack.name} has none"
    if placement.nodes > 1:
        return "the local launcher runs on one node; use the Slurm launcher for several nodes"
    if benchmark.name in {"latency", "bw", "bibw"} and benchmark.program is None and placement.ranks != 2:
        return f"{benchmark.name} runs on exactly 2 ranks"
    return None


def expand(campaign: Campaign, stacks: list[CampaignStack] | None = None) -> list[Case]:
    """Every case of the campaign, interleaved (see `interleave`)."""
    stacks = stacks if stacks is not None else [resolve_stack(entry) for entry in campaign.stacks]
    cases = []
    for stack in stacks:
        for approach in campaign.approaches:
            if (approach.name == "native") != stack.is_host:
                continue  # host MPI runs natively only; images run under the container approaches
            for benchmark in campaign.benchmarks:
                for placement in campaign.placements:
                    for buffers in campaign.buffers:
                        reason = _skip_reason(stack, approach, benchmark, placement, buffers)
                        for repeat in range(1, campaign.repeats + 1):
                            cases.append(Case(campaign.name, stack, approach, benchmark, placement, buffers,
                                              repeat, reason))
    if campaign.include:
        cases = [case for case in cases if any(_matches(case, condition) for condition in campaign.include)]
    cases = [case for case in cases if not any(_matches(case, condition) for condition in campaign.exclude)]
    return interleave(cases)


def interleave(cases: list[Case]) -> list[Case]:
    """Run the cases that will be compared next to each other: per benchmark, placement, buffers and
    repeat, every stack and approach in turn. A machine whose load drifts during a campaign then biases
    native and container runs alike instead of whichever ran last."""
    def group(case: Case) -> tuple:
        return (case.repeat, case.benchmark.name, case.placement.label, case.buffers)

    order: dict[tuple, int] = {}
    for case in cases:
        order.setdefault(group(case), len(order))
    return sorted(cases, key=lambda case: order[group(case)])  # stable: stacks and approaches keep their order
