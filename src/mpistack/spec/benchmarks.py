"""The one benchmark table: every test mpistack-bench runs, with its family, primary metric and rank rule.

The campaign spec validates benchmark names against it, the matrix skips placements its rank rule
refuses, the approaches pass buffer placements to the tests that take them, and the parsers and the
analysis read the metric's unit and direction from it. A test checks it against `mpistack-bench --list`.
OSU tests that mpistack-bench does not run (one-sided, non-blocking, NCCL) are still parsed; their
metric comes from `metric_of`.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class Family(str, Enum):
    PT2PT = "pt2pt"
    COLLECTIVE = "collective"
    LOCAL = "local"  # no communication: rank 0 measures the machine (memcpy, the bound of intra-node bandwidth)


class RankRule(str, Enum):
    EXACTLY = "exactly"  # exactly `count` ranks
    EVEN = "even"  # an even number, at least `count`
    AT_LEAST = "at-least"  # at least `count`


@dataclass(frozen=True)
class Metric:
    name: str  # latency | bandwidth | message_rate | in_cache | from_memory
    unit: str  # us | MB/s | messages/s

    @property
    def higher_is_better(self) -> bool:
        return self.name in HIGHER_IS_BETTER


HIGHER_IS_BETTER = frozenset({"bandwidth", "message_rate", "in_cache", "from_memory"})
LATENCY = Metric("latency", "us")
BANDWIDTH = Metric("bandwidth", "MB/s")
# memcpy's two figures: one core copying warm buffers, and copying data that comes from DRAM
MEMCPY_IN_CACHE = Metric("in_cache", "MB/s")
MEMCPY_FROM_MEMORY = Metric("from_memory", "MB/s")


@dataclass(frozen=True)
class Benchmark:
    name: str  # the OSU test name without osu_
    family: Family
    metric: Metric
    rank_rule: RankRule
    rank_count: int = 2
    sizes: bool = True  # barrier has no message size

    @property
    def takes_buffer_placement(self) -> bool:
        """Point-to-point tests take OSU's positional send/receive placement (H H, D D, ...)."""
        return self.family is Family.PT2PT

    def refuses(self, ranks: int) -> str | None:
        """Why this test cannot run on `ranks` ranks, or None."""
        if self.rank_rule is RankRule.EXACTLY and ranks != self.rank_count:
            return f"{self.name} runs on exactly {self.rank_count} ranks"
        if self.rank_rule is RankRule.EVEN and (ranks % 2 or ranks < self.rank_count):
            return f"{self.name} runs on an even number of ranks (at least {self.rank_count})"
        if self.rank_rule is RankRule.AT_LEAST and ranks < self.rank_count:
            return f"{self.name} runs on at least {self.rank_count} ranks"
        return None


def _pt2pt(name: str, metric: Metric, rule: RankRule = RankRule.EXACTLY) -> Benchmark:
    return Benchmark(name, Family.PT2PT, metric, rule)


def _collective(name: str, sizes: bool = True) -> Benchmark:
    return Benchmark(name, Family.COLLECTIVE, LATENCY, RankRule.AT_LEAST, sizes=sizes)


BENCHMARKS: dict[str, Benchmark] = {b.name: b for b in (
    _pt2pt("latency", LATENCY),
    _pt2pt("bw", BANDWIDTH),
    _pt2pt("bibw", BANDWIDTH),
    _pt2pt("mbw_mr", BANDWIDTH, RankRule.EVEN),
    _pt2pt("multi_lat", LATENCY, RankRule.EVEN),
    _collective("barrier", sizes=False),
    _collective("bcast"),
    _collective("reduce"),
    _collective("allreduce"),
    _collective("gather"),
    _collective("scatter"),
    _collective("allgather"),
    _collective("alltoall"),
    _collective("reduce_scatter"),
    Benchmark("memcpy", Family.LOCAL, MEMCPY_IN_CACHE, RankRule.AT_LEAST, rank_count=1),
)}
BENCHMARK_NAMES = tuple(BENCHMARKS)

# OSU tests beyond mpistack-bench's set whose primary figure is a bandwidth
_OTHER_BANDWIDTH = {"put_bw", "get_bw", "put_bibw", "xccl_bw", "xccl_bibw"}


def metric_of(benchmark: str) -> Metric:
    """The primary metric of any OSU test name, mpistack-bench's or not."""
    if benchmark in BENCHMARKS:
        return BENCHMARKS[benchmark].metric
    if benchmark in _OTHER_BANDWIDTH or benchmark.endswith(("_bw", "_bibw")):
        return BANDWIDTH
    return LATENCY
