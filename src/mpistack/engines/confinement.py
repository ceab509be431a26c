"""What a container runtime lets the ranks of a case do, as a typed value recorded with every run.

Two ranks of one node can use cross-memory attach (CMA, `process_vm_readv`) and UCX's shared-memory
proc-link only inside one user namespace (or holding CAP_SYS_PTRACE over the other's: ptrace(2), "Ptrace
access mode checking"), and attach each other's SysV or POSIX segments only inside one IPC namespace (or
one /dev/shm). So what is recorded is which namespaces the ranks of a node share with each other and with
the host, the capabilities they gain, whether a seccomp filter stands, and the size of a private /dev/shm.
The doctor reads this value; it never reads a runtime's flags back.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

#: the namespaces that decide how ranks of one node can talk (namespaces(7))
NAMESPACES = ("user", "ipc", "pid", "net", "mnt")


@dataclass(frozen=True)
class Confinement:
    runtime: str  # the registered runtime that started the ranks
    #: namespaces every rank of a node shares with the others of its node (one container holds them all,
    #: or the runtime joins them, or each shares the host's)
    shared: frozenset[str] = frozenset()
    host: frozenset[str] = frozenset()  # namespaces the ranks share with the host itself
    capabilities: tuple[str, ...] = ()  # added on top of the runtime's default set
    seccomp: bool = True  # a seccomp filter stands
    shm_bytes: int | None = None  # the private /dev/shm's size; None: the host's /dev/shm
    one_container: bool = False  # every rank of the node in one container

    def __post_init__(self):
        for name in (*self.shared, *self.host):
            if name not in NAMESPACES:
                raise ValueError(f"namespace {name!r}: expected one of {', '.join(NAMESPACES)}")
        # a namespace shared with the host is shared by the ranks of the node too
        object.__setattr__(self, "shared", frozenset(self.shared) | frozenset(self.host))
        object.__setattr__(self, "host", frozenset(self.host))

    def separate(self) -> list[str]:
        """The namespaces each rank of a node has of its own, in NAMESPACES' order."""
        return [name for name in NAMESPACES if name not in self.shared]

    def word(self) -> str:
        """One word for tables and the doctor's lines: what the ranks may do beyond the runtime's default."""
        if "SYS_PTRACE" in self.capabilities:
            return "single-copy"
        if self.runtime == "charliecloud":  # its own user namespace per ch-run, unless joined
            return "joined-ns" if "user" in self.shared else "separate-ns"
        if "ipc" in self.host:
            return "host-ipc-pid"
        return "host-pid" if "pid" in self.host else "default"

    def record(self) -> str:
        """The value as recorded with a run (a JSON object, keys sorted)."""
        return json.dumps({"runtime": self.runtime, "shared": sorted(self.shared), "host": sorted(self.host),
                           "capabilities": list(self.capabilities), "seccomp": self.seccomp,
                           "shm_bytes": self.shm_bytes, "one_container": self.one_container}, sort_keys=True)

    @classmethod
    def from_record(cls, text: str | None) -> "Confinement | None":
        """The value of `record()`; None for a run that has none (native ranks, or a malformed record)."""
        if not text:
            return None
        try:
            data = json.loads(text)
            return cls(runtime=str(data["runtime"]), shared=frozenset(data.get("shared") or ()),
                       host=frozenset(data.get("host") or ()), capabilities=tuple(data.get("capabilities") or ()),
                       seccomp=bool(data.get("seccomp", True)), shm_bytes=data.get("shm_bytes"),
                       one_container=bool(data.get("one_container", False)))
        except (ValueError, KeyError, TypeError):
            return None


_UNITS = {"": 1, "b": 1, "k": 1024, "m": 1024 ** 2, "g": 1024 ** 3}


def size_bytes(text: str) -> int | None:
    """A size as podman's --shm-size writes it (a number and b, k, m or g) in bytes; None when it is not one."""
    text = text.strip().lower()
    number = text.rstrip("bkmg")
    unit = text[len(number):]
    if not number.isdigit() or len(unit) > 1:
        return None
    return int(number) * _UNITS[unit]
