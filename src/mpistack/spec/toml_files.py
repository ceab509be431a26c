"""Reading TOML files into pydantic models with errors that name the file, the field and what was
expected: shared by stacks, campaigns and references; and where the user's own files of mpistack live."""

from __future__ import annotations

import difflib
import os
import re
import tomllib
import typing
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError

Model = TypeVar("Model", bound=BaseModel)

#: the largest stack or campaign file read: far beyond any real one, and a bound on what parsing it costs
MAX_FILE_BYTES = 1 << 20
#: problems listed of one file: the first ones say what is wrong, a thousand more only cost memory
MAX_PROBLEMS = 20


def user_config_file(name: str) -> Path:
    """``name`` in the user's mpistack configuration directory: $XDG_CONFIG_HOME/mpistack, else
    ~/.config/mpistack (XDG Base Directory Specification)."""
    base = os.environ.get("XDG_CONFIG_HOME")
    return (Path(base) if base else Path("~/.config").expanduser()) / "mpistack" / name


def _fields_at(model: type[BaseModel] | None, location: tuple) -> list[str]:
    """The field names (and aliases) of the table at `location` inside `model`, for a did-you-mean; [] where the
    way there is not a plain model (a union of tables, a dict)."""
    for part in location:
        if model is None or isinstance(part, int):
            continue
        field = next((field for name, field in model.model_fields.items() if part in (name, field.alias)), None)
        if field is None:
            return []
        candidates = [field.annotation, *typing.get_args(field.annotation)]
        candidates += [inner for candidate in candidates for inner in typing.get_args(candidate)]
        model = next((candidate for candidate in candidates
                      if isinstance(candidate, type) and issubclass(candidate, BaseModel)), None)
    if model is None:
        return []
    return sorted({name for name, field in model.model_fields.items()} |
                  {field.alias for field in model.model_fields.values() if field.alias})


_TABLE_ARRAY = re.compile(r"\s*\[\[\s*([\w.-]+)\s*\]\]")  # a [[name]] header


def _line_of(text: str, location: tuple) -> int | None:
    """The line of the key at `location` in the TOML text (1-based), following array-of-tables headers
    ([[stack]] for stack.N): best effort, None where it cannot be told."""
    lines, start = text.splitlines(), 0
    for index, part in enumerate(location):
        following = location[index + 1] if index + 1 < len(location) else None
        if isinstance(part, str) and isinstance(following, int):
            names = {part, part.removesuffix("s")}  # `benchmarks` may be written as [[benchmark]] tables
            headers = [number for number, line in enumerate(lines)
                       if number >= start and (header := _TABLE_ARRAY.match(line)) and header.group(1) in names]
            if following < len(headers):
                start = headers[following] + 1
        elif isinstance(part, str) and following is None:
            for number in range(start, len(lines)):
                if re.match(rf"\s*\"?{re.escape(part)}\"?\s*=", lines[number]):
                    return number + 1
    return None


def describe_errors(where: str, error: ValidationError, prefix: str = "", text: str | None = None,
                    model: type[BaseModel] | None = None) -> str:
    """One line per problem: 'file.toml: mpi.impl: expected 'mpich' or 'openmpi' (got 'mvapich')'. With the
    file's text and model, an unknown field also gets its line and the field it most likely meant."""
    lines = []
    problems = error.errors()
    for item in problems[:MAX_PROBLEMS]:
        location = prefix + ".".join(str(part) for part in item["loc"]) or "(top level)"
        message = item["msg"].removeprefix("Value error, ")
        if item["type"] == "extra_forbidden":
            key = item["loc"][-1] if item["loc"] else ""
            close = difflib.get_close_matches(str(key), _fields_at(model, item["loc"][:-1]), n=1, cutoff=0.6)
            message = f"unknown field, did you mean {close[0]!r}?" if close else "unknown field (check the spelling)"
            line = _line_of(text, item["loc"]) if text is not None else None
            if line is not None:
                message += f" (line {line})"
        elif item["type"] == "missing":
            message = "required field missing"
        elif item["type"] == "literal_error":
            message = message.replace("Input should be", "expected") + f" (got {item.get('input')!r})"
        elif not isinstance(item.get("input"), (dict, list, type(None))):
            shown = repr(item["input"])
            message += f" (got {shown if len(shown) <= 120 else shown[:100] + '...'})"
        lines.append(f"{where}: {location}: {message}")
    if len(problems) > MAX_PROBLEMS:
        lines.append(f"{where}: ... and {len(problems) - MAX_PROBLEMS} more problems")
    return "\n".join(lines)


def load_model(model: type[Model], text: str, where: str, error: type[Exception]) -> Model:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as problem:
        raise error(f"{where}: not valid TOML: {problem}") from None
    try:
        return model.model_validate(data)
    except ValidationError as problem:
        raise error(describe_errors(where, problem, text=text, model=model)) from None


def read_text(path: str | Path, error: type[Exception]) -> str:
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_FILE_BYTES + 1)
    except OSError as problem:
        raise error(f"{path}: cannot read: {problem.strerror}") from None
    if len(data) > MAX_FILE_BYTES:
        raise error(f"{path}: larger than {MAX_FILE_BYTES >> 20} MiB: not a stack or campaign file")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as problem:
        raise error(f"{path}: not UTF-8 text (byte {problem.start})") from None
