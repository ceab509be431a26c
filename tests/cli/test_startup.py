"""What `mpistack --help` imports (a behaviour, not a timing: the figures are in benchmarks/startup.py), the verb
table it lists from, and flags shown as flags."""

from __future__ import annotations

import inspect
import re
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from mpistack.cli import VERBS, app, load_verb

HEAVY = ("sqlalchemy", "scipy", "pydantic", "numpy", "matplotlib", "alembic", "jinja2")


def imported_modules(*args: str) -> set[str]:
    result = subprocess.run([sys.executable, "-X", "importtime", "-m", "mpistack", *args], capture_output=True,
                            text=True, timeout=120, env={"COLUMNS": "100", "PATH": "/usr/bin:/bin"})
    assert result.returncode == 0, result.stderr[-2000:]
    return {line.split("|")[-1].strip() for line in result.stderr.splitlines() if line.startswith("import time:")}


def test_help_imports_no_store_no_models_no_science_and_no_verb_module():
    modules = imported_modules("--help")
    assert "typer" in modules  # (the parsing of -X importtime works)
    heavy = sorted(name for name in modules if name.split(".")[0] in HEAVY)
    assert not heavy, heavy
    verb_modules = sorted(name for name in modules if name.startswith("mpistack.cli.") and name != "mpistack.cli.common")
    assert not verb_modules, verb_modules


def test_a_verb_imports_its_own_module_only():
    modules = imported_modules("stack", "--help")
    assert "mpistack.cli.stack" in modules
    assert not {"mpistack.cli.results", "mpistack.cli.compare", "mpistack.cli.report"} & modules
    assert not [name for name in modules if name.split(".")[0] in ("sqlalchemy", "scipy")]


@pytest.mark.parametrize("verb", [["results", "--limit", "3"], ["runs"], ["campaigns"], ["show", "1"],
                                  ["results", "-w", "system=alps-gh200", "-w", "size>=1024"]])
def test_the_listing_verbs_read_a_sqlite_store_without_sqlalchemy(tmp_path, verb):
    db = str(tmp_path / "store.db")
    loaded = subprocess.run([sys.executable, "-m", "mpistack", "--db", db, "ingest", "--reference", "alps-gh200-mpich-ce"],
                            capture_output=True, text=True, timeout=120)
    assert loaded.returncode == 0, loaded.stderr
    modules = imported_modules("--db", db, *verb)
    assert "mpistack.store.reading" in modules
    assert not [name for name in modules if name.split(".")[0] in ("sqlalchemy", "alembic")]


@pytest.mark.parametrize("verb", VERBS, ids=lambda verb: verb.name)
def test_each_listed_summary_is_the_first_paragraph_of_the_verbs_own_help(verb):
    command = load_verb(verb, "rich")
    first_paragraph = " ".join(inspect.cleandoc(command.help).split("\n\n")[0].split())
    assert verb.summary == first_paragraph


def test_every_verb_is_listed_and_runs_its_own_help():
    runner = CliRunner()
    listing = runner.invoke(app, ["--help"], env={"COLUMNS": "120"})
    assert listing.exit_code == 0
    for verb in VERBS:
        assert re.search(rf"│ {verb.name}\s", listing.stdout), verb.name
        own = runner.invoke(app, [verb.name, "--help"], env={"COLUMNS": "120"})
        assert own.exit_code == 0 and f"Usage: mpistack {verb.name}" in own.stdout, verb.name
    typo = runner.invoke(app, ["stakc"])
    assert typo.exit_code == 2 and "Did you mean 'stack'" in typo.output


@pytest.mark.parametrize("args", [["--help"], ["results", "--help"], ["stack", "render", "--help"],
                                  ["db", "upgrade", "--help"]])
def test_boolean_flags_show_no_value_placeholder(args):
    result = CliRunner().invoke(app, args, env={"COLUMNS": "120"})
    assert result.exit_code == 0
    assert "<bool>" not in result.stdout
    assert re.search(r"--help\s+-h\s+Show this message", result.stdout)


def test_help_paragraphs_are_reflowed_so_no_sentence_breaks_mid_line():
    from mpistack.cli import reflowed

    assert reflowed("First line\n    of a paragraph.\n\n    Second\n    paragraph.") == \
        "First line of a paragraph.\n\nSecond paragraph."
    assert reflowed("Run:\n    Example:\n        mpistack x\n        mpistack y\n    ") == \
        "Run:\nExample:\n    mpistack x\n    mpistack y"  # (an indented block keeps its lines)
    assert reflowed("A list:\n- one\n- two") == "A list:\n- one\n- two"
    result = CliRunner().invoke(app, ["ingest", "--help"], env={"COLUMNS": "200"})
    text = " ".join(line.strip(" │") for line in result.output.splitlines())
    assert "Markdown tables) and written whole or not at all" in " ".join(text.split())
    lines = [line.strip() for line in result.output.splitlines()]
    assert "written" not in lines and "file" not in lines  # no line holds one word of a broken sentence


def test_an_optional_argument_is_bracketed_once():
    result = CliRunner().invoke(app, ["report", "--help"], env={"COLUMNS": "200"})
    assert "[CAMPAIGN]" in result.output and "[[CAMPAIGN]]" not in result.output
