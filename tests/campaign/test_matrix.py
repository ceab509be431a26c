"""Matrix expansion reads the rank rules from the one benchmark table: what mpistack-bench would refuse
is skipped with the reason, not run and failed."""

from __future__ import annotations

from mpistack.campaign.matrix import expand
from mpistack.spec.campaign import load_campaign_text


def test_rank_rules_skip_with_the_reason():
    campaign = load_campaign_text('name = "m"\napproaches = ["native"]\n'
                                  'benchmarks = ["latency", "mbw_mr", "allreduce"]\n'
                                  '[[stack]]\nname = "h"\nhost = "mpich"\n'
                                  '[[placement]]\nranks = 3\n[[placement]]\nranks = 4\n')
    skips = {(case.benchmark.name, case.placement.ranks): case.skip for case in expand(campaign)}
    assert skips[("latency", 3)] == "latency runs on exactly 2 ranks"
    assert skips[("mbw_mr", 3)] == "mbw_mr runs on an even number of ranks (at least 2)"
    assert skips[("mbw_mr", 4)] is None and skips[("allreduce", 3)] is None


def test_more_nodes_than_the_local_launcher_has_are_skipped():
    campaign = load_campaign_text('name = "m"\napproaches = ["native"]\nbenchmarks = ["allreduce"]\n'
                                  '[[stack]]\nname = "h"\nhost = "mpich"\n[[placement]]\nranks = 2\nnodes = 2\n')
    (case,) = expand(campaign)
    assert case.skip.startswith("the local launcher runs on 1 node(s)")
