"""What another user of the same machine can do to a user's run, with a real second account (useradd; the
tests run as root in CI, and root is the first user here): every place mpistack runs programs from or reads
settings from must be the user's own, or the run is refused with one line naming the path and the fix."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from mpistack.approaches.fabric_facts import find_library
from mpistack.cache import UnsafePath, cache_dir, check_own
from mpistack.campaign.reasons import first_reason, hinted
from mpistack.images.host_bench import build_host_bench, sources_digest
from mpistack.store import StoreError, open_database
from mpistack.system_tools import system_tool
from tests.helpers import HOST_MPICH_ONE_RANK, campaign_file, mpistack, plain_environment


@pytest.fixture
def shared_tmp():
    """A directory every user may create in, sticky as /tmp is (pytest's own tmp_path is root's alone)."""
    directory = Path(tempfile.mkdtemp(prefix="mpistack-shared-", dir="/tmp"))
    directory.chmod(0o1777)
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


def test_a_cache_root_another_user_made_first_is_refused_with_its_path_and_the_fix(tmp_path, shared_tmp, other_user):
    """The cache another user made first (as a shared XDG_CACHE_HOME invites) would let them swap the
    mpistack-bench this user's cases run: the run stops before anything, in one line."""
    cache = shared_tmp / "acache"
    other_user.run(["mkdir", "-p", str(cache / "mpistack")])
    path = campaign_file(tmp_path, HOST_MPICH_ONE_RANK + '[[benchmark]]\nname = "latency"\n')
    env = {**plain_environment(), "XDG_CACHE_HOME": str(cache)}
    result = subprocess.run([sys.executable, "-m", "mpistack.cli", "run", str(path), "--db", str(tmp_path / "r.db")],
                            capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert result.returncode == 2, result.stdout + result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert f"refused {cache}" in line and f"owned by {other_user.name}" in line
    assert "fix: give mpistack a directory of your own" in line
    assert "Traceback" not in result.stderr and "case" not in result.stdout


def test_a_program_another_user_planted_in_the_cache_is_not_run(shared_tmp, monkeypatch, other_user):
    """The cache root was once open to others (0777): it is refused, and once the user has closed it, what
    the other user left in it still is."""
    root = shared_tmp / "cache" / "mpistack"
    root.mkdir(parents=True)
    root.parent.chmod(0o755)
    root.chmod(0o777)
    planted = root / "bench" / f"build-mpich-{sources_digest()[:12]}"
    other_user.run(["mkdir", "-p", str(planted)])
    other_user.run(["chmod", "0777", str(planted), str(root / "bench")])
    monkeypatch.setenv("XDG_CACHE_HOME", str(root.parent))
    with pytest.raises(UnsafePath, match=rf"{root}: writable by others \(mode 0777\); fix: chmod go-w {root}$"):
        cache_dir()
    root.chmod(0o700)
    assert cache_dir() == root
    with pytest.raises(UnsafePath, match=rf"{root / 'bench'}: owned by {other_user.name} .*; fix: give mpistack"):
        build_host_bench("mpich")


def test_the_check_follows_links_and_allows_sticky_parents_only_above(tmp_path, shared_tmp, other_user):
    mine = shared_tmp / "mine"
    mine.mkdir(mode=0o700)
    assert check_own(mine / "cache", "FIX") == mine / "cache"  # /tmp is sticky: a parent, not the place itself
    with pytest.raises(UnsafePath, match=r"writable by others \(mode 1777\); fix: FIX$"):
        check_own(shared_tmp, "FIX")  # shared on purpose: no chmod to advise, but the caller's way out
    theirs = shared_tmp / "theirs"
    other_user.run(["mkdir", str(theirs)])
    (mine / "link").symlink_to(theirs)  # a link of one's own to another user's directory leads there
    with pytest.raises(UnsafePath, match=f"owned by {other_user.name}"):
        check_own(mine / "link" / "mpistack", "FIX")
    own_file = mine / "settings"
    own_file.write_text("")
    own_file.chmod(0o666)
    with pytest.raises(UnsafePath, match=rf"writable by others \(mode 0666\); fix: chmod go-w {own_file}"):
        check_own(own_file, "FIX")


def test_a_store_another_user_made_or_may_write_is_refused(tmp_path, shared_tmp, other_user):
    planted = shared_tmp / "store.db"
    other_user.run(["sh", "-c", f"touch {planted} && chmod 0666 {planted}"])
    with pytest.raises(StoreError, match=rf"results store {planted}: owned by {other_user.name} .*fix: keep the "
                                         "store in a directory of your own"):
        open_database(str(planted))
    planted.unlink()
    with pytest.raises(StoreError, match=rf"results store {shared_tmp}: writable by others \(mode 1777\); fix: "
                                         "keep the store in a directory of your own"):
        open_database(str(planted))  # anyone may plant there a journal of its name, which SQLite replays on open
    own = tmp_path / "store.db"
    own.touch()
    own.chmod(0o666)
    with pytest.raises(StoreError, match=rf"writable by others \(mode 0666\); fix: chmod go-w {own}"):
        open_database(str(own))
    other_user.run(["sh", "-c", f"touch {planted} && chmod 0666 {planted}"])
    campaign = campaign_file(tmp_path, HOST_MPICH_ONE_RANK + '[[benchmark]]\nname = "latency"\n')
    result = mpistack("run", campaign, "--db", planted, home=tmp_path, check=2)
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith(f"error: results store {planted}: owned by {other_user.name}"), line
    own.chmod(0o644)
    open_database(str(own)).dispose()


def test_system_tools_are_found_without_sbin_on_path(monkeypatch):
    """An ordinary user's PATH on Debian has no /usr/sbin: ldconfig is found anyway, and with it the
    host's libraries that bind and fabric-swap mount."""
    monkeypatch.setenv("PATH", "/usr/local/bin:/usr/bin:/bin")
    assert system_tool("ldconfig") in ("/usr/sbin/ldconfig", "/sbin/ldconfig")
    assert find_library("libc.so.6") is not None
    assert find_library("libmpich.so.12") is not None  # Debian's MPICH, which `bind` mounts


def test_a_password_given_with_db_is_warned_of(tmp_path):
    result = mpistack("runs", "--db", "postgresql://me:s3cret@127.0.0.1:1/none", home=tmp_path, check=None)
    assert "the --db password is visible to every user of this machine" in result.stderr
    assert "MPISTACK_DB" in result.stderr and "s3cret" not in result.stderr + result.stdout


def test_a_native_mpich_launch_another_user_broke_says_it_may_be_interference(tmp_path, other_user):
    """Hydra's mpiexec listens for its proxies on a TCP port of every address, with no check of who connects:
    another local user who writes to it ends the job. The reason says that this may be what happened."""
    launch = subprocess.Popen(["mpiexec.mpich", "-n", "2", "sleep", "20"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    try:
        ports = []
        for _ in range(100):  # until mpiexec listens
            listening = subprocess.run(["ss", "-Hltnp"], capture_output=True, text=True).stdout
            ports = [match.group(1) for match in re.finditer(rf":(\d+)\s.*\"mpiexec[^\"]*\",pid={launch.pid},",
                                                             listening)]
            if ports:
                break
            time.sleep(0.1)
        assert ports, listening
        other_user.run(["bash", "-c", f"echo garbage > /dev/tcp/127.0.0.1/{ports[0]}"])
        _, stderr = launch.communicate(timeout=60)
    finally:
        launch.kill()
    assert launch.returncode != 0
    reason = hinted(first_reason(stderr), stderr)
    assert reason.startswith("cannot find proxy with ID"), stderr
    assert "this may be interference: Hydra's control port" in reason and "ss -tnp" in reason
