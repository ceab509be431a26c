"""The container-runtime interface every runtime implements (`ContainerRuntime`), and the podman/docker
command-line dialect (`Engine`), which podman, docker and Charliecloud (whose images come from podman's
storage) build on."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from secrets import token_hex  # (not `import secrets`: `build` takes a parameter of that name)
from pathlib import Path

from .confinement import Confinement, size_bytes
from .containment import Job

#: seconds a container (and a job's processes) get between SIGTERM and SIGKILL when a limit or a signal ends
#: them: a program that ignores SIGTERM costs this, not the engine's default of 10 s
STOP_GRACE_SECONDS = 2


class EngineError(RuntimeError):
    """A container engine is missing or one of its commands failed."""


@dataclass
class BuildResult:
    tag: str
    ok: bool
    seconds: float
    log_path: Path | None
    returncode: int
    digest: str | None = None
    tail: list[str] = field(default_factory=list)


@dataclass
class RunResult:
    argv: list[str]
    returncode: int
    stdout: str
    stderr: str
    seconds: float
    timed_out: bool = False  # ended, with its container, when its limit passed


# Podman confinement that lets ranks in containers attach each other's memory (CMA, single copy):
# see each other's processes, and be allowed to ptrace them.
SINGLE_COPY_FLAGS = ("--pid", "host", "--cap-add", "SYS_PTRACE", "--security-opt", "seccomp=unconfined")
SHM_SIZE = "1g"  # podman's default /dev/shm is 63 MiB: too small for MPI shared memory at large messages


@dataclass(frozen=True)
class ContainerRun:
    """Everything a `run` of one container is given. The one way mpistack runs a container: the
    approaches, `stack run` and the tests all go through `Engine.run_argv`."""

    image: str
    argv: Sequence[str] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    label: str | None = None  # mpistack.case=LABEL: how a case's containers are found and removed
    mounts: Sequence[str] = ()  # -v specifications
    share_ipc: bool = False  # --ipc host: ranks in several containers share /dev/shm segments
    shm_size: str = SHM_SIZE  # the private /dev/shm when IPC is not shared (the doctor tries smaller ones)
    share_pid: bool = False  # --pid host: ranks in several containers have distinct process ids
    single_copy: bool = False  # SINGLE_COPY_FLAGS
    passthrough: Sequence[str] = ()  # --env patterns passed from the launcher (PMI_*)
    preserve_fds: int = 0  # file descriptors 3.. kept open inside (srun's PMI-2 socket)
    per_rank: bool = False  # one container per rank (hybrid, bind, fabric-swap), not one for every rank
    #: ranks of a node that join one namespace set (Charliecloud's --join-ct, Apptainer's --sharens); 0: each
    #: rank's container has its own, as the runtime makes them
    join_ranks: int = 0
    workdir: str | None = None  # where the program starts inside; None: the runtime's default

    def confinement_flags(self) -> list[str]:
        """The flags that widen podman's default confinement, as recorded with each run."""
        flags = ["--ipc", "host"] if self.share_ipc else ["--shm-size", self.shm_size]
        if self.single_copy:
            flags += SINGLE_COPY_FLAGS
        elif self.share_pid:
            flags += ["--pid", "host"]
        return flags


