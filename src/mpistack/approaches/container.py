"""container: one container, the image's own launcher starts every rank inside it (self-contained)."""

from __future__ import annotations

from ..launchers import LaunchPlan
from ..registry import APPROACHES
from ..runtime import launch_command
from .base import Approach, benchmark_argv, container, container_plan, image_env


@APPROACHES.register("container", image=True)
class Container(Approach):
    def plan(self, case, resources, output, options, label) -> LaunchPlan:
        inner = launch_command(case.stack.spec, case.placement.ranks,
                               benchmark_argv(case, "mpistack-bench", output, options),
                               binding=case.placement.binding)
        run = container(case, resources, label, image_env(case, resources.host), inner)
        return container_plan(case, resources, resources.engine.run_argv(run), output, label, run)
