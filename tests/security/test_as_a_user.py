"""A campaign end to end as a user without root: an account made for the test (CI runs as root), which builds
the Debian MPICH image in its own rootless podman storage (`mpistack stack build`: the recipe's podman build,
apt and the benchmark's compile, all rootless), then runs the host's MPICH natively, and the image
self-contained (container), with the host's launcher (hybrid) and with the host's MPICH bound in (bind), to
the answer. Nothing the run writes lies outside the user's home (where its store and work directory are) and
its runtime directory. The build starts from the Debian base root made, saved and loaded into the user's
storage: tests/images/test_rootless_base.py makes that base without root (mmdebstrap), a few minutes more
here; `make bench-recipes` times both."""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from tests.accounts import Account, unprivileged_account

pytestmark = [pytest.mark.podman,
              pytest.mark.skipif(shutil.which("mpiexec.mpich") is None, reason="needs Debian's MPICH")]

STACK = "debian-mpich"
BASE = "debian:bookworm"
#: the storage docs/stacks.md advises a user (Without root): vfs copies every layer whole, several times slower
OVERLAY_STORAGE = '[storage]\ndriver = "overlay"\n'
CAMPAIGN = """\
name = "as-a-user"
timeout = 120
retries = 1
repeats = 1
approaches = ["native", "container", "hybrid", "bind"]
benchmark_options = ["-m", "1:4096", "-i", "50", "-x", "5"]

[[stack]]
name = "host-mpich"
host = "mpich"

[[stack]]
name = "debian-mpich"

[[benchmark]]
name = "latency"

[[placement]]
ranks = 2
"""


@pytest.fixture(scope="module")
def base_archive(podman):
    """The Debian base as root has it (made here when missing), saved where another account can read it."""
    from mpistack.images.baseimage import make_base_image

    made = make_base_image(podman, BASE)
    directory = Path(tempfile.mkdtemp(prefix="mpistack-image-", dir="/tmp"))
    directory.chmod(0o755)
    archive = directory / "base.tar"
    subprocess.run(podman.command("save", "-o", str(archive), made.tag), env=podman.env(), check=True,
                   capture_output=True)
    archive.chmod(0o644)
    yield archive
    shutil.rmtree(directory, ignore_errors=True)


def written_by(user: Account) -> list[str]:
    """Every file or directory the account owns outside its home and its runtime directory: the root file
    system and the memory file systems a process may write to (/dev/shm, /run)."""
    allowed = [str(user.home), f"/run/user/{user.uid}"]
    found = []
    for top in ("/", "/dev/shm", "/run"):
        prune = [arg for path in allowed for arg in ("-path", path, "-o")][:-1]
        listing = subprocess.run(["find", top, "-xdev", "(", *prune, ")", "-prune", "-o", "-uid", str(user.uid),
                                  "-print"], capture_output=True, text=True)
        found += listing.stdout.split()
    # rootless podman's lock file for the account's containers (podman keeps it in /dev/shm, not in its storage)
    return sorted(set(found) - {f"/dev/shm/libpod_rootless_lock_{user.uid}"})


def test_a_user_without_root_builds_the_image_and_runs_container_hybrid_and_bind_to_the_answer(base_archive):
    from mpistack.spec import catalogue

    with unprivileged_account() as user:
        user.run(["mkdir", "-p", str(user.home / ".config" / "containers")])
        user.run(["sh", "-c", f"printf '%s' '{OVERLAY_STORAGE}' > ~/.config/containers/storage.conf"])
        user.run(["podman", "load", "-i", str(base_archive)], timeout=600)
        built = user.mpistack("stack", "build", STACK, timeout=1800, check=False)
        assert built.returncode == 0 and "Traceback" not in built.stderr, built.stdout + built.stderr
        tag = catalogue.load(STACK).image_ref()
        graph = user.run(["podman", "info", "--format", "{{.Store.GraphRoot}} {{.Host.Security.Rootless}}"])
        assert graph.stdout.split() == [str(user.home / ".local/share/containers/storage"), "true"]
        assert user.run(["podman", "image", "exists", tag], check=False).returncode == 0, built.stdout
        campaign = user.home / "as-a-user.toml"
        campaign.write_text(CAMPAIGN)
        subprocess.run(["chown", f"{user.uid}:{user.gid}", str(campaign)], check=True)
        store = user.home / "results.db"

        ran = user.mpistack("--db", str(store), "run", str(campaign), timeout=1500)
        said = ran.stdout + ran.stderr
        assert "Traceback" not in said, said
        runs = json.loads(user.mpistack("--db", str(store), "runs", "-w", "campaign=as-a-user", "-f", "json",
                                        "--limit", "100").stdout)
        by_approach = {}
        for run in runs:
            by_approach.setdefault(run["approach"], []).append(run)
        assert set(by_approach) == {"native", "container", "hybrid", "bind"}, said
        for approach, found in by_approach.items():
            assert any(run["status"] == "ok" for run in found), (approach, [run["message"] for run in found], said)
        # the answer names every row, and no row fails
        for row in ("debian-mpich", "container", "hybrid", "bind"):
            assert row in ran.stdout, said
        # rootless podman: the ranks share one user namespace, the user's, never the host's
        for run in by_approach["hybrid"] + by_approach["bind"] + by_approach["container"]:
            record = json.loads(run["tags"]["confinement_record"])
            assert "user" in record["shared"] and "user" not in record["host"], record
        hybrid = by_approach["hybrid"][0]["tags"]
        assert hybrid["runtime"] == "podman" and hybrid["confinement"] == "host-ipc-pid"

        # everything written lies in the account's home (store, cache, work directory, podman storage)
        assert written_by(user) == []
        assert store.is_file() and (user.home / ".cache" / "mpistack").is_dir()
