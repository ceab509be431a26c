"""SIGTERM or SIGHUP during `mpistack run`'s image build stops the run as Ctrl-C does: the build's step ends,
buildah's working container is removed, and the run says it was interrupted (exit 130). The handler used to
be installed after the build, so the signal ended mpistack at once and left 3-4 working containers. Real
podman; the stack's base image has an apt-get that sleeps (tests/images/test_build_interrupt.py)."""

from __future__ import annotations

import signal
import subprocess
import time

import pytest

from tests.helpers import MPISTACK, campaign_file, plain_environment, processes_with
from tests.images import test_build_interrupt
from tests.images.test_build_interrupt import _working_containers

sleeping_base = test_build_interrupt.sleeping_base  # the fixture, shared

pytestmark = pytest.mark.podman


@pytest.mark.parametrize("number", [signal.SIGTERM, signal.SIGHUP])
def test_a_signal_during_runs_image_build_stops_it_and_leaves_no_working_container(podman, sleeping_base,
                                                                                  tmp_path, number):
    image, marker = sleeping_base
    path = campaign_file(tmp_path, f"""
approaches = ["container"]
[[stack]]
name = "test-run-interrupt"
[stack.inline]
name = "test-run-interrupt"
description = "a build that is interrupted"
origin = "tests"
mode = "distro"
network = "ucx"
[stack.inline.base]
image = "{image}"
[stack.inline.mpi]
impl = "mpich"
version = "4.0.2"
device = "ch4:ucx"
channel = "apt"
[[benchmark]]
name = "latency"
""", name="build-stop")
    env = {**plain_environment(), "XDG_CACHE_HOME": str(tmp_path / "cache"), "MPISTACK_BOUNDS": "off"}
    env.pop("MPISTACK_DB", None)
    proc = subprocess.Popen([*MPISTACK, "run", str(path), "--db", str(tmp_path / "r.db")], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and not processes_with(marker) and proc.poll() is None:
        time.sleep(0.1)
    assert processes_with(marker), "the build's step never ran: " + "".join(proc.communicate(timeout=60))
    assert _working_containers(podman, image)
    proc.send_signal(number)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stdout + stderr
    assert f"interrupted ({signal.Signals(number).name}) while preparing" in " ".join(stdout.split())
    assert processes_with(marker) == {}
    assert _working_containers(podman, image) == []
