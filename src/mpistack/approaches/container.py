"""container: one container, the image's own launcher starts every rank inside it."""

from __future__ import annotations

from ..campaign.matrix import Case
from ..runtime import launch_command
from .base import Context, Launch, benchmark_argv, container_run, image_env, image_launch


def plan(case: Case, context: Context, output, options: list[str], label: str) -> Launch:
    inner = launch_command(case.stack.spec, case.placement.ranks,
                           benchmark_argv(case, "mpistack-bench", output, options))
    argv = [*container_run(context, case, context.images[case.stack.name], label, image_env(case)), *inner]
    return image_launch(case, context, argv, output, label)
