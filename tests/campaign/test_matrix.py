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


VARIANT_CAMPAIGN = '''name = "v"
approaches = ["native", "container", "bind"]
benchmarks = ["latency", "bw"]
repeats = 4
[[stack]]
name = "host-mpich"
host = "mpich"
[[stack]]
name = "debian-mpich"
[[variant]]
name = "tcp"
env = { UCX_TLS = "tcp", MPIR_CVAR_NOLOCAL = "1" }
[[variant]]
name = "bind-only"
approaches = ["bind"]
baseline = "tcp"
'''


def _campaign(extra: str = ""):
    """Top-level keys go before the tables, tables after them."""
    if extra.startswith("["):
        return load_campaign_text(VARIANT_CAMPAIGN + extra)
    return load_campaign_text(extra + VARIANT_CAMPAIGN)


def test_every_case_runs_plain_and_once_per_variant_that_applies():
    cases = expand(_campaign())
    per_combination = {}
    for case in (case for case in cases if case.launch == 1):  # a baseline's extra launches aside
        per_combination.setdefault((case.stack.name, case.approach.name, case.variant_name), 0)
        per_combination[(case.stack.name, case.approach.name, case.variant_name)] += 1
    assert per_combination == {
        ("host-mpich", "native", "default"): 8,  # variants leave native alone unless they name it
        ("debian-mpich", "container", "default"): 8, ("debian-mpich", "container", "tcp"): 8,
        ("debian-mpich", "bind", "default"): 8, ("debian-mpich", "bind", "tcp"): 8,
        ("debian-mpich", "bind", "bind-only"): 8,
    }
    tcp = next(case for case in cases if case.variant_name == "tcp")
    assert tcp.variant_env == {"UCX_TLS": "tcp", "MPIR_CVAR_NOLOCAL": "1"}
    assert "v:tcp" in tcp.key and len({case.key for case in cases}) == len(cases)


def test_the_order_is_rounds_of_repeats_shuffled_reproducibly_by_the_seed():
    campaign = _campaign("seed = 11\n")
    first, again = expand(campaign), expand(campaign)
    assert [case.key for case in first] == [case.key for case in again]
    other = expand(_campaign("seed = 12\n"))
    assert [case.key for case in other] != [case.key for case in first]
    assert sorted(case.key for case in other) == sorted(case.key for case in first)
    assert [case.repeat for case in first] == sorted(case.repeat for case in first)  # rounds follow each other
    round_one = [case for case in first if case.repeat == 1]
    benchmarks = [case.benchmark.name for case in round_one]
    assert benchmarks == sorted(benchmarks, key=benchmarks.index)  # compared cases stay together
    orders = {tuple(case.key for case in expand(_campaign(f"seed = {seed}\n")) if case.repeat == 1)
              for seed in range(20)}
    assert len(orders) > 10  # the order within a round really is drawn, not fixed


def test_matrix_order_keeps_the_listed_order():
    cases = expand(_campaign('order = "matrix"\n'))
    first_round = [(case.stack.name, case.approach.name, case.variant_name) for case in cases
                   if case.repeat == 1 and case.benchmark.name == "latency"]
    assert first_round == [("host-mpich", "native", "default"), ("debian-mpich", "container", "default"),
                           ("debian-mpich", "container", "tcp"), ("debian-mpich", "bind", "default"),
                           ("debian-mpich", "bind", "tcp"), ("debian-mpich", "bind", "bind-only")]


def test_variant_errors_name_the_field():
    import pytest
    from mpistack.spec.campaign import CampaignError

    with pytest.raises(CampaignError, match="baseline 'nope' is not a variant"):
        _campaign('[[variant]]\nname = "x"\nbaseline = "nope"\n')
    with pytest.raises(CampaignError, match="'default' is the name of the plain cases"):
        _campaign('[[variant]]\nname = "default"\n')
    with pytest.raises(CampaignError, match="variant names must be unique"):
        _campaign('[[variant]]\nname = "tcp"\n')
    with pytest.raises(CampaignError, match="not an environment variable name"):
        _campaign('[[variant]]\nname = "y"\nenv = { "A B" = "1" }\n')
