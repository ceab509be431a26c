"""Synthetic launches written into a real store with the real writer: campaigns whose figures the test chooses."""

from __future__ import annotations

from typing import Callable

import numpy as np

from mpistack.parsers.model import ParsedRow, ParsedRun
from mpistack.spec.benchmarks import metric_of
from mpistack.spec.provenance import Provenance
from mpistack.store.campaigns import start_campaign
from mpistack.store.writer import write_runs

SIZES = [2**i for i in range(23)]  # 1 B .. 4 MiB, as OSU's point-to-point tests


def latency_curve(size: int) -> float:
    return 1.0 + size / 5000


def bandwidth_curve(size: int) -> float:
    return min(20000.0, 0.5 * size + 1.0)


def record_campaign(engine, name: str, *, stack: str, approach: str, benchmark: str = "latency", launches: int = 8,
                    scale: Callable[[int], float] = lambda size: 1.0, spread: float = 0.03, seed: int = 0,
                    origin: str = "image", buffers: str = "H-H") -> int:
    """A campaign of ``launches`` launches of one case, each figure the benchmark's curve times ``scale(size)``
    times log-normal noise of ``spread``; returns the campaign id."""
    campaign_id = start_campaign(engine, name, {})
    rng = np.random.default_rng(seed)
    metric = metric_of(benchmark)
    curve = bandwidth_curve if metric.higher_is_better else latency_curve
    runs = [
        ParsedRun(benchmark=benchmark, title=benchmark, units={metric.name: metric.unit},
                  rows=[ParsedRow(size, {metric.name: round(curve(size) * scale(size) * rng.lognormal(0.0, spread),
                                                            4)}) for size in SIZES])
        for _ in range(launches)
    ]
    with engine.begin() as connection:
        write_runs(connection, runs, source="synthetic", campaign_id=campaign_id,
                   provenance=Provenance(stack=stack, approach=approach, ranks=2, nodes=1, buffers=buffers),
                   tags={"mpi": "mpich", "variant": "default", "origin": origin})
    return campaign_id
