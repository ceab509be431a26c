"""Building blocks, one per component and one per file (HPC Container Maker's model), each registered
in BLOCKS with its place in the build order and when it applies to a stack."""

from __future__ import annotations

from pathlib import Path

from ...registry import BLOCKS
from ...spec.stack import Stack
from .apt_mpi import AptMpiBlock
from .base import AUTOTOOLS, BUILD_BASE, DISTRO_BASE, STAGE, Block, Step, environment, fetch_context, fetch_lines, has_no_configure, render_lines, tristate
from .gdrcopy import GdrcopyBlock
from .libcxi import LibcxiBlock
from .libfabric import LibfabricBlock
from .mpich import MpichBlock
from .mpistack_bench import MpistackBenchBlock
from .openmpi import OpenmpiBlock
from .osu import OsuBlock
from .pip_mpi import PipMpiBlock
from .pmix import PmixBlock
from .ucx import UcxBlock
from .xpmem import XpmemBlock


def blocks_for(stack: Stack, versions_path: Path | None = None) -> list[Block]:
    """The building blocks of a stack, in build order."""
    chosen = sorted((entry for entry in BLOCKS if entry.applies(stack)), key=lambda entry: entry.order)
    return [entry.plugin(stack, versions_path) for entry in chosen]


__all__ = ["AUTOTOOLS", "BUILD_BASE", "DISTRO_BASE", "STAGE", "AptMpiBlock", "Block", "GdrcopyBlock", "LibcxiBlock",
           "LibfabricBlock", "MpichBlock", "MpistackBenchBlock", "OpenmpiBlock", "OsuBlock", "PipMpiBlock",
           "PmixBlock", "Step", "UcxBlock", "XpmemBlock", "blocks_for", "environment", "fetch_context",
           "fetch_lines", "has_no_configure", "render_lines", "tristate"]
