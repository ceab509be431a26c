"""Ctrl-C, SIGTERM or SIGHUP during `mpistack stack build` leaves nothing running and no working container,
with real podman. podman 4.3 itself leaves both: the step's processes keep running in a cgroup of runc's and
buildah's working container stays in storage (`podman ps --external`).

The stack is built FROM a fresh image made from the local base image, whose `apt-get` is a stand-in that
sleeps: the build's first step then runs (no cached layer) and lasts until it is stopped."""

from __future__ import annotations

import json
import signal
import subprocess
import time

import pytest

from mpistack.engines.containment import cgroup_parent
from tests.helpers import MPISTACK, new_marker, processes_with

pytestmark = pytest.mark.podman

STAND_IN = "#!/bin/sh\nexport MPISTACK_TEST_MARKER={marker}\nexec sleep 1000\n"


@pytest.fixture
def sleeping_base(podman, base_image, tmp_path):
    """A base image whose apt-get sleeps, marked so that its processes can be found; removed afterwards."""
    marker = new_marker()
    tag = f"localhost/mpistack-test/sleeping-base:{marker}"
    (tmp_path / "apt-get").write_text(STAND_IN.format(marker=marker))
    (tmp_path / "Containerfile").write_text(f"FROM {base_image}\nCOPY apt-get /usr/local/bin/apt-get\n"
                                            "RUN chmod 0755 /usr/local/bin/apt-get\n")
    made = podman.build(tmp_path, tmp_path / "Containerfile", tag)
    assert made.ok, "\n".join(made.tail)
    yield tag, marker
    podman.remove_image(tag)


def _working_containers(engine, image: str) -> list[str]:
    listing = subprocess.run(engine.command("ps", "--all", "--external", "--format", "json"), env=engine.env(),
                             capture_output=True, text=True, check=True).stdout
    return [c["Id"] for c in json.loads(listing or "[]") if c.get("Image") == image]


@pytest.mark.parametrize("number", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_signal_during_stack_build_leaves_no_step_and_no_working_container(podman, sleeping_base,
                                                                              tmp_path, number):
    image, marker = sleeping_base
    stack = (tmp_path / "test-interrupt.toml")
    stack.write_text(f'name = "test-interrupt"\ndescription = "a build that is interrupted"\n'
                     f'origin = "tests"\nmode = "distro"\nnetwork = "ucx"\n[base]\nimage = "{image}"\n'
                     '[mpi]\nimpl = "mpich"\nversion = "4.0.2"\ndevice = "ch4:ucx"\nchannel = "apt"\n')
    proc = subprocess.Popen([*MPISTACK, "stack", "build", str(stack), "--log", str(tmp_path / "build.log")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not processes_with(marker) and proc.poll() is None:
        time.sleep(0.1)
    assert processes_with(marker), "the build's step never ran: " + (tmp_path / "build.log").read_text()[-2000:]
    assert _working_containers(podman, image)
    sent = time.monotonic()
    proc.send_signal(number)
    _, stderr = proc.communicate(timeout=60)
    took = time.monotonic() - sent
    print(f"{signal.Signals(number).name}: the build ended {took:.2f} s later")
    assert proc.returncode == 130, stderr
    assert "build interrupted" in stderr
    assert processes_with(marker) == {}
    assert _working_containers(podman, image) == []
    parent = cgroup_parent()[0]
    if parent is not None:
        assert list(parent.glob(f"mpistack-build-{proc.pid}-*")) == []
