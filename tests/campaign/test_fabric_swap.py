"""fabric-swap for real: the PyPI MPICH image (stack pip-mpich, its wheel's own libfabric 1.22 inside) run
through podman with another libfabric mounted over its own, and the libfabric each run really loaded read
from mpistack-bench's JSON (fi_version() asked of the loaded library) into the store.

This machine's own libfabric (Debian 12, 1.17) cannot serve the wheel: its MPI library needs the symbol
version FABRIC_1.7, which 1.17 does not define. So the refusal is tested with the system's library through
the command line, and the swap itself with a newer libfabric present on the host: the one in the MPICH 5.0.1
wheel (libfabric 2.4), installed natively for the pip-mpich5 stack's baseline.
"""

from __future__ import annotations

import re
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest
from rich.console import Console

from mpistack.approaches import HostFacts
from mpistack.approaches.fabric_facts import HostLibfabric, host_libfabric, probe_host_libfabric
from mpistack.campaign import session, stages
from mpistack.campaign.matrix import expand, resolve_stacks
from mpistack.campaign.prepare import planning_resources, prepare
from mpistack.images.host_venv import build_native, native_dir
from mpistack.launchers.local import LocalLauncher
from mpistack.spec import catalogue
from mpistack.spec.campaign import load_campaign_text
from mpistack.store import open_database
from mpistack.store.campaigns import start_campaign
from tests.helpers import mpistack

needs_podman = pytest.mark.skipif(shutil.which("podman") is None or shutil.which("mpiexec.mpich") is None,
                                  reason="needs podman and Debian's mpich (the host launcher)")
SHORT = '["-m", "1:64", "-i", "20", "-x", "2"]'


def campaign_text(name: str) -> str:
    return f"""name = "{name}"
approaches = ["container", "hybrid", "fabric-swap"]
benchmarks = ["latency"]
benchmark_options = {SHORT}
timeout = 300
[[stack]]
name = "pip-mpich"
[[placement]]
ranks = 2
"""


def stored_runs(db: Path) -> dict[str, sqlite3.Row]:
    with sqlite3.connect(db) as connection:
        connection.row_factory = sqlite3.Row
        return {row["approach"]: row for row in connection.execute("SELECT * FROM runs ORDER BY id")}


def newer_host_libfabric() -> str:
    """The MPICH 5.0.1 wheel's libfabric, installed on the host in its virtual environment."""
    try:
        build_native(catalogue.load("pip-mpich5"))
    except (OSError, subprocess.CalledProcessError) as error:
        pytest.skip(f"the mpich 5.0.1 wheel cannot be installed here: {error}")
    return str(native_dir(catalogue.load("pip-mpich5")) / "venv" / "lib" / "mpich" / "libfabric.so.1")


