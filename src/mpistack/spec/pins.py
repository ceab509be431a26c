"""Pinned upstream sources (versions.toml): URL pattern and sha256 per component release, and the
sha256 of the PyPI wheels that pip stacks install (one component per machine, `IMPL-wheel-MACHINE`)."""

from __future__ import annotations

import platform
import re
import tomllib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from ..data import data_path

VERSIONS_FILE = data_path("versions.toml")
SHA256_RE = re.compile(r"^[0-9a-f]{64}$")


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

    @property
    def filename(self) -> str:
        return self.url.rsplit("/", 1)[-1]

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
        for version, sha in entry.get("versions", {}).items():
            if sha and not SHA256_RE.match(sha):
                raise ValueError(f"{path}: {name}.versions.{version!r}: not a sha256 ({sha!r})")
    return data


def table(path: Path | None = None) -> dict:
    return _load(str(path or VERSIONS_FILE))


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
    pattern = url or entry["url"]
    return Pinned(component, version,
                  pattern.format(version=version, major=parts[0], major_minor=".".join(parts[:2])),
                  sha, entry.get("source", ""))


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
