"""A real campaign in blocks: what each stored run carries for the analysis to pair launches on (round, block,
position), the machine's state around its launch, and the extra baseline launches found again by --resume."""

from __future__ import annotations

import shutil
import sqlite3

import pytest

from tests.helpers import campaign_file, mpistack

needs_mpich = pytest.mark.skipif(shutil.which("mpiexec.mpich") is None, reason="Debian's mpich not installed")

# Three variants of the host's MPI natively, each compared with its plain runs: per round, the blocks
# a S b and S c (in some order and orientation), so the plain case runs twice a round.
PAIRED = """
approaches = ["native"]
benchmarks = ["latency"]
benchmark_options = ["-m", "1:64", "-i", "20", "-x", "2"]
repeats = 2
seed = 4
[[stack]]
name = "host-mpich"
host = "mpich"
""" + "".join(f'[[variant]]\nname = "{name}"\nenv = {{ MPIR_CVAR_NOLOCAL = "0" }}\napproaches = ["native"]\n'
              for name in "abc")


def stored_tags(db) -> list[dict[str, str]]:
    with sqlite3.connect(db) as connection:
        ids = [run_id for (run_id,) in connection.execute("SELECT id FROM runs ORDER BY id")]
        return [dict(connection.execute("SELECT key, value FROM run_tags WHERE run_id = ?", (run_id,)))
                for run_id in ids]


@needs_mpich
def test_a_campaign_in_blocks_stores_what_pairs_launches_and_the_machine_around_each(tmp_path):
    db = tmp_path / "p.db"
    path = campaign_file(tmp_path, PAIRED)
    mpistack("run", path, "--db", db)
    runs = stored_tags(db)
    assert len(runs) == 10  # 4 cases a round, the plain one twice
    keys = [run["case"] for run in runs]
    assert len(set(keys)) == 10 and sum(key.endswith("/launch2") for key in keys) == 2
    assert [run["position"] for run in runs] == [str(position) for position in range(1, 11)]
    assert all(run["round"] == run["repeat"] for run in runs)
    assert "previous_case" not in runs[0]
    assert [run["previous_case"] for run in runs[1:]] == keys[:-1]
    for index, run in enumerate(runs):
        if run["variant"] == "default":
            continue
        # a variant's launch has a plain launch beside it, in its round and block
        beside = [runs[at] for at in (index - 1, index + 1) if 0 <= at < len(runs)]
        assert any(other["variant"] == "default" and (other["round"], other["block"]) == (run["round"], run["block"])
                   for other in beside), keys
    for run in runs:
        assert int(run["runnable_before"]) >= 1 and int(run["runnable_after"]) >= 1
        assert 0 <= float(run["steal_share"]) <= 1 and int(run["steal_ticks"]) >= 0
        assert 0 <= int(run["settle_ms"]) <= 2500 and run["settle_gave_up"] in ("yes", "no")
    resumed = mpistack("run", path, "--db", db, "--resume").stdout
    assert "0 case(s) to run, 10 already done" in resumed
