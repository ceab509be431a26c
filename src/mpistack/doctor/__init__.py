"""mpistack doctor: why a stack is slow or fails, from evidence. A registry of rules (``DOCTOR_RULES``), grouped by
what they look at (host, image, runs, performance, plan); each returns findings with a verdict, the meaning, the
fix, its public source and the evidence that triggered it.

    diagnose_runs(engine, filters)   -> findings on stored runs and their results
    examine_runs(engine, filters)    -> the same, and per configuration (matrix cell) the transport its runs recorded
    cell_findings(engine, filters)   -> the findings as plain data per compatibility-matrix cell (for the report)
"""

from __future__ import annotations

import re
from collections import defaultdict

from .model import GROUPS, VERDICTS, Finding, diagnose, exit_status, rules_of, said_once, to_json

__all__ = ["GROUPS", "VERDICTS", "Finding", "cell_findings", "configuration_transports", "diagnose", "diagnose_runs",
           "examine_runs",
           "exit_status", "rules_of", "to_json"]


def diagnose_runs(engine, filters, settings=None, analysed=None) -> list[Finding]:
    """The runs rules on every matching run, then the performance rules on their analysis (``analysed``: its rows
    and answers, where the caller has them)."""
    return examine_runs(engine, filters, settings, analysed)[0]


def examine_runs(engine, filters, settings=None, analysed=None) -> tuple[list[Finding], dict]:
    """`diagnose_runs`'s findings (each cause once per configuration, the most severe and specific first), and
    `configuration_transports` of the same runs (read from the store once)."""
    from ..analysis.answers import Settings
    from .evidence import load

    runs, performance = load(engine, filters, settings or Settings(), analysed)
    rules = rules_of("runs")  # once, not once per run: a campaign has thousands
    found = [finding for run in runs for entry in rules for finding in entry.function(run)]
    return said_once(found + diagnose("performance", performance)), configuration_transports(runs)


def configuration_transports(runs: list[dict]) -> dict[tuple[str, str, str, str], dict[str, dict]]:
    """Per configuration, as ``Finding.cell`` names it, and per confinement its containers ran under (a cell may
    hold two: podman's default and single-copy rights), the transport its runs (``run_diagnostics``) recorded:
    the first run's that recorded one (a probe runs once per configuration), else ``{}``."""
    from .rules.runs import confinement_of, run_cell

    found: dict = {}
    for run in runs:
        mine = found.setdefault(run_cell(run), {})
        confinement = confinement_of(run)
        if not mine.get(confinement):
            mine[confinement] = {key: value for key, value in (run.get("transport") or {}).items() if value}
    return found


def by_cause(findings: list[Finding]) -> dict[tuple, list[Finding]]:
    """The findings grouped by cause (configuration, rule, verdict, title), in order: one line per cause, not
    one per launch."""
    groups: dict[tuple, list[Finding]] = {}
    for finding in findings:
        groups.setdefault((finding.cell, finding.rule, finding.verdict, finding.title), []).append(finding)
    return groups


#: rules whose ok findings still explain a cell: the loss is the stack's, or why a row is faster than native
EXPLAINING_RULES = frozenset({"stack-effect", "faster-than-native"})


def _shown(finding: Finding) -> bool:
    """Whether a finding reaches the report: every one that is not ok, an ok one that explains a cell, a cause of a
    loss the doctor could not judge on a noisy machine (the report says it as such, with its fix), and one it ruled
    out (the report names it among what was checked)."""
    return finding.verdict != "ok" or finding.rule in EXPLAINING_RULES or (
        finding.evidence.get("anomaly") in ("not judged", "refuted") and finding.rule != "faster-than-native")


#: how a finding's subject names its benchmark: a performance rule's "STACK APPROACH (BENCHMARK BUFFERS, ...)", a
#: runs rule's "run N (STACK APPROACH, BENCHMARK)"
_BENCHMARK_IN_SUBJECT = (re.compile(r"\(([\w.-]+) [HDM]-[HDM],"), re.compile(r"^run \d+ \([^,]*, ([\w.-]+)\)$"))


def benchmarks_of(findings: list[Finding]) -> list[str]:
    """The benchmarks a cause was seen in (its findings' subjects), in order: what the report names beside it."""
    names = []
    for finding in findings:
        for pattern in _BENCHMARK_IN_SUBJECT:
            if (found := pattern.search(finding.subject)) and found.group(1) not in names:
                names.append(found.group(1))
                break
    return names


def _sizes_of(group: list[Finding]) -> list | None:
    """The sizes a cause's findings are about, [smallest, largest or None], or None where one of them is about
    every size (a finding without sizes)."""
    spans = [finding.sizes for finding in group]
    if not spans or any(span is None for span in spans):
        return None
    highs = [span[1] for span in spans]
    return [min(span[0] for span in spans), None if None in highs else max(highs)]


def cell_findings(engine, filters, settings=None, analysed=None) -> dict:
    """Findings that are not ``ok``, and the ok findings that explain a cell (``EXPLAINING_RULES``), as plain
    dicts, keyed like the compatibility matrix's cells: ``((scope, stack), (approach, variant))``; the report
    shows them under its (Y) and N cells."""
    cells: dict = defaultdict(list)
    for (cell, rule, verdict, _), group in by_cause(diagnose_runs(engine, filters, settings, analysed)).items():
        finding = group[0]
        if not _shown(finding) or cell is None:
            continue
        scope, stack, approach, variant = cell
        cells[((scope, stack), (approach, variant))].append(
            {"title": finding.title, "verdict": finding.verdict, "rule": finding.rule, "source": finding.source,
             "fix": finding.fix, "meaning": finding.meaning, "benchmarks": benchmarks_of(group),
             "sizes": _sizes_of(group),
             "evidence": finding.to_dict()["evidence"]})
    return dict(cells)
