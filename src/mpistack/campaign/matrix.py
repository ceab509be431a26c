"""Matrix expansion: every stack x approach x variant x benchmark x placement x buffers x repeat that applies.

The host's own MPI runs natively; an image runs under the approaches that take an image, and a pip stack
natively too (its wheel on the host). Every case runs once plain (variant `default`) and once per variant
that applies to it. Filters in the campaign narrow the matrix; cases that cannot run here are kept with the
reason (recorded as skipped). The cases come in run order, in blocks that put each candidate beside its
baselines (campaign/schedule.py).
"""

from __future__ import annotations

import fnmatch

from pydantic import ValidationError

from ..registry import APPROACHES, ENGINES, LAUNCHERS
from ..spec.benchmarks import BENCHMARKS
from ..spec.campaign import (ApproachEntry, BenchmarkEntry, Campaign, CampaignError, CaseFilter, Placement,
                             VariantEntry)
from ..spec.case import Case, CampaignStack, resolve_stack
from ..spec.stack import StackError
from ..spec.toml_files import describe_errors
from .schedule import ScheduledCase, schedule


def check_plugins(campaign: Campaign) -> None:
    """The approach, launcher and engine names against their registries: checked here, not when the file is
    read, because the spec stage comes before the plug-in packages the registries load. Errors name the
    file and the field, and list the known names."""
    named = [(f"approaches.{index}.name", APPROACHES, entry.name) for index, entry in enumerate(campaign.approaches)]
    named += [("launcher", LAUNCHERS, campaign.launcher), ("engine", ENGINES, campaign.engine)]
    named += [(f"variant.{index}.engine", ENGINES, entry.engine) for index, entry in enumerate(campaign.variants)
              if entry.engine is not None]
    for field, registry, name in named:
        if name not in registry:
            raise CampaignError(f"{campaign.path or campaign.name}: {field}: unknown {registry.kind}: expected one of "
                                f"{', '.join(registry.names())} (got {name!r})")


def resolve_stacks(campaign: Campaign) -> list[CampaignStack]:
    """Every stack of the campaign with its spec, its plug-in names checked; errors name the campaign file and
    the stack."""
    check_plugins(campaign)
    stacks = []
    for index, entry in enumerate(campaign.stacks):
        try:
            stacks.append(resolve_stack(entry))
        except StackError as error:
            raise CampaignError(f"{campaign.path}: stack.{index} ({entry.name}): {error}") from None
        except ValidationError as error:
            raise CampaignError(describe_errors(campaign.path, error, prefix=f"stack.{index}.inline.")) from None
    return stacks


def _matches(case: Case, condition: CaseFilter) -> bool:
    fields = case.fields()
    return all(fnmatch.fnmatchcase(fields[key], str(pattern))
               for key, pattern in condition.model_dump(exclude_none=True).items())


def _skip_reason(campaign: Campaign, stack: CampaignStack, benchmark: BenchmarkEntry, placement: Placement,
                 buffers: str) -> str | None:
    if "D" in buffers and not stack.has_gpu:
        return f"buffers {buffers} need a GPU stack; {stack.name} has none"
    max_nodes = LAUNCHERS.get(campaign.launcher).can.max_nodes
    if max_nodes is not None and placement.nodes > max_nodes:
        return (f"the {campaign.launcher} launcher runs on {max_nodes} node(s); use the Slurm launcher for "
                f"{placement.nodes} nodes")
    if benchmark.program is None:
        return BENCHMARKS[benchmark.name].refuses(placement.ranks)
    return None


def _runs(approach: ApproachEntry, stack: CampaignStack) -> bool:
    """Images run under the approaches that take an image (the host's MPI has none); the native approach
    runs the stacks with a native form: the host's MPI, and a pip stack's wheel on the host."""
    if APPROACHES.get(approach.name).image:
        return not stack.is_host
    return stack.native_form is not None


def _variants(campaign: Campaign, stack: CampaignStack, approach: ApproachEntry) -> list[VariantEntry | None]:
    return [None, *(variant for variant in campaign.variants if variant.applies(stack.name, approach.name))]


def expand(campaign: Campaign, stacks: list[CampaignStack] | None = None,
           seed: int | None = None) -> list[ScheduledCase]:
    """Every case of the campaign in run order: rounds of blocks, every candidate next to its baselines, a
    baseline launched once per block it serves (campaign/schedule.py); `seed` defaults to the campaign's
    own."""
    stacks = stacks if stacks is not None else resolve_stacks(campaign)
    cases = []
    for stack in stacks:
        for approach in (approach for approach in campaign.approaches if _runs(approach, stack)):
            for variant in _variants(campaign, stack, approach):
                for benchmark in campaign.benchmarks:
                    for placement in campaign.placements:
                        for buffers in campaign.buffers:
                            reason = _skip_reason(campaign, stack, benchmark, placement, buffers)
                            cases += [Case(campaign.name, stack, approach, benchmark, placement, buffers, repeat,
                                           reason, variant, runs_image=APPROACHES.get(approach.name).image)
                                      for repeat in range(1, campaign.repeats + 1)]
    if campaign.include:
        cases = [case for case in cases if any(_matches(case, condition) for condition in campaign.include)]
    cases = [case for case in cases if not any(_matches(case, condition) for condition in campaign.exclude)]
    if campaign.order == "matrix":
        return schedule(cases, None, blocks=False)
    return schedule(cases, campaign.seed if seed is None else seed)
