"""Deployment approaches, one module each, registered in APPROACHES with their capabilities:
`image` says whether the approach runs a stack's image (True) or the host's own MPI (False);
`mounts_host_libraries`, that it mounts host libraries into the image and puts them on LD_LIBRARY_PATH."""

from __future__ import annotations

from pathlib import Path

from ..launchers import LaunchPlan
from ..registry import APPROACHES
from ..spec.case import Case
from .base import Approach, HostFacts, Refused, Resources, Undecided
# each module registers its approach when imported, in this order
from .native import Native  # isort: skip
from .container import Container  # isort: skip
from .hybrid import Hybrid  # isort: skip
from .bind import Bind  # isort: skip
from .fabric_swap import FabricSwap  # isort: skip

__all__ = ["Approach", "Bind", "Container", "FabricSwap", "HostFacts", "Hybrid", "Native", "Refused", "Resources",
           "Undecided", "mount_points", "plan"]


def plan(case: Case, resources: Resources, output: Path | None, options: list[str], label: str) -> LaunchPlan:
    """How to run a case: raises Refused when the approach cannot run it (the reason is recorded)."""
    return APPROACHES.get(case.approach.name).plugin().plan(case, resources, output, options, label)


def mount_points(case: Case, resources: Resources) -> list[str]:
    """The host paths the case's containers get bound in; none when its approach refuses it here."""
    try:
        return APPROACHES.get(case.approach.name).plugin().mount_points(case, resources)
    except (Refused, Undecided):
        return []
