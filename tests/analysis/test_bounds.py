"""MachineBounds: look-ups per size, the memcpy flag and TCP's side, from made-up figures."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from mpistack.analysis.bounds import (MAX_TCP_MARGIN, MEMCPY_TOLERANCE, BoundFigure, BoundSource, MachineBounds)


def figures(kind, by_size, mpi=""):
    return [BoundFigure(kind, size, value, value * 0.9, value * 1.2, 3, mpi) for size, value in by_size.items()]


def source(kind, mpi, version, status="ok"):
    return BoundSource(kind, mpi, "node1", "cmd", version, datetime(2026, 11, 26, tzinfo=timezone.utc), 3, status)


MACHINE = MachineBounds(
    host="node1", cpu_model="Test CPU", kernel="6.1.0",
    figures=tuple(figures("memcpy-cache", {1: 800.0, 1024: 100_000.0, 1048576: 16_000.0})
                  + figures("memcpy-memory", {1: 80.0, 1024: 7000.0, 1048576: 10_000.0})
                  + figures("tcp-latency", {1: 3.5, 1048576: 200.0}, "openmpi")
                  + figures("tcp-bandwidth", {1: 0.4, 1048576: 1500.0}, "openmpi")
                  + figures("shm-latency", {1: 0.3}, "mpich") + figures("shm-latency", {1: 0.25}, "openmpi")),
    sources=(source("tcp-latency", "openmpi", "Open MPI v4.1.4"), source("shm-latency", "mpich", "MPICH Version: 4.0.2"),
             source("memcpy-cache", "", "", "timeout")))


def test_lookups_exact_interpolated_and_clamped():
    assert MACHINE.memcpy_mbs(1024) == 100_000.0
    assert MACHINE.memcpy_mbs(1024, "memory") == 7000.0
    # halfway between 1 and 1 MiB on a log scale: the geometric mean of the figures there
    assert MACHINE.tcp_latency_us(1024) == pytest.approx((3.5 * 200.0) ** 0.5)
    assert MACHINE.tcp_bandwidth_mbs(4 * 1048576) == 1500.0 and MACHINE.tcp_bandwidth_mbs(0) == 0.4
    assert MACHINE.shm_latency_us() == 0.25 and MACHINE.shm_latency_us("mpich") == 0.3
    empty = MachineBounds("h", "", "")
    assert empty.memcpy_mbs(8) is None and empty.shm_latency_us() is None
    assert not empty.above_memcpy(8, 1e12) and empty.tcp_side("latency", 1, 100.0) is None


def test_a_figure_above_the_in_cache_copy_is_flagged_within_a_tolerance():
    assert MACHINE.above_memcpy(1048576, 71_000.0)  # the 71 GB/s "faster than native" row
    steady = MachineBounds("h", "", "", figures=(BoundFigure("memcpy-cache", 1024, 100.0, 99.0, 101.0, 3),))
    assert not steady.above_memcpy(1024, 100.0 * (1 + MEMCPY_TOLERANCE) * 0.99)
    assert steady.above_memcpy(1024, 100.0 * (1 + MEMCPY_TOLERANCE) * 1.01)
    assert not steady.above_memcpy(1024, 200.0, copies=2)  # bibw: two cores copy at once
    # a noisy copy: the fastest launch (1.2x the median here) is the bound
    bound = MACHINE.memcpy_mbs(1048576)
    assert not MACHINE.above_memcpy(1048576, bound * 1.19) and MACHINE.above_memcpy(1048576, bound * 1.21)


def test_tcp_side_for_latency_and_bandwidth():
    # 0.25 us shm against 3.5 us TCP: a 14x gap, whose fourth root (1.93) exceeds the cap
    assert MACHINE.tcp_margin() == MAX_TCP_MARGIN
    assert MACHINE.tcp_side("latency", 1, 3.0)  # within 25% below TCP's 3.5 us
    assert not MACHINE.tcp_side("latency", 1, 0.4)  # shared memory
    assert MACHINE.tcp_side("bandwidth", 1048576, 1700.0)
    assert not MACHINE.tcp_side("bandwidth", 1048576, 9000.0)
    assert MACHINE.tcp_side("bi-bandwidth", 1048576, 3000.0)  # TCP's one-way figure counts twice
    assert MACHINE.tcp_side("bandwidth", 1048576, 3000.0, directions=2)
    assert not MACHINE.tcp_side("bandwidth", 1048576, 3000.0)
    assert MACHINE.tcp_side("message_rate", 1048576, 1.0) is None


def test_the_margin_narrows_with_the_gap_between_shared_memory_and_tcp():
    close = MachineBounds("h", "", "", figures=tuple(figures("tcp-latency", {1: 1.2})
                                                     + figures("shm-latency", {1: 1.0}, "mpich")))
    assert close.tcp_margin() == pytest.approx(1.2 ** 0.25 - 1)
    assert not close.tcp_side("latency", 1, 1.1)  # between the two, nearer the shm floor than the margin allows


def test_describe_names_the_machine_and_the_libraries():
    text = MACHINE.describe()
    assert text.startswith("node1 (Test CPU, Linux 6.1.0)")
    assert "openmpi: Open MPI v4.1.4" in text and "mpich: MPICH Version: 4.0.2" in text
    assert [s.kind for s in MACHINE.failures()] == ["memcpy-cache"]


NETWORKED = MachineBounds(
    host="node1", cpu_model="", kernel="", network="TCP between node1 and node2 (Open MPI pml ob1, btl tcp)",
    figures=MACHINE.figures + tuple(figures("net-latency", {1: 30.0, 1048576: 900.0}, "openmpi")
                                    + figures("net-bandwidth", {1: 0.1, 1048576: 400.0}, "openmpi")))


def test_between_nodes_the_network_is_the_tcp_bound_and_on_one_node_the_loopback():
    assert NETWORKED.net_latency_us(1) == 30.0 and NETWORKED.net_bandwidth_mbs(1048576) == 400.0
    assert NETWORKED.tcp_bound("latency", 1, nodes=2) == 30.0 and NETWORKED.tcp_bound("latency", 1) == 3.5
    assert NETWORKED.tcp_bound("bandwidth", 1048576, nodes=2) == 400.0
    # 8 us between nodes: on the loopback's TCP side, but better than the network's TCP: no TCP there
    assert NETWORKED.tcp_side("latency", 1, 8.0) is True
    assert NETWORKED.tcp_side("latency", 1, 8.0, nodes=2) is False
    assert NETWORKED.tcp_side("latency", 1, 29.0, nodes=2) is True
    assert NETWORKED.tcp_side("bandwidth", 1048576, 1000.0, nodes=2) is False
    assert NETWORKED.tcp_side("bandwidth", 1048576, 1000.0) is True
    # without inter-node figures a row between nodes is compared with the loopback, as before
    assert MACHINE.tcp_side("latency", 1, 8.0, nodes=2) is True and MACHINE.net_latency_us(1) is None
    # a node known by its name only
    assert NETWORKED.describe() == "node1" and MACHINE.network == "not measured"
