"""container: one container, the image's own launcher starts every rank inside it."""

from __future__ import annotations

import os

from ..campaign.matrix import Case
from ..runtime import launch_command, presets
from .base import Context, Launch, benchmark_argv, container_run


def plan(case: Case, context: Context, output, options: list[str], label: str) -> Launch:
    spec = case.stack.spec
    image = context.images[case.stack.name]
    env = presets(spec, local_root=os.geteuid() == 0, gpu="D" in case.buffers).env
    inner = launch_command(spec, case.placement.ranks, benchmark_argv(case, "mpistack-bench", output, options))
    argv = [*container_run(context, case, image, label, env), *inner]
    confinement = "single-copy" if case.approach.single_copy else "default"
    return Launch(argv=argv, env=dict(os.environ) | context.engine.env(), output=output, label=label, image=image,
                  facts={"confinement": confinement})
