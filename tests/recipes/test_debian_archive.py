"""The chain from a signed InRelease to a Debian orig-tarball pin, against a small archive made here: an
InRelease signed with a key made for the test (gpg), its Sources.xz, and a .dsc, served over HTTP. A
tampered index, .dsc or pin breaks the chain with a message that says where."""

from __future__ import annotations

import hashlib
import http.server
import lzma
import os
import shutil
import subprocess
import threading
from functools import partial
from pathlib import Path

import pytest

from mpistack.recipes.debian_archive import ArchiveCheckError, check_debian_pin, verified_sources

pytestmark = pytest.mark.skipif(not (shutil.which("gpg") and shutil.which("gpgv")),
                                reason="gpg and gpgv are needed to sign and check a test archive")

ORIG = b"the orig tarball\n"


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _dsc(orig_sha: str) -> bytes:
    return (f"Format: 3.0 (quilt)\nSource: fake\nVersion: 1.0-2\nChecksums-Sha256:\n"
            f" {orig_sha} {len(ORIG)} fake_1.0.orig.tar.xz\nFiles:\n 0 0 fake_1.0.orig.tar.xz\n").encode()


class Archive:
    def __init__(self, root: Path, url: str, gnupg: Path):
        self.root, self.url, self.gnupg = root, url, gnupg
        self.keyring = gnupg / "archive.gpg"

    def publish(self, *, dsc: bytes, listed_orig_sha: str, listed_dsc_sha: str | None = None) -> None:
        pool = self.root / "pool" / "main" / "f" / "fake"
        pool.mkdir(parents=True, exist_ok=True)
        (pool / "fake_1.0-2.dsc").write_bytes(dsc)
        sources = (f"Package: fake\nVersion: 1.0-2\nChecksums-Sha256:\n"
                   f" {listed_dsc_sha or _sha(dsc)} {len(dsc)} fake_1.0-2.dsc\n"
                   f" {listed_orig_sha} {len(ORIG)} fake_1.0.orig.tar.xz\n\n"
                   f"Package: other\nVersion: 2\n").encode()
        packed = lzma.compress(sources)
        dists = self.root / "dists" / "test"
        (dists / "main" / "source").mkdir(parents=True, exist_ok=True)
        (dists / "main" / "source" / "Sources.xz").write_bytes(packed)
        release = (f"Suite: test\nSHA256:\n {_sha(packed)} {len(packed)} main/source/Sources.xz\n").encode()
        (dists / "Release").write_bytes(release)
        (dists / "InRelease").unlink(missing_ok=True)
        subprocess.run(["gpg", "--homedir", str(self.gnupg), "--batch", "--yes", "--clearsign", "--output",
                        str(dists / "InRelease"), str(dists / "Release")], check=True, capture_output=True)

    def versions(self, tmp_path: Path, pinned_sha: str) -> Path:
        path = tmp_path / "versions.toml"
        path.write_text('[fake]\nurl = "https://example.org/fake-{version}.tar.gz"\nsource = "test"\n'
                        '[fake.versions]\n"1.0" = "' + "0" * 64 + '"\n[fake.debian]\npackage = "fake"\n'
                        f'[fake.debian.versions."1.0"]\nfile = "fake_1.0.orig.tar.xz"\nsha256 = "{pinned_sha}"\n'
                        f'dsc = "{self.url}/pool/main/f/fake/fake_1.0-2.dsc"\n')
        return path


@pytest.fixture
def archive(tmp_path):
    gnupg = tmp_path / "gnupg"
    gnupg.mkdir(mode=0o700)
    subprocess.run(["gpg", "--homedir", str(gnupg), "--batch", "--passphrase", "", "--quick-gen-key",
                    "mpistack test archive <test@example.org>", "ed25519", "sign", "never"],
                   check=True, capture_output=True, timeout=120)
    subprocess.run(["gpg", "--homedir", str(gnupg), "--batch", "--yes", "--output", str(gnupg / "archive.gpg"),
                    "--export"], check=True, capture_output=True)
    root = tmp_path / "www"
    root.mkdir()
    handler = partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    handler.log_message = lambda *a, **k: None
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield Archive(root, f"http://127.0.0.1:{httpd.server_address[1]}", gnupg)
    httpd.shutdown()
    subprocess.run(["gpgconf", "--homedir", str(gnupg), "--kill", "all"], capture_output=True,
                   env={**os.environ, "GNUPGHOME": str(gnupg)})


