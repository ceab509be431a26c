"""benchmarks/agreement.py: stored launches cut into rounds, replayed sets of disjoint consecutive rounds judged by
the product's own answers, the five targets with their Wilson intervals, and bad input as usage errors. A real
SQLite store filled by the real writer; one slow test runs a small real campaign."""

from __future__ import annotations

import importlib.util
import math
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import binomtest

from mpistack.analysis.answers import Settings
from mpistack.parsers.model import ParsedRow, ParsedRun
from mpistack.spec.provenance import Provenance
from mpistack.store import open_database
from mpistack.store.campaigns import start_campaign
from mpistack.store.writer import write_runs
from tests.analysis.synthetic import latency_curve
from tests.helpers import mpistack

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "agreement.py"
SIZES = [1, 4, 16, 64, 16384, 65536]  # small and mid messages (SizeRanges: small below 8 KiB)
SPEC = {"variant": [{"name": "a-a", "env": {"MPISTACK_CONTROL": "1"}, "control": True},
                    {"name": "tcp", "env": {"FI_PROVIDER": "tcp", "MPIR_CVAR_NOLOCAL": "1"}}]}
#: (stack, approach, variant, origin, how much slower than the system MPI)
CASES = [("host-mpich", "native", "default", "host", 1.0), ("host-mpich", "native", "a-a", "host", 1.0),
         ("pip-mpich", "container", "default", "image", 2.0), ("pip-mpich", "container", "tcp", "image", 5.0)]


