"""Helpers shared by the tests: the real command line in a process of its own, small campaign files, a program
that prints OSU output, and the processes a test marked (to prove that none outlived what should end them)."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest

from mpistack.engines.containment import cgroup_parent
from mpistack.launchers.base import Execution

MPISTACK = [sys.executable, "-m", "mpistack.cli"]
OSU_LATENCY = "# OSU MPI Latency Test v7.5\n# Size       Avg Latency(us)\n1                       1.50\n2                       1.60\n"
# one rank of Debian's MPICH on the host, the campaign's body for tests whose benchmark is a program of their own
HOST_MPICH_ONE_RANK = 'approaches = ["native"]\n[[stack]]\nname = "h"\nhost = "mpich"\n[[placement]]\nranks = 1\n'


def plain_environment() -> dict[str, str]:
    """This process's environment without a terminal width, for commands whose output is piped to a test."""
    return {key: value for key, value in os.environ.items() if key not in ("COLUMNS", "LINES")}


def mpistack(*args, home: Path | None = None, check: int | None = 0, timeout: float = 900
             ) -> subprocess.CompletedProcess:
    """Run `mpistack ARGS` as a user does; assert its exit status is `check` (None: any). With `home`, the run
    is kept to that directory: its cache (work directories, journals) is there, it is the working directory,
    tables are wide enough not to wrap, and the store is only the one named by --db."""
    # (an explicit environment: pytest's process may carry a COLUMNS that os.environ does not show, set by
    # readline, and piped tables honour COLUMNS)
    env = plain_environment()
    if home is not None:
        env = {**env, "XDG_CACHE_HOME": str(home / "cache"), "COLUMNS": "250"}
        env.pop("MPISTACK_DB", None)
    result = subprocess.run([*MPISTACK, *map(str, args)], capture_output=True, text=True, env=env, cwd=home,
                            timeout=timeout)
    if check is not None:
        assert result.returncode == check, f"{args}:\n{result.stdout}\n{result.stderr}"
    return result


def campaign_file(directory: Path, body: str, name: str = "t") -> Path:
    """`NAME.toml` in `directory`: the campaign called `name` with `body` after its name."""
    path = directory / f"{name}.toml"
    path.write_text(f'name = "{name}"\n' + body)
    return path


def osu_program(directory: Path, name: str, before: str = "") -> Path:
    """A program `NAME.sh` printing OSU latency output, after running `before` (shell)."""
    output, script = directory / f"{name}.txt", directory / f"{name}.sh"
    output.write_text(OSU_LATENCY)
    script.write_text(f"#!/bin/sh\n{before}\ncat '{output}'\n")
    script.chmod(0o755)
    return script


def execution(**how) -> Execution:
    """A launch that ended by itself with status 0 and no output, but for `how`."""
    now = datetime.now(timezone.utc)
    return Execution(**{"exit_code": 0, "timed_out": False, "interrupted": False, "stdout": "", "stderr": "",
                        "started": now, "finished": now, "environment": {}, **how})


# Both ways a job is contained: a cgroup of its own, and the variable used where none can be made
HAS_CGROUPS = cgroup_parent()[0] is not None
CONTAINMENT = [pytest.param(True, id="cgroup", marks=pytest.mark.skipif(not HAS_CGROUPS, reason=cgroup_parent()[1])),
               pytest.param(False, id="environment")]


def new_marker() -> str:
    """A word to put in the argv or environment of a test's processes, to find them later."""
    return f"mpistack-test-{secrets.token_hex(6)}"


def processes_with(marker: str) -> dict[int, int]:
    """pid -> session of every live process whose argv or environment carries `marker`."""
    found = {}
    needle = marker.encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            text = (entry / "cmdline").read_bytes() + (entry / "environ").read_bytes()
            stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if needle in text and stat[0] != "Z":
            found[int(entry.name)] = int(stat[3])
    return found
