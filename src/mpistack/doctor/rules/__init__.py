"""The doctor's rules, one module per kind of subject; importing this package registers them all."""

from . import performance, plan, runs, stopped, system

__all__ = ["performance", "plan", "runs", "stopped", "system"]  # each module registers its rules when imported
