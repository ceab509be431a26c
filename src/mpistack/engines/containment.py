"""Every process of one job (a benchmark case, an image build, a `stack run`) kept together, so that all of
them end with it, also those that start a session of their own: MPICH's Hydra puts its proxies and ranks in
sessions of their own, and any program may call setsid, so signalling one process group misses them.

Where the cgroup v2 hierarchy is writable (root, or a delegated subtree), a job gets a cgroup of its own: its
first process joins it before its program starts, everything it starts stays in it, and `cgroup.kill` ends
them all at once (Linux 5.14; older kernels: SIGKILL to each member until none is left). The cgroup has no
controllers: scheduling, memory and shared memory between ranks are as before (benchmarks/containment.py).
Joining it costs the start of a job a few milliseconds: Popen must fork, not vfork, to run `preexec`.
Elsewhere the job's processes are found by a variable in their environment, which every descendant inherits;
a program that clears its environment escapes that fallback, so the mechanism is recorded with each run.

Containers are not in the job's cgroup (the engine gives each container a cgroup of its own): they are found
by their label and ended by the engine."""

from __future__ import annotations

import itertools
import os
import re
import secrets
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

#: the variable every process of a job inherits (the fallback finds the job's processes by it)
JOB_VARIABLE = "MPISTACK_JOB"
#: the names `Job.create` gives: KIND-PID-NUMBER-RANDOM
JOB_NAME = re.compile(r"[a-z]+-[0-9]+-[0-9]+-[0-9a-f]{6}")
_numbers = itertools.count()


def _cgroup_mounts(kinds: tuple[str, ...] = ("cgroup", "cgroup2")) -> list[Path]:
    """Where the cgroup hierarchies of these kinds are mounted (v1 `cgroup`, v2 `cgroup2`), from mountinfo."""
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return []
    return [Path(mine.split()[4]) for mine, _, theirs in (line.partition(" - ") for line in lines)
            if theirs.split(" ", 1)[0] in kinds]


def _cgroup2_mount() -> Path | None:
    """Where the cgroup v2 hierarchy is mounted (/sys/fs/cgroup, or /sys/fs/cgroup/unified in the hybrid
    layout)."""
    return next(iter(_cgroup_mounts(("cgroup2",))), None)


def _own_cgroup2() -> str | None:
    try:
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            if line.startswith("0::"):
                return line[3:]
    except OSError:
        pass
    return None


def cgroup_parent() -> tuple[Path | None, str]:
    """The directory under which jobs get their cgroups (this process's own cgroup v2), or None and why not."""
    mount, own = _cgroup2_mount(), _own_cgroup2()
    if mount is None or own is None:
        return None, "no cgroup v2 hierarchy is mounted"
    parent = mount / own.lstrip("/")
    if not (os.access(parent, os.W_OK) and os.access(parent / "cgroup.procs", os.W_OK)):
        return None, f"cgroup v2 {parent} is not writable by this user (no delegated subtree)"
    return parent, ""


def _environ_has(pid: str, needle: bytes) -> bool:
    try:
        return needle in (Path("/proc") / pid / "environ").read_bytes().split(b"\0")
    except OSError:
        return False


