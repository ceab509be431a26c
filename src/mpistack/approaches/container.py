"""container: one container, the image's own launcher starts every rank inside it (self-contained)."""

from __future__ import annotations

from ..launchers import LaunchPlan
from ..registry import APPROACHES
from ..runtime import launch_command
from .base import Approach, Refused, benchmark_argv, container, container_plan, image_env, rank_starter


@APPROACHES.register("container", image=True)
class Container(Approach):
    def plan(self, case, resources, output, options, label) -> LaunchPlan:
        inner = launch_command(case.stack.spec, case.placement.ranks,
                               benchmark_argv(case, "mpistack-bench", output, options),
                               binding=case.placement.binding)
        if case.placement.nodes > 1:
            raise Refused(f"the container approach starts every rank inside one container, on one node; "
                          f"{case.placement.label} asks for {case.placement.nodes} nodes")
        run = container(case, resources, label, image_env(case, resources.host), inner)
        argv = resources.runtime_for(case).launch_argv(rank_starter(resources).one_task(case.placement), run)
        return container_plan(case, resources, argv, output, label, run)
