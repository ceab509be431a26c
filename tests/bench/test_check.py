"""mpistack-bench --check: a command line validated without MPI (what `mpistack run` asks before a
campaign launches anything). The binary runs as a plain command with a process-management address
that leads nowhere: MPI_Init would fail on it, so an answer proves MPI was never initialised."""
from __future__ import annotations

import subprocess

import pytest

from conftest import load_benchlib  # noqa: E402  (tests/bench/conftest.py)

lib = load_benchlib()
MPI_NAMES = ["mpich", "openmpi"]


def check(binary, *args) -> subprocess.CompletedProcess:
    # PMI_PORT (MPICH's simple PMI) and PMIX_SERVER_URI2 (Open MPI's PMIx) point at a closed port
    env = {**lib.bench_env(), "PMI_PORT": "127.0.0.1:1", "PMI_RANK": "0", "PMI_SIZE": "2",
           "PMIX_SERVER_URI2": "pmix-server.1;tcp4://127.0.0.1:1"}
    return subprocess.run([str(binary), *map(str, args)], capture_output=True, text=True, timeout=30,
                          env=env)


@pytest.mark.parametrize("mpi", MPI_NAMES)
def test_a_good_command_line_is_ok_without_mpi(builds, mpi):
    binary = builds(mpi)
    for args in (["--check", "latency", "-m", "1:1048576", "--stop", "ci:0.03", "--stop-min", "100", "H", "H"],
                 ["bw", "-W", "64", "--check"],
                 ["--suite", "latency,bw", "--check", "-i", "10"]):
        proc = check(binary, *args)
        assert (proc.returncode, proc.stderr) == (0, ""), args
        assert proc.stdout.startswith("ok: "), args
    assert check(binary, "--suite", "latency,bw", "--check").stdout == "ok: latency bw\n"


@pytest.mark.parametrize("mpi", MPI_NAMES)
def test_a_bad_command_line_says_why_with_status_2(builds, mpi):
    binary = builds(mpi)
    cases = {
        ("--check", "latency", "-m", "1:x"): "invalid message size '1:x'",
        ("--check", "bw", "--bogus"): "unknown option '--bogus'",
        ("--check", "latncy"): "unknown test 'latncy'",
        ("--check", "latency", "--stop", "ci:2"): "invalid stop rule 'ci:2'",
        ("--check", "latency", "--stop-min", "50", "--stop-max", "10"): "--stop-min is larger than --stop-max",
        ("--check", "bw", "--stop-check", "4"): "--stop-check compares a stop rule: give --stop ci:REL too",
        ("--check", "bw", "--stop", "ci:0.05", "--stop-check", "65"): "invalid --stop-check '65' (pairs, 1 to 64)",
        ("--check",): "no test given",
    }
    for args, message in cases.items():
        proc = check(binary, *args)
        assert proc.returncode == 2, args
        assert proc.stdout == ""
        # one line naming the problem, without the usage text a launch prints
        assert proc.stderr == f"mpistack-bench: error: {proc.stderr.split('error: ', 1)[1]}", args
        assert message in proc.stderr and proc.stderr.count("\n") == 1, (args, proc.stderr)


@pytest.mark.parametrize("mpi", ["mpich"])
def test_without_check_the_same_line_would_initialise_mpi(builds, mpi):
    """The control: the unreachable process manager makes a real start fail, so the tests above
    exercise the path that skips MPI_Init."""
    proc = check(builds(mpi), "latency", "-m", "1:1")
    assert proc.returncode != 0
    assert not proc.stdout.startswith("ok:")