class Job:
    """One job's processes. `Job.create()` before starting it; `start()` its first process; `end()` when it
    is over (or its limit has passed); `close()` at last."""

    def __init__(self, ident: str, cgroup: Path | None, note: str):
        self.ident = ident
        self.cgroup = cgroup
        self.note = note  # how the job is contained, recorded with each run

    @classmethod
    def create(cls, kind: str = "job", cgroups: bool = True) -> "Job":
        """A new job; `cgroups=False` uses the environment fallback (as on hosts without cgroup v2)."""
        ident = f"{kind}-{os.getpid()}-{next(_numbers)}-{secrets.token_hex(3)}"
        parent, why = cgroup_parent() if cgroups else (None, "cgroups not used")
        if parent is not None:
            _remove_stale(parent)
            path = parent / f"mpistack-{ident}"
            try:
                path.mkdir()
                return cls(ident, path, "cgroup v2")
            except OSError as error:
                why = f"cannot make a cgroup in {parent}: {error.strerror}"
        return cls(ident, None, f"environment variable {JOB_VARIABLE} ({why})")

    @classmethod
    def from_record(cls, record: dict) -> "Job":
        """The job a record (`record()`) names. ValueError unless it is one mpistack made: its name as
        `create` makes them, its cgroup `mpistack-<name>` in the cgroup v2 hierarchy, reached without a link
        or `..`; a record that names any other cgroup would make its ending end what is not the job's."""
        ident = record.get("job")
        if not isinstance(ident, str) or not JOB_NAME.fullmatch(ident):
            raise ValueError(f"job {ident!r} is not a name mpistack gives its jobs")
        cgroup = Path(record["cgroup"]) if record.get("cgroup") else None
        if cgroup is not None:
            mount = _cgroup2_mount()
            if (mount is None or cgroup.name != f"mpistack-{ident}" or os.path.realpath(cgroup) != str(cgroup)
                    or not cgroup.is_relative_to(mount)):
                raise ValueError(f"cgroup {str(cgroup)!r} is not the cgroup mpistack made for job {ident}")
        return cls(ident, cgroup, "")

    def record(self) -> dict:
        """What finds this job again from another process (end leftovers after a kill)."""
        return {"job": self.ident, "cgroup": str(self.cgroup) if self.cgroup else None}

    @property
    def mechanism(self) -> str:
        return "cgroup" if self.cgroup else "environment"

    def environment(self) -> dict[str, str]:
        return {JOB_VARIABLE: self.ident}

    def preexec(self):
        """For Popen's preexec_fn: the child joins the cgroup before its program starts, so nothing it
        starts escapes. Only os calls: it runs between fork and exec."""
        if self.cgroup is None:
            return None
        procs = str(self.cgroup / "cgroup.procs")

        def join() -> None:
            descriptor = os.open(procs, os.O_WRONLY)
            try:
                os.write(descriptor, b"0")  # "0": the writing process itself
            finally:
                os.close(descriptor)
        return join

    def start(self, argv: Sequence[str], env: Mapping[str, str], **popen) -> subprocess.Popen:
        """Start the job's first process with `env` (and the job's variable), in a session of its own and in
        the job's cgroup; `popen`: the rest of Popen's arguments (its outputs)."""
        return subprocess.Popen(argv, env={**env, **self.environment()}, preexec_fn=self.preexec(),
                                start_new_session=True, **popen)

    def cgroup_path(self) -> str | None:
        """The cgroup as a path inside the hierarchy (what `--cgroup-parent` takes), or None."""
        mount = _cgroup2_mount()
        if self.cgroup is None or mount is None:
            return None
        return "/" + str(self.cgroup.relative_to(mount))

    def members(self) -> list[int]:
        """The job's processes now (never this process)."""
        if self.cgroup is not None:
            pids = set()
            for directory, _, files in os.walk(self.cgroup):
                if "cgroup.procs" in files:
                    try:
                        pids.update(int(pid) for pid in (Path(directory) / "cgroup.procs").read_text().split())
                    except OSError:  # removed meanwhile
                        pass
        else:
            needle = f"{JOB_VARIABLE}={self.ident}".encode()
            pids = {int(entry) for entry in os.listdir("/proc") if entry.isdigit() and _environ_has(entry, needle)}
        pids.discard(os.getpid())
        return sorted(pids)

    def signal(self, number: int) -> int:
        members = self.members()
        for pid in members:
            try:
                os.kill(pid, number)
            except ProcessLookupError:
                pass
        return len(members)

    def wait_empty(self, seconds: float) -> bool:
        deadline = time.monotonic() + seconds
        while self.members():
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.05)
        return True

    def kill(self, seconds: float = 10) -> bool:
        """SIGKILL every process of the job, including those it starts meanwhile; True once none is left."""
        deadline = time.monotonic() + seconds
        while self.members():
            kill_file = self.cgroup / "cgroup.kill" if self.cgroup else None
            if kill_file is not None and kill_file.exists():
                kill_file.write_text("1")  # the whole subtree at once: nothing can fork away
            else:
                self.signal(signal.SIGKILL)
            if time.monotonic() >= deadline:
                return not self.members()
            time.sleep(0.05)
        return True

    def end(self, grace: float, meanwhile: Callable[[], object] = lambda: None) -> int:
        """SIGTERM to every process of the job (MPI launchers end their ranks on it), SIGKILL to what is left
        after `grace` seconds. `meanwhile` runs within the grace (the engine stopping the job's containers).
        Returns how many processes there were."""
        deadline = time.monotonic() + grace
        count = self.signal(signal.SIGTERM)
        meanwhile()
        if count and not self.wait_empty(max(0.0, deadline - time.monotonic())):
            self.kill()
        return count

    def close(self) -> None:
        """Remove the job's cgroups, once empty (also those an image build's steps made in every
        hierarchy); a job with processes left keeps its cgroup, for `end_leftovers` to find."""
        if self.cgroup is None or self.members():
            return
        relative = (self.cgroup_path() or "").lstrip("/")
        for mount in _cgroup_mounts():
            top = mount / relative if relative else self.cgroup
            if not top.is_dir():
                continue
            for directory, _, _ in sorted(os.walk(top), key=lambda entry: -len(entry[0])):
                try:
                    os.rmdir(directory)
                except OSError:
                    pass


def _remove_stale(parent: Path) -> None:
    """Remove the empty cgroups of jobs whose process is gone (SIGKILL runs no clean-up). One with processes
    left is kept: the next run of a campaign ends those and says so (`LocalLauncher.end_leftovers`)."""
    for path in parent.glob("mpistack-*"):
        fields = path.name.split("-")  # mpistack-KIND-PID-NUMBER-RANDOM
        if len(fields) != 5 or not fields[2].isdigit() or Path(f"/proc/{fields[2]}").exists():
            continue
        Job(path.name, path, "").close()
