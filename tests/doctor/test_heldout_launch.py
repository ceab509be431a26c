"""`mpistack doctor FILE` on launch failures users posted in public threads (tests/doctor/heldout/launch: each
file the excerpt posted in the thread named beside it): too few slots, slurmd out of reach, ssh that cannot
start (OpenSSL, no agent, host keys), the verbs locked-memory limit, System V shared-memory limits, ranks that
each run alone, two Open MPI versions in one job, Cray PMI's ALPS probe. Each must be named by its signature
and by no other.

Some of these files hold messages and no benchmark table nor any word the reader takes for an error, and the
reader refuses them today ('no readable file'); their messages are then matched against the bank directly, so
the signature is tested either way, and through `doctor` itself once the reader keeps them."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from mpistack.doctor.files import UnreadableFile, diagnose_file, read_file
from mpistack.doctor.signatures import match
from tests.helpers import MPISTACK, plain_environment

LAUNCH = Path(__file__).with_name("heldout") / "launch"

# file: (its public source, the signatures it must give and no other)
CASES = {
    # Open MPI's help text on a CI runner with fewer cores than -n, cut where the paste was cut
    "ompi_not_enough_slots_ci.out": ("https://github.com/h5py/h5py/issues/2627", {"ompi-not-enough-slots"}),
    # srun timing out on slurmd's port 6818: differing munge keys in the thread
    "slurmd_socket_timeout_munge.out": ("https://github.com/mlr-org/batchtools/issues/201",
                                        {"slurmd-unreachable-at-launch"}),
    # ssh started by mpiexec loads a conda environment's OpenSSL; ORTE's daemons cannot start
    "ssh_openssl_mismatch_conda.out": ("https://github.com/modin-project/unidist/issues/314",
                                       {"ssh-openssl-mismatch"}),
    # no ssh or rsh: mpirun on one node, and a singleton in a Docker image
    "ompi_no_ssh_agent_mpirun.out": ("https://github.com/EESSI/compatibility-layer/issues/230",
                                     {"ompi-no-ssh-agent"}),
    "ompi_no_ssh_agent_singleton.out": ("https://github.com/xbpeng/DeepMimic/issues/85", {"ompi-no-ssh-agent"}),
    # mpirun inside an srun'd pyxis container starting its daemons over ssh
    "ssh_host_key_pyxis.out": ("https://github.com/NVIDIA/pyxis/issues/164", {"ssh-host-key-verification"}),
    # UCX probing mlx5 under a 64 KiB memlock limit in a shared-memory run whose table completed
    "ucx_memlock_shm_osu.out": ("https://github.com/openucx/ucx/issues/8746", {"verbs-locked-memory-limit"}),
    # NCCL's queue pair refused, the locked-memory limit per the thread
    "nccl_ibv_create_qp.out": ("https://github.com/horovod/horovod/issues/98", {"verbs-locked-memory-limit"}),
    # System V segments exhausted: shmget's ENOSPC, and UCX naming kernel.shmmni's 4096
    "ucx_shmget_nospace.out": ("https://github.com/open-mpi/ompi/issues/7312", {"sysv-shm-limit"}),
    "ucx_shmget_shmmni.out": ("https://github.com/openucx/ucx/issues/2078", {"sysv-shm-limit"}),
    # an MPICH-built program under Open MPI's mpirun: each rank alone
    "mpich_binary_ompi_mpirun.out": ("https://github.com/open-mpi/ompi/issues/8824", {"every-rank-alone"}),
    # the host's mpirun 2.1.6 against the container's Open MPI 2.1.1
    "ompi_version_differs_container.out": ("https://github.com/hpc/charliecloud/issues/367",
                                           {"ompi-version-differs"}),
    # Cray PMI trying ALPS under native Slurm: noise, a warning at most
    "cray_pmi_alps_noise.out": ("https://github.com/ComputationalRadiationPhysics/picongpu/pull/2581",
                                {"cray-pmi-alps-probe"}),
}


def test_every_launch_file_has_its_case():
    assert sorted(CASES) == sorted(path.name for path in LAUNCH.glob("*.out"))


def _signatures_named(path: Path) -> set[str]:
    """What `doctor FILE` names from the bank; for a file the reader refuses, what the bank names in it."""
    try:
        reading = read_file(str(path))
    except UnreadableFile:
        return {hit.signature.id for hit in match(path.read_text())}
    return {finding.title for finding in diagnose_file(reading) if finding.rule == "run-signatures"}


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_cause_is_named_by_its_signature_alone(name):
    _source, expected = CASES[name]
    assert _signatures_named(LAUNCH / name) == expected


def test_the_memlock_probe_beside_a_complete_table_keeps_the_table():
    """The locked-memory message of a shared-memory run does not hide that the benchmark ran."""
    (run,) = read_file(str(LAUNCH / "ucx_memlock_shm_osu.out")).runs
    assert run.benchmark == "bcast" and len(run.rows) == 1 and not run.incomplete


@pytest.mark.parametrize("name, verdict", [("ucx_memlock_shm_osu.out", "warning"),
                                           ("nccl_ibv_create_qp.out", "problem")])
def test_the_memlock_limit_is_a_problem_only_where_a_failure_follows_it(name, verdict):
    """UCX probing an unused mlx5 device beside a complete table is a warning (the figures stand); NCCL's queue
    pair refused and its 'unhandled system error' after it is the run's failure."""
    from mpistack.doctor.signatures import match

    text = (LAUNCH / name).read_text()
    (hit,) = [hit for hit in match(text) if hit.signature.id == "verbs-locked-memory-limit"]
    assert hit.verdict == verdict


@pytest.mark.parametrize("name, signature", [("ompi_no_ssh_agent_mpirun.out", "ompi-no-ssh-agent"),
                                             ("slurmd_socket_timeout_munge.out", "slurmd-unreachable-at-launch")])
def test_the_command_names_the_cause_with_its_fix_and_thread(name, signature):
    result = subprocess.run([*MPISTACK, "doctor", str(LAUNCH / name), "--json"], capture_output=True, text=True,
                            env={**plain_environment(), "COLUMNS": "80"}, timeout=300)
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
    (finding,) = [f for f in json.loads(result.stdout)["findings"] if f["title"] == signature]
    assert finding["verdict"] == "problem" and finding["fix"] and CASES[name][0] in finding["source"]
