"""Pinned upstream sources (versions.toml): URL pattern and sha256 per component release, and the
sha256 of the PyPI wheels that pip stacks install (one component per machine, `IMPL-wheel-MACHINE`).
A user's own pins ($MPISTACK_VERSIONS, else ~/.config/mpistack/versions.toml, the same layout) are merged over
the shipped file: each of their components names its source, each version its sha256."""

from __future__ import annotations

import os
import platform
import re
import tomllib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from ..data import data_path
from .stack import CONTROL_RE, is_release_version
from .toml_files import user_config_file

VERSIONS_FILE = data_path("versions.toml")
SHA256_RE = re.compile(r"^[0-9a-f]{64}$")
#: a download URL (and its {version} placeholders): http or https (the sha256 pin, not TLS, vouches for the file),
#: then the characters RFC 3986 allows unescaped, less the quotes and shell syntax ($, `, ', parentheses, *)
URL_RE = re.compile(r"https?://[A-Za-z0-9._~:/?#\[\]@!&+,;=%{}-]+")
URL_MAX = 2048
#: the downloaded file's name, which the build writes and removes
FILENAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+~-]*")


class UnpinnedError(LookupError):
    """A component release without a pinned sha256: it cannot be downloaded and built."""


@dataclass(frozen=True)
class Pinned:
    component: str
    version: str
    url: str
    sha256: str
    source: str
    package: str = ""  # a wheel's PyPI project (pinned_wheel); "" for a source download
    #: where the file is fetched from: "upstream" (url), "debian" (url, in the Debian archive) or a mirror
    #: directory's path (the file ``local_path`` there is a copy of url's, taken into the build context)
    origin: str = "upstream"
    local_path: str = ""

    @property
    def filename(self) -> str:
        return self.url.rsplit("/", 1)[-1]

    def describe(self) -> str:
        """Where the file comes from and what vouches for it, in one line (the Containerfile's comment)."""
        if self.local_path:
            where = f"mirror directory {self.local_path} (a copy of {self.url})"
        elif self.origin == "debian":
            where = f"the Debian archive {self.url}"
        else:
            where = self.url
        return f"{self.component} {self.version} from {where}, sha256 {self.sha256} (pinned from {self.source})"

    @property
    def requirement(self) -> str:
        """A wheel's line for pip's --require-hashes (which reads it from a requirements file only):
        `mpich==4.3.2 --hash=sha256:...`."""
        if not self.package:
            raise ValueError(f"{self.component} {self.version} is a source download, not a wheel")
        return f"{self.package}=={self.version} --hash=sha256:{self.sha256}"


@lru_cache(maxsize=4)
def _load(path: str) -> dict:
    with open(path, "rb") as handle:
        data = tomllib.load(handle)
    for name, entry in data.items():
        if "url" in entry:
            check_url(entry["url"], f"{path}: {name}.url")
        if CONTROL_RE.search(str(entry.get("source", ""))):
            raise ValueError(f"{path}: {name}.source: expected one line of printable text")
        for version, sha in entry.get("versions", {}).items():
            if not is_release_version(version):
                raise ValueError(f"{path}: {name}.versions.{version[:40]!r}: expected a release version such as 4.3.1")
            if sha and not SHA256_RE.fullmatch(sha):
                raise ValueError(f"{path}: {name}.versions.{version!r}: not a sha256 ({sha!r})")
        if "debian" in entry:
            _check_debian(entry["debian"], f"{path}: {name}.debian")
    return data


