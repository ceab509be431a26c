"""Reading TOML files into pydantic models with errors that name the file, the field and what was
expected: shared by stacks, campaigns and references; and where the user's own files of mpistack live."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError

Model = TypeVar("Model", bound=BaseModel)


def user_config_file(name: str) -> Path:
    """``name`` in the user's mpistack configuration directory: $XDG_CONFIG_HOME/mpistack, else
    ~/.config/mpistack (XDG Base Directory Specification)."""
    base = os.environ.get("XDG_CONFIG_HOME")
    return (Path(base) if base else Path("~/.config").expanduser()) / "mpistack" / name


def describe_errors(where: str, error: ValidationError, prefix: str = "") -> str:
    """One line per problem: 'file.toml: mpi.impl: expected 'mpich' or 'openmpi' (got 'mvapich')'."""
    lines = []
    for item in error.errors():
        location = prefix + ".".join(str(part) for part in item["loc"]) or "(top level)"
        message = item["msg"].removeprefix("Value error, ")
        if item["type"] == "extra_forbidden":
            message = "unknown field (check the spelling)"
        elif item["type"] == "missing":
            message = "required field missing"
        elif item["type"] == "literal_error":
            message = message.replace("Input should be", "expected") + f" (got {item.get('input')!r})"
        elif not isinstance(item.get("input"), (dict, list, type(None))):
            shown = repr(item["input"])
            message += f" (got {shown if len(shown) <= 120 else shown[:100] + '...'})"
        lines.append(f"{where}: {location}: {message}")
    return "\n".join(lines)


def load_model(model: type[Model], text: str, where: str, error: type[Exception]) -> Model:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as problem:
        raise error(f"{where}: not valid TOML: {problem}") from None
    try:
        return model.model_validate(data)
    except ValidationError as problem:
        raise error(describe_errors(where, problem)) from None


def read_text(path: str | Path, error: type[Exception]) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as problem:
        raise error(f"{path}: cannot read: {problem.strerror}") from None
