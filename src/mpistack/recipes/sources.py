"""Where each release tarball of a source build comes from: its upstream URL or a mirror, as build centres
without internet on their build nodes arrange it (Spack's `spack mirror`).

A mirror is one of
- "debian": the Debian archive's orig tarball of that release (Debian's repack: another file, with the
  sha256 published in the source package's .dsc, pinned in versions.toml under [COMPONENT.debian]), from the
  archive this host's apt uses;
- an absolute directory path: a directory holding release tarballs under their own names (the upstream file
  name or Debian's orig name), directly or in a subdirectory named after the component (Spack's layout). The
  file is copied into the build context;
- "upstream": the component's own URL (versions.toml).

Mirrors are tried in order: the user's (``mirrors`` in ~/.config/mpistack/mirrors.toml), then the stack's
(``[sources] mirrors``), then upstream. The first that holds a pinned file of the release wins. Whatever the
origin, the build checks the file against its pinned sha256 before unpacking it (templates/fetch.sh.j2, the
one place a source is verified).
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from ..spec.pins import DEBIAN_ARCHIVE, Pinned, UnpinnedError, check_url, pinned, pinned_debian
from ..spec.stack import Stack, check_mirror
from ..spec.toml_files import user_config_file

MIRRORS_FILE = "mirrors.toml"
#: where a mirror directory's files are mounted (Containerfile) or copied (Apptainer %files) in the build
SOURCES_MOUNT = "/tmp/mpistack-sources"
#: the build context's directory of mirrored files
CONTEXT_SOURCES = "sources"


class MirrorError(ValueError):
    """An unreadable or invalid mirrors.toml; the message names the file and the key."""


@dataclass(frozen=True)
class UserMirrors:
    mirrors: tuple[str, ...] = ()
    debian_archive: str | None = None
    path: Path | None = None


def user_mirrors(path: Path | None = None) -> UserMirrors:
    """The user's mirrors.toml: ``mirrors = [...]`` (tried before a stack's own) and ``debian_archive = "URL"``
    (the archive the "debian" mirror downloads from). Empty when the file does not exist."""
    path = path or user_config_file(MIRRORS_FILE)
    if not path.is_file():
        return UserMirrors()
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise MirrorError(f"{path}: cannot read the mirrors: {error}") from None
    unknown = sorted(set(data) - {"mirrors", "debian_archive"})
    if unknown:
        raise MirrorError(f"{path}: {unknown[0]}: unknown key (expected mirrors and debian_archive)")
    mirrors = data.get("mirrors", [])
    if not isinstance(mirrors, list) or not all(isinstance(m, str) for m in mirrors):
        raise MirrorError(f"{path}: mirrors: expected a list of strings such as [\"/srv/tarballs\", \"debian\"]")
    for index, mirror in enumerate(mirrors):
        try:
            check_mirror(mirror)
        except ValueError as error:
            raise MirrorError(f"{path}: mirrors[{index}]: {error}") from None
    archive = data.get("debian_archive")
    if archive is not None:
        try:
            check_url(str(archive), f"{path}: debian_archive")
        except ValueError as error:
            raise MirrorError(str(error)) from None
    return UserMirrors(tuple(mirrors), archive, path)


def _mirrors_from_text(text: str) -> list[str]:
    mirrors: list[str] = []
    # one-line format: deb [opts] URI suite components
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("deb "):
            parts = re.sub(r"\[[^\]]*\]", "", line).split()
            if len(parts) >= 2:
                mirrors.append(parts[1])
    # deb822 format: stanzas with Types: deb / URIs: ...
    for stanza in re.split(r"\n\s*\n", text):
        fields = {}
        for line in stanza.splitlines():
            if ":" in line and not line.lstrip().startswith("#"):
                key, _, value = line.partition(":")
                fields[key.strip().lower()] = value.strip()
        if "deb" in fields.get("types", "").split() and fields.get("uris"):
            mirrors.extend(fields["uris"].split())
    return mirrors


def host_debian_mirrors(root: Path = Path("/etc/apt")) -> list[str]:
    """The Debian archive mirrors this host's apt is configured with, in order (security archives skipped)."""
    files = []
    if (root / "sources.list").is_file():
        files.append(root / "sources.list")
    if (root / "sources.list.d").is_dir():
        files += sorted(p for p in (root / "sources.list.d").iterdir() if p.suffix in (".list", ".sources"))
    candidates: list[str] = []
    for path in files:
        try:
            candidates += _mirrors_from_text(path.read_text(errors="replace"))
        except OSError:
            continue
    return [uri.rstrip("/") for uri in candidates
            if "security" not in uri and uri.startswith(("http://", "https://", "file:/"))]


def debian_archive(user: UserMirrors | None = None) -> str:
    """The archive the "debian" mirror downloads from: the user's debian_archive, else the first http(s)
    archive of this host's apt (the one the base image was made from), else deb.debian.org."""
    if user and user.debian_archive:
        return user.debian_archive.rstrip("/")
    remote = [uri for uri in host_debian_mirrors() if uri.startswith(("http://", "https://"))]
    return remote[0] if remote else DEBIAN_ARCHIVE


def mirror_order(stack: Stack, user: UserMirrors | None = None) -> list[str]:
    """The mirrors a stack's sources are looked up in, in order; "upstream" last unless listed."""
    order: list[str] = []
    for mirror in [*(user.mirrors if user else ()), *(stack.sources.mirrors if stack.sources else [])]:
        if mirror not in order:
            order.append(mirror)
    if "upstream" not in order:
        order.append("upstream")
    return order


def _in_directory(directory: str, component: str, names: list[str]) -> Path | None:
    for name in names:
        for candidate in (Path(directory) / name, Path(directory) / component / name):
            if candidate.is_file():
                return candidate
    return None


def resolve(stack: Stack, component: str, version: str, *, field: str, versions_path: Path | None = None,
            user: UserMirrors | None = None) -> Pinned:
    """Where ``component`` ``version`` of ``stack`` comes from: the first mirror holding a pinned file of it.
    UnpinnedError (the upstream pin's, which names the pinned versions) when none does."""
    user = user_mirrors() if user is None else user
    problem: UnpinnedError | None = None
    for mirror in mirror_order(stack, user):
        if mirror == "debian":
            pin = pinned_debian(component, version, debian_archive(user), path=versions_path)
            if pin:
                return pin
        elif mirror == "upstream":
            try:
                return pinned(component, version, field=field, path=versions_path)
            except UnpinnedError as error:
                problem = problem or error
        else:
            found = _directory_pin(mirror, component, version, field, versions_path)
            if found:
                return found
    if problem is None:  # upstream was not tried after a mirror that failed: let it name what is pinned
        pinned(component, version, field=field, path=versions_path)
    raise problem  # type: ignore[misc]


def _directory_pin(directory: str, component: str, version: str, field: str,
                   versions_path: Path | None) -> Pinned | None:
    """The upstream release tarball or Debian's orig tarball of the release, when ``directory`` holds one."""
    try:
        upstream = pinned(component, version, field=field, path=versions_path)
    except UnpinnedError:
        upstream = None
    if upstream:
        found = _in_directory(directory, component, [upstream.filename])
        if found:
            return Pinned(component, version, upstream.url, upstream.sha256, upstream.source,
                          origin=directory, local_path=str(found))
    debian = pinned_debian(component, version, path=versions_path)
    if debian:
        found = _in_directory(directory, component, [debian.filename])
        if found:
            return Pinned(component, version, debian.url, debian.sha256, debian.source, origin=directory,
                          local_path=str(found))
    return None
