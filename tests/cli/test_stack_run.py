"""`mpistack stack run` ends its container with itself, with real podman: on --timeout (exit 124), and on
Ctrl-C, SIGTERM or SIGHUP (exit 130), also when the container's program ignores SIGTERM."""

from __future__ import annotations

import signal
import subprocess
import time

import pytest

from mpistack.engines.base import STOP_GRACE_SECONDS
from mpistack.spec import catalogue
from tests.helpers import MPISTACK, new_marker, processes_with

pytestmark = pytest.mark.podman
STACK = "pip-mpich"


@pytest.fixture(scope="module")
def stack_image(podman):
    image = catalogue.load(STACK).image_ref()
    if not podman.image_exists(image):
        pytest.skip(f"{image} is not built (tests/images builds it; or `mpistack stack build {STACK}`)")
    return image


def _command(marker: str, *options: str) -> list[str]:
    """A program that ignores SIGTERM, named by `marker` (its $0) to find it in `podman ps` and /proc."""
    return [*MPISTACK, "stack", "run", STACK, "-n", "0", *options, "--", "sh", "-c",
            'echo started; trap "" TERM; sleep 1000', marker]


def _containers(engine, marker: str) -> list[str]:
    listing = subprocess.run(engine.command("ps", "-a", "--no-trunc", "--format", "{{.ID}} {{.Command}}"),
                             env=engine.env(), capture_output=True, text=True, check=True).stdout
    return [line for line in listing.splitlines() if marker in line]


def test_a_timed_out_stack_run_ends_its_container(podman, stack_image):
    marker = new_marker()
    started = time.monotonic()
    proc = subprocess.run(_command(marker, "--timeout", "3"), capture_output=True, text=True, timeout=120)
    took = time.monotonic() - started
    print(f"--timeout 3: stack run ended after {took:.2f} s")
    assert proc.returncode == 124, proc.stderr
    assert proc.stdout == "started\n" and "ended with its container after the limit of 3 s" in proc.stderr
    assert took < 3 + STOP_GRACE_SECONDS + 8  # the CLI's own start-up included
    assert _containers(podman, marker) == [] and processes_with(marker) == {}


@pytest.mark.parametrize("number", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_signal_to_stack_run_ends_its_container(podman, stack_image, number):
    marker = new_marker()
    proc = subprocess.Popen(_command(marker), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not _containers(podman, marker):
        time.sleep(0.2)
    assert _containers(podman, marker), "the container never started"
    time.sleep(1)  # let the program set its trap
    sent = time.monotonic()
    proc.send_signal(number)
    _, stderr = proc.communicate(timeout=60)
    took = time.monotonic() - sent
    print(f"{signal.Signals(number).name}: stack run ended {took:.2f} s later")
    assert proc.returncode == 130, stderr
    assert took < STOP_GRACE_SECONDS + 4
    assert _containers(podman, marker) == [] and processes_with(marker) == {}
