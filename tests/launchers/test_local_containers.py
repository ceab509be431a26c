"""Containers a local case starts end with it, with real podman: a container whose program ignores SIGTERM
is stopped after a short grace (SIGTERM, then SIGKILL) when the case's limit passes or Ctrl-C stops it,
instead of podman's default of 10 s per step; a container whose client was killed is removed too."""

from __future__ import annotations

import secrets
import subprocess
import threading
import time

import pytest

from mpistack.engines import ContainerRun
from mpistack.engines.base import STOP_GRACE_SECONDS
from mpistack.launchers.base import LaunchPlan
from mpistack.launchers.local import LocalLauncher

pytestmark = pytest.mark.podman

IGNORES_SIGTERM = ["sh", "-c", 'echo started; trap "" TERM; sleep 1000']


def _containers(engine, label: str) -> list[str]:
    return subprocess.run(engine.command("ps", "-aq", "--filter", f"label=mpistack.case={label}"), env=engine.env(),
                          capture_output=True, text=True, check=True).stdout.split()


def _plan(engine, image: str, label: str, argv=IGNORES_SIGTERM) -> LaunchPlan:
    return LaunchPlan(argv=engine.run_argv(ContainerRun(image, argv, label=label)), env=engine.env_overrides(),
                      output=None, label=label, image=image)


def _wait_running(engine, label: str, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        running = subprocess.run(engine.command("ps", "-q", "--filter", "status=running", "--filter",
                                                f"label=mpistack.case={label}"), env=engine.env(),
                                 capture_output=True, text=True)
        if running.stdout.strip():
            return
        time.sleep(0.1)
    raise AssertionError(f"the container labelled {label} never ran")


def test_a_container_that_ignores_sigterm_ends_soon_after_the_limit(podman, base_image):
    label = f"test-{secrets.token_hex(4)}"
    limit = 3
    started = time.monotonic()
    execution = LocalLauncher(podman).execute(_plan(podman, base_image, label), timeout=limit)
    took = time.monotonic() - started
    print(f"limit {limit} s: the case ended after {took:.2f} s")
    assert execution.timed_out
    assert execution.stdout == "started\n", "the container never ran: the limit tested nothing"
    assert took < limit + STOP_GRACE_SECONDS + 3  # was limit + 13 s (SIGTERM, 3 s, SIGKILL, podman's 10 s)
    assert _containers(podman, label) == []


def test_ctrl_c_stops_a_container_that_ignores_sigterm_within_the_grace(podman, base_image):
    label = f"test-{secrets.token_hex(4)}"
    launcher = LocalLauncher(podman)
    pressed = []

    def press_ctrl_c() -> None:
        _wait_running(podman, label)
        pressed.append(time.monotonic())
        launcher.interrupt()

    threading.Thread(target=press_ctrl_c, daemon=True).start()
    execution = launcher.execute(_plan(podman, base_image, label), timeout=90)
    took = time.monotonic() - pressed[0]
    print(f"Ctrl-C: the case ended {took:.2f} s later")
    assert execution.interrupted
    assert took < STOP_GRACE_SECONDS + 3
    assert _containers(podman, label) == []


def test_a_container_left_by_a_case_that_ended_by_itself_is_removed(podman, base_image):
    """The case's podman client detaches (-d) and exits 0: the container it started does not outlive the case."""
    label = f"test-{secrets.token_hex(4)}"
    argv = podman.run_argv(ContainerRun(base_image, ["sleep", "1000"], label=label))
    argv.insert(argv.index("run") + 1, "-d")
    execution = LocalLauncher(podman).execute(LaunchPlan(argv=argv, env=podman.env_overrides(), output=None,
                                                         label=label), timeout=120)
    assert execution.exit_code == 0
    assert _containers(podman, label) == []
