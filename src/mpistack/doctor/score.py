"""The doctor scored on faults injected on purpose (docs/doctor.md, "The fault matrix"; examples/faults.toml).

Each variant of a fault campaign declares the cause it injects (`expect`: the doctor's finding ids that name it,
or "none" for a control); the plain cases (variant `default`) are untouched controls. Per configuration (the
doctor's cell: stack, approach, variant), the non-ok findings the doctor gave on its stored runs count once
each, by id; a configuration every case of which was refused before it ran is judged by the doctor's plan check
instead, as `mpistack doctor --stack S --approach A` would judge it.

    precision = right findings / all non-ok findings    (a finding is right when it names the injected cause)
    recall    = injected causes found / injected causes (a cause is found when one of its ids fired)

A control with a problem finding is a false positive; its warnings count against precision only.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..spec.campaign import DEFAULT_VARIANT, NO_CAUSE
from ..spec.status import RunStatus
from .model import VERDICTS, Finding

#: the targets `mpistack doctor --score` holds the doctor to; below either it exits 1
MIN_RECALL = 0.90
MIN_PRECISION = 0.95


def finding_ids(finding: Finding) -> tuple[str, ...]:
    """The ids a finding answers to, the one it is counted by first: the cause it blames where two rules can
    blame it ("tcp-intra"), else a known message's (the signature bank's, which the rule run-signatures gives as
    the title), else its rule's; then the rule's and the signature's."""
    signature = finding.evidence.get("signature")
    own = finding.cause or (finding.title if finding.rule == "run-signatures" else signature or finding.rule)
    return tuple(dict.fromkeys([own, finding.rule, *([signature] if signature else [])]))


def expected_ids(expect) -> tuple[str, ...]:
    """A variant's `expect` as ids: () for a control (`none`, or no variant: the plain cases)."""
    ids = [expect] if isinstance(expect, str) else list(expect or [])
    return tuple(item for item in ids if item != NO_CAUSE)


@dataclass(frozen=True)
class Configuration:
    """One configuration of a fault campaign, what it was expected to show and what the doctor said."""

    cell: tuple[str, str, str, str]  # (scope, stack, approach, variant)
    expected: tuple[str, ...]  # ids naming the injected cause; () for a control
    found: dict[str, str] = field(default_factory=dict)  # id of each non-ok finding -> its worst verdict
    #: ids the found ones also answer to (a signature's rule), so a finding is right by any of them
    aliases: dict[str, tuple[str, ...]] = field(default_factory=dict)
    refused: bool = False  # every case refused before it ran: judged by the plan check

    @property
    def control(self) -> bool:
        return not self.expected

    def is_right(self, finding_id: str) -> bool:
        return bool(set(self.aliases.get(finding_id, (finding_id,))) & set(self.expected))

    @property
    def right(self) -> list[str]:
        return [item for item in self.found if self.is_right(item)]

    @property
    def detected(self) -> bool:
        return bool(self.right)

    @property
    def outcome(self) -> str:
        """found / missed for an injected cause; clean / warned / false positive for a control."""
        if not self.control:
            return "found" if self.detected else "missed"
        if "problem" in self.found.values():
            return "false positive"
        return "warned" if self.found else "clean"


@dataclass(frozen=True)
class Score:
    configurations: list[Configuration]

    @property
    def findings(self) -> int:
        return sum(len(c.found) for c in self.configurations)

    @property
    def right(self) -> int:
        return sum(len(c.right) for c in self.configurations)

    @property
    def injected(self) -> int:
        return sum(not c.control for c in self.configurations)

    @property
    def detected(self) -> int:
        return sum(c.detected for c in self.configurations if not c.control)

    @property
    def controls(self) -> int:
        return sum(c.control for c in self.configurations)

    @property
    def false_positives(self) -> int:
        return sum(c.outcome == "false positive" for c in self.configurations)

    @property
    def precision(self) -> float:
        """Right findings over all non-ok findings; 1 when the doctor said nothing (nothing it said was wrong)."""
        return self.right / self.findings if self.findings else 1.0

    @property
    def recall(self) -> float:
        """Injected causes found over injected causes; 0 without any (a fault campaign injects something)."""
        return self.detected / self.injected if self.injected else 0.0

    @property
    def passed(self) -> bool:
        return self.recall >= MIN_RECALL and self.precision >= MIN_PRECISION


def configuration(cell, expected: tuple[str, ...], findings: list[Finding], refused: bool = False) -> Configuration:
    """A configuration's distinct non-ok findings, each once by its id with its worst verdict."""
    found: dict[str, str] = {}
    aliases: dict[str, tuple[str, ...]] = {}
    for finding in findings:
        if finding.verdict == "ok":
            continue
        ids = finding_ids(finding)
        worst = max(found.get(ids[0], finding.verdict), finding.verdict, key=VERDICTS.index)
        found[ids[0]] = worst
        aliases[ids[0]] = tuple(dict.fromkeys([*aliases.get(ids[0], ()), *ids]))
    return Configuration(cell, expected, found, aliases, refused)


