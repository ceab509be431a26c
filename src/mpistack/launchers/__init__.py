"""Launchers: start a planned case, wait for it with a limit, kill it and what it started, clean up.
Each registers itself in LAUNCHERS; a campaign names one with `launcher = "..."`."""

from __future__ import annotations

from .base import Execution, Launcher, LaunchPlan, PerRankStart, RankStarter, recorded_environment
from .local import LocalLauncher
from .slurm import SlurmLauncher

__all__ = ["Execution", "LaunchPlan", "Launcher", "LocalLauncher", "PerRankStart", "RankStarter", "SlurmLauncher",
           "recorded_environment"]
