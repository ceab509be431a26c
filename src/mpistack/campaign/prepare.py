"""Before the first case runs: resolve stacks, build the host's mpistack-bench, build missing images."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Callable

from pydantic import ValidationError

from ..approaches.base import Context
from ..engines import Engine, EngineError, get_engine
from ..recipes.build import build_stack
from ..recipes.render import RecipeError, bench_source_dir
from ..spec.campaign import Campaign, CampaignError
from ..spec.stack import StackError
from ..spec.toml_files import describe_errors
from .matrix import Case, CampaignStack, expand, resolve_stack
from .runner import build_host_bench, new_workdir


def resolve_stacks(campaign: Campaign) -> list[CampaignStack]:
    stacks = []
    for index, entry in enumerate(campaign.stacks):
        try:
            stacks.append(resolve_stack(entry))
        except StackError as error:
            raise CampaignError(f"{campaign.path}: stack.{index} ({entry.name}): {error}") from None
        except ValidationError as error:
            raise CampaignError(describe_errors(campaign.path, error, prefix=f"stack.{index}.inline.")) from None
    return stacks


def plan_cases(campaign: Campaign) -> tuple[list[Case], Context]:
    """The cases and a context that can describe their commands (nothing built, nothing run)."""
    stacks = resolve_stacks(campaign)
    cases = expand(campaign, stacks)
    bench_dir = bench_source_dir()
    context = Context(engine=get_engine(campaign.engine), workdir=Path("/tmp/mpistack-campaign"))
    for stack in stacks:
        if stack.is_host:
            context.host_bench[stack.entry.host] = bench_dir / f"build-{stack.entry.host}" / "mpistack-bench"
        else:
            context.images[stack.name] = stack.spec.image_ref()
    return cases, context


def prepare(campaign: Campaign, cases: list[Case], context: Context,
            say: Callable[[str], None] = print) -> None:
    """Build what the runnable cases need; a stack whose image cannot be built fails its cases only."""
    context.workdir = new_workdir()
    runnable = [case for case in cases if not case.skip]
    host_mpis = sorted({case.stack.entry.host for case in runnable if case.stack.is_host})
    for mpi in host_mpis:
        say(f"building mpistack-bench for the host's {mpi}")
        try:
            context.host_bench[mpi] = build_host_bench(mpi, bench_source_dir())
        except (OSError, subprocess.CalledProcessError) as error:
            detail = getattr(error, "stderr", "") or str(error)
            _failed(context, [case.stack.name for case in runnable if case.stack.entry.host == mpi],
                    f"cannot build mpistack-bench with the host's {mpi}: {detail.strip()[-500:]}", say)
    image_stacks = {case.stack.name: case.stack for case in runnable if not case.stack.is_host}
    for stack in image_stacks.values():
        try:
            ensure_image(context.engine, stack, context, say)
        except (EngineError, RecipeError) as error:
            _failed(context, [stack.name], f"image {stack.spec.image_ref()} unavailable: {error}", say)


def _failed(context: Context, stacks: list[str], message: str, say: Callable[[str], None]) -> None:
    """The cases of these stacks will be recorded as failed with this message; the others still run."""
    say(message.splitlines()[0])
    for name in stacks:
        context.failed_builds[name] = message


def ensure_image(engine: Engine, stack: CampaignStack, context: Context, say: Callable[[str], None]) -> None:
    reference = stack.spec.image_ref()
    if not engine.image_exists(reference):
        say(f"building image {reference} (stack {stack.name})")
        result = build_stack(stack.spec, engine.program, quiet=True)
        if not result.ok:
            message = f"image build failed ({result.returncode}); log: {result.log_path}"
            _failed(context, [stack.name], "\n".join([message, *result.tail[-10:]]), say)
            return
        say(f"built {reference} in {result.seconds:.0f} s")
    context.digests[stack.name] = engine.inspect_digest(reference)
