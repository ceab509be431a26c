"""Two campaigns of one name, run at once into two stores (one store per experiment, or two people on one
login node), never touch each other: each has its own work directory (keyed by its store and campaign id),
neither ends the other's cases, and each store holds only its own measurements. Real processes, the real
command line, Debian's MPICH."""

from __future__ import annotations

import os
import shutil
import sqlite3
import stat
import subprocess

import pytest

from tests.helpers import HOST_MPICH_ONE_RANK, MPISTACK, campaign_file, plain_environment

pytestmark = pytest.mark.skipif(shutil.which("mpiexec.mpich") is None, reason="Debian's mpich not installed")

CASES = 6
# each launch prints its own figure (its pid), so a store holding the other's output would show it
PROGRAM = """#!/bin/sh
sleep 0.3
printf '# OSU MPI Latency Test v7.5\\n# Size       Avg Latency(us)\\n1 %s.5\\n' "$$"
echo "$$" >> "{log}"
"""


def test_two_campaigns_of_one_name_in_two_stores_at_once_keep_apart(tmp_path):
    benchmarks = ""
    for store in ("a", "b"):
        script = tmp_path / f"bench-{store}.sh"
        script.write_text(PROGRAM.format(log=tmp_path / f"pids-{store}"))
        script.chmod(0o755)
    for number in range(CASES):
        benchmarks += f'[[benchmark]]\nname = "b{number}"\nprogram = "{tmp_path}/bench-STORE.sh"\n'
    env = {**plain_environment(), "XDG_CACHE_HOME": str(tmp_path / "cache"), "MPISTACK_BOUNDS": "off"}
    env.pop("MPISTACK_DB", None)
    runners = {}
    for store in ("a", "b"):
        directory = tmp_path / store
        directory.mkdir()
        path = campaign_file(directory, 'order = "matrix"\n' + HOST_MPICH_ONE_RANK
                             + benchmarks.replace("STORE", store), name="local")
        runners[store] = subprocess.Popen([*MPISTACK, "run", str(path), "--db", str(tmp_path / f"{store}.db")],
                                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                                          cwd=directory)
    outputs = {store: runner.communicate(timeout=900)[0] for store, runner in runners.items()}
    for store, runner in runners.items():
        output = outputs[store]
        assert runner.returncode == 0, output
        assert "ended what an earlier run left" not in output  # what the other ran was never ended
        with sqlite3.connect(tmp_path / f"{store}.db") as connection:
            statuses = connection.execute("SELECT status, count(*) FROM runs GROUP BY status").fetchall()
            figures = {int(value) for (value,) in connection.execute("SELECT value FROM results")}
        assert statuses == [("ok", CASES)], output
        own = {int(line) for line in (tmp_path / f"pids-{store}").read_text().split()}
        assert figures == own  # every figure is one its own benchmark printed, none the other's
    work = tmp_path / "cache" / "mpistack" / "work"
    assert not any(work.iterdir())  # each removed its own, and only its own, when it ended well
    assert stat.S_IMODE(os.stat(work).st_mode) == 0o700
