"""Base images for hosts without a registry: a Debian root file system from the apt mirror this host already
uses, then ``podman import`` of it. As root, debootstrap makes it; as any other user, Debian's mmdebstrap in
its unshare mode (a user namespace from the user's subordinate ids, no root at all), into the user's own
image storage (rootless podman). Idempotent: nothing is done when the image exists, unless ``force``.

    mpistack base debian:bookworm            -> localhost/debian:bookworm
"""

from __future__ import annotations

import os
import pwd
import re
import subprocess
import tempfile
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..engines import Engine, EngineError
from ..recipes.sources import host_debian_mirrors
from ..system_tools import system_tool

DEBIAN_SUITES = {"bookworm", "trixie", "bullseye", "sid", "stable", "testing", "unstable", "oldstable"}
DEFAULT_INCLUDE = ("ca-certificates",)


@dataclass
class BaseImageResult:
    tag: str
    created: bool
    seconds: float
    mirror: str
    message: str


def parse_base_name(name: str) -> tuple[str, str]:
    """``debian:bookworm`` -> ("debian", "bookworm"); ``localhost/debian:bookworm`` too."""
    bare = name.removeprefix("localhost/")
    distro, _, suite = bare.partition(":")
    suite = suite or "bookworm"
    if distro != "debian":
        raise EngineError(f"base {name!r}: only debian:<suite> can be made locally with debootstrap "
                          f"(expected one of debian:{', debian:'.join(sorted(DEBIAN_SUITES))})")
    if not re.fullmatch(r"[a-z]+", suite):
        raise EngineError(f"base {name!r}: suite {suite!r} is not a Debian suite name")
    return distro, suite


def local_tag(name: str) -> str:
    distro, suite = parse_base_name(name)
    return f"localhost/{distro}:{suite}"


def host_debian_mirror(root: Path = Path("/etc/apt")) -> str:
    """The first Debian archive mirror configured on this host (security archives skipped)."""
    mirrors = host_debian_mirrors(root)
    if mirrors:
        return mirrors[0]
    raise EngineError("no Debian mirror found in /etc/apt/sources.list or /etc/apt/sources.list.d/*; "
                      "pass --mirror URL")


def make_base_image(engine: Engine, name: str = "debian:bookworm", *, force: bool = False,
                    mirror: str | None = None, include: tuple[str, ...] = DEFAULT_INCLUDE,
                    on_line: Callable[[str], None] | None = None) -> BaseImageResult:
    _, suite = parse_base_name(name)
    tag = local_tag(name)
    start = time.monotonic()
    if engine.image_exists(tag) and not force:
        return BaseImageResult(tag, False, 0.0, mirror or "", f"{tag} exists (use --force to rebuild)")
    rootless = os.geteuid() != 0
    mirror = mirror or host_debian_mirror()
    with tempfile.TemporaryDirectory(prefix="mpistack-base-") as tmp:
        tarball = Path(tmp) / "rootfs.tar"
        if rootless:
            _mmdebstrap(suite, mirror, include, tarball, on_line)
        else:
            _debootstrap(suite, mirror, include, Path(tmp) / "rootfs", tarball, on_line)
        engine.import_rootfs(tarball, tag, changes=["CMD [\"/bin/bash\"]",
                                                    "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                                                    f"LABEL org.mpistack.base={name}",
                                                    f"LABEL org.mpistack.base.mirror={mirror}",
                                                    f"LABEL org.mpistack.base.maker={'mmdebstrap' if rootless else 'debootstrap'}"])
    return BaseImageResult(tag, True, time.monotonic() - start, mirror, f"{tag} made from {mirror}")


#: what an administrator runs once so that users without root can make images (README: "Without root")
ADMIN_SETUP = "sudo scripts/setup-host.sh"


def _program(name: str) -> str:
    path = system_tool(name)
    if path is None:
        raise EngineError(f"{name} not found: an administrator installs it once ({ADMIN_SETUP} does)")
    return path


def _debootstrap(suite: str, mirror: str, include: tuple[str, ...], rootfs: Path, tarball: Path,
                 on_line: Callable[[str], None] | None) -> None:
    argv = [_program("debootstrap"), "--variant=minbase", *([f"--include={','.join(include)}"] if include else []),
            suite, str(rootfs), mirror]
    _stream(argv, f"debootstrap {suite} from {mirror}", on_line)
    # keep the image small: no apt lists or caches
    for sub in ("var/lib/apt/lists", "var/cache/apt/archives"):
        for path in (rootfs / sub).glob("*"):
            if path.is_file():
                path.unlink()
    subprocess.run(["tar", "-C", str(rootfs), "--numeric-owner", "-cf", str(tarball), "."], check=True)


def _mmdebstrap(suite: str, mirror: str, include: tuple[str, ...], tarball: Path,
                on_line: Callable[[str], None] | None) -> None:
    """The root file system as a tarball, made by a user without root: mmdebstrap's unshare mode maps the
    user's subordinate ids into a user namespace, in which the packages' owners exist (it cleans apt's lists
    and caches itself)."""
    program = _program("mmdebstrap")
    missing = missing_subordinate_ids()
    if missing:
        raise EngineError(f"{missing}: rootless images need them; an administrator runs `{ADMIN_SETUP}` or "
                          f"`sudo usermod --add-subuids 100000-165535 --add-subgids 100000-165535 {_user()}`")
    argv = [program, "--mode=unshare", "--variant=minbase", *([f"--include={','.join(include)}"] if include else []),
            suite, str(tarball), mirror]
    _stream(argv, f"mmdebstrap {suite} from {mirror}", on_line)


def _user() -> str:
    try:
        return pwd.getpwuid(os.geteuid()).pw_name
    except KeyError:
        return str(os.geteuid())


def missing_subordinate_ids(etc: Path = Path("/etc")) -> str | None:
    """What is missing of this user's subordinate ids (subuid(5), subgid(5): `name:first:count`, the name or
    the numeric id), or None when both files give the user some."""
    names = {_user(), str(os.geteuid())}
    lacking = []
    for file in ("subuid", "subgid"):
        try:
            lines = (etc / file).read_text().splitlines()
        except OSError:
            lines = []
        if not any(line.split(":")[0] in names and line.count(":") == 2 for line in lines):
            lacking.append(f"/etc/{file}")
    return f"no subordinate ids for {_user()} in {' and '.join(lacking)}" if lacking else None


def _stream(argv: list[str], what: str, on_line: Callable[[str], None] | None) -> None:
    """Run `argv`, handing each output line to `on_line`; EngineError with the last 20 lines if it fails."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.stdout is not None
    lines: deque[str] = deque(maxlen=20)
    for line in proc.stdout:
        lines.append(line.rstrip())
        if on_line:
            on_line(line.rstrip())
    if proc.wait() != 0:
        raise EngineError(f"{what} failed:\n" + "\n".join(lines))