class ContainerRuntime:
    """What mpistack asks of a container runtime, whichever it is. Approaches plan with `run_argv` and
    `confinement`; the campaign's prepare stage calls `check` (before any launch) and `prepare_image`;
    launchers end a case with `end` and `remove_containers`. A runtime that cannot run here (cscs-ce, pyxis,
    apptainer: rendered for the user's cluster, `rendering.RenderedRuntime`) sets `renders_only`, and its
    `check` says so before any launch; it still answers every other method. tests/engines/test_runtime_protocol.py checks that every registered runtime implements each one."""

    name = "runtime"
    renders_only = False
    #: the ranks of a node share one container whatever is asked (pyxis, the CSCS Container Engine); else each
    #: rank gets its own user and mount namespaces unless the runtime joins them (`join_setting`)
    one_container_per_node = False
    #: how the runtime's own users put a node's ranks into one namespace set, `{count}` the node's ranks (the
    #: doctor's fix for ranks in user namespaces of their own); "" for runtimes whose ranks share the user's or
    #: the host's user namespace (podman, docker), where single copy is a capability to grant instead
    join_setting = ""

    def available(self) -> bool:
        raise NotImplementedError

    def check(self) -> None:
        """Raise EngineError, naming the fix, when this runtime cannot run cases here (not installed, no
        $USER); before any launch, once for a campaign."""
        raise NotImplementedError

    def planned_image(self, reference: str) -> str:
        """The image as `run_argv` names it, from the reference of an image mpistack builds (fixed before
        anything is prepared: a dry run prints it)."""
        raise NotImplementedError

    def prepare_image(self, reference: str, digest: str | None = None) -> str:
        """Make the built image `reference` runnable by this runtime (a conversion, cached by `digest`);
        returns `planned_image(reference)`. EngineError when it cannot be converted."""
        raise NotImplementedError

    def prepare_mounts(self, reference: str, mounts: Sequence[str]) -> None:
        """Make the targets of `mounts` (SRC:DST[:FLAGS]) exist in the prepared image `reference`, where the
        runtime binds only onto paths the image has (Charliecloud); EngineError naming the fix when it cannot.
        Runtimes that make a bind's target themselves need nothing."""
        return None

    def run_argv(self, spec: "ContainerRun") -> list[str]:
        """The command that runs one container of `spec` (one rank's, under a launcher, or every rank's)."""
        raise NotImplementedError

    def confinement(self, spec: "ContainerRun") -> Confinement:
        """What `spec`'s container lets its ranks share and do, as recorded with the run."""
        raise NotImplementedError

    def env_overrides(self) -> dict[str, str]:
        """What this runtime's processes need set on top of the caller's environment."""
        return {}

    def launch_argv(self, starter: Sequence[str], spec: "ContainerRun") -> list[str]:
        """The launcher's start of the containers of `spec` (`starter`: mpiexec's or srun's options, one task
        or every rank), then the runtime's command; a runtime that plugs into srun checks srun's options."""
        return [*starter, *self.run_argv(spec)]

    def rendered_image(self, stack: str, reference: str, asked: str | None = None) -> str:
        """The image a rendered srun line names for `stack` (`mpistack stack render --srun`): the one `asked`
        for, else the built image's `reference`."""
        return asked or reference

    def ranks_are_another_uid(self) -> bool:
        """Whether the ranks in this runtime's containers are another uid to themselves than the user who
        starts them is outside (rootless podman: uid 0 inside). A PMIx server compares the uid its clients
        report with its job's, so such ranks are refused by a server that runs as the user."""
        return False

    def in_ranks_user_namespace(self, argv: Sequence[str]) -> list[str]:
        """`argv` run in the user namespace of this runtime's containers, as the uid the ranks are there."""
        return list(argv)

    def launcher_env(self, spec: "ContainerRun") -> dict[str, str]:
        """What the launcher's own environment must hold for `spec`'s containers (pyxis reads the values of
        the variables it passes in from srun's environment); nothing for most runtimes."""
        return {}

    def remove_containers(self, label: str, grace: float = 0) -> int:
        """Remove what is left of the containers labelled `label` (key=value); how many."""
        raise NotImplementedError

    def end(self, job: Job, label: str | None, grace: float = STOP_GRACE_SECONDS) -> None:
        """End a job's processes and its containers labelled `label` (mpistack.case=LABEL) together."""
        raise NotImplementedError


