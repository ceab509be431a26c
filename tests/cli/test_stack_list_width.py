"""`mpistack stack list` on 80- and 120-column terminals, piped with COLUMNS, with --columns and --wide: the
listing verbs' layout, over the shipped catalogue, an own stack and a broken one."""

from __future__ import annotations

import csv
import io
import re
import shutil
import subprocess
import sys

import pytest
from typer.testing import CliRunner, Result

from mpistack.cli import app
from mpistack.cli.stack import STACK_COLUMNS, STACKS_LAYOUT
from tests.spec.test_user_catalogue import MINE

BROKEN = 'name = "broken"\ndescription = "no base, no MPI"\n'


@pytest.fixture
def stacks(tmp_path, monkeypatch):
    """A stacks directory with one own stack and one that does not load; no user configuration."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    directory = tmp_path / "stacks"
    directory.mkdir()
    (directory / "my-mpich.toml").write_text(MINE)
    (directory / "broken.toml").write_text(BROKEN)
    return directory


def listed(stacks, *args, columns: str | None = None) -> Result:
    return CliRunner().invoke(app, ["stack", "--stacks", str(stacks), "list", *args], env={"COLUMNS": columns})


def displayed(stacks) -> list[dict]:
    """The rows as the table shows them (CSV has the same cells)."""
    return [{key: value for key, value in row.items() if value != ""}
            for row in csv.DictReader(io.StringIO(listed(stacks, "-f", "csv").stdout))]


def plain(text: str) -> str:
    return re.sub(r"\x1b\[[0-9;]*m", "", text).replace("\r", "")


def assert_fits_and_values_whole(text: str, rows: list[dict], width: int) -> list[str]:
    """Every line within `width`; each stack's name starts a line; every value of a column shown is there whole
    (names and versions never cut), the others said once or named as not shown. Returns the header's words."""
    lines = text.splitlines()
    assert all(len(line) <= width for line in lines), max(lines, key=len)
    header = next(line for line in lines if line.split()[:1] == ["name"]).split()
    starts = {line.split()[0] for line in lines if line.split()}
    notes = " ".join(text.split())
    for row in rows:
        assert row["name"] in starts, row["name"]
        for column in STACK_COLUMNS:
            value = row.get(column)
            if value in (None, "") or column in STACKS_LAYOUT.fold:
                continue
            assert value in text or f"{column} {value}" in notes or re.search(rf"not shown:.*\b{column}\b", notes), \
                (column, value)
    return header


@pytest.mark.skipif(not shutil.which("script"), reason="needs script(1) for a pseudo-terminal")
@pytest.mark.parametrize("width", [80, 120])
def test_on_a_terminal_every_row_fits_and_no_name_or_version_is_cut(stacks, tmp_path, width):
    rows = displayed(stacks)
    command = f"{sys.executable} -m mpistack stack --stacks {stacks} list"
    result = subprocess.run(["script", "-qec", command, "/dev/null"], capture_output=True, text=True, timeout=120,
                            env={"COLUMNS": str(width), "LINES": "50", "PATH": "/usr/bin:/bin", "TERM": "xterm",
                                 "XDG_CONFIG_HOME": str(tmp_path / "config")})
    assert result.returncode == 0, result.stdout + result.stderr
    text = plain(result.stdout)
    header = assert_fits_and_values_whole(text, rows, width)
    assert header[:3] == ["name", "built", "problem"] and header[-1] == "from"
    assert "required" in text and "missing" in text  # the broken stack's problem, folded
    assert "own" in text and re.search(r"not shown: .*\bimage tag\b.*\(--wide or --columns\)", " ".join(text.split()))
    if width == 120:
        assert {"transport", "gpu"} <= set(header)


@pytest.mark.parametrize("width", [80, 120])
def test_piped_with_columns_the_rows_fit_that_width(stacks, width):
    rows = displayed(stacks)
    result = listed(stacks, columns=str(width))
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith(f"# {len(rows)} stacks, ") and "\x1b" not in result.stdout
    header = assert_fits_and_values_whole(result.stdout, rows, width)
    assert header[:3] == ["name", "built", "mpi"]


def test_piped_without_columns_every_column_is_listed(stacks):
    result = listed(stacks)
    lines = result.stdout.splitlines()
    assert lines[1].split() == ["name", "image", "tag", "built", "problem", "mpi", "transport", "gpu", "mode", "from"]
    assert "mpich4.3.1-ofi1.22-cuda12.8" in result.stdout
    assert "broken.toml: base: required field missing; " in result.stdout  # the whole problem, on its row's line


def test_columns_and_wide_as_in_the_other_listings(stacks):
    named = listed(stacks, "--columns", "mpi,name", columns="80")
    assert named.stdout.splitlines()[1].split() == ["mpi", "name"]
    wide = listed(stacks, "--wide", columns="80")
    assert "image" in wide.stdout.splitlines()[1] and "not shown" not in wide.stdout
    unknown = listed(stacks, "--columns", "name,tag")
    assert unknown.exit_code == 2 and "no such column 'tag'" in unknown.output and "image tag" in unknown.output
