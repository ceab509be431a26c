"""Regressions: a case in one campaign against the earlier campaigns of the same name, one median per campaign
and size, judged by a prediction interval whose spread is floored at the practical floor."""

from __future__ import annotations

import pytest

from mpistack.analysis.answers import Settings
from mpistack.analysis.regressions import (
    CampaignRef,
    CampaignRows,
    find_regressions,
    regressions_in,
    size_drop,
)
from mpistack.analysis.evidence import Row, RowKey
from mpistack.analysis.statistics import PracticalFloor
from mpistack.store import open_database

from .synthetic import SIZES, latency_curve, record_campaign

LARGE = 512 * 1024


def slower_from(limit: int, factor: float):
    return lambda size: factor if size >= limit else 1.0


def history_then(engine, current_scale, *, benchmark="bw", name="nightly", drift=0.02):
    """Five campaigns of one case whose level wanders by ``drift`` from campaign to campaign, then one more
    scaled by ``current_scale``; returns the last campaign's id."""
    for index, level in enumerate([1.0, 1.0 + drift, 1.0 - drift, 1.0 + drift / 2, 1.0 - drift / 2]):
        record_campaign(engine, name, stack="debian-mpich", approach="container", benchmark=benchmark,
                        scale=lambda size, level=level: level, seed=index)
    return record_campaign(engine, name, stack="debian-mpich", approach="container", benchmark=benchmark,
                           scale=current_scale, seed=99)


@pytest.fixture
def engine(tmp_path):
    return open_database(str(tmp_path / "history.db"))


def test_a_campaign_thirty_percent_slower_at_large_sizes_is_flagged_there(engine):
    current = history_then(engine, slower_from(LARGE, 0.7))
    check = find_regressions(engine, current)
    (regression,) = check.regressions
    assert [list(run.sizes) for run in regression.ranges] == [[size for size in SIZES if size >= LARGE]]
    assert regression.worst.ratio == pytest.approx(0.7, abs=0.05)
    assert regression.campaign.id == current and regression.campaign.name == "nightly"
    assert regression.campaign.created_at is not None
    assert [ref.id for ref in regression.history] == [current - 1, current - 2, current - 3, current - 4,
                                                      current - 5]
    assert all(drop.campaigns == 5 and drop.launches == 8 and drop.median < drop.bound < drop.history_median
               for drop in regression.drops)
    assert check.checked == len(SIZES) and check.unchecked == 0 and "None" not in check.summary()
    text = regression.describe()
    assert "512 KiB–4 MiB" in text and f"campaign {current} (nightly" in text
    as_dict = regression.to_dict()
    assert as_dict["ranges"][0]["sizes"][0] == LARGE and as_dict["campaign"]["id"] == current
    assert as_dict["benchmark"] == "bw" and len(as_dict["history"]) == 5


def test_a_campaign_within_its_history_noise_flags_nothing(engine):
    current = history_then(engine, lambda size: 0.985)
    check = find_regressions(engine, current)
    assert check.regressions == [] and check.summary().startswith("None against campaigns")


def test_a_noisy_history_absorbs_a_drop_beyond_the_floor(engine):
    """15% below the median is beyond the 10% floor, but campaigns of this case wander by as much."""
    current = history_then(engine, lambda size: 0.85, drift=0.15)
    assert find_regressions(engine, current).regressions == []


def test_a_faster_campaign_is_no_regression(engine):
    current = history_then(engine, lambda size: 1.3)
    assert find_regressions(engine, current).regressions == []


def test_only_the_last_campaigns_of_the_same_name_are_history(engine):
    record_campaign(engine, "other", stack="debian-mpich", approach="container", benchmark="bw",
                    scale=lambda size: 2.0)  # another name: never history
    current = history_then(engine, slower_from(LARGE, 0.7))
    (regression,) = find_regressions(engine, current, history=3).regressions
    assert [ref.id for ref in regression.history] == [current - 1, current - 2, current - 3]
    assert all(ref.name == "nightly" for ref in regression.history)
    short = find_regressions(engine, current, history=1)  # one earlier campaign has no spread
    assert short.regressions == [] and short.checked == 0 and short.unchecked == len(SIZES)
    assert short.summary().startswith(f"Not enough history: campaign {current} (nightly") and "1 earlier" in short.summary()


def _row(campaign: int, figures_per_launch: list[dict[int, float]], metric="latency") -> Row:
    key = RowKey(f"campaign {campaign}", "debian-mpich", "container", "default", metric, metric, 2, 1, "H-H")
    row = Row(key, "image", "mpich", launches=len(figures_per_launch))
    for launch in figures_per_launch:
        for size, value in launch.items():
            row.figures.setdefault(size, []).append(value)
    return row


