"""A container per rank shares the host's IPC namespace (--ipc host). podman then bind-mounts the host's
/dev/mqueue, which rootless podman 4.3 cannot replace with one of its own where the host has none mounted
("Error: statfs /dev/mqueue: no such file or directory"): every hybrid and bind case failed so. Rootless,
on such a host, the container gets an empty /dev/mqueue of its own instead; root's command is unchanged.
The real run is tests/security/test_as_a_user.py."""

from __future__ import annotations

import pytest

from mpistack.engines import ContainerRun
from mpistack.engines import podman as podman_module
from mpistack.engines.podman import PodmanEngine

MQUEUE = ["--mount", "type=tmpfs,destination=/dev/mqueue"]


def _argv(monkeypatch, uid: int, mounted: bool, share_ipc: bool = True) -> list[str]:
    monkeypatch.setattr(podman_module.os, "geteuid", lambda: uid)
    monkeypatch.setattr(podman_module.os.path, "ismount", lambda path: mounted and path == "/dev/mqueue")
    spec = ContainerRun("img", ["true"], share_ipc=share_ipc, share_pid=share_ipc, per_rank=share_ipc)
    return PodmanEngine(executable="podman", runtime="").run_argv(spec)


def _has(argv: list[str], flags: list[str]) -> bool:
    return any(argv[i:i + len(flags)] == flags for i in range(len(argv)))


@pytest.mark.parametrize("uid, mounted, expected", [(1000, False, True), (1000, True, False),
                                                    (0, False, False), (0, True, False)])
def test_rootless_host_ipc_without_a_host_mqueue_gets_one_of_its_own(monkeypatch, uid, mounted, expected):
    argv = _argv(monkeypatch, uid, mounted)
    assert _has(argv, ["--ipc", "host"])  # the IPC namespace is still the host's
    assert _has(argv, MQUEUE) is expected
    assert argv.index("--mount") < argv.index("img") if expected else True


def test_a_container_with_a_private_ipc_namespace_needs_no_mqueue(monkeypatch):
    assert not _has(_argv(monkeypatch, 1000, False, share_ipc=False), MQUEUE)