def _check_debian(entry: object, where: str) -> None:
    """A component's Debian orig tarballs: `package` and, per upstream version, `file`, `sha256` and `dsc` (the
    source package's .dsc, whose Checksums-Sha256 field the sha256 is copied from)."""
    if not isinstance(entry, dict) or not isinstance(entry.get("package"), str) \
            or not re.fullmatch(r"[a-z0-9][a-z0-9+.-]+", entry["package"]):
        raise ValueError(f"{where}.package: expected a Debian source package name such as mpich")
    for version, pin in (entry.get("versions") or {}).items():
        here = f"{where}.versions.{version[:40]!r}"
        if not is_release_version(version):
            raise ValueError(f"{here}: expected an upstream release version such as 4.0.2")
        if not isinstance(pin, dict) or set(pin) != {"file", "sha256", "dsc"}:
            raise ValueError(f"{here}: expected a table with file, sha256 and dsc (got {pin!r})")
        if not FILENAME_RE.fullmatch(str(pin["file"])):
            raise ValueError(f"{here}.file: expected the orig tarball's file name (got {pin['file']!r})")
        if not SHA256_RE.fullmatch(str(pin["sha256"])):
            raise ValueError(f"{here}.sha256: not a sha256 ({pin['sha256']!r})")
        check_url(str(pin["dsc"]), f"{here}.dsc")


def check_url(url: str, where: str) -> str:
    """``url`` (or a URL pattern) as a generated build step may use it, or ValueError naming ``where``."""
    if len(url) > URL_MAX or not URL_RE.fullmatch(url):
        raise ValueError(f"{where}: expected an http(s):// URL without blanks, quotes or control characters, "
                         f"at most {URL_MAX} characters (got {url[:100]!r})")
    return url


def user_versions_path() -> Path | None:
    """The user's versions file: $MPISTACK_VERSIONS (which must exist), else the configuration directory's."""
    if os.environ.get("MPISTACK_VERSIONS"):
        return Path(os.environ["MPISTACK_VERSIONS"]).expanduser()
    path = user_config_file("versions.toml")
    return path if path.is_file() else None


@lru_cache(maxsize=4)
def _merged(shipped: str, user: str) -> dict:
    """The shipped table with the user's pins over it; `user_pins` records, per version, the URL pattern, source
    and file of a user's pin."""
    if not Path(user).is_file():
        raise ValueError(f"{user} (named by $MPISTACK_VERSIONS): no such file")
    merged = {name: dict(entry) for name, entry in _load(shipped).items()}
    for name, entry in _load(user).items():
        if not str(entry.get("source", "")).strip():
            raise ValueError(f"{user}: {name}.source: required: where the pinned checksums were published")
        versions = entry.get("versions") or {}
        if not versions or not all(versions.values()):
            raise ValueError(f"{user}: {name}.versions: expected \"VERSION\" = \"SHA256\" entries, each with "
                             "its sha256")
        if name not in merged and "url" not in entry:
            raise ValueError(f"{user}: {name}.url: required for a component mpistack does not ship")
        target = merged.setdefault(name, {"url": entry.get("url")})
        target["versions"] = {**target.get("versions", {}), **versions}
        mine = {"url": entry.get("url", target.get("url")), "source": entry["source"], "file": user}
        target["user_pins"] = {**target.get("user_pins", {}), **{version: mine for version in versions}}
    return merged


def table(path: Path | None = None) -> dict:
    user = None if path else user_versions_path()
    return _merged(str(VERSIONS_FILE), str(user)) if user else _load(str(path or VERSIONS_FILE))


def known_versions(component: str, path: Path | None = None) -> list[str]:
    return list(table(path).get(component, {}).get("versions", {}))


