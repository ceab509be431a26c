"""`Engine.run`, the one way `stack run` and image checks run a container, with real podman: when its limit
passes, the container ends with it, soon, even when its program ignores SIGTERM."""

from __future__ import annotations

import subprocess

import pytest

from mpistack.engines import ContainerRun
from mpistack.engines.base import STOP_GRACE_SECONDS

pytestmark = pytest.mark.podman


def test_a_timed_out_run_ends_its_container(podman, base_image):
    limit = 3
    result = podman.run(ContainerRun(base_image, ["sh", "-c", 'echo started; trap "" TERM; sleep 1000']),
                        timeout=limit)
    print(f"limit {limit} s: run returned after {result.seconds:.2f} s")
    assert result.timed_out and result.stdout == "started\n"
    assert result.stderr.endswith(f"(ended with its container after the limit of {limit} s)\n")
    assert result.seconds < limit + STOP_GRACE_SECONDS + 3
    label = result.argv[result.argv.index("--label") + 1]  # the run's own label, given when it had none
    assert label.startswith("mpistack.case=run-")
    left = subprocess.run(podman.command("ps", "-aq", "--filter", f"label={label}"), env=podman.env(),
                          capture_output=True, text=True, check=True).stdout
    assert left == ""


def test_a_run_within_its_limit_is_unchanged(podman, base_image):
    result = podman.run(ContainerRun(base_image, ["sh", "-c", "echo out; echo err >&2; exit 3"]), timeout=60)
    assert (result.returncode, result.stdout, result.stderr, result.timed_out) == (3, "out\n", "err\n", False)
