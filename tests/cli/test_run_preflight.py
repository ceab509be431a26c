"""`mpistack run` through the real command line, real MPICH and a real store: benchmark options that
mpistack-bench rejects stop the run before anything launches, a skip reason is said once however many
cases it skips, and the exit status tells a campaign in which no case ended ok (4) from one with some
failures (0)."""

from __future__ import annotations

import re
import shutil
import sqlite3
import textwrap
from pathlib import Path

import pytest

from tests.helpers import HOST_MPICH_ONE_RANK, campaign_file, mpistack, osu_program

pytestmark = pytest.mark.skipif(shutil.which("mpiexec.mpich") is None, reason="Debian's mpich not installed")


def stored(db: Path) -> list[tuple]:
    if not db.exists():
        return []
    with sqlite3.connect(db) as connection:
        return connection.execute("SELECT status FROM runs ORDER BY id").fetchall()


def test_rejected_benchmark_options_stop_the_run_before_anything_launches(tmp_path):
    db = tmp_path / "r.db"
    path = campaign_file(tmp_path, 'approaches = ["native"]\nbenchmark_options = ["-m", "1:64"]\n'
                         '[[stack]]\nname = "h"\nhost = "mpich"\n[[placement]]\nranks = 2\n'
                         '[[benchmark]]\nname = "latency"\n[[benchmark]]\nname = "bw"\noptions = ["-W", "x"]\n')
    refused = mpistack("run", path, "--db", db, home=tmp_path, check=2)
    said = " ".join(refused.stderr.split())
    assert f"{path}: benchmark.1.options: mpistack-bench rejects `bw -m 1:64 -W x H H`: invalid window size " \
           "'x'" in said
    assert "nothing was launched" in said and "Traceback" not in said
    assert stored(db) == []
    # the dry run warns with the same words, now that the run built an mpistack-bench to ask
    dry = " ".join(mpistack("run", path, "--dry-run", home=tmp_path).stdout.split())
    assert "warning: " + f"{path}: benchmark.1.options: mpistack-bench rejects" in dry


def test_a_skip_reason_is_said_once_and_partial_failure_exits_0(tmp_path):
    db = tmp_path / "r.db"
    body = textwrap.dedent(f"""\
        repeats = 3
        {HOST_MPICH_ONE_RANK}
        [[benchmark]]
        name = "fake"
        program = "{osu_program(tmp_path, 'bench')}"
        [[benchmark]]
        name = "broken"
        program = "/bin/false"
        [[benchmark]]
        name = "latency"
        """)
    result = mpistack("run", campaign_file(tmp_path, body), "--db", db, home=tmp_path)
    before_the_answer = result.stdout.split("campaign #1: ")[0]
    # three latency cases at one rank are skipped: the reason once, with its count, and no line per case
    assert before_the_answer.count("latency runs on exactly 2 ranks") == 1
    assert "[1] 3 skipped (h native): latency runs on exactly 2 ranks" in before_the_answer
    ended = [line for line in before_the_answer.splitlines() if re.match(r"\[\d+/9\] ", line)]
    assert len(ended) == 6 and not any(line.split()[1] == "skipped" for line in ended)
    assert "3 case(s) skipped, each reason said once above" in before_the_answer
    assert "3 run(s) not ok" in result.stdout  # the three /bin/false cases; the run still exits 0
    assert sorted(status for (status,) in stored(db)) == ["failed"] * 3 + ["ok"] * 3 + ["skipped"] * 3


def test_a_campaign_in_which_no_case_ended_ok_exits_4(tmp_path):
    db = tmp_path / "r.db"
    body = f'repeats = 2\n{HOST_MPICH_ONE_RANK}[[benchmark]]\nname = "broken"\nprogram = "/bin/false"\n'
    result = mpistack("run", campaign_file(tmp_path, body), "--db", db, home=tmp_path, check=4)
    assert "no case of campaign #1 ended ok" in " ".join(result.stderr.split())
    assert stored(db) == [("failed",), ("failed",)]