def _campaign(campaign: int, factor: float, *, jitter: float = 0.01) -> CampaignRows:
    launches = [{size: latency_curve(size) * factor * (1 + jitter * ((i % 3) - 1)) for size in (1, 2, 4, 8)}
                for i in range(6)]
    row = _row(campaign, launches)
    return CampaignRows(CampaignRef(campaign, "nightly"), {row.key: row})


def test_the_core_works_on_rows_and_orients_times():
    """Latencies: higher is worse. A 1.5x longer latency is a drop; the same figures shorter are not."""
    history = [_campaign(campaign, factor) for campaign, factor in ((5, 1.0), (4, 1.02), (3, 0.98), (2, 1.01))]
    (regression,) = regressions_in(_campaign(6, 1.5), history).regressions
    assert [list(run.sizes) for run in regression.ranges] == [[1, 2, 4, 8]]
    assert regression.worst.ratio == pytest.approx(1 / 1.5, rel=0.02)
    assert regressions_in(_campaign(6, 0.7), history).regressions == []


def test_an_unrelated_case_has_no_history():
    history = [_campaign(campaign, 1.0) for campaign in (5, 4, 3, 2)]
    other = _row(6, [{1: 9.0}] * 6, metric="bandwidth")
    check = regressions_in(CampaignRows(CampaignRef(6, "nightly"), {other.key: other}), history)
    assert check.regressions == [] and (check.checked, check.unchecked) == (0, 1)
    assert "fewer than 2 of the 4 earlier campaigns" in check.summary()


def test_the_campaign_report_lists_its_regressions(engine, tmp_path):
    import json

    from mpistack.cli.report import campaign_report
    from mpistack.report.write import write_report

    current = history_then(engine, slower_from(LARGE, 0.7))
    report = campaign_report(engine, current, "nightly")
    paths = {path.suffix: path for path in write_report(report, tmp_path / "out", ["md", "json", "html"])}
    markdown = paths[".md"].read_text()
    assert "## Regressions" in markdown and "512 KiB–4 MiB" in markdown and f"campaign {current} (nightly" in markdown
    (listed,) = json.loads(paths[".json"].read_text())["regressions"]
    assert listed["ranges"][0]["sizes"][0] == LARGE and listed["campaign"]["id"] == current
    assert "512 KiB–4 MiB" in paths[".html"].read_text()


def test_identical_history_campaigns_do_not_make_every_wiggle_a_regression():
    """Two earlier campaigns with the very same median have no spread: the floor stands in for it, so a 5% wiggle
    passes and only a loss well beyond the practical floor (10%) is one; the bound widens as history shortens."""
    history = [2.0, 2.0]
    assert size_drop(64, [2.1] * 6, history, higher_is_better=False) is None
    drop = size_drop(64, [4.0] * 6, history, higher_is_better=False)
    assert drop is not None and drop.ratio == pytest.approx(0.5) and drop.bound > 2.0 / 0.9
    long_history = [2.0] * 20
    assert size_drop(64, [2.6] * 6, history, higher_is_better=False) is None
    assert size_drop(64, [2.6] * 6, long_history, higher_is_better=False) is not None  # 23% slower
    # the bound of an endless steady history sits at the floor: 9% slower passes, 11% is a drop
    endless = [1.0] * 1000
    assert size_drop(64, [1.0 / 0.91] * 6, endless, higher_is_better=False) is None
    assert size_drop(64, [1.0 / 0.89] * 6, endless, higher_is_better=False).bound == pytest.approx(1 / 0.9, rel=0.01)
    assert size_drop(64, [1.0 / 0.89] * 6, endless, higher_is_better=False,
                     settings=Settings(floor=PracticalFloor(relative=0.2))) is None  # the floor is the campaign's


def test_a_wandering_history_widens_the_interval():
    """Campaign medians that wander by 20% make a 25% loss a plausible next campaign; a steady history does not."""
    assert size_drop(None, [750.0] * 8, [1000.0, 1200.0, 830.0, 1100.0, 900.0], higher_is_better=True) is None
    drop = size_drop(None, [750.0] * 8, [1000.0, 1010.0, 990.0, 1005.0, 995.0], higher_is_better=True)
    assert drop is not None and drop.ratio == pytest.approx(0.75, rel=0.01) and drop.campaigns == 5


def test_a_report_without_history_says_so(engine, tmp_path):
    import json

    from mpistack.cli.report import campaign_report
    from mpistack.report.write import write_report

    first = record_campaign(engine, "nightly", stack="debian-mpich", approach="container", benchmark="bw")
    paths = {path.suffix: path for path in write_report(campaign_report(engine, first, "nightly"), tmp_path / "out",
                                                         ["md", "json", "html"])}
    for suffix in (".md", ".html"):
        assert f"Not enough history: campaign {first} (nightly" in paths[suffix].read_text()
    assert json.loads(paths[".json"].read_text())["regression_summary"].startswith("Not enough history")
