"""What the doctor says: findings, each with its verdict, meaning, fix, the rule and its public source, and the
evidence that triggered it; and how rules are registered (``DOCTOR_RULES``, one small function each)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from ..registry import DOCTOR_RULES

VERDICTS = ("ok", "warning", "problem")
#: what a rule looks at; each group's rules take one kind of subject ("file": output files' figures beside a
#: published reference, ``doctor FILE --like``)
GROUPS = ("host", "image", "runs", "performance", "plan", "file")
#: the JSON document's schema name, bumped when a key changes meaning
JSON_SCHEMA = "mpistack-doctor/1"


@dataclass(frozen=True)
class Finding:
    rule: str
    verdict: str  # ok | warning | problem
    title: str
    meaning: str
    fix: str
    source: str
    evidence: dict[str, Any] = field(default_factory=dict)
    subject: str = ""  # what was looked at: "host", "image X", "run 12", "pip-mpich container (bw H-H 2x2)"
    #: the compatibility-matrix cell a finding belongs to, (scope, stack, approach, variant), when it has one
    cell: tuple[str, str, str, str] | None = None
    #: what a finding blames, when two rules can say it of one configuration ("tcp-intra": ranks of one node on
    #: TCP): the doctor says each cause once per configuration, by the rule with figures (``said_once``)
    cause: str = ""
    #: the message sizes a finding is about, (smallest, largest; None: every larger size), where it is about some:
    #: the report puts first under a slower cell the cause whose sizes meet those where the cell is slower
    sizes: tuple[int, int | None] | None = None

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(f"finding {self.rule}: verdict {self.verdict!r}, expected one of {', '.join(VERDICTS)}")

    def to_dict(self) -> dict:
        return {"rule": self.rule, "verdict": self.verdict, "title": self.title, "meaning": self.meaning,
                "fix": self.fix, "source": self.source, "subject": self.subject,
                "evidence": {key: _plain(value) for key, value in self.evidence.items()},
                **({"cell": dict(zip(("scope", "stack", "approach", "variant"), self.cell))} if self.cell else {})}


def _plain(value: Any) -> Any:
    """Evidence as JSON: numbers, text, lists of them."""
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, (list, tuple, set)):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        return {str(key): _plain(item) for key, item in value.items()}
    return str(value)


@dataclass(frozen=True)
class Rule:
    """A registered rule: its id, group, the public source it rests on, and a one-line description."""

    id: str
    group: str
    source: str
    checks: str
    function: Callable[[Any], Iterable[Finding]]

    def finding(self, verdict: str, title: str, meaning: str, fix: str = "", subject: str = "",
                cell: tuple[str, str, str, str] | None = None, source: str | None = None, cause: str = "",
                sizes: tuple[int, int | None] | None = None, **evidence: Any) -> Finding:
        """A finding of this rule; ``source``: a more precise public source than the rule's (a signature's);
        ``sizes``: the message sizes it is about (``Finding.sizes``)."""
        return Finding(self.id, verdict, title, meaning, fix, source or self.source, evidence, subject, cell, cause,
                       sizes)


def rule(id: str, group: str | tuple[str, ...], source: str, checks: str):
    """Register ``function(rule, subject) -> findings`` as rule ``id`` of ``group`` (or several groups that share
    a subject: host and image)."""
    groups = (group,) if isinstance(group, str) else group
    for name in groups:
        if name not in GROUPS:
            raise ValueError(f"rule {id}: group {name!r}, expected one of {', '.join(GROUPS)}")

    def register(function: Callable[[Rule, Any], Iterable[Finding]]):
        entry = Rule(id, groups[0], source, checks, lambda subject: list(function(entry, subject) or []))
        DOCTOR_RULES.register(id, groups=groups, source=source, checks=checks)(entry)
        return function
    return register


def rules_of(group: str) -> list[Rule]:
    return [entry.plugin for entry in DOCTOR_RULES if group in entry.groups]


def diagnose(group: str, subject: Any) -> list[Finding]:
    """Every finding of every rule of ``group`` on ``subject``, in registration order."""
    if group not in GROUPS:
        raise ValueError(f"doctor group {group!r}: expected one of {', '.join(GROUPS)}")
    found: list[Finding] = []
    for entry in rules_of(group):
        found.extend(entry.function(subject))
    return found


#: how a rule's findings rank against another's of the same cause and verdict: figures over a recorded fact
_SPECIFIC = {"performance": 0, "runs": 1}


def said_once(findings: list[Finding]) -> list[Finding]:
    """The findings with each cause said once per configuration: where a rule with figures (performance) blames
    what a runs rule blames in the same cell, the runs rule's findings go; then, per cell, the most severe and
    most specific first (the order the command line and the report show them in)."""
    groups = {entry.id: entry.group for entry in (item.plugin for item in DOCTOR_RULES)}
    measured = {(f.cell, f.cause) for f in findings if f.cause and groups.get(f.rule) == "performance"}
    kept = [f for f in findings if not (f.cause and groups.get(f.rule) == "runs" and (f.cell, f.cause) in measured)]
    # an explanation two rules reach alike on a cell (latency's and bandwidth's "both sides on TCP") is said once
    explained: set[tuple] = set()
    once = []
    for f in kept:
        if f.verdict == "ok" and f.cause:
            if (f.cell, f.cause, f.title) in explained:
                continue
            explained.add((f.cell, f.cause, f.title))
        once.append(f)
    kept = once
    cells = list(dict.fromkeys(f.cell for f in kept))
    return sorted(kept, key=lambda f: (cells.index(f.cell), -VERDICTS.index(f.verdict),
                                       _SPECIFIC.get(groups.get(f.rule, ""), 2)))


def exit_status(findings: Iterable[Finding]) -> int:
    """0 when nothing is a problem, 1 when something is (2, bad usage, is the command line's)."""
    return 1 if any(f.verdict == "problem" for f in findings) else 0


def counts(findings: Iterable[Finding]) -> dict[str, int]:
    """How many findings of each verdict."""
    verdicts = [f.verdict for f in findings]
    return {verdict: verdicts.count(verdict) for verdict in VERDICTS}


def to_json(findings: list[Finding], looked_at: list[str], causes: list[Finding] | None = None) -> dict:
    """The findings as JSON. ``causes``: where the text counts each cause once per configuration (stored runs),
    those findings; ``counts`` then counts them as the text does, and ``finding_counts`` every finding (one per
    launch)."""
    return {"schema": JSON_SCHEMA, "looked_at": looked_at,
            "counts": counts(findings if causes is None else causes),
            **({"counted": "one per cause and configuration", "finding_counts": counts(findings)}
               if causes is not None else {}),
            "status": exit_status(findings), "findings": [f.to_dict() for f in findings]}
