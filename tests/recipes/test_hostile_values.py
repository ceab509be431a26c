"""Hostile values in every field of a stack file that reaches a generated file: each is either refused with an
error naming the file and the field, or written so that the Containerfile keeps the same instructions and the
Apptainer definition the same sections as without it."""

from __future__ import annotations

import copy
import json
import re
import subprocess

import pytest

from mpistack.recipes import render
from mpistack.spec import StackError, load_stack_text
from mpistack.spec.stack import CONTROL_RE

HOSTILE = {
    "newline-run": "x\nRUN touch /tmp/x",
    "crlf-run": "x\r\nRUN touch /tmp/x",
    "newline-section": "x\n%post\ntouch /tmp/x",
    "newline-stage": "x\nBootstrap: docker",
    "section": "%post",
    "command-substitution": "$(touch /tmp/x)",
    "back-quotes": "`touch /tmp/x`",
    "quotes": "it's \"quoted\"",
    "backslash": "ends in a backslash \\",
    "backslash-newline": "x \\\nRUN touch /tmp/x",
    "nul": "nul\x00byte",
    "line-separator": "x\u2028RUN touch /tmp/x",
    "here-document": "<<EOF",
    "long": "a" * 300,
}

SOURCE = {
    "name": "hostile",
    "description": "a stack for hostile values",
    "origin": "tests",
    "tag": "hostile-1",
    "base": {"image": "docker.io/ubuntu:24.04", "packages": ["python3"]},
    "gpu": {"kind": "cuda", "version": "12.8", "prefix": "/usr/local/cuda", "target": "x86_64-linux"},
    "xpmem": {"version": "2.6.3", "prefix": "/usr"},
    "gdrcopy": {"version": "2.5.1", "prefix": "/usr"},
    "libcxi": {"version": "12.0.1", "prefix": "/usr", "cassini_headers": "12.0.1", "cxi_driver": "12.0.1"},
    "libfabric": {"version": "1.22.0", "prefix": "/usr", "providers": ["shm"], "cuda": "/usr/local/cuda",
                  "configure": ["--enable-debug"]},
    "ucx": {"version": "1.19.0", "prefix": "/usr", "gdrcopy": "/usr", "configure": ["--enable-debug"]},
    "pmix": {"version": "5.0.8", "prefix": "/usr", "configure": ["--enable-debug"]},
    "mpi": {"impl": "mpich", "version": "4.3.1", "prefix": "/usr", "launcher": "mpiexec", "xpmem": "/usr",
            "libfabric": "/usr", "configure": ["--enable-g=none"]},
    "benchmarks": {"osu": "7.5.1", "osu_configure": ["--enable-debug"]},
    "env": {"FOO": "bar"},
}

DISTRO = {
    "name": "hostile-distro",
    "description": "a distro stack for hostile values",
    "origin": "tests",
    "mode": "distro",
    "multistage": True,
    "base": {"image": "localhost/debian:bookworm", "make": "debian:bookworm", "runtime_image": "docker.io/debian:12",
             "packages": ["python3"]},
    "mpi": {"impl": "mpich", "version": "4.0.2", "device": "ch4:ucx", "launcher": "mpiexec.mpich"},
    "env": {"FOO": "bar"},
}

#: every field of the two stacks above that reaches a generated file; ("env", None) is the key of [env]
SOURCE_FIELDS = [("name",), ("description",), ("origin",), ("tag",), ("base", "image"), ("base", "packages", 0),
                 ("gpu", "version"), ("gpu", "prefix"), ("gpu", "target"), ("xpmem", "version"), ("xpmem", "prefix"),
                 ("gdrcopy", "version"), ("gdrcopy", "prefix"), ("libcxi", "version"), ("libcxi", "prefix"),
                 ("libcxi", "cassini_headers"), ("libcxi", "cxi_driver"), ("libfabric", "version"),
                 ("libfabric", "prefix"), ("libfabric", "providers", 0), ("libfabric", "cuda"),
                 ("libfabric", "configure", 0), ("ucx", "version"), ("ucx", "prefix"), ("ucx", "gdrcopy"),
                 ("ucx", "configure", 0), ("pmix", "version"), ("pmix", "prefix"), ("pmix", "configure", 0),
                 ("mpi", "version"), ("mpi", "prefix"), ("mpi", "launcher"), ("mpi", "xpmem"), ("mpi", "libfabric"),
                 ("mpi", "configure", 0), ("benchmarks", "osu"), ("benchmarks", "osu_configure", 0),
                 ("env", "FOO"), ("env", None)]
DISTRO_FIELDS = [("base", "runtime_image"), ("base", "make"), ("base", "image"), ("mpi", "launcher"),
                 ("env", "FOO"), ("env", None)]
