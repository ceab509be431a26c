"""The case pipeline's retry budget and Ctrl-C, with real processes and a real store (the benchmark of each
case is a small script, so that infrastructure failures can be produced on demand)."""

import signal
import sqlite3
import subprocess
import textwrap
import time

import pytest

from mpistack.approaches import HostFacts
from mpistack.campaign import stages
from mpistack.campaign.matrix import expand, resolve_stacks
from mpistack.campaign.prepare import planning_resources, prepare
from mpistack.launchers import LocalLauncher
from mpistack.parsers import parse_text
from mpistack.spec.campaign import load_campaign_text
from mpistack.spec.status import RunStatus
from mpistack.store import open_database
from mpistack.store.campaigns import start_campaign
from tests.helpers import MPISTACK, execution


def case_context(campaign, resources, db_path):
    database = open_database(str(db_path))
    return stages.CaseContext(campaign, start_campaign(database, campaign.name, {}), resources,
                              LocalLauncher(resources.engine), database)

OSU = "# OSU MPI Latency Test v7.5\\n# Size       Avg Latency(us)\\n1                       1.50\\n"


def flaky_script(tmp_path, fail_code, failures):
    """Exits with fail_code for its first `failures` runs, then prints OSU output."""
    counter = tmp_path / "attempts"
    script = tmp_path / "bench.sh"
    script.write_text(textwrap.dedent(f"""\
        #!/bin/sh
        n=$(cat {counter} 2>/dev/null || echo 0); n=$((n+1)); echo $n > {counter}
        if [ $n -le {failures} ]; then echo "Error: engine hiccup" >&2; exit {fail_code}; fi
        printf '{OSU}'
        """))
    script.chmod(0o755)
    return script, counter


def campaign_run(tmp_path, script, retries):
    campaign = load_campaign_text(f'name = "r"\nretries = {retries}\napproaches = ["native"]\n'
                                  '[[stack]]\nname = "h"\nhost = "mpich"\n'
                                  f'[[benchmark]]\nname = "flaky"\nprogram = "{script}"\n[[placement]]\nranks = 1\n')
    stacks = resolve_stacks(campaign)
    (case,) = expand(campaign, stacks)
    resources = planning_resources(campaign, stacks, HostFacts())
    return case_context(campaign, resources, tmp_path / "r.db"), case


@pytest.mark.parametrize("fail_code, failures, retries, status, attempts", [
    (125, 1, 1, "ok", 2),       # podman could not start: retried, then measured
    (125, 2, 1, "failed", 2),   # the budget is spent: recorded as failed
    (1, 1, 3, "failed", 1),     # the benchmark itself failed: never retried
])
def test_only_infrastructure_failures_are_retried(tmp_path, fail_code, failures, retries, status, attempts):
    script, counter = flaky_script(tmp_path, fail_code, failures)
    context, case = campaign_run(tmp_path, script, retries)
    outcome = stages.run_case(context, case)
    assert (outcome.status.value, outcome.attempts) == (status, attempts)
    assert int(counter.read_text()) == attempts
    with sqlite3.connect(tmp_path / "r.db") as connection:
        stored = connection.execute("SELECT status, message FROM runs").fetchall()
    assert [row[0] for row in stored] == [status]
    if status == "failed":
        assert f"exit status {fail_code}" in stored[0][1] and "engine hiccup" in stored[0][1]


@pytest.mark.skipif(subprocess.run(["which", "mpiexec.mpich"], capture_output=True).returncode,
                    reason="Debian's mpich not installed")
