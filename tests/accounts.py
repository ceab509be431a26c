"""Unprivileged accounts for the tests that need a second user of the machine (another user's files, a user
without root): made with useradd when the tests run as root (as in CI), removed with their home afterwards."""

from __future__ import annotations

import os
import pwd
import secrets
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest


@dataclass(frozen=True)
class Account:
    name: str
    uid: int
    gid: int
    home: Path

    def run(self, argv: list[str], env: dict[str, str] | None = None, cwd: Path | None = None,
            timeout: float = 600, check: bool = True) -> subprocess.CompletedProcess:
        """`argv` as this account, with a login-like environment of its own (HOME, USER, a PATH without
        /usr/sbin as Debian gives ordinary users) plus `env`."""
        base = {"HOME": str(self.home), "USER": self.name, "LOGNAME": self.name, "LANG": "C.UTF-8",
                "PATH": "/usr/local/bin:/usr/bin:/bin", "XDG_RUNTIME_DIR": f"/run/user/{self.uid}"}
        result = subprocess.run(["runuser", "-u", self.name, "--", "env", "-i",
                                 *(f"{key}={value}" for key, value in {**base, **(env or {})}.items()), *argv],
                                capture_output=True, text=True, cwd=cwd or self.home, timeout=timeout)
        if check and result.returncode != 0:
            raise AssertionError(f"{argv} as {self.name}: exit {result.returncode}\n{result.stdout}\n{result.stderr}")
        return result

    def mpistack(self, *args: str, timeout: float = 1800, check: bool = True,
                 env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
        """`mpistack ARGS` as this account, from this checkout and the test's Python packages (skipped where
        this account cannot read them: a checkout in root's home)."""
        python, path = _python_for_others()
        if not all(self.run(["test", "-r", str(Path(entry) / "mpistack" / "__init__.py") if entry == path[0]
                             else entry], check=False).returncode == 0 for entry in path):
            pytest.skip(f"{self.name} cannot read this checkout or its packages ({', '.join(path)})")
        return self.run([python, "-m", "mpistack.cli", *args], env={**(env or {}), "PYTHONPATH": os.pathsep.join(path)},
                        timeout=timeout, check=check)


def _python_for_others() -> tuple[str, list[str]]:
    """A Python of this version another account can run (this one, or the system's of the same minor version
    where this one lies in root's home), and the path that finds mpistack and its dependencies."""
    import sys
    import sysconfig

    source = str(Path(__file__).resolve().parents[1] / "src")
    python = sys.executable
    if not os.access(python, os.X_OK) or Path(sys.base_prefix).is_relative_to(Path.home()):
        python = f"/usr/bin/python{sys.version_info.major}.{sys.version_info.minor}"
    return python, [source, sysconfig.get_paths()["purelib"]]


def _needs_root() -> None:
    if os.geteuid() != 0 or not shutil.which("useradd") or not shutil.which("runuser"):
        pytest.skip("needs root with useradd and runuser (CI runs the tests as root)")


@contextmanager
def unprivileged_account() -> Iterator[Account]:
    """A new account without sudo, with a home of its own (0700) and, as Debian's useradd gives every
    ordinary account (SUB_UID_COUNT in /etc/login.defs), subordinate ids in /etc/subuid and /etc/subgid."""
    _needs_root()
    name = f"mpst{secrets.token_hex(3)}"
    subprocess.run(["useradd", "--create-home", "--user-group", "--shell", "/bin/sh", name],
                   check=True, capture_output=True)
    entry = pwd.getpwnam(name)
    home = Path(entry.pw_dir)
    home.chmod(0o700)
    runtime = Path(f"/run/user/{entry.pw_uid}")  # what a login's systemd would make: podman keeps state there
    runtime.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chown(runtime, entry.pw_uid, entry.pw_gid)
    try:
        yield Account(name, entry.pw_uid, entry.pw_gid, home)
    finally:
        # what the account left running (rootless podman's pause process) goes with it
        subprocess.run(["pkill", "--signal", "KILL", "--uid", str(entry.pw_uid)], capture_output=True)
        subprocess.run(["userdel", "--remove", "--force", name], capture_output=True)
        shutil.rmtree(runtime, ignore_errors=True)
        Path(f"/dev/shm/libpod_rootless_lock_{entry.pw_uid}").unlink(missing_ok=True)  # rootless podman's, not in $HOME
