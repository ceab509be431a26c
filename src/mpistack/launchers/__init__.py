"""Launchers: start a planned case, wait for it with a limit, kill it and what it started, clean up.
Each registers itself in LAUNCHERS with what it can do (`can`: a LauncherCapabilities), how its ranks start
(`starter`) and how a campaign opens it (`open(campaign, resources, **session)`); a campaign names one with
`launcher = "..."`, and the campaign stage asks the registry, never a launcher class. Adding a launcher is one
module here and its import below."""

from __future__ import annotations

from ..registry import LAUNCHERS
from .base import Execution, Launcher, LauncherCapabilities, LaunchPlan, PerRankStart, RankStarter, recorded_environment
from .batch import BatchCase, BatchError, BatchScheduler, JobState
# each module registers its launcher when imported
from .local import LocalLauncher  # isort: skip
from .slurm import SlurmLauncher  # isort: skip

__all__ = ["BatchCase", "BatchError", "BatchScheduler", "Execution", "JobState", "LaunchPlan", "Launcher",
           "LauncherCapabilities", "LocalLauncher", "PerRankStart", "RankStarter", "SlurmLauncher", "capabilities",
           "recorded_environment"]


def capabilities(name: str) -> LauncherCapabilities:
    """What the launcher registered under `name` declares it can do."""
    return LAUNCHERS.get(name).can
