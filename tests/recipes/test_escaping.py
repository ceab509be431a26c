"""The Jinja2 filters that write values into generated files (recipes.escaping)."""

from __future__ import annotations

import json
import subprocess

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpistack.recipes.escaping import UnsafeValue, comment, def_line, dockerfile_json, dockerfile_run, env_name, \
    shell, word
from mpistack.spec.stack import CONTROL_RE

printable = st.text(st.characters(blacklist_categories=("Cs",)).filter(lambda c: not CONTROL_RE.match(c)),
                    max_size=40)


@settings(max_examples=25, deadline=None)
@given(st.lists(printable, min_size=1, max_size=5))
def test_shell_words_reach_bash_unchanged(values):
    script = "printf '%s\\0' " + " ".join(shell(v) for v in values)
    done = subprocess.run(["bash", "-c", script], capture_output=True, check=True)
    assert done.stdout.decode().split("\0")[:-1] == values


@given(st.text(max_size=60))
def test_dockerfile_json_stays_on_its_line_and_round_trips(text):
    out = dockerfile_json(text)
    assert not CONTROL_RE.search(out)
    assert "$" not in out.replace("\\$", "")  # no variable substitution in Docker's double quotes
    assert json.loads(out.replace("\\$", "$")) == text


@given(st.text(max_size=60))
def test_a_comment_is_one_line(text):
    assert len(comment(text).splitlines()) <= 1


@pytest.mark.parametrize("value", ["a\nb", "a\rb", "nul\x00", "a\u2028b", "a\x85b"])
def test_control_characters_are_refused(value):
    for check in (shell, dockerfile_run, def_line):
        with pytest.raises(UnsafeValue, match="control character"):
            check(value)


@pytest.mark.parametrize("value", ["%post", "  %setup", "Bootstrap: docker", "bootstrap:x"])
def test_a_definition_line_cannot_start_a_section_or_a_stage(value):
    with pytest.raises(UnsafeValue, match="section or a stage"):
        def_line(value)


@pytest.mark.parametrize("value", ["a b", "a'b", 'a"b', "a$b", "a`b", "a\\b", "", "a\nb"])
def test_word_refuses_blanks_quotes_and_shell_syntax(value):
    with pytest.raises(UnsafeValue):
        word(value)


@pytest.mark.parametrize("value", ["1A", "A-B", "A B", "A\nB", ""])
def test_env_name(value):
    with pytest.raises(UnsafeValue):
        env_name(value)
    assert env_name("_A1") == "_A1"


def test_a_run_line_cannot_hold_a_here_document():
    with pytest.raises(UnsafeValue, match="here-document"):
        dockerfile_run("./configure '<<EOF'")
