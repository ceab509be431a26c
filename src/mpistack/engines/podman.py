"""podman, configured by mpistack for restricted hosts.

Restricted hosts (sandboxes, some CI runners) cannot raise RLIMIT_NOFILE/NPROC, which podman's default
ulimits try to do, and crun refuses a hybrid cgroup layout. mpistack therefore writes its own
containers.conf (``default_ulimits = []``) to the user's cache directory and names it in CONTAINERS_CONF
of podman's environment only, and passes ``--runtime runc`` when runc is installed. Nothing in /etc is
touched; set MPISTACK_PODMAN_CONF to use a different file, or MPISTACK_PODMAN_RUNTIME to pick another
OCI runtime ("" for podman's default).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from ..cache import OWN_CACHE_FIX, cache_dir, check_own, write_file_atomically
from ..registry import ENGINES
from .base import ContainerRun, Engine
from .containment import Job

CONTAINERS_CONF = """\
# Written by mpistack (engines/podman.py). Used only by the podman processes mpistack starts,
# through CONTAINERS_CONF; the system configuration is left alone.
[containers]
# the sandbox cannot raise RLIMIT_NOFILE/NPROC: inherit the caller's limits
default_ulimits = []
"""


def containers_conf_path() -> Path:
    override = os.environ.get("MPISTACK_PODMAN_CONF")
    return Path(override) if override else cache_dir() / "containers.conf"


def ensure_containers_conf() -> Path:
    """Write mpistack's containers.conf when it is missing or out of date (not when overridden)."""
    path = check_own(containers_conf_path(), OWN_CACHE_FIX)  # podman's settings: this user's alone
    if os.environ.get("MPISTACK_PODMAN_CONF"):
        return path
    if not path.exists() or path.read_text() != CONTAINERS_CONF:
        write_file_atomically(path, CONTAINERS_CONF)
    return path


@ENGINES.register("podman")
class PodmanEngine(Engine):
    name = program = "podman"

    def __init__(self, executable: str | None = None, runtime: str | None = None):
        super().__init__(executable)
        if runtime is None:
            runtime = os.environ.get("MPISTACK_PODMAN_RUNTIME")
        if runtime is None:
            runtime = "runc" if shutil.which("runc") else ""
        self.runtime = runtime

    def global_args(self) -> list[str]:
        return ["--runtime", self.runtime] if self.runtime else []

    def env_overrides(self) -> dict[str, str]:
        return {"CONTAINERS_CONF": str(containers_conf_path())}

    def _require(self) -> None:
        super()._require()
        ensure_containers_conf()

    def build_args(self) -> list[str]:
        # --network host: builds use apt and pip; --layers keeps the cache between stacks
        # --format docker: SHELL and other Dockerfile-only instructions are kept
        return ["--network", "host", "--layers", "--format", "docker"]

    def host_ipc_args(self, spec: ContainerRun) -> list[str]:
        # With --ipc host, podman bind-mounts the host's /dev/mqueue; rootless podman cannot mount an mqueue
        # of its own where the host has none ("statfs /dev/mqueue"). A mount of the user's at that place
        # replaces podman's: an empty tmpfs, which MPI never reads; the IPC namespace is still the host's.
        if os.geteuid() != 0 and not os.path.ismount("/dev/mqueue"):
            return ["--mount", "type=tmpfs,destination=/dev/mqueue"]
        return []

    def ranks_are_another_uid(self) -> bool:
        return os.geteuid() != 0  # rootless: the user is uid 0 in every container

    def in_ranks_user_namespace(self, argv) -> list[str]:
        # `podman unshare`: the user namespace all of this user's containers share, where the user is uid 0;
        # podman started inside it runs its containers there too (podman-unshare(1))
        return [*self.command("unshare"), *argv] if self.ranks_are_another_uid() else list(argv)

    def force_remove_args(self) -> list[str]:
        return ["--time", "0"]  # `rm -f` would otherwise wait 10 s for a container that ignores SIGTERM

    def build_containment_args(self, job: Job) -> list[str]:
        # the steps' processes (RUN) get cgroups of their own from runc, outside the build's job unless
        # placed under it; an interrupted build leaves them running otherwise
        path = job.cgroup_path()
        return ["--cgroup-parent", f"{path}/steps"] if path else []

    def build_leftovers(self, job: Job, since: float) -> list[str]:
        """The working containers (buildah's, seen by `podman ps --external`) of a build that was ended: podman
        4.3 leaves them on SIGINT and SIGTERM. A build's own are those its steps' cgroup names (recorded by
        buildah with each); without a cgroup, those made since it started."""
        listing = self._run(["ps", "--all", "--external", "--format", "json"], check=False)
        try:
            containers = json.loads(listing.stdout or "[]")
        except ValueError:
            return []
        store = self._run(["info", "--format", "{{.Store.GraphRoot}} {{.Store.GraphDriverName}}"], check=False)
        root, _, driver = store.stdout.strip().partition(" ")
        path = job.cgroup_path()
        steps = f"{path}/steps" if path else None
        leftovers = []
        for container in containers:
            if container.get("State") != "storage" or container.get("Created", 0) < since - 1:
                continue  # not a working container, or older than the build
            if steps is not None:
                state = Path(root) / f"{driver}-containers" / container["Id"] / "userdata" / "buildah.json"
                try:
                    parent = json.loads(state.read_text()).get("CommonBuildOpts", {}).get("CgroupParent")
                except (OSError, ValueError):
                    continue
                if parent != steps:
                    continue
            leftovers.append(container["Id"])
        return leftovers
