"""What the runtimes mpistack renders but cannot run here have in common (cscs_ce.py, pyxis.py, apptainer.py):
each plugs into Slurm's srun on the user's cluster, one container per task, and its command is an argv list
(never a shell string, so no value is split or expanded on the way). Their values are checked before anything
is written: a name or path a runtime would read otherwise is refused, naming the item and what was expected."""

from __future__ import annotations

import re
from collections.abc import Sequence

from .base import ContainerRun, ContainerRuntime, EngineError
from .confinement import Confinement
from .containment import Job

ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def check_text(what: str, value: object) -> None:
    if not isinstance(value, str):
        raise ValueError(f"{what}: expected a string, got {type(value).__name__}")
    # no argv item and no environment value can hold a NUL byte (execve ends strings there)
    if "\0" in value:
        raise ValueError(f"{what} {value!r}: contains a NUL byte")


def split_mount(mount: str) -> tuple[str, str, str | None]:
    """"src:dst[:flags]" -> (src, dst, flags); every runtime here splits on ':', so there is no escaping a
    ':' inside a path."""
    check_text("mount", mount)
    parts = mount.split(":")
    if len(parts) < 2:
        raise ValueError(f"mount {mount!r}: expected SRC:DST (no ':')")
    if len(parts) > 3:
        raise ValueError(f"mount {mount!r}: expected SRC:DST[:FLAGS]; a ':' inside a path cannot be mounted")
    src, dst = parts[0], parts[1]
    if not src or not dst:
        raise ValueError(f"mount {mount!r}: empty source or destination")
    if not dst.startswith("/"):
        raise ValueError(f"mount {mount!r}: the destination {dst!r} must be an absolute path in the container")
    flags = parts[2] if len(parts) == 3 else None
    if flags == "":
        raise ValueError(f"mount {mount!r}: empty flags after the last ':'")
    return src, dst, flags


def check_spec(spec: ContainerRun) -> None:
    """The image, the environment, bind mounts ("src:dst" or "src:dst:flags", flags in the runtime's own
    spelling), the working directory and the ranks' argv, as every rendered runtime needs them."""
    check_text("image", spec.image)
    for name, value in spec.env.items():
        if not isinstance(name, str) or not ENV_NAME.fullmatch(name):
            raise ValueError(f"environment variable name {name!r}: expected [A-Za-z_][A-Za-z0-9_]*")
        check_text(f"environment variable {name}", value)
    for mount in spec.mounts:
        split_mount(mount)
    if spec.workdir is not None:
        check_text("workdir", spec.workdir)
        if not spec.workdir.startswith("/"):
            raise ValueError(f"workdir {spec.workdir!r}: expected an absolute path inside the container")
    if not spec.argv or not spec.argv[0]:
        raise ValueError("argv: empty command for the ranks")
    for item in spec.argv:
        check_text("argv item", item)
    # srun (and apptainer) read options up to the first word that is not one: a program name starting with
    # '-' would be taken as an option instead of being run
    if spec.argv[0].startswith("-"):
        raise ValueError(f"argv[0] {spec.argv[0]!r}: a program name starting with '-' would be read as an option")


def registry_image(ref: str) -> str:
    """registry/name:tag -> registry#name:tag, the spelling of enroot (pyxis) and the CSCS Container Engine."""
    if "#" in ref or ref.startswith("/"):
        return ref
    first, _, rest = ref.partition("/")
    if rest and ("." in first or ":" in first or first == "localhost"):
        return f"{first}#{rest}"
    return ref


class RenderedRuntime(ContainerRuntime):
    """A runtime that starts its containers under srun on the user's cluster, and that mpistack renders but
    does not run here (`renders_only`). Images are the references the cluster pulls or names (never converted
    here); the ranks are the launcher's tasks, so ending the job's processes ends its containers."""

    renders_only = True
    #: how `check` says where the runtime's command is written instead (mpistack stack render ... --srun)
    render_hint = "mpistack stack render STACK --srun {name}"

    def available(self) -> bool:
        return False  # never started from here

    def check(self) -> None:
        raise EngineError(f"engine {self.name} runs on a cluster's Slurm, not here: mpistack renders its "
                          f"command (`{self.render_hint.format(name=self.name)}`); choose engine = \"podman\" "
                          "or \"charliecloud\" for runs on this machine")

    def planned_image(self, reference: str) -> str:
        return reference

    def prepare_image(self, reference: str, digest: str | None = None) -> str:
        return reference  # the cluster pulls or finds it; nothing is converted here

    def launch_argv(self, starter: Sequence[str], spec: ContainerRun) -> list[str]:
        if not starter:
            raise ValueError("srun: empty command (expected e.g. ['srun', '--mpi=pmi2', ...])")
        for item in starter:
            check_text("srun option", item)
        return [*starter, *self.run_argv(spec)]

    def joined(self, spec: ContainerRun) -> bool:
        return spec.join_ranks > 0 or not spec.per_rank or self.one_container_per_node

    def confinement(self, spec: ContainerRun) -> Confinement:
        """The host's IPC, PID and network namespaces (none of these runtimes makes its own by default); a
        user and a mount namespace per task unless the tasks of a node are joined. No capability, no seccomp
        filter, the host's /dev/shm."""
        host = frozenset({"ipc", "pid", "net"})
        shared = host | ({"user", "mnt"} if self.joined(spec) else set())
        return Confinement(runtime=self.name, shared=shared, host=host, seccomp=False,
                           one_container=not spec.per_rank)

    def remove_containers(self, label: str, grace: float = 0) -> int:
        return 0  # a task's container is its process under srun

    def end(self, job: Job, label: str | None, grace: float = 2) -> None:
        job.end(grace)