class Engine(ContainerRuntime):
    """A docker-CLI-compatible engine. Subclasses set ``program`` and may add global flags/env."""

    program = "docker"

    def __init__(self, executable: str | None = None):
        self.executable = executable or self.program

    # -- what subclasses customise -------------------------------------------------------------
    def global_args(self) -> list[str]:
        """Flags placed right after the program name (before the sub-command)."""
        return []

    def build_args(self) -> list[str]:
        """Extra flags for ``build`` (network mode and the like)."""
        return ["--network", "host"]

    def env_overrides(self) -> dict[str, str]:
        """What this engine's processes need set on top of the caller's environment."""
        return {}

    def env(self) -> dict[str, str]:
        return {**os.environ, **self.env_overrides()}

    # -- common implementation -----------------------------------------------------------------
    def available(self) -> bool:
        return shutil.which(self.executable) is not None

    def usable(self) -> bool:
        """Found on PATH and answering `info` with this engine's own settings (a probe, not a guarantee)."""
        return self.available() and self._run(["info"], check=False).returncode == 0

    def _require(self) -> None:
        if not self.available():
            raise EngineError(f"{self.executable} not found on PATH")

    def command(self, *args: str) -> list[str]:
        return [self.executable, *self.global_args(), *args]

    def _run(self, args: Sequence[str], check: bool = True, timeout: float | None = None,
             input: str | None = None) -> subprocess.CompletedProcess:
        self._require()
        proc = subprocess.run(self.command(*args), env=self.env(), capture_output=True, text=True,
                              timeout=timeout, input=input)
        if check and proc.returncode != 0:
            raise EngineError(f"{' '.join(self.command(*args)[:4])} ... failed ({proc.returncode}): "
                              f"{proc.stderr.strip()[-2000:]}")
        return proc

    def image_exists(self, tag: str) -> bool:
        return self._run(["image", "inspect", tag], check=False).returncode == 0

    def existing_images(self, tags: Sequence[str]) -> set[str]:
        """Which of ``tags`` are images here, in one `image inspect` (it answers for those it finds and fails for
        the rest). EngineError when the engine is not installed."""
        if not tags:
            return set()
        proc = self._run(["image", "inspect", "--format", "{{json .RepoTags}}", *tags], check=False)
        found: set[str] = set()
        for line in proc.stdout.splitlines():
            with contextlib.suppress(ValueError):
                found.update(json.loads(line) or [])
        return found & set(tags)

    def force_remove_args(self) -> list[str]:
        """What makes `rm -f` kill a running container at once (docker's does; podman's waits 10 s)."""
        return []

    def remove_containers(self, label: str, grace: float = 0) -> int:
        """Remove every container, running or not, that carries this label (key=value); returns how many.
        `grace`: seconds a running container has between SIGTERM and SIGKILL (0: SIGKILL at once)."""
        ids = self._run(["ps", "-aq", "--filter", f"label={label}"], check=False).stdout.split()
        if ids and grace > 0:
            self._run(["stop", "--time", str(max(1, round(grace))), *ids], check=False)
        if ids:
            self._run(["rm", "-f", *self.force_remove_args(), *ids], check=False)
        return len(ids)

    def end(self, job: Job, label: str | None, grace: float = STOP_GRACE_SECONDS) -> None:
        """End a job's processes and the containers labelled `label` (mpistack.case=LABEL) together: SIGTERM
        to all, SIGKILL to what is left after `grace` seconds, then remove what the job's processes were
        still creating meanwhile."""
        if label is None or not self.available():
            job.end(grace)
            return
        job.end(grace, meanwhile=lambda: self.remove_containers(f"mpistack.case={label}", grace))
        self.remove_containers(f"mpistack.case={label}")

    def build_containment_args(self, job: Job) -> list[str]:
        """Flags that keep a build's step processes in the build's job."""
        return []

    def host_ipc_args(self, spec: ContainerRun) -> list[str]:
        """Flags a container sharing the host's IPC namespace needs from this engine on this host."""
        return []

    def build_leftovers(self, job: Job, since: float) -> list[str]:
        """Working containers an interrupted build left behind (none for engines that clean up)."""
        return []

    def inspect(self, tag: str) -> dict:
        proc = self._run(["image", "inspect", tag])
        data = json.loads(proc.stdout or "[]")
        if not data:
            raise EngineError(f"image {tag} not found")
        return data[0]

    def inspect_digest(self, tag: str) -> str:
        info = self.inspect(tag)
        return info.get("Digest") or info.get("Id") or info.get("ID") or ""

    def labels(self, tag: str) -> dict[str, str]:
        info = self.inspect(tag)
        return (info.get("Labels") or info.get("Config", {}).get("Labels") or {})

    def remove_image(self, tag: str) -> None:
        self._run(["rmi", "-f", tag], check=False)

    def import_rootfs(self, tarball: Path, tag: str, changes: Sequence[str] = ()) -> str:
        args = ["import"]
        for change in changes:
            args += ["--change", change]
        proc = self._run([*args, str(tarball), tag])
        return proc.stdout.strip()

    def build(self, context: Path, containerfile: Path, tag: str, *, labels: Mapping[str, str] | None = None,
              build_args: Mapping[str, str] | None = None, log_path: Path | None = None,
              on_line: Callable[[str], None] | None = None, extra: Sequence[str] = (),
              secrets: Mapping[str, Path] | None = None) -> BuildResult:
        """Build ``containerfile`` in ``context``; stream lines to ``on_line`` and to ``log_path``.
        ``secrets``: build secrets {id: file}, for `RUN --mount=type=secret,id=ID` (the file's path is logged,
        its content never)."""
        self._require()
        args = ["build", *self.build_args(), "-f", str(containerfile), "-t", tag]
        for key, value in (labels or {}).items():
            args += ["--label", f"{key}={value}"]
        for key, value in (build_args or {}).items():
            args += ["--build-arg", f"{key}={value}"]
        for name, path in (secrets or {}).items():
            args += ["--secret", f"id={name},src={path}"]
        args += [*extra, str(context)]
        job = Job.create("build")
        args[1:1] = self.build_containment_args(job)
        start, since = time.monotonic(), time.time()
        tail: list[str] = []
        proc: subprocess.Popen | None = None
        log = open(log_path, "w", encoding="utf-8") if log_path else None
        try:
            if log:
                log.write("$ " + " ".join(self.command(*args)) + "\n")
            proc = job.start(self.command(*args), self.env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True, bufsize=1)
            assert proc.stdout is not None
            for line in proc.stdout:
                if log:
                    log.write(line)
                tail.append(line.rstrip("\n"))
                del tail[:-40]
                if on_line:
                    on_line(line.rstrip("\n"))
            rc = proc.wait()
        except BaseException:  # Ctrl-C or a signal made an exception: the build's steps and containers go too
            self.end(job, None)
            if proc is not None:
                proc.wait()
            for container in self.build_leftovers(job, since):
                self._run(["rm", "-f", *self.force_remove_args(), container], check=False)
            if log:
                log.write("\n(interrupted: the build's processes and working containers were removed)\n")
            raise
        finally:
            if log:
                log.close()
            job.close()
        seconds = time.monotonic() - start
        digest = self.inspect_digest(tag) if rc == 0 else None
        return BuildResult(tag=tag, ok=rc == 0, seconds=seconds, log_path=log_path, returncode=rc,
                           digest=digest, tail=tail)

    def check(self) -> None:
        self._require()

    def planned_image(self, reference: str) -> str:
        return reference

    def prepare_image(self, reference: str, digest: str | None = None) -> str:
        return reference  # the engine's own storage holds the image as built

    def confinement(self, spec: ContainerRun) -> Confinement:
        """Root podman and docker make no user namespace; a rootless engine puts all of a user's containers in
        one (its own). Every container gets its own mount namespace and, here, the host's network."""
        rootless = os.geteuid() != 0
        host = {"net"} | (set() if rootless else {"user"})
        if spec.share_ipc:
            host.add("ipc")
        if spec.share_pid or spec.single_copy:
            host.add("pid")
        shared = set(host) | {"user"}
        if not spec.per_rank:
            shared |= {"ipc", "pid", "mnt"}  # one container holds every rank
        single = spec.single_copy
        return Confinement(runtime=self.name, shared=frozenset(shared), host=frozenset(host),
                           capabilities=("SYS_PTRACE",) if single else (), seccomp=not single,
                           shm_bytes=None if spec.share_ipc else size_bytes(spec.shm_size),
                           one_container=not spec.per_rank)

    def run_argv(self, spec: ContainerRun) -> list[str]:
        """`podman run --rm --network host ... IMAGE ARGV` for one container; host network so that ranks
        reach each other and the launcher, nothing privileged beyond `spec`'s confinement flags."""
        args = ["run", "--rm", "--network", "host", *spec.confinement_flags()]
        if spec.share_ipc:
            args += self.host_ipc_args(spec)
        if spec.label:
            args += ["--label", f"mpistack.case={spec.label}"]
        if spec.preserve_fds:
            args += ["--preserve-fds", str(spec.preserve_fds)]
        for mount in spec.mounts:
            args += ["-v", mount]
        for pattern in spec.passthrough:
            args += ["--env", pattern]
        for key, value in sorted(spec.env.items()):
            args += ["--env", f"{key}={value}"]
        if spec.workdir:
            args += ["--workdir", spec.workdir]
        return self.command(*args, spec.image, *spec.argv)

    def run(self, spec: ContainerRun, *, timeout: float | None = 600) -> RunResult:
        """Run one container to its end (for `stack run` and image checks; campaigns use a launcher). After
        `timeout` seconds, or on an exception such as Ctrl-C, the container and every process of the run
        end (RunResult.timed_out; the exception goes on)."""
        self._require()
        if spec.label is None:  # a label of its own, to find the container whatever state the client is in
            spec = dataclasses.replace(spec, label=f"run-{os.getpid()}-{token_hex(4)}")
        argv = self.run_argv(spec)
        job = Job.create("run")
        start = time.monotonic()
        timed_out = False
        try:
            proc = job.start(argv, self.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            try:
                stdout, stderr = proc.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                timed_out = True
                self.end(job, spec.label)
                stdout, stderr = proc.communicate()
                stderr += f"(ended with its container after the limit of {timeout:g} s)\n"
            except BaseException:
                self.end(job, spec.label)
                proc.wait()
                raise
        finally:
            job.close()
        return RunResult(argv=argv, returncode=proc.returncode, stdout=stdout, stderr=stderr,
                         seconds=time.monotonic() - start, timed_out=timed_out)
