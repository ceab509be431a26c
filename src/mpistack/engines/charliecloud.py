"""Charliecloud: unprivileged containers, one `ch-run` per container, images from podman's storage.

Images are built by podman (Charliecloud's own builder would fetch `FROM` names from a public registry) and
converted once per image digest into a directory image: `podman export` of a created container unpacked
into a directory, the image config's `Env` written to `/ch/environment`, which `ch-run --set-env` reads
(ch-run applies no image `ENV` of its own: ch-run(1), "Environment variables"). Directory images, not
SquashFS: mounting SquashFS needs a /dev/fuse the user can open.

Each `ch-run` makes its own user and mount namespaces and keeps the host's IPC, PID and network namespaces
(ch-run(1), "Description"). Ranks in separate user namespaces cannot attach each other's memory (CMA) nor
open each other's /proc/PID/fd links (UCX's posix proc-link); `--join-ct=N --join-tag=TAG` puts the N ranks
of a node into one namespace set ("--join", ch-run(1): https://hpc.github.io/charliecloud/ch-run.html).

The case's directory is bound at one fixed mount point that conversion creates (`CASE_MOUNT`): a read-only
directory image cannot grow a mount point per case, so the case's paths in the command line and the
environment are rewritten to it. The host paths bind and fabric-swap mount are the same for every case of a
host, so the campaign's prepare stage makes their targets in the converted image once (`prepare_mounts`).

ch-run refuses to start without $USER (a cron job, `env -i`, some batch systems leave it unset): where it is
unset, the name of the user running mpistack goes into every ch-run's environment (`env_overrides`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import pwd
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from ..cache import cache_dir
from ..registry import ENGINES
from .base import ContainerRun, EngineError, RunResult
from .confinement import Confinement
from .containment import Job
from .podman import PodmanEngine

#: where a case's own directory appears inside a Charliecloud container
CASE_MOUNT = "/mpistack/case"
#: what a directory image must hold for ch-run: its bind targets (ch-run binds the host's passwd and group)
_SKELETON_DIRS = ("ch", "dev", "proc", "sys", "tmp", "home", "mpistack/case")
_SKELETON_FILES = ("etc/passwd", "etc/group", "etc/hosts", "etc/resolv.conf")
FORMAT = "1"  # of the converted directories: a change converts every image anew


def images_dir() -> Path:
    """Where converted images live: $MPISTACK_CHARLIECLOUD_IMAGES, else the user's cache."""
    override = os.environ.get("MPISTACK_CHARLIECLOUD_IMAGES")
    return Path(override) if override else cache_dir() / "charliecloud"


def _name(reference: str) -> str:
    """A reference as a file name: localhost/mpistack/debian-mpich:4.0.2 -> localhost_mpistack_debian-mpich_4.0.2"""
    return re.sub(r"[^A-Za-z0-9._-]", "_", reference)


def environment_file(env: list[str]) -> str:
    """The image config's Env as /ch/environment holds it: NAME=VALUE, one a line (a value that holds a
    newline cannot be written so, and is left out)."""
    return "".join(f"{item}\n" for item in env if "=" in item and "\n" not in item)


def _user() -> str:
    """$USER, else the name of the process's uid in the password database (what `id -un` says)."""
    if os.environ.get("USER"):
        return os.environ["USER"]
    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        raise EngineError(f"engine charliecloud: $USER is not set and uid {os.getuid()} has no name in the "
                          "password database; ch-run refuses to start without $USER: set it "
                          "(`export USER=NAME`)") from None


