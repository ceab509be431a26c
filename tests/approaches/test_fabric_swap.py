"""fabric-swap planned against a made-up host and image (golden command line), and refused against a real
stub libfabric built here with a version script that lacks the symbol version the image's MPI needs."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from mpistack.approaches import HostFacts, Refused, Resources, Undecided, plan
from mpistack.approaches.fabric_facts import HostLibfabric, ImageFabric, host_libfabric
from mpistack.campaign.matrix import expand, resolve_stacks
from mpistack.campaign.stages import case_label
from mpistack.engines import PodmanEngine
from mpistack.spec.campaign import load_campaign_text

CAMPAIGN = """
name = "golden"
approaches = ["fabric-swap"]
benchmarks = ["latency"]
[[stack]]
name = "pip-mpich"
[[stack]]
name = "debian-mpich"
[[stack]]
name = "debian-openmpi"
[[placement]]
ranks = 2
binding = "core"
"""
WORK = Path("/scratch/golden")
HOST_FABRIC = HostLibfabric(
    path="/usr/lib/x86_64-linux-gnu/libfabric.so.1.20.0", soname="libfabric.so.1", version="1.17",
    defines=tuple(f"FABRIC_1.{minor}" for minor in range(9)),
    dependencies=(("/usr/lib/x86_64-linux-gnu/libefa.so.1.2.44.0", "libefa.so.1"),),
    providers_dir="/usr/lib/x86_64-linux-gnu/libfabric")
WHEEL = ImageFabric(mpi_library="/opt/mpi/lib/libmpi.so.12", libfabric="/opt/mpi/lib/mpich/libfabric.so.1",
                    needs=("FABRIC_1.0", "FABRIC_1.7", "FABRIC_1.1"))


def planner(monkeypatch, host_fabric: HostLibfabric | None, image_fabric: dict[str, ImageFabric]):
    monkeypatch.setenv("MPISTACK_PODMAN_CONF", "/etc/mpistack/containers.conf")
    campaign = load_campaign_text(CAMPAIGN, "golden.toml")
    stacks = resolve_stacks(campaign)
    resources = Resources(engine=PodmanEngine(runtime="runc"), workdir=WORK,
                          host=HostFacts(is_root=True, libfabric=host_fabric),
                          images={stack.name: stack.spec.image_ref() for stack in stacks},
                          image_fabric=image_fabric)
    cases = {case.stack.name: case for case in expand(campaign, stacks)}

    def make(stack: str):
        case = cases[stack]
        label = case_label(campaign, case)
        return plan(case, resources, WORK / f"{label}.json", [], label), label, resources.images[stack]
    return make


def test_fabric_swap_mounts_the_host_libfabric_over_the_images_own(monkeypatch):
    launch, label, image = planner(monkeypatch, HOST_FABRIC, {"pip-mpich": WHEEL})("pip-mpich")
    assert launch.argv == [
        "mpiexec.mpich", "-pmi-port", "-n", "2", "-bind-to", "core",
        "podman", "--runtime", "runc", "run", "--rm", "--network", "host", "--ipc", "host", "--pid", "host",
        "--label", f"mpistack.case={label}",
        "-v", f"/scratch/golden/cases/{label}:/scratch/golden/cases/{label}",
        "-v", "/usr/lib/x86_64-linux-gnu/libfabric.so.1.20.0:/opt/mpi/lib/mpich/libfabric.so.1:ro",
        "-v", "/usr/lib/x86_64-linux-gnu/libefa.so.1.2.44.0:/opt/mpistack/host-fabric/lib/libefa.so.1:ro",
        "-v", "/usr/lib/x86_64-linux-gnu/libfabric:/opt/mpistack/host-fabric/providers:ro",
        "--env", "PMI_*", "--env", "MPIR_CVAR_*", "--env", "HYDI_*", "--env", "HYDRA_*",
        "--env", "FI_PROVIDER=tcp", "--env", "FI_PROVIDER_PATH=/opt/mpistack/host-fabric/providers",
        "--env", "LD_LIBRARY_PATH=/opt/mpistack/host-fabric/lib", "--env", "MPICH_CH4_NETMOD=ofi",
        image, "mpistack-bench", "latency", "H", "H", "--json", f"/scratch/golden/{label}.json"]
    assert launch.facts["swapped_libfabric"] == "/usr/lib/x86_64-linux-gnu/libfabric.so.1.20.0 1.17"
    assert launch.facts["confinement"] == "host-ipc-pid"


@pytest.mark.parametrize("host, images, reason, undecided", [
    (None, {"pip-mpich": WHEEL}, "the host has no libfabric.so.1 to swap in", False),
    (HOST_FABRIC, {}, "compatibility checked after the image is built: .* not known yet", True),
    (HOST_FABRIC, {"pip-mpich": ImageFabric(problem="does not load libfabric.so.1")}, "does not load libfabric", False),
])
def test_fabric_swap_without_the_facts_is_refused_with_the_reason(monkeypatch, host, images, reason, undecided):
    """Only the image's facts, read when the campaign is prepared, leave the case undecided (a dry run's case)."""
    with pytest.raises(Refused, match=reason) as refused:
        planner(monkeypatch, host, images)("pip-mpich")
    assert isinstance(refused.value, Undecided) == undecided


def test_fabric_swap_of_a_ucx_stack_is_refused_before_any_image_is_read(monkeypatch):
    with pytest.raises(Refused, match=r"debian-mpich's MPI \(mpich ch4:ucx\) carries its messages over UCX.*"
                                      r"bind runs the image with the host's MPI.*MPICH ch4:ofi"):
        planner(monkeypatch, HOST_FABRIC, {})("debian-mpich")


def test_an_open_mpi_preferring_ucx_still_swaps_the_libfabric_its_ofi_components_load(monkeypatch):
    """Debian's Open MPI 4.1.4 (device ucx) has the ofi MTL and BTL beside pml ucx: its image loads libfabric.so.1,
    which the image's facts say, so the swap is planned, not refused by the stack file."""
    debian = ImageFabric(mpi_library="/usr/lib/x86_64-linux-gnu/libmpi.so.40",
                         libfabric="/usr/lib/x86_64-linux-gnu/libfabric.so.1", needs=("FABRIC_1.0", "FABRIC_1.1"))
    launch, _, _ = planner(monkeypatch, HOST_FABRIC, {"debian-openmpi": debian})("debian-openmpi")
    assert launch.argv[0] == "mpirun.openmpi"
    assert "/usr/lib/x86_64-linux-gnu/libfabric.so.1.20.0:/usr/lib/x86_64-linux-gnu/libfabric.so.1:ro" in launch.argv


