"""The Slurm launcher's pure parts: srun lines per MPI family and placement, the sbatch script (golden,
and run by bash with hostile values), the [slurm] table and the user's defaults, what a case left behind,
and the job states squeue prints."""

from __future__ import annotations

import os
import shlex
import subprocess
from pathlib import Path

import pytest

from mpistack.launchers.batch import BatchCase, JobState, read_case, started
from mpistack.launchers.slurm import (Srun, parse_mpi_plugins, _parse_states, render_script, settings, step_env,
                                      time_limit)
from mpistack.spec.campaign import CampaignError, Placement, SlurmEntry, load_campaign_text

SRUN = Srun()

CAMPAIGN = """
name = "c"
launcher = "slurm"
approaches = ["native"]
benchmarks = ["latency"]
[[stack]]
name = "host-mpich"
host = "mpich"
"""


@pytest.mark.parametrize("mpi, placement, expected", [
    ("mpich", Placement(ranks=2, nodes=2, ranks_per_node=1),
     "srun --mpi=pmi2 --nodes=2 --ntasks=2 --ntasks-per-node=1 --cpu-bind=none --kill-on-bad-exit=1"),
    ("openmpi", Placement(ranks=4, nodes=2, binding="core"),
     "srun --mpi=pmix --nodes=2 --ntasks=4 --ntasks-per-node=2 --cpu-bind=cores --kill-on-bad-exit=1"),
    # 3 ranks on 2 nodes do not divide: Slurm distributes them
    ("mpich", Placement(ranks=3, nodes=2, binding="socket"),
     "srun --mpi=pmi2 --nodes=2 --ntasks=3 --cpu-bind=sockets --kill-on-bad-exit=1"),
])
def test_srun_lines(mpi, placement, expected):
    assert shlex.join(SRUN.ranks(mpi, placement)) == expected


def test_per_rank_containers_keep_the_pmi_socket():
    start = SRUN.ranks_in_containers("mpich", Placement(ranks=2, nodes=2))
    assert start.preserve_fds == 1
    assert start.argv[:2] == ["srun", "--mpi=pmi2"]
    shim = start.argv[start.argv.index("-c") + 1]
    assert shim == 'exec 3>&"$PMI_FD" {PMI_FD}>&-; PMI_FD=3 exec "$@"'


def test_the_shim_moves_the_descriptor_to_3(tmp_path):
    """What srun's PMI-2 plug-in hands a rank (a socket at $PMI_FD) is descriptor 3 in the command."""
    start = SRUN.ranks_in_containers("mpich", Placement())
    shim = start.argv[start.argv.index("bash"):]
    probe = ["bash", "-c", 'echo "$PMI_FD"; [ -e /proc/self/fd/3 ] && echo open; [ -e /proc/self/fd/9 ] || echo moved']
    out = subprocess.run(["bash", "-c", 'exec 9</dev/null; PMI_FD=9 exec "$@"', "outer", *shim, *probe],
                         capture_output=True, text=True, check=True).stdout.split()
    assert out == ["3", "open", "moved"]


def test_one_task_asks_a_cpu_per_rank():
    assert SRUN.one_task(Placement(ranks=4)) == ["srun", "--nodes=1", "--ntasks=1", "--cpus-per-task=4",
                                                 "--cpu-bind=none"]


def test_pmix_steps_set_the_cscs_settings():
    assert step_env("openmpi") == {"PMIX_MCA_psec": "native", "PMIX_MCA_gds": "hash"}
    assert step_env("mpich") == {}


GOLDEN = """\
#!/bin/bash
# Written by mpistack: campaign c, job 1.
# Runs 1 case(s) one after another, each under its own time limit, each in a directory of its own:
# `started` (job, step, time, partition, nodes), `stdout`, `stderr`, then `exit` (status, time), written last.
#SBATCH --job-name=mpistack-c-1-1
#SBATCH --nodes=2
#SBATCH --time=3
#SBATCH --no-requeue
#SBATCH --output=/shared/c/mpistack-c-1-1.out
#SBATCH --exclusive
#SBATCH --account=proj-1
#SBATCH --partition=debug
#SBATCH --qos=high
#SBATCH --gres=gpu:4

set -u
"""