@pytest.fixture(scope="module")
def agreement():
    spec = importlib.util.spec_from_file_location("agreement", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up while being made
    spec.loader.exec_module(module)
    yield module
    del sys.modules[spec.name]


def record_rounds(engine, rounds: int, seed: int) -> int:
    """A campaign of ``rounds`` rounds, each one latency launch of every case in CASES tagged with its repeat, as
    a local campaign records them; figures with 2% log-normal noise."""
    campaign_id = start_campaign(engine, "local", SPEC)
    rng = np.random.default_rng(seed)
    for repeat in range(1, rounds + 1):
        for stack, approach, variant, origin, slower in CASES:
            run = ParsedRun(benchmark="latency", title="latency", units={"latency": "us"},
                            rows=[ParsedRow(size, {"latency": latency_curve(size) * slower * rng.lognormal(0, 0.02)})
                                  for size in SIZES])
            with engine.begin() as connection:
                write_runs(connection, [run], source="synthetic", campaign_id=campaign_id,
                           provenance=Provenance(stack=stack, approach=approach, ranks=2, nodes=1, buffers="H-H"),
                           tags={"mpi": "mpich", "variant": variant, "origin": origin, "repeat": str(repeat),
                                 "case": f"{stack}/{approach}/{variant}"})
    return campaign_id


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """Two campaigns of 12 rounds each."""
    path = tmp_path_factory.mktemp("agreement") / "agreement.db"
    engine = open_database(str(path))
    for seed in (1, 2):
        record_rounds(engine, 12, seed)
    return path, engine


def test_variants_forcing_tcp_are_recognised_by_their_settings(agreement):
    assert agreement.forces_tcp({"FI_PROVIDER": "tcp", "MPIR_CVAR_NOLOCAL": "1"})
    assert agreement.forces_tcp({"OMPI_MCA_btl": "tcp,self"}) and agreement.forces_tcp({"UCX_TLS": "tcp"})
    assert not agreement.forces_tcp({"UCX_TLS": "tcp,sm"}) and not agreement.forces_tcp({"FI_PROVIDER": "shm"})
    assert not agreement.forces_tcp({"MPISTACK_CONTROL": "1"})


def test_launches_are_cut_into_rounds_in_time_order(agreement, store):
    _, engine = store
    launches = agreement.read_launches(engine, [1, 2])
    assert len(launches.rounds) == 24 and [len(one) for one in launches.campaigns] == [12, 12]
    assert launches.controls == {"a-a"} and launches.forced_tcp == {"tcp"}
    for number, one in enumerate(launches.rounds):
        runs = [launches.runs[run_id] for run_id in one]
        assert len(runs) == len(CASES)  # one launch of every case
        assert {run["tags"]["repeat"] for run in runs} == {str(number % 12 + 1)}
        assert {run["campaign"] for run in runs} == {1 + number // 12}
    ids = [run_id for one in launches.rounds for run_id in one]
    assert ids == sorted(ids)  # oldest round first


def test_a_replayed_campaign_takes_whole_consecutive_rounds_and_numbers_them_afresh(agreement, store):
    """Rounds 11 and 12 of the first campaign and 1 and 2 of the second: four rounds numbered 1 to 4, so that no
    two stored rounds share a number (launches are paired within a round)."""
    _, engine = store
    launches = agreement.read_launches(engine, [1, 2])
    window = launches.rounds[10:14]
    runs = agreement.replayed_runs(launches, window)
    assert set(runs) == {run_id for one in window for run_id in one}
    assert {run["campaign"] for run in runs.values()} == {agreement.REPLAY}
    numbers = {run_id: run["tags"]["repeat"] for run_id, run in runs.items()}
    assert [sorted({numbers[run_id] for run_id in one}) for one in window] == [["1"], ["2"], ["3"], ["4"]]
    rows = agreement.replayed_rows(launches, window)
    assert {row.launches for row in rows.values()} == {4}
    assert sorted(run for row in rows.values() for run in row.runs) == sorted(runs)  # every launch used once


def test_the_sets_of_a_replay_are_back_to_back_and_share_no_round(agreement):
    starts = agreement.replay_sets(24, 4, 3, 8)
    assert starts == [0, 2, 3, 5, 7, 9, 10, 12]  # evenly spread; the last set ends with the last round
    assert agreement.replay_sets(24, 8, 3, 8) == [0] and agreement.replay_sets(24, 9, 3, 8) == []
    assert agreement.replay_sets(24, 4, 3, 1) == [0]


def test_the_wilson_interval_is_scipys_and_takes_fractional_counts(agreement):
    for hits, trials in ((0, 12), (3, 40), (38, 40), (64, 64)):
        expected = binomtest(hits, trials).proportion_ci(confidence_level=0.95, method="wilson")
        assert agreement.wilson(hits, trials) == pytest.approx((expected.low, expected.high), abs=1e-12)
    low, high = agreement.wilson(1.5, 4.5)
    assert 0 < low < 1.5 / 4.5 < high < 1


def test_a_target_is_met_by_its_figure_and_says_whether_its_interval_reaches_past(agreement):
    target = agreement.Target("T2", "A/A control rows called Y", 58, 60, low=0.90)
    assert target.met and target.describe().endswith("met, the interval reaches past it")  # [88.6%, 99.1%]
    assert agreement.Target("T2", "Y", 600, 600, low=0.90).describe().endswith(" met")
    missed = agreement.Target("T5", "inside", 60, 100, low=0.80, high=0.87)
    assert not missed.met and missed.describe().endswith("not met")
    assert "not measured: no A/A" in agreement.Target("T2", "x", 0, 0, missing="no A/A rows").describe()
    per_set = agreement.Target("T1", "contradicting", 1, 64, high=0.1 / 32, per_set=32)
    assert "0.50 per set" in per_set.describe() and not per_set.met


def test_a_set_is_counted_for_every_target(agreement, store):
    """The container twice as slow and the TCP variant five times as slow are (Y) in every run; the A/A control is
    never (Y); a loss injected into the control is found in the regime it was put in, and never called Y."""
    _, engine = store
    launches = agreement.read_launches(engine, [1, 2])
    runs = [launches.rounds[index * 8:(index + 1) * 8] for index in range(3)]
    settings = Settings()
    answers = agreement.judged(launches, runs, settings)
    tally = agreement.tally_set(launches, runs, answers, settings)
    assert tally["sets"] == 1 and tally["contradicting"] == 0
    assert tally["tcp"] == 3 and tally["tcp (Y)"] == 3
    assert tally["aa"] == 3 and tally["aa (Y)"] == 0
    assert tally["loss 20%"] == 3 * 2 and tally["loss 20% named"] == 6  # two regimes (small, mid) in 3 runs
    assert tally["loss Y"] == 0 and tally["loss"] == 12
    # three compared rows (the control, the container and its TCP variant against the system MPI), every size
    # of runs 2 and 3 against run 1's interval
    assert tally["rows"] == 3 and tally["reruns"] == 2 * 3 * len(SIZES)
    assert 0 < tally["inside"] <= tally["reruns"]
    assert tally["clear"] >= 2 and tally["clear same"] == tally["clear"]  # the two slow containers at least
    by_code = {}
    for target in agreement.targets(tally):
        by_code.setdefault(target.code, []).append(target)
    assert sorted(by_code) == ["T1", "T2", "T3", "T4", "T4r", "T5"]
    # the A/A control at 2 % noise resolves both regimes of latency: the two slower rows of each run are rows it
    # can resolve (the control itself is the yardstick, not counted), both decided
    assert tally["resolvable"] == 2 * 3 and tally["resolvable decided"] == 6
    assert by_code["T1"][0].met and by_code["T3"][0].met and by_code["T3"][1].met


def test_an_injected_loss_within_the_practical_floor_is_not_counted_against_t3(agreement, store):
    """With a floor in microseconds wider than any injected loss, Y is the right answer for every trial: they are
    counted apart, and T3 says why it has nothing to measure instead of reporting a miss."""
    from mpistack.analysis.statistics import PracticalFloor

    _, engine = store
    launches = agreement.read_launches(engine, [1, 2])
    runs = [launches.rounds[index * 8:(index + 1) * 8] for index in range(3)]
    settings = Settings(floor=PracticalFloor(0.10, 1000.0))
    tally = agreement.tally_set(launches, runs, agreement.judged(launches, runs, settings), settings)
    assert tally["loss within the floor"] == 12 and tally["loss"] == 0 and tally["loss Y"] == 0
    t3 = [target for target in agreement.targets(tally) if target.code == "T3" and "injected" in target.what]
    assert len(t3) == 3 and all(not target.trials and "within the practical floor" in target.missing for target in t3)


def _agreement(agreement, capsys, monkeypatch, path, *args) -> tuple[int, str, str]:
    """The command run in this process (exit status, stdout, stderr): starting Python and SciPy for each would
    cost seconds."""
    monkeypatch.setattr(sys, "argv", [str(SCRIPT), "--db", str(path), *args])
    try:
        agreement.main()
        status = 0
    except SystemExit as end:
        status = end.code
    out, err = capsys.readouterr()
    return status, out, err


def test_real_sets_and_replays_print_every_target(agreement, store, capsys, monkeypatch):
    path, _ = store
    status, out, err = _agreement(agreement, capsys, monkeypatch, path, "--campaigns", "1,2")
    assert status == 0, err
    assert "got the same class in all 2 runs" in out
    for code in ("T1", "T2", "T3", "T4", "T5"):
        assert f"  {code}  " in out
    status, out, err = _agreement(agreement, capsys, monkeypatch, path, "--replay", "4,9", "--trials", "2")
    assert status == 0, err
    assert "2 campaign(s), 24 rounds" in out
    assert "9  not replayed: a set of 3 runs needs 27 rounds" in out
    assert out.count("  T3  20% loss injected") == 1  # only the count that fits


def test_the_sequential_rule_is_replayed_beside_the_fixed_design(agreement, store, capsys, monkeypatch):
    """Each count replayed as the fixed design and under the sequential rule (the count the maximum), with the
    targets of both and what each spent: clear rows (a 2x and a 5x loss, an A/A at 2 % noise) settle at the
    pilot, so the sequential replay spends fewer launches and decides them alike."""
    path, _ = store
    status, out, err = _agreement(agreement, capsys, monkeypatch, path, "--replay", "8", "--trials", "1",
                                  "--sequential", "6")
    assert status == 0, err
    fixed, sequential = out.split("== sequential: pilot 6, looks after it and at the count ==")
    assert "fixed design, deciding interval 90%" in fixed and "a pilot of 6 rounds" in sequential
    for part in (fixed, sequential):
        for code in ("T1", "T2", "T3", "T4", "T5"):
            assert f"  {code}  " in part
    spent = [line for line in out.splitlines() if line.startswith("  launches spent:")]
    assert len(spent) == 2 and "(100%)" in spent[0] and "looks after 6, 8 rounds" in spent[1]
    # the A/A and its baseline every round, the rows settled at the pilot's look up to it
    assert "72 of the fixed design's 96 (75%)" in spent[1]
    classes = [line.split("0.00  ")[1] for line in out.splitlines() if line.startswith("       8  ")
               and "0.00  " in line]
    assert classes == ["Y 33%, (Y) 67%, ? 0%, N 0%"] * 2  # as many rows decided, alike
    # the two designs side by side: every row decided, where the control resolves too, and what each spent
    side = out.split("== side by side")[1].splitlines()
    assert [line.split() for line in side if line.startswith("       8")] == [
        ["8", "fixed", "100.0%", "100.0%", "100%", "none"], ["8", "sequential", "100.0%", "100.0%", "75%", "none"]]


def test_the_level_is_chosen_by_replay_among_those_that_meet_the_targets(agreement, store, capsys, monkeypatch):
    """Each level is replayed with its own deciding interval; the one chosen meets every replayed target and
    decides at least as many rows as any other that does."""
    path, _ = store
    status, out, err = _agreement(agreement, capsys, monkeypatch, path, "--replay", "4", "--trials", "2",
                                  "--levels", "0.8,0.9")
    assert status == 0, err
    assert "deciding interval 80%" in out and "deciding interval 90%" in out
    lines = {line.split(":")[0].strip(): line for line in out.splitlines() if line.startswith("  80%:")
             or line.startswith("  90%:")}
    assert set(lines) == {"80%", "90%"}
    decided = {level: float(line.split("decided ")[1].split("%")[0]) for level, line in lines.items()}
    meeting = [level for level, line in lines.items() if "met at every count" in line]
    chosen = out.split("chosen: ")[1].split()[0]
    if meeting:
        assert chosen in meeting and decided[chosen] == max(decided[level] for level in meeting)
    else:
        assert chosen == "none"


def test_bad_input_is_a_usage_error_naming_what_was_expected(agreement, store, capsys, monkeypatch):
    path, _ = store
    for args, message in ((["--campaigns", "1,99"], "no campaign 99 in the store (it holds 1, 2)"),
                          (["--campaigns", "2"], "expected at least 2 campaigns"),
                          (["--campaigns", ","], "expected whole numbers"),
                          (["--modes", "7"], "no campaign 7"), (["--replay", "0"], "at least 2"),
                          (["--replay", "9,12"], "expected at most 8 launches per case"),
                          (["--trials", "0", "--replay", "2"], "expected at least 1 set"),
                          (["--runs", "1"], "expected at least 2 runs"),
                          (["no-such.toml"], "no-such.toml: no such file; expected a campaign file"),
                          (["--floor", "2", "--campaigns", "1,2"], "expected a fraction"),
                          (["--levels", "0.9"], "expected --replay too"),
                          (["--replay", "4", "--levels", "1.5"], "expected comma-separated levels"),
                          (["--sequential", "4"], "expected a pilot of at least 2 rounds, with --replay"),
                          (["--replay", "4", "--sequential", "1"], "expected a pilot of at least 2 rounds")):
        status, _, err = _agreement(agreement, capsys, monkeypatch, path, *args)
        assert status == 2 and message in err, (args, err)


# up to 16 KiB: at 1 to 64 B (0.1-0.2 us) a 20% loss is within the floor in microseconds, which T3 counts apart;
# the mid-size regime's latencies make an injected loss one that matters
SMALL_CAMPAIGN = """name = "agreement-small"
repeats = 12
timeout = 60
approaches = ["native"]
benchmark_options = ["-m", "1:16384"]
benchmarks = ["latency"]
[[stack]]
name = "host-mpich"
host = "mpich"
[[stack]]
name = "host-openmpi"
host = "openmpi"
[[variant]]
name = "a-a"
env = { MPISTACK_CONTROL = "1" }
stacks = ["host-mpich"]
approaches = ["native"]
control = true
"""


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("mpiexec.mpich") is None or shutil.which("mpiexec.openmpi") is None,
                    reason="needs Debian's mpich and openmpi")
def test_a_small_real_campaign_is_replayed_with_its_control(tmp_path):
    """A real campaign (the host's MPICH and Open MPI natively and an A/A control, 12 rounds) replayed as sets of
    three campaigns of 4 launches: the control is found and judged, and its loss injected is looked for."""
    campaign = tmp_path / "small.toml"
    campaign.write_text(SMALL_CAMPAIGN)
    db = tmp_path / "small.db"
    mpistack("--db", db, "run", campaign, timeout=900)
    result = subprocess.run([sys.executable, str(SCRIPT), "--db", str(db), "--replay", "4"], capture_output=True,
                            text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    assert "1 campaign(s), 12 rounds" in result.stdout
    lines = {line.split("  ")[2].strip(): line for line in result.stdout.splitlines() if line.startswith("  T")}
    assert "not measured" not in lines["A/A control rows called Y"]
    assert "not measured" not in lines["20% loss injected in one regime: (Y) naming it"]
    assert "not measured: no variant forcing TCP" in lines["forced-TCP rows called (Y) (every run)"]
    assert math.isfinite(float(lines["A/A control rows called Y"].split("%")[0].split()[-1]))
