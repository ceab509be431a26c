"""Base images for hosts without a registry: debootstrap a Debian root file system from the apt mirror
this host already uses, then ``podman import`` it. Idempotent: nothing is done when the image exists,
unless ``force``.

    mpistack base debian:bookworm            -> localhost/debian:bookworm
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..engines import Engine, EngineError
from ..recipes.sources import host_debian_mirrors

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
    if shutil.which("debootstrap") is None:
        raise EngineError("debootstrap not found: install it (scripts/setup-host.sh does)")
    mirror = mirror or host_debian_mirror()
    with tempfile.TemporaryDirectory(prefix="mpistack-base-") as tmp:
        rootfs = Path(tmp) / "rootfs"
        argv = ["debootstrap", "--variant=minbase", f"--include={','.join(include)}" if include else "",
                suite, str(rootfs), mirror]
        argv = [a for a in argv if a]
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        assert proc.stdout is not None
        lines = []
        for line in proc.stdout:
            lines.append(line.rstrip())
            if on_line:
                on_line(line.rstrip())
        if proc.wait() != 0:
            raise EngineError(f"debootstrap {suite} from {mirror} failed:\n" + "\n".join(lines[-20:]))
        # keep the image small: no apt lists or caches
        for sub in ("var/lib/apt/lists", "var/cache/apt/archives"):
            for p in (rootfs / sub).glob("*"):
                if p.is_file():
                    p.unlink()
        tarball = Path(tmp) / "rootfs.tar"
        subprocess.run(["tar", "-C", str(rootfs), "--numeric-owner", "-cf", str(tarball), "."], check=True)
        engine.import_rootfs(tarball, tag, changes=["CMD [\"/bin/bash\"]",
                                                    "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                                                    f"LABEL org.mpistack.base={name}",
                                                    f"LABEL org.mpistack.base.mirror={mirror}"])
    return BaseImageResult(tag, True, time.monotonic() - start, mirror, f"{tag} made from {mirror}")
