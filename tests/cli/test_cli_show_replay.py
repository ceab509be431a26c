"""`mpistack show` says what a recorded podman command needs to replay as mpistack ran it."""

from __future__ import annotations

from mpistack.cli.show import replay_note
from mpistack.engines.podman import containers_conf_path


def test_a_podman_command_names_the_containers_conf_it_ran_with():
    note = replay_note("mpiexec -n 2 podman run --rm localhost/mpistack/debian-mpich:1 mpistack-bench latency", {})
    assert note.startswith(f"CONTAINERS_CONF={containers_conf_path()} before the command")


def test_a_native_command_or_one_that_recorded_it_needs_no_note():
    assert replay_note("mpiexec.mpich -n 2 mpistack-bench latency", {}) is None
    assert replay_note("podman run x", {"CONTAINERS_CONF": "/etc/c.conf"}) is None