def test_golden_sbatch_header():
    table = SlurmEntry(account="proj-1", partition="debug", qos="high", sbatch_options=["--gres=gpu:4"])
    case = BatchCase(Path("/shared/c/case"), 60, ["srun", "--mpi=pmi2", "bench"], {"UCX_TLS": "tcp"})
    script = render_script("mpistack-c-1-1", 2, Path("/shared/c/mpistack-c-1-1.out"), [case], table,
                           title="campaign c, job 1")
    assert script.startswith(GOLDEN)
    assert ("mpistack_case /shared/c/case 60 '' \\\n    env UCX_TLS=tcp \\\n    srun --mpi=pmi2 bench\n"
            in script)


HOSTILE = ["a'b", 'say "hi"', "$(touch {canary})", "`touch {canary}`", "two\nlines", "semi; touch {canary}", "*"]


def _run_script(script: str, tmp_path: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    path = tmp_path / "job.sh"
    path.write_text(script)
    return subprocess.run(["bash", str(path)], env={**os.environ, "SLURM_JOB_ID": "42", "SLURM_JOB_NODELIST":
                                                    "node[1-2]", "SLURM_JOB_PARTITION": "debug", **(env or {})},
                          capture_output=True, text=True, timeout=60)


def test_hostile_values_reach_the_command_unchanged(tmp_path):
    """Run the script with bash (no Slurm needed: the command is printf): every value arrives as one
    argument, byte for byte, and nothing in it is executed."""
    canary = tmp_path / "canary"
    values = [value.format(canary=canary) for value in HOSTILE]
    directory = tmp_path / "case dir"  # a space in the path, too
    cases = [BatchCase(directory, 30, ["printf", "%s\\0", *values], {"HOSTILE": values[2]})]
    script = render_script("job", 1, tmp_path / "job.out", cases, SlurmEntry())
    proc = _run_script(script, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (directory / "stdout").read_text().split("\0")[:-1] == values
    assert not canary.exists()
    record = read_case(directory, {"UCX_TLS": "tcp", "HOME": "/root"}, 30)
    assert record.execution.exit_code == 0 and record.execution.environment == {"UCX_TLS": "tcp"}
    assert record.facts() == {"slurm_job_id": "42", "slurm_step_id": "0", "slurm_partition": "debug",
                              "slurm_nodes": "node[1-2]"}


def test_each_case_under_its_own_limit_and_ended_cases_skipped(tmp_path):
    output = tmp_path / "stale.json"
    output.write_text("{}")  # what an earlier run left
    cases = [BatchCase(tmp_path / "hang", 1, ["sleep", "30"], {}, output),
             BatchCase(tmp_path / "fails", 10, ["bash", "-c", "echo oops >&2; exit 3"], {}),
             BatchCase(tmp_path / "done", 10, ["touch", str(tmp_path / "ran-again")], {})]
    (tmp_path / "done").mkdir()
    (tmp_path / "done" / "exit").write_text("0 1700000000.5\n")
    proc = _run_script(render_script("job", 1, tmp_path / "job.out", cases, SlurmEntry()), tmp_path)
    assert proc.returncode == 0, proc.stderr
    hang = read_case(tmp_path / "hang", {}, 1)
    assert hang.execution.timed_out and hang.execution.exit_code is None
    assert not output.exists()
    fails = read_case(tmp_path / "fails", {}, 10)
    assert fails.execution.exit_code == 3 and fails.execution.stderr == "oops\n"
    # the batch node's steal time and runnable processes around the case, as the local launcher records them
    assert {"runnable_before", "runnable_after", "steal_ticks", "steal_share"} <= set(fails.execution.facts)
    assert started(tmp_path / "fails").step_id == "1"
    assert not (tmp_path / "ran-again").exists()


def test_a_case_without_exit_file_has_not_ended(tmp_path):
    (tmp_path / "started").write_text("7 0 1700000000.0 debug node1\n")
    assert read_case(tmp_path, {}, 60) is None
    assert started(tmp_path).job_id == "7"


def test_a_step_srun_killed_at_once_is_a_failure_not_a_timeout(tmp_path):
    """srun ends a step with 137 when it killed the other tasks of a rank that aborted (--kill-on-bad-exit):
    the status `timeout` gives when its limit ended a case, but after 0.2 s of a 60 s limit."""
    (tmp_path / "started").write_text("94 20 1700000000.2 debug node[1-2]\n")
    (tmp_path / "stderr").write_text("Fatal error in internal_Init\nsrun: error: node1: task 0: Killed\n")
    (tmp_path / "exit").write_text("137 1700000000.4\n")
    aborted = read_case(tmp_path, {}, 60).execution
    assert not aborted.timed_out and aborted.exit_code == 137
    (tmp_path / "exit").write_text("137 1700000070.3\n")  # killed 10 s after the TERM at 60 s
    hung = read_case(tmp_path, {}, 60).execution
    assert hung.timed_out and hung.exit_code is None
    assert started(tmp_path / "nowhere") is None


def test_time_limit_covers_every_case():
    cases = [BatchCase(Path("/x"), 60, ["true"], {})] * 10
    # 10 x (60 s + 10 s kill grace + 5 s) + 60 s = 810 s: 14 minutes, rounded up
    assert time_limit(cases, SlurmEntry()) == "14"
    assert time_limit(cases, SlurmEntry(time_limit="01:00:00")) == "01:00:00"


@pytest.mark.parametrize("table, field", [
    ('partition = "debug\\n#SBATCH --uid=0"', "slurm.partition"),
    ('account = "a b"', "slurm.account"),
    ('sbatch_options = ["--mem=0 --uid=0"]', "slurm.sbatch_options.0"),
    ('sbatch_options = ["mem=0"]', "slurm.sbatch_options.0"),
    ('time_limit = "an hour"', "slurm.time_limit"),
    ('workdir = "/shared/$(id)"', "slurm.workdir"),
    ('cases_per_job = 0', "slurm.cases_per_job"),
])
def test_bad_slurm_tables_name_the_field(table, field):
    with pytest.raises(CampaignError) as error:
        load_campaign_text(CAMPAIGN + "[slurm]\n" + table + "\n", "campaign.toml")
    assert "campaign.toml" in str(error.value) and field in str(error.value)


def test_slurm_table_needs_the_slurm_launcher():
    with pytest.raises(CampaignError, match="needs launcher"):
        load_campaign_text(CAMPAIGN.replace('launcher = "slurm"', "") + "[slurm]\npartition = \"debug\"\n")


def test_user_defaults_under_the_campaign_table(tmp_path, monkeypatch):
    defaults = tmp_path / "slurm.toml"
    defaults.write_text('account = "proj-1"\npartition = "normal"\n')
    monkeypatch.setenv("MPISTACK_SLURM_DEFAULTS", str(defaults))
    campaign = load_campaign_text(CAMPAIGN + '[slurm]\npartition = "debug"\n')
    merged = settings(campaign.slurm)
    assert (merged.account, merged.partition) == ("proj-1", "debug")
    assert settings(None).partition == "normal"
    defaults.write_text('acount = "typo"\n')
    with pytest.raises(ValueError, match=r"slurm\.toml.*acount"):
        settings(None)


def test_job_states_from_squeue():
    text = "12|PENDING|Resources|\n13|RUNNING|None|node[1-2]\n14|CANCELLED by 0|None|node1\n99|RUNNING|None|x\n"
    states = _parse_states(text, ["12", "13", "14"])
    assert states["12"] == JobState("12", "PENDING", "Resources", "")
    assert not states["13"].ended and states["14"].ended and states["14"].state == "CANCELLED"
    assert "99" not in states


@pytest.mark.parametrize("text, expected", [
    # Slurm 22.05 and later
    ("MPI plugin types are...\n\tpmix\n\tnone\n\tcray_shasta\n\tpmi2\n"
     "specific pmix plugin versions available: pmix_v4\n", {"pmix", "none", "cray_shasta", "pmi2", "pmix_v4"}),
    # older releases prefix every line
    ("srun: MPI types are...\nsrun: none\nsrun: pmi2\n", {"none", "pmi2"}),
])
def test_mpi_plugins_from_srun_list(text, expected):
    assert parse_mpi_plugins(text) == expected
