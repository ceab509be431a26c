"""The host set-up as a user without root: it checks, says in one message what is missing and the one
command an administrator runs, and never asks for a password; the administrator's run gives the user
subordinate ids. Real accounts (useradd), as CI runs the tests as root."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from tests.accounts import unprivileged_account

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "setup-host.sh"


@pytest.fixture
def script():
    """The script where any account can read it (a clone may lie in root's home)."""
    directory = Path(tempfile.mkdtemp(prefix="mpistack-setup-"))
    directory.chmod(0o755)
    copy = directory / "setup-host.sh"
    shutil.copy(SCRIPT, copy)
    copy.chmod(0o755)
    yield copy
    shutil.rmtree(directory)


def _packages_present(script: Path) -> bool:
    return subprocess.run(["bash", str(script)], capture_output=True, text=True).returncode == 0


def test_without_root_it_says_what_is_missing_and_the_administrators_command(script):
    if not _packages_present(script):
        pytest.skip("the system packages are not all installed here")
    with unprivileged_account() as user:
        ready = user.run(["bash", str(script)], check=False, timeout=120)
        assert ready.returncode == 0 and f"subordinate ids for {user.name}" in ready.stdout, ready.stderr
        subprocess.run(["usermod", "--del-subuids", "0-4294967294", "--del-subgids", "0-4294967294", user.name],
                       check=True)
        lacking = subprocess.run(["runuser", "-u", user.name, "--", "bash", str(script)], capture_output=True,
                                 text=True, stdin=subprocess.DEVNULL, timeout=120)
        assert lacking.returncode == 1 and lacking.stdout == ""
        (line,) = lacking.stderr.splitlines()  # one message; no sudo, so no password prompt
        assert f"lacks subordinate ids for {user.name} in /etc/subuid and /etc/subgid" in line
        assert line.endswith(f"An administrator runs once: sudo {script} {user.name}")
        granted = subprocess.run(["bash", str(script), user.name], capture_output=True, text=True, check=True)
        assert "subordinate ids" in granted.stdout and user.name in granted.stdout
        assert user.run(["bash", str(script)], check=False).returncode == 0
        again = subprocess.run(["bash", str(script), user.name], capture_output=True, text=True, check=True)
        assert "subordinate ids" not in again.stdout  # idempotent: one range per user
