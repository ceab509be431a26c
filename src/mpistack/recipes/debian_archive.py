"""Checks a Debian orig-tarball pin (versions.toml, [COMPONENT.debian]) against Debian's signed archive:

    InRelease of the suite (OpenPGP-signed; checked with gpgv and the Debian archive keyring)
      -> sha256 and size of main/source/Sources.xz (about 10 MB for bookworm)
        -> the source package's stanza (Package, Version from the .dsc's name): sha256 of its .dsc and of
           its orig tarball
          -> the .dsc itself (its sha256 as the index says), whose Checksums-Sha256 lists the orig tarball

so that a pin copied from a .dsc is tied to the archive's signature, not only to the page it was read from
(Debian Wiki, "SecureApt": https://wiki.debian.org/SecureApt). Nothing here is needed to build: the build
verifies the tarball against the pin either way.
"""

from __future__ import annotations

import hashlib
import lzma
import re
import subprocess
import tempfile
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from ..spec.pins import table

ARCHIVE_KEYRING = Path("/usr/share/keyrings/debian-archive-keyring.gpg")
TIMEOUT = 60


class ArchiveCheckError(RuntimeError):
    """The chain from the signed InRelease to the pin could not be established; the message says where."""


@dataclass
class PinCheck:
    component: str
    version: str
    package: str
    debian_version: str
    suite: str
    steps: list[str] = field(default_factory=list)  # what was checked, in order


def _get(url: str) -> bytes:
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT) as response:  # noqa: S310 - http(s) archive URLs
            return response.read()
    except OSError as error:
        raise ArchiveCheckError(f"cannot download {url}: {error}") from None


def verified_release(archive: str, suite: str, keyring: Path = ARCHIVE_KEYRING) -> str:
    """The signed text of ``suite``'s InRelease, as gpgv verified it (only what the signature covers)."""
    if not keyring.is_file():
        raise ArchiveCheckError(f"{keyring}: no Debian archive keyring (Debian: apt-get install "
                                "debian-archive-keyring)")
    data = _get(f"{archive}/dists/{suite}/InRelease")
    with tempfile.TemporaryDirectory(prefix="mpistack-release-") as directory:
        signed = Path(directory) / "InRelease"
        signed.write_bytes(data)
        proc = subprocess.run(["gpgv", "--keyring", str(keyring), "--output", "-", str(signed)],
                              capture_output=True, timeout=TIMEOUT)
    if proc.returncode != 0:
        raise ArchiveCheckError(f"{archive}/dists/{suite}/InRelease: the signature does not verify with {keyring}: "
                                + proc.stderr.decode(errors="replace").strip()[-400:])
    return proc.stdout.decode("utf-8", errors="replace")


def verified_sources(archive: str, suite: str, keyring: Path = ARCHIVE_KEYRING) -> tuple[str, str]:
    """(the verified InRelease text, main/source/Sources) of ``suite``, Sources checked against InRelease."""
    release = verified_release(archive, suite, keyring)
    sha, size = _indexed(release, "main/source/Sources.xz")
    packed = _get(f"{archive}/dists/{suite}/main/source/Sources.xz")
    if len(packed) != size or hashlib.sha256(packed).hexdigest() != sha:
        raise ArchiveCheckError(f"{archive}/dists/{suite}/main/source/Sources.xz does not match the sha256 {sha} "
                                f"and size {size} its InRelease lists")
    return release, lzma.decompress(packed).decode("utf-8", errors="replace")


def _indexed(release: str, name: str) -> tuple[str, int]:
    """(sha256, size) of ``name`` in a Release file's SHA256 field."""
    in_sha256 = False
    for line in release.splitlines():
        if not line.startswith(" "):
            in_sha256 = line.startswith("SHA256:")
            continue
        parts = line.split()
        if in_sha256 and len(parts) == 3 and parts[2] == name:
            return parts[0], int(parts[1])
    raise ArchiveCheckError(f"the Release file lists no {name}")


def _stanza(sources: str, package: str, version: str) -> dict[str, str]:
    for block in sources.split("\n\n"):
        fields: dict[str, str] = {}
        key = ""
        for line in block.splitlines():
            if line.startswith((" ", "\t")) and key:
                fields[key] += "\n" + line.strip()
            elif ":" in line:
                key, _, value = line.partition(":")
                fields[key] = value.strip()
        if fields.get("Package") == package and fields.get("Version") == version:
            return fields
    raise ArchiveCheckError(f"main/source/Sources lists no {package} {version}")


def _checksums(text: str) -> dict[str, str]:
    """{file: sha256} of a Checksums-Sha256 field."""
    out = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 3 and re.fullmatch(r"[0-9a-f]{64}", parts[0]):
            out[parts[2]] = parts[0]
    return out


def check_debian_pin(component: str, version: str, archive: str, suite: str, *,
                     keyring: Path = ARCHIVE_KEYRING, sources: str | None = None,
                     versions_path: Path | None = None) -> PinCheck:
    """Tie ``component`` ``version``'s Debian pin to ``suite``'s signed InRelease (see the module's text).
    ``sources``: the suite's Sources index from verified_sources, when the caller has it already."""
    entry = table(versions_path).get(component, {}).get("debian") or {}
    pin = (entry.get("versions") or {}).get(version)
    if not pin:
        raise ArchiveCheckError(f"{component} {version}: no Debian orig tarball is pinned in versions.toml")
    package = entry["package"]
    dsc_name = pin["dsc"].rsplit("/", 1)[-1]
    match = re.fullmatch(rf"{re.escape(package)}_(.+)\.dsc", dsc_name)
    if not match:
        raise ArchiveCheckError(f"{component} {version}: dsc {pin['dsc']!r} is not named {package}_VERSION.dsc")
    check = PinCheck(component, version, package, match.group(1), suite)
    if sources is None:
        _, sources = verified_sources(archive, suite, keyring)
    check.steps.append(f"{archive}/dists/{suite}/InRelease: signature good ({keyring.name}); "
                       "main/source/Sources.xz: sha256 as it lists")
    stanza = _stanza(sources, package, check.debian_version)
    listed = _checksums(stanza.get("Checksums-Sha256", ""))
    if listed.get(pin["file"]) != pin["sha256"]:
        raise ArchiveCheckError(f"{package} {check.debian_version}: Sources lists {pin['file']} with sha256 "
                                f"{listed.get(pin['file'], 'none')}, versions.toml pins {pin['sha256']}")
    check.steps.append(f"{package} {check.debian_version} in Sources: {pin['file']} sha256 {pin['sha256']}")
    dsc = _get(pin["dsc"])
    if hashlib.sha256(dsc).hexdigest() != listed.get(dsc_name):
        raise ArchiveCheckError(f"{pin['dsc']}: its sha256 is not the one Sources lists for {dsc_name}")
    in_dsc = _checksums(dsc.decode("utf-8", errors="replace").split("Checksums-Sha256:", 1)[-1].split("Files:")[0])
    if in_dsc.get(pin["file"]) != pin["sha256"]:
        raise ArchiveCheckError(f"{pin['dsc']}: Checksums-Sha256 lists {pin['file']} with sha256 "
                                f"{in_dsc.get(pin['file'], 'none')}, versions.toml pins {pin['sha256']}")
    check.steps.append(f"{dsc_name}: sha256 as Sources lists it; its Checksums-Sha256 lists the pinned sha256")
    return check
