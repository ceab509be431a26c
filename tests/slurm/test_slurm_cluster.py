"""The two-node demo Slurm cluster: jobs cross a real (virtual) network, accounting, failures, stop.

The tests share one cluster (the session fixture in conftest.py) and run in file order: the node-failure
test restarts the node it kills, and the last test stops the cluster.
"""

from __future__ import annotations

import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from .conftest import SlurmCluster

pytestmark = pytest.mark.slurm

NODES = {"node1", "node2"}
HOST_VETHS = [Path(f"/sys/class/net/mpistk-{node}/statistics/tx_bytes") for node in sorted(NODES)]
PAYLOAD = 4 << 20  # bytes rank 0 sends rank 1

HELLO_C = r"""
#include <mpi.h>
#include <stdio.h>
#define N (1 << 20)
static char buf[N];
int main(int argc, char **argv) {
    int rank, size, len;
    char name[MPI_MAX_PROCESSOR_NAME] = {0};
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Get_processor_name(name, &len);
    for (int i = 0; i < 4 && size > 1; i++) {  /* 4 MiB from rank 0 to rank 1 */
        if (rank == 0) MPI_Send(buf, N, MPI_CHAR, 1, 0, MPI_COMM_WORLD);
        else if (rank == 1) MPI_Recv(buf, N, MPI_CHAR, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    printf("rank=%d size=%d name=%s\n", rank, size, name);
    fflush(stdout);
    MPI_Finalize();
    return 0;
}
"""


def bridge_bytes() -> int:
    """Bytes the bridge has delivered to the nodes so far."""
    return sum(int(path.read_text()) for path in HOST_VETHS)


def srun(cluster: SlurmCluster, *args: str, timeout: float = 60, **env: str) -> tuple[int | None, str, str]:
    """Run srun; on timeout end the step (SIGTERM, then scancel) and return None as exit status."""
    name = "mpistack-test-srun"
    proc = subprocess.Popen(
        ["srun", f"--job-name={name}", *args], env=cluster.env(**env),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
        return proc.returncode, out, err
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGTERM)
        try:
            out, err = proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
        cluster.run("scancel", f"--name={name}", check=False)
        return None, out, err


def wait_for(predicate, timeout: float, interval: float = 0.5):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(interval)


def sacct_state(cluster: SlurmCluster, job: str) -> tuple[str, str] | None:
    """(State, ExitCode) of a finished job from the job completion file (`sacct -c`), None before."""
    proc = cluster.run("sacct", "-c", "-j", job, "-n", "-P", "-o", "JobID,State,ExitCode", check=False)
    for line in proc.stdout.splitlines():  # stderr may carry "Invalid time specification" for other jobs
        fields = line.split("|")
        if fields[0] == job:
            return fields[1], fields[2]
    return None


def node_state(cluster: SlurmCluster, node: str) -> str:
    return cluster.run("sinfo", "-h", "-N", "-n", node, "-o", "%t").stdout.strip()


def ranks(output: str) -> list[tuple[int, int, str]]:
    return [(int(r), int(s), n) for r, s, n in re.findall(r"^rank=(\d+) size=(\d+) name=(\S+)$", output, re.M)]


@pytest.fixture(scope="module")
def programs(tmp_path_factory) -> dict[str, Path]:
    """The MPI hello world built with each installed MPI."""
    built = {}
    work = tmp_path_factory.mktemp("mpi-hello")
    (work / "hello.c").write_text(HELLO_C)
    for mpi, mpicc in (("mpich", "mpicc.mpich"), ("openmpi", "mpicc.openmpi")):
        if shutil.which(mpicc):
            exe = work / f"hello-{mpi}"
            subprocess.run([mpicc, "-o", str(exe), str(work / "hello.c")], check=True, timeout=120)
            built[mpi] = exe
    return built


def test_status_reports_a_running_cluster(slurm_cluster):
    proc = slurm_cluster.script("status")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"export SLURM_CONF={slurm_cluster.conf}" in proc.stdout
    for node in NODES:
        assert re.search(rf"slurmd\s+{node} running", proc.stdout)


def test_start_is_idempotent(slurm_cluster):
    pidfiles = [slurm_cluster.dir / "run" / name for name in ("slurmctld.pid", "slurmd-node1.pid", "slurmd-node2.pid")]
    before = [p.read_text() for p in pidfiles]
    proc = slurm_cluster.script("start")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"export SLURM_CONF={slurm_cluster.conf}"
    assert [p.read_text() for p in pidfiles] == before  # nothing restarted


def test_mpi_plugins_pmix_and_pmi2(slurm_cluster):
    out = slurm_cluster.run("srun", "--mpi=list").stdout + slurm_cluster.run("srun", "--mpi=list").stderr
    assert "pmix" in out and "pmi2" in out


def test_two_node_hostname(slurm_cluster):
    rc, out, err = srun(slurm_cluster, "-N2", "-n2", "hostname")
    assert rc == 0, err
    assert sorted(out.split()) == sorted(NODES)


def test_nodes_have_their_own_network(slurm_cluster):
    rc, out, err = srun(slurm_cluster, "-N2", "-n2", "-l", "ip", "-4", "-o", "addr", "show", "eth0")
    assert rc == 0, err
    assert sorted(re.findall(r"inet (10\.250\.0\.\d+)/24", out)) == ["10.250.0.1", "10.250.0.2"]


