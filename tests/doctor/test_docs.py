"""docs/doctor.md lists every registered rule with the checks and the source it is registered with, so the
documentation cannot fall behind the registry."""

from __future__ import annotations

from pathlib import Path

from mpistack.doctor import GROUPS, rules_of

DOCS = Path(__file__).resolve().parents[2] / "docs" / "doctor.md"


def test_the_docs_name_every_rule_with_its_checks_and_source_under_its_group():
    text = DOCS.read_text()
    sections = {group: text.split(f"\n### {group}\n", 1)[1].split("\n### ", 1)[0].split("\n## ", 1)[0]
                for group in GROUPS}
    missing = []
    for group in GROUPS:
        for rule in rules_of(group):
            home = rule.group  # a rule shared by host and image is listed once, under its first group
            if f"| `{rule.id}` | {rule.checks} | {rule.source} |" not in sections[home]:
                missing.append(f"{home}/{rule.id}")
    assert not missing, f"docs/doctor.md lacks (or has stale) rows for: {', '.join(missing)}"


def test_the_docs_show_each_mode_and_a_real_example():
    text = DOCS.read_text()
    for mode in ("mpistack doctor  ", "--image ", "--run ", "--campaign ", "--stack ", "--json"):
        assert mode in text, mode
    assert "COLUMNS=80 mpistack doctor --campaign tcp-e2e --db ex.db" in text
    assert "TCP-class latency on one node" in text and "transport (native): intra-node tcp (UCX tcp/lo,tcp/eth0)" in text
    assert "\n## The fault matrix" in text  # its score table is appended there
