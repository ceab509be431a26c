"""Escaping for every format a recipe is written in, as Jinja2 filters registered in one place (FILTERS).

The stack file is validated before it gets here (spec.stack: patterns, lengths, no control characters); these
filters are the second line: whatever a value holds, it stays one value in the format it lands in.

- shell: one shell word (shlex.quote); a value with a control character is refused, since a quoted new line
  would still end a Containerfile line or an Apptainer section line.
- dockerfile_json: a Containerfile ENV/LABEL value as a JSON string literal (every control character and line
  separator escaped, so it stays on its line), with `$` escaped too: Dockerfile substitutes variables inside
  double quotes
  (Dockerfile reference, "Environment replacement": https://docs.docker.com/reference/dockerfile/).
- dockerfile_run: one command line of a RUN step: one line, and no `<<`, which BuildKit reads as the start of
  a here-document even inside shell quotes (Dockerfile reference, "Here-Documents").
- word: an image reference, path or key written bare (FROM, COPY, %files, label keys): no blanks, quotes,
  backslashes, `$` or control characters.
- env_name: an environment variable name.
- comment: free text in a `#` comment: control characters become spaces, so it cannot leave its line.
- def_line: a line in an Apptainer definition section: one line, and not starting with `%` (Apptainer starts a
  section at any line whose first word starts with `%`, indented or not: pkg/build/types/parser/deffile.go,
  https://github.com/apptainer/apptainer) nor with `Bootstrap:` (which starts a new stage).
- def_label: an Apptainer %labels value. Apptainer takes the rest of the line literally as the value (GetLabels
  in the same file), so it is kept one line rather than shell-quoted, which would put the quotes in the label.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

from ..spec.stack import CONTROL_RE, ENV_NAME_RE


class UnsafeValue(ValueError):
    """A value that cannot be written safely into the format at hand."""


WORD_RE = re.compile(r"[^\s'\"\\$`]+")
BOOTSTRAP_RE = re.compile(r"bootstrap:", re.IGNORECASE)


def _shown(text: str) -> str:
    return repr(text if len(text) <= 80 else text[:60] + "...")


def _one_line(text: str, what: str) -> str:
    match = CONTROL_RE.search(text)
    if match:
        raise UnsafeValue(f"{what} {_shown(text)}: control character {match.group()!r} at position {match.start()}")
    return text


def shell(value: object) -> str:
    text = _one_line(str(value), "shell value")
    return shlex.quote(text)


def dockerfile_json(value: object) -> str:
    # json.dumps escapes C0 controls only: DEL, C1 and the Unicode line separators are escaped here too
    text = json.dumps(str(value), ensure_ascii=False)
    return CONTROL_RE.sub(lambda match: f"\\u{ord(match.group()):04x}", text).replace("$", "\\$")


def dockerfile_run(value: object) -> str:
    text = _one_line(str(value), "RUN command")
    if "<<" in text:
        raise UnsafeValue(f"RUN command {_shown(text)}: '<<' would start a here-document in a Containerfile")
    return text


def word(value: object) -> str:
    text = str(value)
    if not WORD_RE.fullmatch(text):
        raise UnsafeValue(f"{_shown(text)}: expected one word without blanks, quotes, '\\', '$', '`' or "
                          "control characters")
    return text


def env_name(value: object) -> str:
    text = str(value)
    if not ENV_NAME_RE.fullmatch(text):
        raise UnsafeValue(f"{_shown(text)}: expected an environment variable name (letters, digits and '_')")
    return text


def comment(value: object) -> str:
    return CONTROL_RE.sub(" ", str(value))


def def_line(value: object) -> str:
    text = _one_line(str(value), "Apptainer definition line")
    start = text.lstrip()
    if start.startswith("%") or BOOTSTRAP_RE.match(start):
        raise UnsafeValue(f"Apptainer definition line {_shown(text)}: would start a section or a stage")
    return text


def def_label(value: object) -> str:
    return _one_line(str(value), "Apptainer label value").strip()


FILTERS = {
    "shell": shell,
    "dockerfile_json": dockerfile_json,
    "dockerfile_run": dockerfile_run,
    "word": word,
    "env_name": env_name,
    "comment": comment,
    "def_line": def_line,
    "def_label": def_label,
    "basename": lambda value: Path(str(value)).name,
}