#: fields of free text (bounded, one line); every other field has a pattern
FREE_TEXT = {("description",), ("origin",), ("env", "FOO"), ("libfabric", "configure", 0), ("ucx", "configure", 0),
             ("pmix", "configure", 0), ("mpi", "configure", 0), ("benchmarks", "osu_configure", 0)}


def toml_text(data: dict) -> str:
    """TOML for ``data`` (tables one level deep); strings as JSON strings, which TOML basic strings accept."""
    def value(item) -> str:
        if isinstance(item, bool):
            return "true" if item else "false"
        if isinstance(item, list):
            return "[" + ", ".join(value(v) for v in item) + "]"
        return json.dumps(item)

    lines = [f"{json.dumps(k)} = {value(v)}" for k, v in data.items() if not isinstance(v, dict)]
    for table, body in data.items():
        if isinstance(body, dict):
            lines.append(f"[{table}]")
            lines += [f"{json.dumps(k)} = {value(v)}" for k, v in body.items()]
    return "\n".join(lines) + "\n"


def with_value(base: dict, field: tuple, hostile: str) -> dict:
    data = copy.deepcopy(base)
    if field == ("env", None):
        data["env"] = {hostile: "1"}
        return data
    holder = data
    for part in field[:-1]:
        holder = holder[part]
    holder[field[-1]] = hostile
    return data


def instructions(containerfile: str) -> list[str]:
    """The instruction keywords as a Dockerfile parser sees them: one per line start outside continuation lines,
    comments skipped. Lines are split at every Unicode line boundary, which is stricter than Docker's \\n."""
    found, continuing = [], False
    for line in containerfile.splitlines():
        stripped = line.strip()
        if stripped.startswith("#") or not stripped:
            continue  # comments and empty lines, also inside a continuation
        if not continuing:
            found.append(stripped.split()[0].upper())
        continuing = stripped.endswith("\\")
    return found


def sections(definition: str) -> list[str]:
    """Sections and stages as Apptainer's parser finds them: a line whose first word starts with %, and a line
    starting with Bootstrap: (pkg/build/types/parser/deffile.go)."""
    found = []
    for line in definition.splitlines():
        words = line.split()
        if words and words[0].startswith("%"):
            found.append(words[0])
        if re.match(r"(?i)bootstrap:", line):
            found.append("Bootstrap:")
    return found


def rendered(data: dict):
    return render(load_stack_text(toml_text(data), "test.toml"), allow_unpinned=True)


BASELINES = {id(SOURCE): rendered(SOURCE), id(DISTRO): rendered(DISTRO)}
EXPECTED_SECTIONS = ["Bootstrap:", "%help", "%files", "%post", "%environment", "%labels"]

CASES = [pytest.param(base, field, value, id=f"{base['name']}-{'.'.join(map(str, field))}-{label}")
         for base, fields in ((SOURCE, SOURCE_FIELDS), (DISTRO, DISTRO_FIELDS)) for field in fields
         for label, value in HOSTILE.items()]


def test_the_baselines_have_the_expected_structure():
    for recipe in BASELINES.values():
        assert sections(recipe.apptainer) == EXPECTED_SECTIONS
        assert recipe.containerfile.startswith("# syntax=docker/dockerfile:1\n")
        assert instructions(recipe.containerfile)[0] == "FROM" and instructions(recipe.containerfile)[-1] == "CMD"
    assert instructions(BASELINES[id(DISTRO)].containerfile).count("FROM") == 2


@pytest.mark.parametrize("base, field, value", CASES)
def test_a_hostile_value_is_refused_or_harmless(base, field, value):
    data = with_value(base, field, value)
    try:
        recipe = rendered(data)
    except StackError as error:
        message = str(error)
        if field == ("env", None):
            assert message.startswith("test.toml: env: key "), message
        elif field[0] == "env":
            assert message.startswith(f"test.toml: env: {field[1]}: "), message
        else:  # a list names its item, or (providers, checked as a whole) the list
            named = {".".join(map(str, field)), ".".join(str(part) for part in field if not isinstance(part, int))}
            assert any(message.startswith(f"test.toml: {name}: ") for name in named), message
        assert "\n" not in message or all(line.startswith("test.toml: ") for line in message.splitlines())
        return
    baseline = BASELINES[id(base)]
    assert not CONTROL_RE.search(value), f"{field} accepted {value!r}"
    # names, keys, versions and image references are short; free text and the launcher (a path) may be long
    assert len(value) < 100 or field in FREE_TEXT | {("mpi", "launcher")}, f"{field} accepted {len(value)} characters"
    assert instructions(recipe.containerfile) == instructions(baseline.containerfile)
    assert sections(recipe.apptainer) == EXPECTED_SECTIONS
    assert recipe.containerfile.startswith("# syntax=docker/dockerfile:1\n")