def pinned(component: str, version: str, *, field: str | None = None, path: Path | None = None,
           url: str | None = None) -> Pinned:
    """The pinned download of ``component`` ``version``, or UnpinnedError naming what is known."""
    data = table(path)
    where = field or component
    if component not in data:
        raise UnpinnedError(f"{where}: no component {component!r} in {VERSIONS_FILE.name} "
                            f"(known: {', '.join(sorted(data))})")
    entry = data[component]
    versions = entry.get("versions", {})
    sha = versions.get(version)
    if sha is None:
        pinned_ones = [v for v, s in versions.items() if s]
        raise UnpinnedError(f"{where}: {component} {version} has no pinned sha256 in {VERSIONS_FILE.name}; "
                            f"pinned versions: {', '.join(pinned_ones) or 'none'}")
    if not sha:
        raise UnpinnedError(f"{where}: {component} {version} is listed without a sha256 ({entry.get('source', '')}); "
                            f"add one from a trustworthy published source to {VERSIONS_FILE.name} before building")
    parts = version.split(".")
    mine = entry.get("user_pins", {}).get(version)
    pattern = url or (mine or entry)["url"]
    resolved = check_url(pattern.format(version=version, major=parts[0], major_minor=".".join(parts[:2])),
                         f"{where}: {component} {version} download")
    if not FILENAME_RE.fullmatch(resolved.rsplit("/", 1)[-1]):
        raise ValueError(f"{where}: {component} {version} download {resolved!r}: expected a URL ending in a "
                         "file name")
    source = f"{mine['source']} (pinned in {mine['file']})" if mine else entry.get("source", "")
    return Pinned(component, version, resolved, sha, source)


def wheel_component(impl: str, machine: str | None = None) -> str:
    """The versions.toml component holding ``impl``'s wheels for ``machine`` (this one by default, which
    is also the architecture of the images built here): `mpich-wheel-x86_64`."""
    return f"{impl}-wheel-{machine or platform.machine()}"


def pinned_wheel(impl: str, version: str, *, stack: str, machine: str | None = None,
                 path: Path | None = None) -> Pinned:
    """The sha256 of PyPI's ``impl`` ``version`` wheel for ``machine`` (default: this one), which pip
    checks with --require-hashes. The one lookup for the image's wheel (recipes) and the host's
    (images.host_venv). UnpinnedError, naming the stack, the wheel and versions.toml, when there is none."""
    machine = machine or platform.machine()
    component = wheel_component(impl, machine)
    entry = table(path).get(component, {})
    if not entry.get("versions", {}).get(version):
        pinned_ones = [v for v, s in entry.get("versions", {}).items() if s]
        raise UnpinnedError(
            f"{stack}: mpi.version: the {impl} {version} wheel for {machine} has no sha256 pinned in "
            f"{VERSIONS_FILE.name} ([{component}]; pinned {impl} wheels for {machine}: "
            f"{', '.join(pinned_ones) or 'none'}); add the sha256 PyPI publishes for that wheel "
            f"(https://pypi.org/pypi/{impl}/{version}/json) to {VERSIONS_FILE.name} before building")
    pin = pinned(component, version, field=f"{stack}: mpi.version", path=path)
    return Pinned(pin.component, pin.version, pin.url, pin.sha256, pin.source, package=impl)


#: Debian's archive when the host names none (apt's sources): the CDN the Debian project runs
DEBIAN_ARCHIVE = "https://deb.debian.org/debian"


def debian_pool_directory(package: str) -> str:
    """Where a source package's files lie in the archive (Debian Policy: pool/COMPONENT/INITIAL/PACKAGE, the
    initial being the first four letters of a lib* package)."""
    initial = package[:4] if package.startswith("lib") else package[0]
    return f"pool/main/{initial}/{package}"


def pinned_debian(component: str, version: str, archive: str = DEBIAN_ARCHIVE, *,
                  path: Path | None = None) -> Pinned | None:
    """``component`` ``version``'s orig tarball in the Debian archive at ``archive``, with the sha256 its .dsc
    publishes; None when versions.toml pins none for that release."""
    entry = table(path).get(component, {}).get("debian")
    pin = (entry or {}).get("versions", {}).get(version)
    if not pin:
        return None
    url = check_url(f"{archive.rstrip('/')}/{debian_pool_directory(entry['package'])}/{pin['file']}",
                    f"{component} {version} in the Debian archive {archive}")
    return Pinned(component, version, url, pin["sha256"],
                  f"Debian source package {entry['package']}, Checksums-Sha256 of {pin['dsc']}", origin="debian")

