"""`mpistack run` of a sequential campaign through the real command line: bad budgets refused before anything
runs, the dry run's pilot and budget, and a real run in which settled rows stop launching while an open one
goes on with its baseline and the A/A control, the report saying the same."""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
from pathlib import Path

import pytest

from tests.helpers import HOST_MPICH_ONE_RANK, campaign_file, mpistack

needs_mpich = pytest.mark.skipif(shutil.which("mpiexec.mpich") is None, reason="Debian's mpich not installed")


def latency_program(directory: Path) -> Path:
    """OSU latency output scaled by $FACTOR (default 1), and by a random factor in 0.7-1.3 when $NOISY is set."""
    script = directory / "latency.sh"
    script.write_text(
        "#!/bin/sh\n"
        'echo "# OSU MPI Latency Test v7.5"\necho "# Size       Avg Latency(us)"\n'
        "awk -v f=\"${FACTOR:-1}\" -v noisy=\"${NOISY:-}\" -v seed=\"$$\" 'BEGIN { srand(seed);"
        " if (noisy != \"\") f = f * (0.7 + 0.6 * rand());"
        " for (size = 1; size <= 64; size *= 4) printf \"%d %.2f\\n\", size, (10 + size / 10) * f }'\n")
    script.chmod(0o755)
    return script


def latency_and_variants(tmp_path: Path) -> str:
    """The latency benchmark of latency_program and three variants: the A/A control, a row twice as slow
    (settled at the pilot's look) and a noisy one (open after it)."""
    return f"""
[[benchmark]]
name = "latency"
program = "{latency_program(tmp_path)}"
[[variant]]
name = "a-a"
control = true
env = {{ MPISTACK_CONTROL = "a-a" }}
approaches = ["native"]
[[variant]]
name = "slow"
env = {{ FACTOR = "2" }}
approaches = ["native"]
[[variant]]
name = "noisy"
env = {{ NOISY = "1" }}
approaches = ["native"]
"""


def sequential_campaign(tmp_path: Path, extra: str = "") -> Path:
    return campaign_file(tmp_path, f"""pilot = 6
repeats = 10
seed = 3
timeout = 30
{extra}""" + HOST_MPICH_ONE_RANK + latency_and_variants(tmp_path), name="seq")


def slurm_campaign(tmp_path: Path, design: str) -> Path:
    """A campaign of the host's MPICH under launcher = "slurm" with `design` (repeats, pilot, budget)."""
    return campaign_file(tmp_path, f"""launcher = "slurm"
{design}
approaches = ["native"]
benchmarks = ["latency"]
[[stack]]
name = "h"
host = "mpich"
""", name="b")


@pytest.mark.parametrize("budget, message", [("0", "--budget 0: expected a positive time"),
                                             ("soon", "--budget soon: expected a duration such as 15m")])
def test_a_bad_budget_is_refused_before_anything_runs(tmp_path, budget, message):
    result = mpistack("run", sequential_campaign(tmp_path), "--db", tmp_path / "s.db", "--budget", budget,
                      home=tmp_path, check=2)
    assert message in " ".join(result.stderr.split())
    assert not (tmp_path / "s.db").exists()


def test_the_dry_run_lists_the_pilot_and_prints_its_cost_beside_the_budget(tmp_path):
    result = mpistack("run", sequential_campaign(tmp_path), "--dry-run", "--budget", "15m", home=tmp_path)
    text = " ".join(result.stdout.split())
    assert "sequential: a pilot of 6 rounds for every case (30 launches" in text  # 4 cases, a baseline twice a round
    # with a budget, the looks are planned when the pilot's cost is known: the budget's reach, at most repeats
    assert ("then rounds for the cases of open rows only, up to the most rounds the budget reaches at the pilot's "
            "cost (planned when the pilot ends; at most 10); budget 15 min") in text
    assert "/r6" in text and "/r7" not in text  # the pilot's launches only


def test_the_dry_run_counts_the_pilot_beside_the_maximum_and_the_budget(tmp_path):
    result = mpistack("run", sequential_campaign(tmp_path), "--dry-run", "--budget", "15m", home=tmp_path)
    lines = result.stdout.splitlines()
    heading = next(index for index, line in enumerate(lines) if line.startswith("launches per stack and approach"))
    assert "pilot…most" in lines[heading]
    assert lines[heading + 2].split() == ["h", "30…50"]  # 5 launches a round: 6 rounds, at most 10
    assert "most: the maximum of 10 rounds; the budget, 15 min, may end them sooner" in lines[heading + 3]


def test_a_batch_launcher_with_a_budget_and_no_pilot_is_refused_naming_the_fix(tmp_path):
    """Under a batch launcher the budget decides whether the next stage is submitted: a fixed design is one
    stage, so its budget would stop nothing."""
    path = slurm_campaign(tmp_path, 'repeats = 4\nbudget = "5m"')
    for extra in (["--dry-run"], ["--db", str(tmp_path / "b.db")]):
        result = mpistack("run", path, *extra, home=tmp_path, check=2)
        text = " ".join(result.stderr.split())
        assert 'budget without pilot: under launcher = "slurm"' in text and "set pilot (e.g. pilot = 2)" in text


def test_a_batch_launcher_runs_a_sequential_campaign_in_its_dry_run(tmp_path):
    path = slurm_campaign(tmp_path, 'pilot = 2\nrepeats = 4\nbudget = "5m"')
    out = " ".join(mpistack("run", path, "--dry-run", home=tmp_path).stdout.split())
    assert "sequential: a pilot of 2 rounds for every case" in out and "budget 5 min" in out


