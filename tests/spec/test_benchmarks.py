"""The one benchmark table in Python agrees with what mpistack-bench itself says (`--list`): names,
families, primary metrics, rank rules and which tests have message sizes and take buffer placements."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from mpistack.images.host_bench import build_host_bench
from mpistack.spec.benchmarks import BENCHMARKS, RankRule, metric_of


@pytest.fixture(scope="module")
def listed():
    if not shutil.which("mpicc.mpich"):
        pytest.skip("Debian's mpich not installed")
    binary = build_host_bench("mpich")
    result = subprocess.run([str(binary), "--list"], capture_output=True, text=True, timeout=60, check=True)
    return {test["name"]: test for test in json.loads(result.stdout)["tests"]}


def test_same_tests(listed):
    assert list(listed) == list(BENCHMARKS)


@pytest.mark.parametrize("name", list(BENCHMARKS))
def test_same_facts(listed, name):
    ours, theirs = BENCHMARKS[name], listed[name]
    assert ours.family.value == theirs["family"]
    assert (ours.metric.name, ours.metric.unit) == (theirs["metric"], theirs["unit"])
    assert (ours.rank_rule.value, ours.rank_count) == (theirs["ranks"]["rule"], theirs["ranks"]["count"])
    assert ours.sizes == theirs["sizes"]
    assert ours.takes_buffer_placement == theirs["buffers"]


def test_rank_rules_refuse_what_the_suite_refuses():
    assert BENCHMARKS["latency"].refuses(4) and not BENCHMARKS["latency"].refuses(2)
    assert BENCHMARKS["mbw_mr"].refuses(3) and not BENCHMARKS["mbw_mr"].refuses(4)
    assert BENCHMARKS["allreduce"].refuses(1) and not BENCHMARKS["allreduce"].refuses(3)
    assert BENCHMARKS["mbw_mr"].rank_rule is RankRule.EVEN


def test_other_osu_tests_get_their_metric_from_the_name():
    assert metric_of("put_bw").name == "bandwidth" and metric_of("xccl_bibw").unit == "MB/s"
    assert metric_of("ibcast").name == "latency"
