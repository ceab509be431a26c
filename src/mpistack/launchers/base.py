"""What a launcher is handed (a LaunchPlan, made by an approach) and what it hands back (an Execution)."""

from __future__ import annotations

import codecs
import os
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Protocol

from ..cache import UnsafePath, open_regular_file
from ..spec.campaign import Placement

#: how much of a case's stdout and of its stderr is kept in memory (the whole output is in a file): its head
#: and its tail, half each, enough for messages, failure reasons and the doctor's signatures
OUTPUT_CAP_BYTES = 1 << 20

# Settings that change how MPI communicates: recorded with every run, as they were when it ran.
RECORDED_ENV_PREFIXES = ("FI_", "UCX_", "MPIR_CVAR_", "MPICH_", "OMPI_MCA_", "PMIX_MCA_", "I_MPI_", "LD_LIBRARY_PATH")


@dataclass(frozen=True)
class LaunchPlan:
    """The exact command of one case: what a dry run prints is what the launcher executes."""

    argv: list[str]
    env: dict[str, str]  # set on top of the launcher's own environment
    output: Path | None  # JSON the benchmark writes (None: its standard output is OSU text)
    label: str | None = None  # label on every container of the case, to find and remove them
    image: str | None = None
    facts: dict[str, str] = field(default_factory=dict)  # recorded with the run (confinement, bound MPI)


@dataclass(frozen=True)
class Execution:
    """How one launch went. exit_code is None when it did not end by itself (timeout or interrupt)."""

    exit_code: int | None
    timed_out: bool
    interrupted: bool
    stdout: str
    stderr: str
    started: datetime
    finished: datetime
    environment: dict[str, str]  # the RECORDED_ENV_PREFIXES settings it ran with
    facts: dict[str, str] = field(default_factory=dict)  # recorded with the run (how its processes were contained)
    # The files holding the whole outputs (None: the strings are all there is), and whether the strings
    # are cut (a head and a tail of a larger file, see `read_capped`)
    stdout_file: Path | None = None
    stderr_file: Path | None = None
    stdout_cut: bool = False
    stderr_cut: bool = False

    @property
    def seconds(self) -> float:
        return (self.finished - self.started).total_seconds()


@dataclass(frozen=True)
class LauncherCapabilities:
    """What a launcher declares with its registration (LAUNCHERS, `can=`): the campaign stage and the
    approaches ask these instead of naming launchers."""

    batch: bool  # its cases run in batch jobs (a BatchScheduler, launchers/batch.py), not one by one here
    max_nodes: int | None  # None: as many as the cluster has
    per_rank_containers: bool  # its rank starter can start one container per rank (hybrid, bind)
    pmi: tuple[str, ...]  # the process-management interfaces its ranks can wire up through: pmi2, pmix


@dataclass(frozen=True)
class PerRankStart:
    """How a launcher starts one container per rank: the command before the container's, how many file
    descriptors (from 3 on) the container must keep for the ranks to reach the process manager, and whether
    that command is the process manager itself (mpirun's PMIx server; srun's is slurmstepd's, on the node)."""

    argv: list[str]
    preserve_fds: int = 0
    serves_pmix: bool = False


class RankStarter(Protocol):
    """How a launcher starts the ranks of a case; the approaches build their command lines with it."""

    def ranks(self, mpi: str, placement: Placement, program: str | None = None) -> list[str]:
        """The command that starts placement.ranks ranks of an MPI of this family (`program`: a wheel's own
        mpiexec, where the launcher uses one)."""

    def ranks_in_containers(self, mpi: str, placement: Placement) -> PerRankStart:
        """The command that starts one container per rank, the process manager outside them."""

    def one_task(self, placement: Placement) -> list[str]:
        """The command that starts one process with room for every rank on one node (a container whose own
        mpiexec starts the ranks); empty where nothing is needed."""


class Launcher(Protocol):
    def execute(self, plan: LaunchPlan, timeout: float, ranks: int | None = None) -> Execution:
        """Run the plan to its end, or kill it with everything it started after `timeout` seconds. `ranks`
        (a timed case's processes): wait for a quiet machine first (launchers/machine.py)."""

    def interrupt(self) -> None:
        """Stop the running launch now (Ctrl-C); its Execution says interrupted."""


def read_capped(path: Path, cap: int = OUTPUT_CAP_BYTES) -> tuple[str, bool]:
    """A case's output file as text (undecodable bytes replaced), and whether it was cut: a file larger than
    `cap` bytes gives its first and last cap/2 bytes, cut at line ends, with a line between them saying
    how much was left out and where the whole output is. A missing file is empty, and so is one that is
    not a regular file (a link the case made to a file of the host's is never read)."""
    try:
        with os.fdopen(open_regular_file(path), "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            if size <= cap:
                return handle.read().decode(errors="replace"), False
            head = handle.read(cap // 2)
            handle.seek(size - cap // 2)
            tail = handle.read()
    except (FileNotFoundError, UnsafePath):
        return "", False
    # whole lines only, unless a line is longer than half the cap
    head = head[: head.rfind(b"\n") + 1] or head
    tail = tail[tail.find(b"\n") + 1:] or tail
    left_out = size - len(head) - len(tail)
    marker = f"[… {left_out:,} bytes of {path.name} cut here; the whole output is in {path} …]\n"
    # a character the cut splits at the head's end is dropped, not replaced
    head_text = codecs.getincrementaldecoder("utf-8")(errors="replace").decode(head)
    return head_text + marker + tail.decode(errors="replace"), True


def captured_outputs(directory: Path, cap: int = OUTPUT_CAP_BYTES) -> dict:
    """The output fields of an Execution for a case that wrote `stdout` and `stderr` files in `directory`
    (the layout of both launchers)."""
    fields: dict = {}
    for name in ("stdout", "stderr"):
        path = directory / name
        fields[name], fields[f"{name}_cut"] = read_capped(path, cap)
        fields[f"{name}_file"] = path
    return fields


def recorded_environment(env: dict[str, str]) -> dict[str, str]:
    return {key: value for key, value in env.items() if key.startswith(RECORDED_ENV_PREFIXES)}
