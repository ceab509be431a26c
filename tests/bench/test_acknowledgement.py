"""The acknowledgement that closes each bw and mbw_mr window is OSU 7.4's: one MPI_CHAR back, tag 101
(OSU Micro-Benchmarks 7.4, c/mpi/pt2pt/standard/osu_bw.c and osu_mbw_mr.c: `MPI_Send(s_buf[0], 1,
MPI_CHAR, 0, 101, ...)`). Seen from outside the binary: a profiling-interface (PMPI) library, preloaded,
reports every MPI_Send with tag 101."""
from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from conftest import load_benchlib  # noqa: E402  (tests/bench/conftest.py)

lib = load_benchlib()

SHIM = r"""
#include <mpi.h>
#include <stdio.h>
int MPI_Send(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm)
{
    if (tag == 101)
        fprintf(stderr, "ack count=%d char=%d\n", count, type == MPI_CHAR);
    return PMPI_Send(buf, count, type, dest, tag, comm);
}
"""


@pytest.fixture(scope="module")
def shim(tmp_path_factory):
    if shutil.which("mpicc.mpich") is None:
        pytest.skip("Debian's mpich not installed")
    directory = tmp_path_factory.mktemp("pmpi")
    (directory / "ack.c").write_text(SHIM)
    subprocess.run(["mpicc.mpich", "-shared", "-fPIC", "-o", str(directory / "ack.so"), str(directory / "ack.c")],
                   check=True, capture_output=True)
    return directory / "ack.so"


@pytest.mark.parametrize("test", ["bw", "mbw_mr"])
def test_each_window_ends_with_one_char_acknowledgement(builds, shim, test):
    binary = builds("mpich")
    env = {**lib.bench_env(), "LD_PRELOAD": str(shim)}
    proc = subprocess.run([*lib.MPIS["mpich"]["run"], "2", str(binary), test, "-m", "1:4", "-i", "3", "-x", "1"],
                          capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr
    acks = re.findall(r"^ack count=(\d+) char=(\d)$", proc.stderr, re.MULTILINE)
    # 3 sizes x (1 warm-up + 3 timed) windows, each closed by one acknowledgement
    assert len(acks) >= 3 * 4
    assert set(acks) == {("1", "1")}