@pytest.mark.slow
@needs_mpich
def test_settled_rows_stop_and_the_open_one_goes_on_with_its_baseline_and_the_control(tmp_path):
    db = tmp_path / "s.db"
    result = mpistack("run", sequential_campaign(tmp_path), "--db", db, "--budget", "10m", home=tmp_path)
    out = " ".join(result.stdout.split())
    assert "look after 6 rounds:" in out and "rounds 7–10:" in out
    # the pilot's cost left room for every round: the looks planned to repeats, and recorded with the campaign
    assert re.search(r"the pilot took \d+ s of the budget: looks planned after 6, 10 rounds", out), out
    with sqlite3.connect(db) as connection:
        assert json.loads(connection.execute("SELECT spec FROM campaigns").fetchone()[0])["planned_looks"] == [6, 10]
    with sqlite3.connect(db) as connection:
        launches = dict(connection.execute(
            "SELECT t.value, count(*) FROM runs r JOIN run_tags t ON t.run_id = r.id AND t.key = 'variant' "
            "GROUP BY t.value").fetchall())
    assert launches["slow"] == 6  # settled (Y) at the pilot's look: no more launches
    assert launches["default"] >= 10 and launches["a-a"] == 10  # the baseline and the control every round
    assert launches["noisy"] in (6, 10)  # goes on unless its own forecast says the maximum cannot settle it
    report = json.loads((tmp_path / "s-report" / "report.json").read_text())
    rows = {a["variant"]: a for a in report["answers"] if a["baseline"] == "system"}
    assert rows["slow"]["class"] == "(Y)" and rows["slow"]["look"] == 6 and rows["slow"]["launches"] == 6
    assert rows["a-a"]["class"] == "Y"
    # every report states the rule used: the looks' spent levels, not a fixed design's 90 % interval
    rule = "sequential: a class is decided at the first of the looks after 6, 10 rounds"
    assert report["settings"]["rule"].startswith(rule) and "99.53%, 90.46%" in report["settings"]["rule"]
    for name in ("report.md", "report.html"):
        text = " ".join((tmp_path / "s-report" / name).read_text().split())
        assert rule in text and "90% interval" not in text, name
    assert rule in out


def test_open_rows_are_said_once_per_reason_within_80_columns(monkeypatch):
    """Sixty rows stopped by one reason read as that reason once, then the rows, folded; no line wider than 80."""
    from rich.console import Console

    from mpistack.cli import run as run_cli

    console = Console(record=True, width=80)
    monkeypatch.setattr(run_cli, "out", console)
    control = "the control cannot resolve this on this machine (the A/A control is open)"
    unsettled = [(f"stack{n} container bw n2N1 H-H against system", control) for n in range(60)]
    unsettled.append(("pip-mpich hybrid latency n2N1 H-H against system", "budget: spent after 10 rounds"))
    run_cli._print_unsettled(unsettled)
    text = console.export_text()
    words = " ".join(text.split())  # the reason may be folded over two lines
    assert words.count(control) == 1 and text.count("budget: spent after 10 rounds") == 1
    assert "61 row(s) left open" in text and f"{control} (60):" in words
    assert f"and {60 - run_cli.SHOWN_UNSETTLED} more" in text and "pip-mpich hybrid latency" in text
    assert all(len(line) <= 80 for line in text.splitlines())


def stored_launches(db: Path) -> int:
    with sqlite3.connect(db) as connection:
        return connection.execute("SELECT count(*) FROM runs").fetchone()[0]


@pytest.mark.slow
@needs_mpich
def test_a_resumed_campaign_goes_on_with_what_is_left_of_its_budget(tmp_path):
    """The budget is the campaign's, not a session's: --resume counts the wall time the session before spent
    launching (its looks and the time between launches too), not only its launches' durations."""
    db, path = tmp_path / "s.db", sequential_campaign(tmp_path)
    script = tmp_path / "latency.sh"  # each launch at least 0.4 s
    script.write_text(script.read_text().replace("#!/bin/sh\n", "#!/bin/sh\nsleep 0.4\n", 1))
    first = mpistack("run", path, "--db", db, "--budget", "6s", home=tmp_path, check=None)
    assert "the budget is spent: no more launches" in " ".join(first.stdout.split())
    ran = stored_launches(db)
    assert 0 < ran < 30  # the pilot cut short
    with sqlite3.connect(db) as connection:
        spent_seconds = connection.execute("SELECT sum((julianday(finished_at) - julianday(started_at)) * 86400) "
                                           "FROM runs").fetchone()[0]
    assert spent_seconds >= 0.4 * ran  # at least 0.4 s a launch

    smaller = f"{spent_seconds / 2:.2f}"  # seconds: less than the stored launches took
    spent = mpistack("run", path, "--db", db, "--budget", smaller, "--resume", home=tmp_path, check=2)
    assert "the budget is spent: the sessions before took" in " ".join(spent.stderr.split())
    assert stored_launches(db) == ran  # a fresh budget would have launched again

    more = mpistack("run", path, "--db", db, "--budget", "1h", "--resume", home=tmp_path, check=None)
    text = " ".join(more.stdout.split())
    # the first session's wall time, not only its launches': it launched until its 6 s were spent
    counted = re.search(r"the budget: (\d+) s of 60 min spent by the sessions before \(from the start of their "
                        r"launches to their last stored one\); 59 min left", text)
    assert counted and 6 <= int(counted.group(1)) and int(counted.group(1)) >= spent_seconds - 0.5, text
    assert stored_launches(db) > ran