def _check(archive: Archive, versions: Path, keyring: Path | None = None):
    return check_debian_pin("fake", "1.0", archive.url, "test", keyring=keyring or archive.keyring,
                            versions_path=versions)


def test_pin_tied_to_the_signed_release(archive, tmp_path):
    archive.publish(dsc=_dsc(_sha(ORIG)), listed_orig_sha=_sha(ORIG))
    check = _check(archive, archive.versions(tmp_path, _sha(ORIG)))
    assert check.debian_version == "1.0-2" and len(check.steps) == 3
    assert "InRelease: signature good" in check.steps[0]


def test_another_key_is_refused(archive, tmp_path):
    archive.publish(dsc=_dsc(_sha(ORIG)), listed_orig_sha=_sha(ORIG))
    other = tmp_path / "empty.gpg"
    other.write_bytes(b"")
    with pytest.raises(ArchiveCheckError, match="InRelease: the signature does not verify"):
        _check(archive, archive.versions(tmp_path, _sha(ORIG)), keyring=other)


def test_a_pin_the_index_does_not_list_is_refused(archive, tmp_path):
    archive.publish(dsc=_dsc(_sha(ORIG)), listed_orig_sha=_sha(ORIG))
    wrong = _sha(b"something else")
    with pytest.raises(ArchiveCheckError, match=f"Sources lists fake_1.0.orig.tar.xz with sha256 {_sha(ORIG)}, "
                                                f"versions.toml pins {wrong}"):
        _check(archive, archive.versions(tmp_path, wrong))


def test_a_dsc_other_than_the_indexed_one_is_refused(archive, tmp_path):
    archive.publish(dsc=_dsc(_sha(ORIG)), listed_orig_sha=_sha(ORIG), listed_dsc_sha=_sha(b"another dsc"))
    with pytest.raises(ArchiveCheckError, match="fake_1.0-2.dsc: its sha256 is not the one Sources lists"):
        _check(archive, archive.versions(tmp_path, _sha(ORIG)))


def test_a_sources_index_changed_after_signing_is_refused(archive, tmp_path):
    archive.publish(dsc=_dsc(_sha(ORIG)), listed_orig_sha=_sha(ORIG))
    index = archive.root / "dists" / "test" / "main" / "source" / "Sources.xz"
    index.write_bytes(lzma.compress(b"Package: fake\nVersion: 1.0-2\n"))
    with pytest.raises(ArchiveCheckError, match="Sources.xz does not match the sha256"):
        verified_sources(archive.url, "test", archive.keyring)


# -- the index readers, over generated input ----------------------------------------------------------------

from hypothesis import given, strategies as st  # noqa: E402

from mpistack.recipes.debian_archive import _checksums, _indexed, _stanza  # noqa: E402

FILE_NAMES = st.from_regex(r"[a-z0-9][a-z0-9+.~_-]{0,30}", fullmatch=True)
SHAS = st.binary(min_size=1, max_size=8).map(_sha)


@given(st.dictionaries(FILE_NAMES, st.tuples(SHAS, st.integers(0, 10 ** 9)), min_size=1, max_size=6))
def test_checksum_fields_are_read_whole(files):
    field = "\n".join(f" {sha} {size} {name}" for name, (sha, size) in files.items())
    assert _checksums(field) == {name: sha for name, (sha, _) in files.items()}


@given(st.lists(st.tuples(FILE_NAMES, FILE_NAMES), min_size=1, max_size=5, unique_by=lambda p: p[0]),
       st.data())
def test_the_stanza_of_the_package_and_version_is_found(packages, data):
    name, version = data.draw(st.sampled_from(packages))
    text = "\n\n".join(f"Package: {p}\nVersion: {v}\nChecksums-Sha256:\n {_sha(p.encode())} 1 {p}_{v}.dsc"
                       for p, v in packages)
    stanza = _stanza(text, name, version)
    assert stanza["Package"] == name and _checksums(stanza["Checksums-Sha256"]) == {
        f"{name}_{version}.dsc": _sha(name.encode())}


@given(SHAS, st.integers(0, 10 ** 9), SHAS)
def test_only_the_sha256_field_of_a_release_counts(sha, size, md5_like):
    release = (f"MD5Sum:\n {md5_like[:32]} {size + 1} main/source/Sources.xz\n"
               f"SHA256:\n {sha} {size} main/source/Sources.xz\n")
    assert _indexed(release, "main/source/Sources.xz") == (sha, size)
    with pytest.raises(ArchiveCheckError, match="lists no main/source/Sources.gz"):
        _indexed(release, "main/source/Sources.gz")