def score_campaign(engine, campaign_id: int) -> Score:
    """The doctor's findings on a stored campaign against the causes its variants declare (the campaign spec
    recorded when it started)."""
    from ..store.campaigns import campaign_spec
    from ..store.query import Where, query_runs
    from . import examine_runs
    from .rules.runs import run_cell

    spec = campaign_spec(engine, campaign_id) or {}
    variants = {variant["name"]: variant for variant in spec.get("variant") or []}
    if all(variant.get("expect") is None for variant in variants.values()):
        return Score([])  # not a fault campaign: nothing was injected, nothing to score
    filters = [Where("campaign", "=", campaign_id)]
    findings, _ = examine_runs(engine, filters)
    statuses: dict[tuple, set[str]] = {}
    refused_runs: dict[tuple, dict] = {}
    for run in query_runs(engine, filters):
        cell = run_cell(run)
        statuses.setdefault(cell, set()).add(run["status"])
        refused_runs.setdefault(cell, run)
    configurations = []
    for cell, seen in statuses.items():
        variant = variants.get(cell[3], {})
        if cell[3] != DEFAULT_VARIANT and variant.get("expect") is None:
            continue  # a variant that declares no cause is not scored
        mine = [finding for finding in findings if finding.cell == cell]
        refused = seen == {RunStatus.SKIPPED.value}
        if refused:
            mine += plan_findings(spec, refused_runs[cell], variant.get("env") or {})
        configurations.append(configuration(cell, expected_ids(variant.get("expect")), mine, refused))
    return Score(configurations)


def plan_findings(spec: dict, run: dict, env: dict[str, str]) -> list[Finding]:
    """The plan check of a refused configuration, as `mpistack doctor --stack --approach` makes it; nothing for
    a stack the campaign does not describe (the host's MPI is never refused)."""
    from ..approaches.base import HostFacts
    from ..spec.campaign import StackEntry
    from ..spec.case import resolve_stack
    from .model import diagnose
    from .rules.plan import PlanSubject

    entry = next((StackEntry.model_validate(stack) for stack in spec.get("stack") or []
                  if stack.get("name") == run["stack"]), None)
    if entry is None or entry.host:
        return []
    subject = PlanSubject(resolve_stack(entry).spec, run["approach"], ranks=run.get("ranks") or 2, env=dict(env))
    subject.host_library = HostFacts.probe().mpi_library(subject.bound_mpi)
    return diagnose("plan", subject)


OUTCOME_STYLE = {"found": "green", "clean": "green", "missed": "bold red", "false positive": "bold red",
                 "warned": "yellow"}


def score_table(score: Score):
    """Per configuration: the cause expected, the findings that fired (right ones marked), the outcome; it reads
    at 80 columns (long cells wrap)."""
    from rich.table import Table
    from rich.text import Text

    table = Table(box=None, padding=(0, 1), show_edge=False, header_style="bold")
    table.add_column("configuration", ratio=5, overflow="fold")
    table.add_column("expected", ratio=4, overflow="fold")
    table.add_column("found (+ right)", ratio=4, overflow="fold")
    table.add_column("outcome", no_wrap=True)
    for item in sorted(score.configurations, key=lambda c: (c.control, c.cell[1:])):
        _, stack, approach, variant = item.cell
        where = f"{stack} {approach}" + ("" if variant == DEFAULT_VARIANT else f"\n+{variant}")
        found = Text()
        for index, finding_id in enumerate(item.found):
            right = item.is_right(finding_id)
            found.append(("" if index == 0 else " ") + ("+" if right else "") + finding_id,
                         style="green" if right else ("bold red" if item.found[finding_id] == "problem" else "yellow"))
        expected = item.expected[0] if item.expected else NO_CAUSE
        if len(item.expected) > 1:  # the cause's own id first; the campaign file lists the others
            expected += f" or {len(item.expected) - 1} more"
        table.add_row(where + (" (refused)" if item.refused else ""), expected,
                      found if item.found else Text("-", style="dim"),
                      Text(item.outcome, style=OUTCOME_STYLE[item.outcome]))
    return table


def summary(score: Score) -> str:
    """The figures a CI reads: precision, recall, controls; whether the targets are met."""
    verdict = "passed" if score.passed else (f"FAILED (targets: recall >= {MIN_RECALL:.0%}, precision >= "
                                              f"{MIN_PRECISION:.0%})")
    return (f"precision {score.right}/{score.findings} = {score.precision:.0%}, recall {score.detected}/"
            f"{score.injected} = {score.recall:.0%}, controls {score.controls - score.false_positives}/"
            f"{score.controls} without a problem: {verdict}")
