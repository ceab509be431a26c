"""The doctor's rules, one module per kind of subject; importing this package registers them all."""

from . import outputs, performance, plan, runs, stopped, system  # isort: skip
from . import namespaces  # isort: skip  (after runs: its findings follow the run's own)

__all__ = ["namespaces", "outputs", "performance", "plan", "runs", "stopped", "system"]  # each module registers its rules when imported