@pytest.fixture(scope="module")
def stub_libfabric(tmp_path_factory) -> Path:
    """A real shared library with the soname libfabric.so.1 whose version script stops at FABRIC_1.6, as
    Debian 12's libfabric 1.17 does; its fi_version() says 1.17."""
    if shutil.which("gcc") is None or shutil.which("readelf") is None:
        pytest.skip("needs gcc and readelf")
    directory = tmp_path_factory.mktemp("stub")
    (directory / "stub.c").write_text(
        "unsigned int fi_version(void) { return (1u << 16) | 17u; }\n"
        "int fi_getinfo(void) { return 0; }\n")
    (directory / "stub.map").write_text(
        "FABRIC_1.0 { global: fi_version; local: *; };\n"
        + "".join(f"FABRIC_1.{minor} {{ }} FABRIC_1.{minor - 1};\n" for minor in range(1, 6))
        + "FABRIC_1.6 { global: fi_getinfo; } FABRIC_1.5;\n")
    library = directory / "libfabric.so.1"
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(library), str(directory / "stub.c"),
                    "-Wl,-soname,libfabric.so.1", f"-Wl,--version-script={directory / 'stub.map'}"], check=True)
    return library


def test_a_real_host_library_lacking_a_needed_symbol_version_is_refused(monkeypatch, stub_libfabric):
    facts = host_libfabric(str(stub_libfabric))
    assert (facts.soname, facts.version) == ("libfabric.so.1", "1.17")
    assert facts.defines == tuple(f"FABRIC_1.{minor}" for minor in range(7))
    with pytest.raises(Refused) as refused:
        planner(monkeypatch, facts, {"pip-mpich": WHEEL})("pip-mpich")
    assert str(refused.value) == (
        "fabric-swap refused: the image's /opt/mpi/lib/libmpi.so.12 needs FABRIC_1.7 from libfabric.so.1; the "
        f"host's libfabric 1.17 ({stub_libfabric}) defines FABRIC_1.0 to FABRIC_1.6 [libfabric-swap-symbol-versions: "
        "libfabric's symbol map, libfabric.map.in (https://github.com/ofiwg/libfabric/blob/main/libfabric.map.in); "
        "Ulrich Drepper, 'How To Write Shared Libraries' (https://www.akkadia.org/drepper/dsohowto.pdf), section 3, "
        "'Maintaining APIs and ABIs']")
    # the same library serves an image whose MPI needs no more than it defines
    older = ImageFabric(mpi_library="/opt/mpi/lib/libmpi.so.12", libfabric="/usr/lib/libfabric.so.1",
                        needs=("FABRIC_1.0", "FABRIC_1.3"))
    launch, _, _ = planner(monkeypatch, facts, {"pip-mpich": older})("pip-mpich")
    assert f"{stub_libfabric}:/usr/lib/libfabric.so.1:ro" in launch.argv
