"""The doctor's rules, one module per kind of subject; importing this package registers them all."""

from . import outputs, performance, plan, runs, system

__all__ = ["outputs", "performance", "plan", "runs", "system"]  # each module registers its rules when imported
