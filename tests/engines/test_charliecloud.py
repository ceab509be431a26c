"""Charliecloud: the command lines mpistack plans (unit), and real runs of a container per rank by an
unprivileged user, in separate and in joined namespaces (integration: ch-run, root podman to convert from,
the Debian MPICH and Open MPI images)."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
from pathlib import Path

import pytest

from mpistack.approaches import HostFacts, Resources, plan
from mpistack.campaign.matrix import expand, resolve_stacks
from mpistack.engines import CharliecloudEngine, ContainerRun, EngineError, PodmanEngine
from mpistack.engines.charliecloud import CASE_MOUNT, environment_file
from mpistack.parsers.transport import parse_transport
from mpistack.spec.campaign import load_campaign_text

IMAGE = "/images/debian-mpich"
CASE = "/work/cases/hybrid-1"


def spec(**options) -> ContainerRun:
    return ContainerRun(IMAGE, ["mpistack-bench", "latency", "--json", f"{CASE}/out.json"], env={"A": "x=y"},
                        label="hybrid-1", mounts=[f"{CASE}:{CASE}", "/usr/lib/ucx:/usr/lib/ucx:ro"],
                        per_rank=True, share_pid=True, share_ipc=True, **options)


def test_a_rank_in_separate_namespaces_is_one_ch_run_with_the_case_directory_at_its_mount_point():
    argv = CharliecloudEngine().run_argv(spec())
    assert argv == ["ch-run", "--set-env", "--set-env=A=x=y", f"--bind={CASE}:{CASE_MOUNT}",
                    "--bind=/usr/lib/ucx:/usr/lib/ucx", f"--cd={CASE_MOUNT}", IMAGE, "--",
                    "mpistack-bench", "latency", "--json", f"{CASE_MOUNT}/out.json"]


def test_joined_ranks_name_their_count_and_the_case_as_the_join_tag():
    argv = CharliecloudEngine().run_argv(spec(join_ranks=2))
    assert argv[1:3] == ["--join-ct=2", "--join-tag=hybrid-1"]
    # one rank a node (two nodes under srun) has no peer: no join, whose tag nodes of one machine would share
    assert not any(item.startswith("--join") for item in CharliecloudEngine().run_argv(spec(join_ranks=1)))


def test_a_working_directory_is_where_the_rank_starts_inside():
    argv = CharliecloudEngine().run_argv(spec(workdir=f"{CASE}/run"))
    assert f"--cd={CASE_MOUNT}/run" in argv


def test_separate_ranks_share_only_the_hosts_ipc_pid_and_network():
    engine = CharliecloudEngine()
    separate, joined = engine.confinement(spec()), engine.confinement(spec(join_ranks=2))
    assert separate.separate() == ["user", "mnt"] and separate.word() == "separate-ns"
    assert joined.separate() == [] and joined.word() == "joined-ns"
    assert separate.capabilities == () and separate.shm_bytes is None


def test_the_image_environment_is_written_one_variable_a_line():
    assert environment_file(["PATH=/usr/bin:/bin", "BAD\nVALUE=1", "NOEQUALS"]) == "PATH=/usr/bin:/bin\n"


def test_ch_run_missing_is_one_error_naming_the_fix(monkeypatch):
    engine = CharliecloudEngine()
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(EngineError, match="apt-get install charliecloud-runtime"):
        engine.check()


def test_user_unset_is_the_users_own_name_in_every_ch_run_s_environment(monkeypatch):
    engine = CharliecloudEngine()
    monkeypatch.setattr(CharliecloudEngine, "runner", "/bin/true")  # installed, as far as this test goes
    monkeypatch.setenv("USER", "someone")
    assert "USER" not in engine.env_overrides()  # a set $USER is the caller's to keep
    monkeypatch.delenv("USER", raising=False)
    engine.check()
    assert engine.env_overrides()["USER"] == pwd.getpwuid(os.getuid()).pw_name
    assert engine.env_overrides()["CONTAINERS_CONF"]  # podman's own setting stays (it exports the images)

    def nameless(uid):
        raise KeyError(uid)

    monkeypatch.setattr(pwd, "getpwuid", nameless)
    with pytest.raises(EngineError, match=r"\$USER is not set and uid \d+ has no name.*export USER=NAME"):
        engine.check()


def test_an_image_podman_does_not_have_cannot_be_converted_and_is_never_pulled(tmp_path, monkeypatch):
    engine = CharliecloudEngine()
    monkeypatch.setenv("MPISTACK_CHARLIECLOUD_IMAGES", str(tmp_path))
    monkeypatch.setattr(PodmanEngine, "image_exists", lambda self, reference: False)
    with pytest.raises(EngineError, match="podman has no such image; build it first.*never pulled"):
        engine.prepare_image("localhost/mpistack/nothing:here")


# -- real runs --------------------------------------------------------------------------------------------------

USER = "mpistack-ch"
IMAGES = {"mpich": "localhost/mpistack/debian-mpich:mpich4.0.2-ucx",
          "openmpi": "localhost/mpistack/debian-openmpi:openmpi4.1.4-ucx"}
CAMPAIGN = """
name = "ch"
engine = "charliecloud"
approaches = ["hybrid"]
benchmarks = [{{ name = "latency", options = ["-m", "1:65536", "-i", "20", "-x", "2"] }}]
[[stack]]
name = "{stack}"
[[variant]]
name = "joined"
namespaces = "joined"
"""


def _podman_has(reference: str) -> bool:
    return shutil.which("podman") is not None and subprocess.run(
        ["podman", "image", "exists", reference], capture_output=True).returncode == 0


@pytest.fixture(scope="module")
def unprivileged_user() -> str:
    """An ordinary user to run ch-run as (created once, as tests of unprivileged runs do)."""
    if os.geteuid() != 0 or shutil.which("ch-run") is None or shutil.which("runuser") is None:
        pytest.skip("needs root (to make an unprivileged user and convert from root podman's storage) and ch-run")
    try:
        pwd.getpwnam(USER)
    except KeyError:
        subprocess.run(["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", USER], check=True)
    return USER


@pytest.fixture(scope="module")
def shared_dir(unprivileged_user):
    """Images and case directories the unprivileged user can read (a root-only cache cannot be)."""
    root = Path("/var/tmp/mpistack-charliecloud-test")
    root.mkdir(mode=0o755, exist_ok=True)
    os.chmod(root, 0o755)
    return root


def run_as_user(user: str, argv: list[str], env: dict[str, str], cwd: Path, timeout: float = 60):
    """`argv` as `user` in a clean environment: PATH, USER, HOME and `env` (a None value leaves that one out)."""
    environment = {"PATH": "/usr/bin:/bin", "USER": user, "HOME": str(cwd), **env}
    command = ["runuser", "-u", user, "--", "env", "-i",
               *(f"{k}={v}" for k, v in environment.items() if v is not None), *argv]
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=timeout, cwd=cwd)
    except subprocess.TimeoutExpired as expired:
        return subprocess.CompletedProcess(command, None, expired.stdout or "", (expired.stderr or b"").decode()
                                           if isinstance(expired.stderr, bytes) else expired.stderr or "")


def launch_as_user(user: str, case, resources, label: str, env: dict[str, str] | None = None):
    """Plan the case into a fresh case directory the user may write, and run it as that user."""
    case_dir = resources.case_directory(label)
    shutil.rmtree(case_dir, ignore_errors=True)
    case_dir.mkdir(parents=True)
    for directory in (case_dir, case_dir.parent, resources.workdir):
        os.chmod(directory, 0o777 if directory == case_dir else 0o755)
    launch = plan(case, resources, case_dir / "out.json", [], label)
    return run_as_user(user, launch.argv, {**launch.env, **(env or {})}, case_dir), launch


@pytest.mark.parametrize("mpi", ["mpich", "openmpi"])
def test_a_container_per_rank_as_an_unprivileged_user_separate_and_joined(mpi, unprivileged_user, shared_dir,
                                                                           monkeypatch):
    reference = IMAGES[mpi]
    if not _podman_has(reference):
        pytest.skip(f"{reference} is not built (mpistack stack build debian-{mpi})")
    monkeypatch.setenv("MPISTACK_CHARLIECLOUD_IMAGES", str(shared_dir / "images"))
    engine = CharliecloudEngine()
    image = engine.prepare_image(reference)
    assert Path(image, "ch", "environment").read_text().startswith("PATH=")
    assert engine.prepare_image(reference) == image  # cached by digest: the same directory, not converted again

    campaign = load_campaign_text(CAMPAIGN.format(stack=f"debian-{mpi}"), "ch.toml")
    workdir = shared_dir / f"work-{mpi}"
    resources = Resources(engine=engine, workdir=workdir, host=HostFacts.probe(),
                          images={f"debian-{mpi}": reference})
    said = {}
    for case in expand(campaign, resolve_stacks(campaign)):
        done, launch = launch_as_user(unprivileged_user, case, resources, f"{mpi}-{case.variant_name}",
                                      {"MPISTACK_CONFINEMENT": "1"})
        said[case.variant_name] = (done, parse_transport(done.stderr, mpi), launch)
    separate, separate_ns, launch = said["default"]
    assert launch.facts["confinement"] == "separate-ns"
    assert separate_ns.get("ns_separate") == "user,mnt", separate.stderr[-2000:]
    assert separate_ns.get("cap_eff") == "0"  # nothing privileged: no capability in the host's namespaces
    joined, joined_ns, launch = said["joined"]
    assert launch.facts["confinement"] == "joined-ns"
    assert joined.returncode == 0, joined.stderr[-2000:]
    assert joined_ns.get("ns_separate") == "none" and (workdir / "cases" / f"{mpi}-joined" / "out.json").is_file()
    if mpi == "mpich":  # UCX's posix proc-link across user namespaces: MPI_Init aborts
        assert separate.returncode != 0


def test_a_user_without_user_set_runs_ch_run_with_the_engines_environment(unprivileged_user, shared_dir,
                                                                        monkeypatch):
    """An ordinary user whose environment has no $USER: ch-run refuses alone, and runs with what the engine adds
    for that user (planned as the user: the uid is theirs)."""
    reference = IMAGES["mpich"]
    if not _podman_has(reference):
        pytest.skip(f"{reference} is not built (mpistack stack build debian-mpich)")
    monkeypatch.setenv("MPISTACK_CHARLIECLOUD_IMAGES", str(shared_dir / "images"))
    engine = CharliecloudEngine()
    image = engine.prepare_image(reference)
    monkeypatch.delenv("USER", raising=False)
    monkeypatch.setattr(os, "getuid", lambda: pwd.getpwnam(unprivileged_user).pw_uid)
    added = {key: value for key, value in engine.env_overrides().items() if key == "USER"}
    assert added == {"USER": unprivileged_user}
    argv = ["ch-run", image, "--", "sh", "-c", "echo $USER"]
    bare = run_as_user(unprivileged_user, argv, {"USER": None}, shared_dir)
    assert bare.returncode != 0  # ch-run alone refuses: the test can fail
    done = run_as_user(unprivileged_user, argv, {"USER": None, **added}, shared_dir)
    assert (done.returncode, done.stdout.strip()) == (0, unprivileged_user), done.stderr[-1000:]


def test_bind_under_charliecloud_binds_each_host_library_onto_a_target_the_prepare_stage_makes():
    from mpistack.approaches import mount_points
    from mpistack.approaches.base import HostFacts as Facts
    from mpistack.approaches.bind import MOUNT_DIR

    campaign = load_campaign_text(CAMPAIGN.format(stack="debian-mpich").replace('["hybrid"]', '["bind"]'), "ch.toml")
    host = Facts(mpi_library_files={"mpich": (("/usr/lib/libmpich.so.12", "libmpi.so.12"),)},
                 mpi_versions={"mpich": "4.0.2"})
    resources = Resources(engine=CharliecloudEngine(), workdir=Path("/work"), host=host,
                          images={"debian-mpich": IMAGES["mpich"]})
    case = next(case for case in expand(campaign, resolve_stacks(campaign)) if case.variant_name == "default")
    assert mount_points(case, resources) == [f"/usr/lib/libmpich.so.12:{MOUNT_DIR}/libmpi.so.12:ro"]
    launch = plan(case, resources, None, [], "bind-1")
    assert f"--bind=/usr/lib/libmpich.so.12:{MOUNT_DIR}/libmpi.so.12" in launch.argv
    assert f"--set-env=LD_LIBRARY_PATH={MOUNT_DIR}" in launch.argv


def test_a_throwaway_container_of_a_reference_runs_its_converted_image_with_its_bind_targets_made(tmp_path,
                                                                                                 monkeypatch):
    """The image checks (fabric-swap's libfabric facts) name a built image by its reference, as with podman:
    Charliecloud runs the converted directory, with the bind's target made in it (ch-run binds only onto paths
    the image has)."""
    from mpistack.engines.base import Engine

    monkeypatch.setenv("MPISTACK_CHARLIECLOUD_IMAGES", str(tmp_path / "store"))
    engine = CharliecloudEngine()
    image = Path(engine.planned_image("ref:1"))
    image.mkdir(parents=True)
    monkeypatch.setattr(CharliecloudEngine, "prepare_image", lambda self, reference, digest=None: str(image))
    ran = []
    monkeypatch.setattr(Engine, "run", lambda self, spec, timeout=600: ran.append(self.run_argv(spec)))
    engine.run(ContainerRun(image="ref:1", argv=["cp", "a", "/out/b"], mounts=[f"{tmp_path}:/out"]))
    assert (image / "out").is_dir()
    assert ran[0][-5:] == [str(image), "--", "cp", "a", "/out/b"] and f"--bind={tmp_path}:/out" in ran[0]


def test_bind_targets_are_made_once_in_the_converted_image_and_never_outside_it(tmp_path, monkeypatch):
    monkeypatch.setenv("MPISTACK_CHARLIECLOUD_IMAGES", str(tmp_path / "store"))
    engine = CharliecloudEngine()
    image = Path(engine.planned_image("ref:1"))
    (image / "usr" / "lib").mkdir(parents=True)
    (image / "lib").symlink_to("usr/lib")  # Debian's merged /usr: a link inside the image is followed
    (image / "escape").symlink_to(tmp_path / "host")  # one that leads out is not
    engine.prepare_mounts("ref:1", [f"{tmp_path}:/opt/host-mpi/dir:ro", "/etc/hostname:/lib/x/libmpi.so.12:ro",
                                    "/etc/hostname:/usr/lib/exists"])
    assert (image / "opt" / "host-mpi" / "dir").is_dir()
    assert (image / "usr" / "lib" / "x" / "libmpi.so.12").is_file()
    engine.prepare_mounts("ref:1", ["/etc/hostname:/lib/x/libmpi.so.12"])  # there already: nothing to do
    with pytest.raises(EngineError, match="leads out of the image"):
        engine.prepare_mounts("ref:1", ["/etc/hostname:/escape/file"])
    assert not (tmp_path / "host").exists()


def test_bind_targets_a_read_only_image_store_lacks_are_one_error_naming_the_way_out(tmp_path, monkeypatch):
    if os.geteuid() == 0:
        pytest.skip("root writes into a read-only directory")
    monkeypatch.setenv("MPISTACK_CHARLIECLOUD_IMAGES", str(tmp_path / "store"))
    engine = CharliecloudEngine()
    image = Path(engine.planned_image("ref:1"))
    image.mkdir(parents=True)
    os.chmod(image, 0o555)
    with pytest.raises(EngineError, match="cannot be made.*owner of .*store.*MPISTACK_CHARLIECLOUD_IMAGES"):
        engine.prepare_mounts("ref:1", ["/etc/hostname:/opt/libmpi.so.12"])


@pytest.mark.parametrize("mpi", ["mpich", "openmpi"])
def test_bind_as_an_unprivileged_user_runs_the_host_mpi_in_a_directory_image(mpi, unprivileged_user, shared_dir,
                                                                             monkeypatch):
    """The host's MPI bound into the Debian image under Charliecloud, joined: the targets made in the converted
    image when it is prepared, then ch-run as an ordinary user."""
    from mpistack.approaches import mount_points

    reference = IMAGES[mpi]
    if not _podman_has(reference):
        pytest.skip(f"{reference} is not built (mpistack stack build debian-{mpi})")
    monkeypatch.setenv("MPISTACK_CHARLIECLOUD_IMAGES", str(shared_dir / "images"))
    engine = CharliecloudEngine()
    engine.prepare_image(reference)
    campaign = load_campaign_text(CAMPAIGN.format(stack=f"debian-{mpi}").replace('["hybrid"]', '["bind"]'), "ch.toml")
    workdir = shared_dir / f"work-bind-{mpi}"
    resources = Resources(engine=engine, workdir=workdir, host=HostFacts.probe(), images={f"debian-{mpi}": reference})
    case = next(case for case in expand(campaign, resolve_stacks(campaign)) if case.variant_name == "joined")
    engine.prepare_mounts(reference, mount_points(case, resources))
    done, _ = launch_as_user(unprivileged_user, case, resources, f"bind-{mpi}")
    assert done.returncode == 0, done.stderr[-2000:]
    assert (resources.case_directory(f"bind-{mpi}") / "out.json").is_file()
