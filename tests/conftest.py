"""Shared fixtures: paths, a real PostgreSQL server started for the session, and podman with the local base
image."""

from __future__ import annotations

import itertools
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

import pytest

from mpistack.engines import EngineError, get_engine
from mpistack.images.baseimage import make_base_image
from mpistack.spec import catalogue, load_stack_text

REPO = Path(__file__).resolve().parents[1]
# The suite's campaigns time nothing: they measure no machine bounds (tests/campaign/test_bounds.py does).
os.environ.setdefault("MPISTACK_BOUNDS", "off")
# The width the suite assumes is a pipe's: no COLUMNS, so every column of a table is printed, whatever terminal the
# suite was started from (tests that want a width, 80 columns above all, set COLUMNS themselves).
for _name in ("COLUMNS", "LINES"):
    os.environ.pop(_name, None)
SEEDS = REPO.parent / "shared" / "seeds"


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO


@pytest.fixture(scope="session")
def seeds() -> Path:
    if not SEEDS.is_dir():
        pytest.skip(f"source documents not found at {SEEDS}")
    return SEEDS


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _postgres_bin() -> Path | None:
    candidates = sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"), reverse=True)
    return candidates[0].parent if candidates else None


class PostgresServer:
    """A throw-away PostgreSQL cluster on 127.0.0.1, run as the 'postgres' user when we are root."""

    def __init__(self, bindir: Path):
        self.bindir = bindir
        self.root = Path(tempfile.mkdtemp(prefix="mpistack-pg-"))
        self.data = self.root / "data"
        self.port = _free_port()
        self.as_user: list[str] = []
        if os.geteuid() == 0:  # PostgreSQL refuses to run as root
            user = pwd.getpwnam("postgres")
            os.chown(self.root, user.pw_uid, user.pw_gid)
            self.as_user = ["runuser", "-u", "postgres", "--"]
        self._names = itertools.count()

    def _run(self, *args: str) -> None:
        subprocess.run([*self.as_user, *args], check=True, capture_output=True, text=True)

    def start(self) -> None:
        self._run(str(self.bindir / "initdb"), "-D", str(self.data), "-A", "trust", "-U", "postgres",
                  "--no-sync")
        self.serve()

    def serve(self) -> None:
        """Start the server on its data directory and port: at first, and again after a test stopped it."""
        options = f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off"
        self._run(str(self.bindir / "pg_ctl"), "-D", str(self.data), "-o", options, "-l",
                  str(self.root / "server.log"), "-w", "start")

    def stop(self) -> None:
        try:
            self._run(str(self.bindir / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "stop")
        finally:
            shutil.rmtree(self.root, ignore_errors=True)

    def new_database(self) -> str:
        name = f"mpistack_test_{next(self._names)}"
        self._run(str(self.bindir / "psql"), "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres",
                  "-c", f"CREATE DATABASE {name}")
        return f"postgresql://postgres@127.0.0.1:{self.port}/{name}"


@pytest.fixture(scope="session")
def postgres_server():
    bindir = _postgres_bin()
    if bindir is None:
        pytest.skip("PostgreSQL server binaries not installed (scripts/setup-host.sh installs them)")
    server = PostgresServer(bindir)
    server.start()
    yield server
    server.stop()


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def store_url(request, tmp_path) -> str:
    """A fresh, empty results store on each backend."""
    if request.param == "sqlite":
        return str(tmp_path / "results.db")
    return request.getfixturevalue("postgres_server").new_database()


@pytest.fixture(scope="session")
def podman():
    if shutil.which("podman") is None:
        pytest.skip("podman is not installed")
    if os.geteuid() != 0:
        pytest.skip("the podman tests run as root (rootless podman needs subuid set-up)")
    engine = get_engine("podman")
    probe = subprocess.run(engine.command("info", "--format", "{{.Host.OCIRuntime.Name}}"), env=engine.env(),
                           capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip(f"podman cannot run here: {probe.stderr.strip()[-300:]}")
    return engine


@pytest.fixture(scope="session")
def base_image(podman):
    """localhost/debian:bookworm, made once (debootstrap + import) and reused by every build."""
    if shutil.which("debootstrap") is None and not podman.image_exists("localhost/debian:bookworm"):
        pytest.skip("debootstrap is not installed and there is no localhost/debian:bookworm image")
    try:
        result = make_base_image(podman, "debian:bookworm")
    except EngineError as error:
        pytest.skip(f"cannot make the base image: {error}")
    return result.tag


@pytest.fixture
def stack_from():
    """Build a Stack from TOML text (with a readable file name for error messages)."""
    def make(text: str, where: str = "test.toml"):
        return load_stack_text(text, where)
    return make


@pytest.fixture
def seed_stack():
    return catalogue.load


def stand_in_wheel(directory: Path) -> str:
    """An empty mpich 4.3.2 wheel (no mpicc in it) in ``directory``, for pip runs that must stay offline; returns
    its sha256."""
    import hashlib
    import zipfile

    wheel = directory / "mpich-4.3.2-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("mpich-4.3.2.dist-info/METADATA", "Metadata-Version: 2.1\nName: mpich\nVersion: 4.3.2\n")
        archive.writestr("mpich-4.3.2.dist-info/WHEEL", "Wheel-Version: 1.0\nGenerator: test\n"
                                                        "Root-Is-Purelib: true\nTag: py3-none-any\n")
        archive.writestr("mpich-4.3.2.dist-info/RECORD", "")
    return hashlib.sha256(wheel.read_bytes()).hexdigest()
