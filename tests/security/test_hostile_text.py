"""Text a benchmark prints or a tag holds reaches no terminal and no report raw: terminal escape sequences
are written out (`\\x1b`) by `run`, `show`, `runs` and `results`, and raw HTML, links and images in tags are
escaped in the Markdown report. Real campaigns, a real store, the real command line."""

from __future__ import annotations

import re
import shutil
import sqlite3

import pytest

from tests.helpers import HOST_MPICH_ONE_RANK, OSU_LATENCY, campaign_file, mpistack

# a window title, a screen clear and a right-to-left override: what a hostile benchmark or tag could send
HOSTILE = "\x1b]0;pwned\x07\x1b[2J\u202e"


def _raw_controls(text: str) -> list[str]:
    return [character for character in ("\x1b", "\x07", "\u202e") if character in text]


@pytest.mark.skipif(shutil.which("mpiexec.mpich") is None, reason="Debian's mpich not installed")
def test_escape_sequences_from_a_benchmark_or_a_tag_reach_no_terminal_raw(tmp_path):
    script = tmp_path / "hostile.sh"
    script.write_text(f"#!/bin/sh\nprintf '{HOSTILE.encode('unicode_escape').decode()}error: broken\\n' >&2\nexit 1\n")
    script.chmod(0o755)
    path = campaign_file(tmp_path, HOST_MPICH_ONE_RANK + f'[[benchmark]]\nname = "hostile"\nprogram = "{script}"\n')
    db = tmp_path / "r.db"
    ran = mpistack("run", path, "--db", db, home=tmp_path, check=None)  # no case ok: a non-zero status
    assert "error: broken" in ran.stdout and "\\x1b" in ran.stdout
    good = tmp_path / "good.txt"
    good.write_text(OSU_LATENCY)
    mpistack("ingest", good, "--db", db, "-t", "stack=s", "-t", "approach=native", home=tmp_path)
    with sqlite3.connect(db) as connection:  # a tag as an older or a forged store may hold it
        connection.execute("UPDATE run_tags SET value = ? WHERE key = 'stack' OR key = 'approach'", (HOSTILE,))
        connection.execute("INSERT INTO run_tags (run_id, key, value) SELECT id, ?, 'x' FROM runs", (HOSTILE,))
        connection.execute("UPDATE runs SET stack = ?", (HOSTILE,))
    outputs = {"run": ran.stdout + ran.stderr}
    for verb in (["runs"], ["runs", "-f", "csv"], ["results"], ["results", "-f", "csv"], ["results", "--wide"],
                 ["show", "1"], ["show", "2"]):
        result = mpistack(*verb, "--db", db, home=tmp_path)
        outputs[" ".join(verb)] = result.stdout + result.stderr
    for verb, output in outputs.items():
        assert _raw_controls(output) == [], f"{verb}: {output!r}"
    assert "\\x1b]0;pwned" in outputs["show 1"] and "\\u202e" in outputs["runs"]


def test_raw_html_links_and_images_in_tags_are_escaped_in_the_markdown_report(tmp_path):
    db = tmp_path / "r.db"
    good = tmp_path / "good.txt"
    good.write_text(OSU_LATENCY)
    hostile = "<img src=x onerror=alert(1)>[click](javascript:alert(2))"
    mpistack("ingest", good, "--db", db, "-t", f"stack={hostile}", "-t", "approach=native", "-t", "ranks=2",
             "-t", "nodes=1", "-t", f"variant={hostile}", home=tmp_path)
    mpistack("report", "--db", db, "--out", tmp_path / "out", "--format", "md", "--where", "ranks=2",
             home=tmp_path, check=None)
    text = (tmp_path / "out" / "report.md").read_text()
    assert "&lt;img src=x onerror=alert(1)&gt;" in text
    assert "<img" not in text
    assert not re.search(r"(?<!\\)\]\(javascript", text)  # `\](` is text, `](` a link