def _two_node_mpi(cluster: SlurmCluster, exe: Path, mpi: str, attempts: int, **env: str) -> None:
    for attempt in range(1, attempts + 1):
        sent = bridge_bytes()
        rc, out, err = srun(cluster, f"--mpi={mpi}", "-N2", "-n2", str(exe), timeout=30, **env)
        seen = ranks(out)
        if rc is None and len(seen) == 2 and attempt < attempts:
            # Debian's MPICH 4.0.2 over UCX 1.13 with UCX_TLS=tcp now and then hangs in MPI_Finalize
            # after all the work is done (natively with mpiexec too); the run itself was fine: retry.
            continue
        assert rc == 0, f"exit {rc}\n{out}\n{err}"
        assert sorted(seen) == [(0, 2, "node1"), (1, 2, "node2")], out
        assert bridge_bytes() - sent >= PAYLOAD, "the ranks did not talk over the bridge"
        return


def test_mpich_pmi2_across_two_nodes(slurm_cluster, programs):
    if "mpich" not in programs:
        pytest.skip("mpicc.mpich not installed")
    # UCX would take shared memory between the namespaces; TCP makes the ranks cross the bridge
    _two_node_mpi(slurm_cluster, programs["mpich"], "pmi2", attempts=3, UCX_TLS="tcp")


def test_openmpi_pmix_across_two_nodes(slurm_cluster, programs):
    if "openmpi" not in programs:
        pytest.skip("mpicc.openmpi not installed")
    _two_node_mpi(
        slurm_cluster, programs["openmpi"], "pmix", attempts=1,
        UCX_TLS="tcp", OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
    )


def test_sbatch_job_recorded_completed(slurm_cluster, tmp_path):
    out = tmp_path / "job-%j.out"
    job = slurm_cluster.run(
        "sbatch", "--parsable", "-N2", "-n2", f"--output={out}", "--wrap", "srun hostname"
    ).stdout.strip().split(";")[0]
    assert job.isdigit()
    assert wait_for(lambda: sacct_state(slurm_cluster, job), 30) == ("COMPLETED", "0:0")
    assert sorted((tmp_path / f"job-{job}.out").read_text().split()) == sorted(NODES)


def test_failed_job_recorded_with_exit_code(slurm_cluster):
    job = slurm_cluster.run("sbatch", "--parsable", "--output=/dev/null", "--wrap", "exit 3").stdout.strip()
    assert wait_for(lambda: sacct_state(slurm_cluster, job), 30) == ("FAILED", "3:0")


def test_scancel_recorded_cancelled(slurm_cluster):
    job = slurm_cluster.run("sbatch", "--parsable", "--output=/dev/null", "--wrap", "sleep 300").stdout.strip()
    running = wait_for(
        lambda: slurm_cluster.run("squeue", "-h", "-j", job, "-o", "%t").stdout.strip() == "R", 30, 0.2
    )
    assert running, "the job did not start"
    slurm_cluster.run("scancel", job)
    state = wait_for(lambda: sacct_state(slurm_cluster, job), 30)
    assert state is not None and state[0] == "CANCELLED"


def test_killed_slurmd_takes_its_node_down_and_start_brings_it_back(slurm_cluster):
    pid = int((slurm_cluster.dir / "run" / "slurmd-node2.pid").read_text())
    subprocess.run(["kill", "-KILL", str(pid)], check=True)
    # SlurmdTimeout=10: not responding after a ping fails, DOWN once the timeout has passed
    assert wait_for(lambda: node_state(slurm_cluster, "node2") == "down*", 60), node_state(slurm_cluster, "node2")
    node = slurm_cluster.run("scontrol", "show", "node", "node2").stdout
    assert "DOWN" in node and "NOT_RESPONDING" in node
    status = slurm_cluster.script("status")
    assert status.returncode == 3 and re.search(r"slurmd\s+node2 stopped", status.stdout)

    assert slurm_cluster.script("start").returncode == 0  # starts the missing slurmd only
    assert node_state(slurm_cluster, "node2") in ("idle", "mix", "alloc")
    rc, out, err = srun(slurm_cluster, "-N2", "-n2", "hostname")
    assert rc == 0 and sorted(out.split()) == sorted(NODES), err


def _live_processes() -> list[tuple[int, str, str]]:
    """(pid, comm, cmdline) of every process that is not a zombie."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            status = (proc / "status").read_text()
            comm = (proc / "comm").read_text().strip()
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if re.search(r"^State:\s+Z", status, re.M):
            continue
        found.append((int(proc.name), comm, cmdline))
    return found


def test_stop_leaves_nothing_running(slurm_cluster):
    proc = slurm_cluster.script("stop")
    assert proc.returncode == 0, proc.stderr
    left = [
        p for p in _live_processes()
        if p[1] in ("slurmctld", "slurmd", "slurmstepd") or (p[1] == "munged" and str(slurm_cluster.dir) in p[2])
    ]
    assert left == []
    netns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout
    assert "mpistack-" not in netns
    links = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True, check=True).stdout
    assert "mpistk-" not in links
    assert str(slurm_cluster.dir) not in Path("/proc/mounts").read_text()  # the UTS namespace files
    assert slurm_cluster.script("status").returncode == 3
    assert slurm_cluster.script("stop").returncode == 0  # stopping twice is fine
