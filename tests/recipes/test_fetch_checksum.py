"""A wrong tarball served by a local HTTP server must stop a source build with a clear checksum message.
The test runs the real rendered download+verify step (the same lines a Containerfile RUN carries)."""

from __future__ import annotations

import hashlib
import http.server
import io
import shutil
import subprocess
import tarfile
import threading
from functools import partial
from pathlib import Path

import pytest

from mpistack.recipes import blocks as B
from mpistack.spec.pins import pinned

pytestmark = pytest.mark.skipif(not (shutil.which("curl") and shutil.which("sha256sum")),
                                reason="curl and sha256sum are needed to run the rendered fetch step")


def _tarball(content: bytes) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        info = tarfile.TarInfo("fake-1.0/README")
        info.size = len(content)
        tar.addfile(info, io.BytesIO(content))
    return buf.getvalue()


@pytest.fixture
def server(tmp_path):
    root = tmp_path / "www"
    root.mkdir()
    handler = partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    handler.log_message = lambda *a, **k: None
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield root, f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


def _setup(tmp_path, root, url, served: bytes, pinned_bytes: bytes) -> Path:
    (root / "fake-1.0.tar.gz").write_bytes(served)
    versions = tmp_path / "versions.toml"
    versions.write_text(f'[fake]\nurl = "{url}/fake-{{version}}.tar.gz"\nsource = "test"\n'
                        f'[fake.versions]\n"1.0" = "{hashlib.sha256(pinned_bytes).hexdigest()}"\n')
    return versions


def _run(lines: list[str], workdir: Path) -> subprocess.CompletedProcess:
    script = "set -eu -o pipefail\n" + "\n".join(lines) + "\n"
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True, cwd=workdir, timeout=60)


def test_good_tarball_is_unpacked(tmp_path, server):
    root, url = server
    good = _tarball(b"genuine")
    versions = _setup(tmp_path, root, url, good, good)
    lines = B.fetch_lines(pinned("fake", "1.0", path=versions), dir=str(tmp_path / "src"))
    result = _run(lines, tmp_path)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "src" / "README").read_bytes() == b"genuine"


def test_wrong_tarball_stops_the_build(tmp_path, server):
    root, url = server
    versions = _setup(tmp_path, root, url, _tarball(b"tampered"), _tarball(b"genuine"))
    pin = pinned("fake", "1.0", path=versions)
    lines = B.fetch_lines(pin, dir=str(tmp_path / "src"))
    result = _run(lines + ["echo SHOULD-NOT-RUN"], tmp_path)
    assert result.returncode != 0
    assert "SHOULD-NOT-RUN" not in result.stdout
    assert "FAILED" in result.stdout + result.stderr
    assert f"mpistack: checksum mismatch for fake 1.0 ({url}/fake-1.0.tar.gz): expected sha256 {pin.sha256}" \
        in result.stderr
    assert not (tmp_path / "src" / "README").exists()  # never unpacked


def test_the_fetch_step_is_what_the_containerfile_runs(tmp_path, server, stack_from):
    """The rendered RUN step of a block contains exactly the fetch lines used above."""
    s = stack_from('name = "t"\n[base]\nimage = "docker.io/ubuntu:24.04"\n[libfabric]\nversion = "1.22.0"\n'
                   '[mpi]\nimpl = "mpich"\nversion = "4.3.1"\n')
    step = B.LibfabricBlock(s).step()
    fetch = B.fetch_lines(step.pin, dir="/tmp/src/libfabric")
    assert step.commands[:len(fetch)] == fetch
