"""Deployment approaches, each a small module with one `plan(case, context, ...)` -> Launch."""

from __future__ import annotations

from pathlib import Path

from ..campaign.matrix import Case
from . import bind, container, hybrid, native
from .base import Context, Launch, Refused

__all__ = ["Context", "Launch", "Refused", "plan"]


def plan(case: Case, context: Context, output: Path | None, options: list[str], label: str) -> Launch:
    """How to run a case: raises Refused when the approach cannot run it (the reason is recorded)."""
    if case.approach.name == "native":
        return native.plan(case, context, output, options)
    module = {"container": container, "hybrid": hybrid, "bind": bind}[case.approach.name]
    return module.plan(case, context, output, options, label)