@pytest.mark.parametrize("value", ["x\nRUN touch /tmp/x", "x\u2028%post", "nul\x00byte"])
def test_every_free_text_field_refuses_control_characters(value):
    for field in (("description",), ("origin",), ("env", "FOO"), ("mpi", "configure", 0),
                  ("benchmarks", "osu_configure", 0)):
        with pytest.raises(StackError, match="control character"):
            rendered(with_value(SOURCE, field, value))


def test_a_stack_file_name_cannot_break_out_of_its_comment():
    stack = load_stack_text(toml_text(SOURCE), "/tmp/evil\nRUN touch x\n%post\n.toml")
    recipe = render(stack, allow_unpinned=True)
    assert instructions(recipe.containerfile) == instructions(BASELINES[id(SOURCE)].containerfile)
    assert sections(recipe.apptainer) == EXPECTED_SECTIONS


def test_allowed_values_reach_the_files_escaped():
    data = with_value(SOURCE, ("description",), "%post $(touch /tmp/x) `id` \"q\" \\")
    data["env"] = {"FOO": "$(touch /tmp/x) `id` 'q' \\"}
    recipe = rendered(data)
    assert 'FOO="\\$(touch /tmp/x) `id` \'q\' \\\\"' in recipe.containerfile
    assert ('org.opencontainers.image.description="%post \\$(touch /tmp/x) `id` \\"q\\" \\\\"'
            in recipe.containerfile)
    assert "    description: %post $(touch /tmp/x) `id` \"q\" \\\n" in recipe.apptainer
    assert "    export FOO=" + "'$(touch /tmp/x) `id` '\"'\"'q'\"'\"' \\'" in recipe.apptainer


def _section(definition: str, name: str) -> str:
    body, inside = [], False
    for line in definition.splitlines():
        words = line.split()
        if words and words[0].startswith("%"):
            inside = words[0] == name
            continue
        if inside:
            body.append(line)
    return "\n".join(body) + "\n"


def test_the_environment_section_runs_without_executing_values(tmp_path):
    marker = tmp_path / "pwned"
    value = f"$(touch {marker}) `touch {marker}` ; touch {marker} '\" \\"
    recipe = rendered(with_value(SOURCE, ("env", "FOO"), value))
    script = tmp_path / "environment.sh"
    script.write_text(_section(recipe.apptainer, "%environment"))
    done = subprocess.run(["bash", "-c", f'set -eu; . {script}; printf %s "$FOO"'], capture_output=True, text=True,
                          cwd=tmp_path, check=True)
    assert done.stdout == value
    assert not marker.exists()


def test_a_configure_line_runs_with_its_arguments_intact(tmp_path):
    marker = tmp_path / "pwned"
    argument = f"CFLAGS=-O2 $(touch {marker}) `touch {marker}`; touch {marker}"
    recipe = rendered(with_value(SOURCE, ("libfabric", "configure", 0), argument))
    step = next(step for step in recipe.steps if step.component == "libfabric")
    line = next(line for line in step.commands if line.startswith("./configure "))
    configure = tmp_path / "configure"
    configure.write_text("#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done > args.txt\n")
    configure.chmod(0o755)
    subprocess.run(["bash", "-c", f"set -eu; {line}"], cwd=tmp_path, check=True)
    assert argument in (tmp_path / "args.txt").read_text().splitlines()
    assert not marker.exists()


def _set_unchecked(stack, field: tuple, value: str) -> None:
    """Put ``value`` into a validated stack, past validation, as a bug or another caller could."""
    if field == ("env", None):
        stack.env = {value: "1"}
        return
    holder = stack
    for part in field[:-1]:
        holder = holder[part] if isinstance(holder, (list, dict)) else getattr(holder, part)
    if isinstance(holder, (list, dict)):
        holder[field[-1]] = value
    else:
        object.__setattr__(holder, field[-1], value)


@pytest.mark.parametrize("field", SOURCE_FIELDS, ids=lambda field: ".".join(map(str, field)))
@pytest.mark.parametrize("label", ["newline-run", "newline-section", "crlf-run", "line-separator", "nul"])
def test_the_generators_refuse_or_contain_what_validation_would_have_refused(field, label):
    """Defence in depth: the templates' filters alone keep a value from adding instructions or sections."""
    from mpistack.recipes import RecipeError

    stack = load_stack_text(toml_text(SOURCE), "test.toml")
    _set_unchecked(stack, field, HOSTILE[label])
    try:
        recipe = render(stack, allow_unpinned=True)
    except RecipeError as error:
        assert str(error).startswith("test.toml: ")
        return  # refused by a filter
    assert instructions(recipe.containerfile) == instructions(BASELINES[id(SOURCE)].containerfile)
    assert sections(recipe.apptainer) == EXPECTED_SECTIONS