def test_a_dry_run_says_the_swap_is_checked_once_the_image_is_built_not_that_it_is_skipped(tmp_path, monkeypatch):
    """No image is built and none is read: its libfabric facts are absent, which only the run can fill in."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    campaign = load_campaign_text(campaign_text("fabric-swap-dry").replace('"container", "hybrid", ', "")
                                  + '[[stack]]\nname = "debian-mpich"\n', "dry.toml")
    host = HostFacts(libfabric=HostLibfabric(path="/usr/lib/x86_64-linux-gnu/libfabric.so.1.20.0",
                                             soname="libfabric.so.1", version="1.17", defines=("FABRIC_1.0",)))

    def dry_run(host: HostFacts) -> dict[str, str]:
        """Per stack, what the listing says under its fabric-swap case; a skip as the reason its number names in
        the summary above the listing (each reason is said once there)."""
        console = Console(record=True, width=400)
        session.dry_run(campaign, console, host)
        lines = console.export_text().splitlines()
        reasons = {line.split("]")[0] + "]": line.split(": ", 1)[1] for line in lines if line.startswith("[")}
        said = {line.split()[1].split("/")[0]: lines[index + 1].strip() for index, line in enumerate(lines)
                if "/fabric-swap/" in line}
        return {stack: "skipped: " + reasons[text.split()[1]] if text.startswith("skipped [") else text
                for stack, text in said.items()}

    planned = dry_run(host)
    assert planned["pip-mpich"].startswith("fabric-swap: compatibility checked after the image is built: the "
                                           "libfabric facts of pip-mpich's image are not known yet")
    # what a dry run does know is still said as a skip: the stack file's UCX, the host's missing libfabric
    assert planned["debian-mpich"].startswith("skipped: fabric-swap refused: debian-mpich's MPI (mpich ch4:ucx)")
    assert dry_run(HostFacts())["pip-mpich"].startswith("skipped: the host has no libfabric.so.1 to swap in")


@needs_podman
def test_fabric_swap_runs_the_host_libfabric_and_the_container_its_own(tmp_path):
    library = host_libfabric(newer_host_libfabric())
    assert library.version == "2.4" and "FABRIC_1.7" in library.defines
    host = HostFacts(**{**HostFacts.probe().__dict__, "libfabric": library})
    campaign = load_campaign_text(campaign_text("fabric-swap-real"), "fabric-swap.toml")
    stacks = resolve_stacks(campaign)
    cases = expand(campaign, stacks)
    resources = planning_resources(campaign, stacks, host=host)
    prepare(cases, resources, say=Console(quiet=True).print)
    facts = resources.image_fabric["pip-mpich"]
    assert facts.libfabric == "/opt/mpi/lib/mpich/libfabric.so.1" and "FABRIC_1.7" in facts.needs
    db = tmp_path / "swap.db"
    database = open_database(str(db))
    context = stages.CaseContext(campaign, start_campaign(database, campaign.name, {}), resources,
                                 LocalLauncher(resources.engine, state_dir=tmp_path / "running"), database)
    for case in cases:
        outcome = stages.run_case(context, case)
        assert outcome is not None and outcome.status.value == "ok", (case.approach.name, outcome)
    runs = stored_runs(db)
    # the wheel's own libfabric in the self-contained container and under the host launcher ...
    assert runs["container"]["libfabric_version"] == runs["hybrid"]["libfabric_version"] == "1.22"
    # ... and the host's, mounted over it, with the MPI still the image's own
    swapped = runs["fabric-swap"]
    assert swapped["libfabric_version"] == "2.4"
    assert swapped["libfabric_provider"] == "tcp"
    assert re.match(r"MPICH Version:\s+4\.3\.2\n", swapped["mpi_library_version"])
    assert f"{library.path}:/opt/mpi/lib/mpich/libfabric.so.1:ro" in swapped["command"]


@needs_podman
def test_the_systems_libfabric_1_17_is_refused_for_the_wheel_with_the_missing_symbol_version(tmp_path):
    system = probe_host_libfabric()
    if system is None or system.version != "1.17":
        pytest.skip("needs Debian 12's libfabric 1.17 as the system's libfabric.so.1")
    path = tmp_path / "swap.toml"
    path.write_text(campaign_text("fabric-swap-refused").replace('"container", "hybrid", ', ""))
    db = tmp_path / "refused.db"
    result = mpistack("run", path, "--db", db, check=None, timeout=600)
    assert result.returncode == 4, result.stderr  # its only case was refused: nothing measured (docs/campaigns.md)
    (run,) = stored_runs(db).values()
    assert run["status"] == "skipped"
    with sqlite3.connect(db) as connection:
        message = connection.execute("SELECT message FROM runs").fetchone()[0]
    assert "needs FABRIC_1.7 from libfabric.so.1" in message
    assert "libfabric 1.17" in message and "FABRIC_1.0 to FABRIC_1.6" in message
    assert "libfabric-swap-symbol-versions" in message


OPENMPI_OVER_LIBFABRIC = """name = "fabric-swap-openmpi"
approaches = ["fabric-swap"]
benchmarks = ["latency"]
benchmark_options = ["-m", "1:64", "-i", "20", "-x", "2"]
timeout = 300
[[stack]]  # Debian's Open MPI as packaged (the catalogue's debian-openmpi, which names UCX, its default): Debian
name = "debian-openmpi-ofi"  # builds it with libfabric too, and this stack names the ofi plug-ins it runs over here
[stack.inline]
name = "debian-openmpi-ofi"
description = "Debian 12 Open MPI 4.1.4 from the distribution, over its libfabric plug-ins"
origin = "mpistack tests"
mode = "distro"
multistage = true
network = "auto"
[stack.inline.base]
image = "localhost/debian:bookworm"
make = "debian:bookworm"
[stack.inline.mpi]
impl = "openmpi"
version = "4.1.4"
device = "ofi"
channel = "apt"
[[placement]]
ranks = 2
[[variant]]  # Open MPI's messages through libfabric: the cm PML, the ofi MTL, tcp (which it excludes by default)
name = "ofi"
env = { OMPI_MCA_pml = "cm", OMPI_MCA_mtl = "ofi", OMPI_MCA_mtl_ofi_provider_exclude = "shm,sockets,udp,rstream,usnic", FI_PROVIDER = "tcp" }
"""


@needs_podman
def test_open_mpi_opens_libfabric_from_its_plugins_and_the_swap_reaches_them(tmp_path):
    """Open MPI links libfabric from mca_mtl_ofi.so and mca_btl_ofi.so, not from libmpi.so.40: the image probe
    reads the plug-ins, the host's libfabric is mounted over the file they load, and the ranks run with it."""
    system = probe_host_libfabric()
    if system is None:
        pytest.skip("needs a system libfabric.so.1 (Debian: libfabric1)")
    path = tmp_path / "swap.toml"
    path.write_text(OPENMPI_OVER_LIBFABRIC)
    db = tmp_path / "openmpi.db"
    result = mpistack("run", path, "--db", db, check=None, timeout=900)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    with sqlite3.connect(db) as connection:
        connection.row_factory = sqlite3.Row
        runs = {row["variant"]: row for row in connection.execute(
            "SELECT runs.*, (SELECT value FROM run_tags WHERE run_tags.run_id = runs.id AND key = 'variant') AS variant "
            "FROM runs")}
    assert set(runs) == {"default", "ofi"}
    for run in runs.values():
        assert run["status"] == "ok", run["message"]
        # mounted over the file mca_mtl_ofi.so resolves in the image (/lib or /usr/lib: the same, merged, in Debian 12)
        assert re.search(rf"{re.escape(system.path)}:(/usr)?/lib/x86_64-linux-gnu/libfabric\.so\.1:ro", run["command"])
    # with the ofi MTL chosen, the host's libfabric stays loaded (asked of it by mpistack-bench) and the messages
    # went through its tcp provider; by default Open MPI closes its ofi plug-ins after choosing UCX, and with
    # them libfabric
    assert runs["ofi"]["libfabric_version"] == system.version
    assert runs["default"]["libfabric_version"] in (None, system.version)
    transport = runs["ofi"]["transport"]
    assert "tcp;ofi_rxm" in transport and "cm" in transport, transport