def test_ctrl_c_stops_cleanly_and_resume_finishes(tmp_path):
    db = tmp_path / "r.db"
    path = tmp_path / "c.toml"
    path.write_text('name = "c"\norder = "matrix"\napproaches = ["native"]\n'
                    'benchmark_options = ["-m", "1:4096", "-i", "200", "-x", "10"]\n'
                    '[[stack]]\nname = "host-mpich"\nhost = "mpich"\n'
                    '[[benchmark]]\nname = "latency"\n'
                    '[[benchmark]]\nname = "slow"\nprogram = "/bin/sleep"\noptions = ["600"]\n'
                    '[[benchmark]]\nname = "allreduce"\n')
    command = [*MPISTACK, "run", str(path), "--db", str(db)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:  # wait until the slow case is running
        if subprocess.run(["pgrep", "-f", "sleep 600"], capture_output=True).returncode == 0:
            break
        time.sleep(0.1)
    process.send_signal(signal.SIGINT)
    output, _ = process.communicate(timeout=60)
    assert process.returncode == 130, output
    assert "interrupted" in output
    assert subprocess.run(["pgrep", "-f", "sleep 600"], capture_output=True).returncode == 1  # killed
    with sqlite3.connect(db) as connection:
        assert connection.execute("SELECT benchmark, status FROM runs").fetchall() == [("latency", "ok")]
    path.write_text(path.read_text().replace('options = ["600"]', 'options = ["0"]'))
    resumed = subprocess.run([*command, "--resume", "--force"], capture_output=True, text=True, timeout=300)
    assert "2 case(s) to run, 1 already done" in resumed.stdout
    with sqlite3.connect(db) as connection:
        assert [row[0] for row in connection.execute("SELECT benchmark FROM runs ORDER BY id")] == \
            ["latency", "slow", "allreduce"]


def test_a_stack_whose_image_cannot_be_had_fails_its_cases_only(tmp_path):
    """Unit test: an engine that is not there (a stand-in that raises as podman's wrapper does when the
    program is missing); the host's cases still run and the image's cases are recorded as failed."""
    from mpistack.engines import EngineError, PodmanEngine

    class MissingEngine(PodmanEngine):
        def image_exists(self, tag):
            raise EngineError("podman not found on PATH")

    campaign = load_campaign_text('name = "m"\napproaches = ["native", "container"]\nbenchmarks = ["latency"]\n'
                                  'benchmark_options = ["-m", "1:8", "-i", "10", "-x", "1"]\n'
                                  '[[stack]]\nname = "host-mpich"\nhost = "mpich"\n[[stack]]\nname = "pip-mpich"\n'
                                  '[[exclude]]\nstack = "pip-mpich"\napproach = "native"\n')  # see test_native_wheel.py
    stacks = resolve_stacks(campaign)
    cases = expand(campaign, stacks)
    resources = planning_resources(campaign, stacks, HostFacts.probe())
    resources.engine = MissingEngine()
    messages = []
    prepare(cases, resources, say=messages.append)
    image = next(case.stack.spec.image_ref() for case in cases if case.stack.name == "pip-mpich")
    assert resources.failed_builds == {"pip-mpich": f"image {image} not prepared: podman not found on PATH"}
    context = case_context(campaign, resources, tmp_path / "m.db")
    outcomes = [(case.stack.name, stages.run_case(context, case).status) for case in cases]
    assert outcomes == [("host-mpich", RunStatus.OK), ("pip-mpich", RunStatus.FAILED)]
    # the answer and the doctor say why, once for the configuration: never "no known cause"
    from mpistack.doctor import cell_findings
    from mpistack.store.query import Where

    found = cell_findings(context.database, [Where.parse("campaign=m")])
    (cell,) = [key for key in found if key[0][1] == "pip-mpich"]
    assert [finding["title"] for finding in found[cell]] == \
        [f"never launched: image {image} not prepared: podman not found on PATH"]


def test_singletons_are_a_failure(tmp_path):
    """An MPI started by a launcher whose process-management interface it does not speak runs every rank
    as a job of its own: the benchmark reports size 1 where the case asked for 2."""
    runs = parse_text("# OSU MPI Latency Test v7.5\n# Size       Avg Latency(us)\n1   1.50\n", "stdout")
    runs[0].provenance.ranks = 1
    judged = stages.classify(execution(), stages.Parsed(runs), 60, ranks=2)
    assert judged.status is RunStatus.FAILED and "ran with 1 rank(s) where the case asked for 2" in judged.message
    runs[0].provenance.ranks = 2
    assert stages.classify(execution(), stages.Parsed(runs), 60, ranks=2).status is RunStatus.OK


SLOW_CAMPAIGN = ('name = "c"\norder = "matrix"\napproaches = ["native"]\n'
                 '[[stack]]\nname = "host-mpich"\nhost = "mpich"\n'
                 '[[benchmark]]\nname = "slow"\nprogram = "/bin/sleep"\noptions = ["{seconds}"]\n')


def _running(pattern: str) -> bool:
    return subprocess.run(["pgrep", "-f", pattern], capture_output=True).returncode == 0


def _start_slow(tmp_path, seconds: int):
    path = tmp_path / "c.toml"
    path.write_text(SLOW_CAMPAIGN.format(seconds=seconds))
    command = [*MPISTACK, "run", str(path), "--db", str(tmp_path / "r.db")]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not _running(f"sleep {seconds}"):
        time.sleep(0.1)
    assert _running(f"sleep {seconds}"), "the slow case did not start"
    return process, command, path


@pytest.mark.parametrize("signal_number, seconds", [(signal.SIGTERM, 611), (signal.SIGHUP, 612)])
def test_sigterm_and_sighup_stop_like_ctrl_c(tmp_path, signal_number, seconds):
    process, _, _ = _start_slow(tmp_path, seconds)
    process.send_signal(signal_number)
    output, _ = process.communicate(timeout=60)
    assert process.returncode == 130 and "interrupted" in output, output
    assert not _running(f"sleep {seconds}")  # the case's processes ended with the run


def test_what_a_killed_run_left_running_is_ended_at_the_next_start(tmp_path):
    process, command, path = _start_slow(tmp_path, 613)
    process.kill()  # SIGKILL: no handler runs; the case's session survives its parent
    process.communicate(timeout=30)
    assert _running("sleep 613")
    path.write_text(SLOW_CAMPAIGN.format(seconds=0))
    resumed = subprocess.run([*command, "--resume", "--force"], capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 4, resumed.stdout + resumed.stderr  # 4: its one case (sleep 0) measured nothing
    # mpiexec, its proxy and the two ranks: Hydra starts the proxy in a session of its own, the case ends it too
    assert "ended what an earlier run left: 4 process(es) of `mpiexec.mpich -n 2 /bin/sleep 613`" in \
        " ".join(resumed.stdout.split())
    assert not _running("sleep 613")


def test_a_second_runner_of_a_campaign_is_refused(tmp_path):
    process, command, _ = _start_slow(tmp_path, 614)
    try:
        second = subprocess.run([*command, "--resume"], capture_output=True, text=True, timeout=120)
        assert second.returncode == 2
        assert f"campaign c is being run by process {process.pid} on " in " ".join(second.stderr.split())
    finally:
        process.send_signal(signal.SIGINT)
        process.communicate(timeout=60)
    with sqlite3.connect(tmp_path / "r.db") as connection:
        assert connection.execute("SELECT count(*) FROM runs").fetchone() == (0,)  # the slow case was interrupted
        assert connection.execute("SELECT count(*) FROM campaign_locks").fetchone() == (0,)  # released


def test_a_failed_case_keeps_the_error_its_library_printed_on_stdout():
    """UCX logs to stdout: "The TLs list is empty" is there, while MPICH's abort on stderr says only "No such
    element". The failure's message carries both, so that the doctor's signature bank can name the cause."""
    from mpistack.doctor.signatures import match

    stdout = ("[1795705912.782819] [vm:10891:0]     ucp_context.c:1102 UCX  ERROR The TLs list is empty. Please "
              "specify the transports you would like to allow/forbid or omit the UCX_TLS so that the default will "
              "be used.\n# OSU MPI Latency Test\n")
    stderr = ("Abort(337235599): Fatal error in internal_Init: Other MPI error, error stack:\n"
              "MPIDI_UCX_init_local(252):  ucx function returned with failed status(ucx_init.c 252 "
              "MPIDI_UCX_init_local No such element)\n")
    outcome = stages.classify(execution(exit_code=1, stdout=stdout, stderr=stderr), stages.Parsed([]), 60, ranks=2)
    assert outcome.status is RunStatus.FAILED
    assert outcome.message.startswith("exit status 1: Abort(337235599)")
    assert "UCX  ERROR The TLs list is empty" in outcome.message and "# OSU" not in outcome.message
    assert "ucx-tls-empty" in {hit.signature.id for hit in match(outcome.message)}