@ENGINES.register("charliecloud")
class CharliecloudEngine(PodmanEngine):
    """Runs with ch-run; builds, inspects and stores images with podman (`program`)."""

    name = "charliecloud"
    runner = "ch-run"
    join_setting = "ch-run --join-ct={count} --join-tag=TAG"

    def available(self) -> bool:
        return shutil.which(self.runner) is not None

    def converted(self, reference: str) -> dict | None:
        """What the directory image of `reference` was converted from (its reference and digest), or None."""
        try:
            return json.loads((Path(self.planned_image(reference)) / "ch" / "source").read_text())
        except (OSError, ValueError):
            return None

    # An image converted before (by the owner of a shared image store, $MPISTACK_CHARLIECLOUD_IMAGES) runs
    # without podman: a user whose podman lacks the image still finds it, with the digest it came from.
    def image_exists(self, tag: str) -> bool:
        return self.converted(tag) is not None or (super().available() and super().image_exists(tag))

    def existing_images(self, tags) -> set[str]:
        found = {tag for tag in tags if self.converted(tag) is not None}
        try:
            return found | super().existing_images([tag for tag in tags if tag not in found])
        except EngineError:
            return found

    def inspect_digest(self, tag: str) -> str:
        converted = self.converted(tag)
        if converted is not None and not (super().available() and super().image_exists(tag)):
            return converted.get("digest", "")
        return super().inspect_digest(tag)

    def check(self) -> None:
        if shutil.which(self.runner) is None:
            raise EngineError("engine charliecloud: ch-run is not installed; install it with "
                              "`apt-get install charliecloud-runtime` (Debian 12: 0.31), or choose engine "
                              "= \"podman\"")
        _user()  # raises when $USER is unset and the user has no name either

    def env_overrides(self) -> dict[str, str]:
        """podman's settings (it builds and exports the images), and $USER for ch-run where it is unset."""
        return {**super().env_overrides(), **({} if os.environ.get("USER") else {"USER": _user()})}

    def planned_image(self, reference: str) -> str:
        return str(images_dir() / "images" / _name(reference))

    def run(self, spec: ContainerRun, *, timeout: float | None = 600) -> RunResult:
        """One container to its end (`stack run`, the image checks), of a built image named by its reference as
        podman's are (converted first, once per digest) or by its directory; the targets of its binds made in
        the image, where ch-run binds only onto paths the image has."""
        if not os.path.isdir(spec.image):
            reference = spec.image
            spec = dataclasses.replace(spec, image=self.prepare_image(reference))
            moved = self._case_paths(spec)  # a case's directory goes to CASE_MOUNT, which conversion made
            self.prepare_mounts(reference, [mount for mount in spec.mounts if mount.split(":")[0] not in moved])
        return super().run(spec, timeout=timeout)

    def prepare_image(self, reference: str, digest: str | None = None) -> str:
        """The directory image of `reference`, converted from podman's storage unless the one of its digest
        is there already (a link by reference name points at it). Never pulls: an image podman does not
        have is an EngineError naming the build command."""
        link = Path(self.planned_image(reference))
        if not (super().available() and super().image_exists(reference)):
            if self.converted(reference) is not None:  # converted before, by the owner of the image store
                return str(link)
            raise EngineError(f"image {reference} cannot be converted for Charliecloud: podman has no such image; "
                              f"build it first (`mpistack stack build STACK`); images are never pulled")
        digest = digest or self.inspect_digest(reference)
        target = images_dir() / "by-digest" / (hashlib.sha256(f"{FORMAT}\0{digest}".encode()).hexdigest()[:24])
        if not (target / "ch" / "environment").is_file():
            self._convert(reference, digest, target)
        link.parent.mkdir(parents=True, exist_ok=True)
        temporary = link.with_name(f".{link.name}.{os.getpid()}")
        temporary.unlink(missing_ok=True)
        temporary.symlink_to(os.path.relpath(target, link.parent))
        os.replace(temporary, link)
        return str(link)

    def _convert(self, reference: str, digest: str, target: Path) -> None:
        env = (self.inspect(reference).get("Config") or {}).get("Env") or []
        target.parent.mkdir(parents=True, exist_ok=True)
        scratch = Path(tempfile.mkdtemp(prefix=".convert-", dir=target.parent))
        container = self._run(["create", reference, "true"]).stdout.strip()
        try:
            export = subprocess.Popen(self.command("export", container), env=self.env(), stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE)
            unpack = subprocess.run(["tar", "-x", "-C", str(scratch), "--no-same-owner", "--exclude=dev/*"],
                                    stdin=export.stdout, capture_output=True)
            export.stdout.close()
            _, export_error = export.communicate()
            if export.returncode or unpack.returncode:
                raise EngineError(f"image {reference} cannot be converted for Charliecloud: podman export "
                                  f"({export.returncode}) | tar -x ({unpack.returncode}): "
                                  f"{(export_error or unpack.stderr).decode(errors='replace').strip()[-500:]}")
            for directory in _SKELETON_DIRS:
                (scratch / directory).mkdir(parents=True, exist_ok=True)
            for name in _SKELETON_FILES:
                (scratch / name).touch(exist_ok=True)
            (scratch / "ch" / "environment").write_text(environment_file(env))
            (scratch / "ch" / "source").write_text(json.dumps({"reference": reference, "digest": digest}) + "\n")
            os.chmod(scratch, 0o755)
            shutil.rmtree(target, ignore_errors=True)
            os.replace(scratch, target)
        except BaseException:
            shutil.rmtree(scratch, ignore_errors=True)
            raise
        finally:
            self._run(["rm", "-f", container], check=False)

    def prepare_mounts(self, reference: str, mounts) -> None:
        """ch-run binds only onto paths the image has, and a directory image is read-only to the ranks: each
        bind's target (a directory for a directory, an empty file for a file) is made in the converted image
        once, so it stays with the image of that digest. Never outside the image: a target whose path leads
        out through a link is refused."""
        image = Path(os.path.realpath(self.planned_image(reference)))
        for mount in mounts:
            source, destination = mount.split(":")[:2]
            target = Path(os.path.realpath(image / destination.lstrip("/")))
            if not target.is_relative_to(image):
                raise EngineError(f"image {reference}: the bind target {destination} leads out of the image "
                                  f"({target}); Charliecloud cannot bind {source} there")
            if target.exists():
                continue
            try:
                target.parent.mkdir(parents=True, exist_ok=True)
                if Path(source).is_dir():
                    target.mkdir(exist_ok=True)
                else:
                    target.touch(exist_ok=True)
            except OSError as error:
                raise EngineError(
                    f"image {reference}: ch-run binds only onto paths the image has, and {destination} cannot be "
                    f"made in {image} ({error.strerror}); let the owner of {images_dir()} prepare the campaign "
                    "once (mpistack run FILE), or unset MPISTACK_CHARLIECLOUD_IMAGES to convert images of your "
                    "own") from None

    def _case_paths(self, spec: ContainerRun) -> dict[str, str]:
        """Host directory -> where it appears inside: the case's own directory (its `src:src` mount) at
        CASE_MOUNT; other mounts keep their destination."""
        moved = {}
        for mount in spec.mounts:
            source, destination = mount.split(":")[:2]
            if source == destination and spec.label and source.rstrip("/").endswith(f"/{spec.label}"):
                moved[source] = CASE_MOUNT
        return moved

    def run_argv(self, spec: ContainerRun) -> list[str]:
        """ch-run [--join-ct=N --join-tag=LABEL] --set-env (the image's Env) --set-env=NAME=VALUE ...
        -b SRC:DST ... IMAGE -- ARGV. The host environment passes in (ch-run's default), so the launcher's
        PMI variables reach each rank without naming them."""
        moved = self._case_paths(spec)

        def inside(text: str) -> str:
            for source, destination in moved.items():
                text = text.replace(source, destination)
            return text

        args = [self.runner]
        if spec.join_ranks > 1:  # one rank a node has no peer to join (and nodes of one machine share /dev/shm,
            # where ch-run's peers find each other by the tag)
            args += [f"--join-ct={spec.join_ranks}", f"--join-tag={spec.label or 'mpistack'}"]
        args.append("--set-env")  # IMAGE/ch/environment
        for key, value in sorted(spec.env.items()):
            args.append(f"--set-env={key}={inside(value)}")
        for mount in spec.mounts:
            source, destination, *flags = mount.split(":")
            args.append(f"--bind={source}:{moved.get(source, destination)}")
        if spec.workdir or moved:
            args.append(f"--cd={inside(spec.workdir) if spec.workdir else CASE_MOUNT}")
        return [*args, spec.image, "--", *(inside(item) for item in spec.argv)]

    def confinement(self, spec: ContainerRun) -> Confinement:
        """Every ch-run its own user and mount namespaces, the host's IPC, PID and network; joined ranks share
        one set. No capability in the host's namespaces, no seccomp filter (0.31 has none), the host's /dev/shm."""
        host = frozenset({"ipc", "pid", "net"})
        joined = spec.join_ranks > 0 or not spec.per_rank
        return Confinement(runtime=self.name, shared=host | ({"user", "mnt"} if joined else set()), host=host,
                           seccomp=False, one_container=not spec.per_rank)

    def remove_containers(self, label: str, grace: float = 0) -> int:
        return 0  # a ch-run container is its process: ending the job's processes ends it

    def end(self, job: Job, label: str | None, grace: float = 2) -> None:
        job.end(grace)
