"""Parser for the text the OSU micro-benchmarks print, every version from 5.x to 7.x, and for
mpistack-bench's identical text.

The output is read line by line: a title line starts a test, the header line names its columns, rows
follow. Anything else (launcher and dynamic-loader messages, one per rank, prompts) is noise and is
skipped. Several tests may follow each other in one file. A row that is cut short at the end of the
output marks the test incomplete and keeps the rows before it; a malformed row anywhere else is an
error that names the line.
"""

from __future__ import annotations

import math
import re
import shlex

from ..registry import FORMATS
from ..spec.provenance import Provenance
from .model import ParsedRow, ParsedRun, ParseError, is_count
from ..spec.benchmarks import metric_of
from .osu_names import Column, column_for, is_header, parse_title, split_header

_SEND_BUFFER_RE = re.compile(
    r"#\s*Send Buffer on (?P<send>\w+).*?Receive Buffer on (?P<recv>\w+)", re.IGNORECASE
)
_VALIDATION_ERROR_RE = re.compile(r"DATA VALIDATION ERROR(?:.*?message size\s+(?P<size>\d+))?", re.IGNORECASE)
_BUFFER_LETTER = {"HOST": "H", "DEVICE": "D", "MANAGED": "M", "H": "H", "D": "D", "M": "M"}
_ENV_ASSIGNMENT_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


class _Block:
    """A test being read: its title, then its columns, then rows."""

    def __init__(self, run: ParsedRun):
        self.run = run
        self.columns: list[Column] | None = None
        self.pending_bad: tuple[int, str] | None = None  # a malformed row: an error unless output ends


def _buffers(match: re.Match) -> str:
    send = _BUFFER_LETTER.get(match.group("send").upper(), match.group("send")[:1].upper())
    recv = _BUFFER_LETTER.get(match.group("recv").upper(), match.group("recv")[:1].upper())
    return f"{send}-{recv}"


def parse_command(command: str) -> Provenance:
    """The command, environment assignments and placement that a '$ srun -N2 ...' prompt line tells."""
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    environment: dict[str, str] = {}
    while words and _ENV_ASSIGNMENT_RE.match(words[0]):
        key, _, value = words.pop(0).partition("=")
        environment[key] = value
    facts = Provenance(command=command, environment=environment)
    if not words:
        return facts
    launcher = words[0].rsplit("/", 1)[-1]
    if launcher in {"srun", "mpirun", "mpiexec", "mpiexec.hydra", "aprun", "flux"}:
        facts.launcher = launcher
    options = {"-N": "nodes", "--nodes": "nodes", "-n": "ranks", "-np": "ranks", "--ntasks": "ranks",
               "--ntasks-per-node": "per_node"}
    found: dict[str, int] = {}
    for index, word in enumerate(words):
        name, equals, value = word.partition("=")
        attached = re.match(r"^(-N|-n)(\d+)$", word)
        if attached:
            name, value = attached.group(1), attached.group(2)
        elif not equals:
            value = words[index + 1] if index + 1 < len(words) else ""
        if name in options and is_count(value):
            found[options[name]] = int(value)
    if len(words) >= 2 and words[-1] in _BUFFER_LETTER and words[-2] in _BUFFER_LETTER:
        facts.buffers = f"{words[-2]}-{words[-1]}"  # OSU's positional buffer placement: osu_bw D D
    facts.nodes = found.get("nodes")
    if "ranks" in found:
        facts.ranks = found["ranks"]
    elif "per_node" in found:
        facts.ranks = found["per_node"] * found.get("nodes", 1)
    elif launcher == "srun" and "nodes" in found:
        facts.ranks = found["nodes"]  # srun -N2 alone starts one task per node
    return facts


def _parse_row(tokens: list[str], columns: list[Column], lineno: int) -> ParsedRow | None:
    """A row whose tokens match the columns one to one, or None."""
    if len(tokens) != len(columns):
        return None
    size: int | None = None
    values: dict[str, float] = {}
    stats: dict[str, float | int] = {}
    validation = None
    for token, column in zip(tokens, columns):
        if column.role == "size":
            if not is_count(token):
                return None
            size = int(token)
        elif column.role == "validation":
            lowered = token.lower()
            if lowered not in {"pass", "fail"}:
                return None
            validation = lowered
        else:
            try:
                number = float(token)
            except ValueError:
                return None
            if not math.isfinite(number) or (column.role == "value" and number < 0):
                return None
            if column.role == "value":
                values[column.key] = number
            elif column.key == "iterations":
                if not is_count(token):
                    return None
                stats["iterations"] = int(token)
            else:
                stats[column.key] = number
    if not values:
        return None
    return ParsedRow(size=size, values=values, stats=stats, validation=validation, line=lineno)


def _is_cut_short(tokens: list[str], columns: list[Column]) -> bool:
    """A row that stops early but whose every token is what its column expects (output killed)."""
    if not tokens or len(tokens) > len(columns):
        return False
    for token, column in zip(tokens, columns):
        if column.role == "size" and not is_count(token):
            return False
        if column.role == "validation":
            if not "pass".startswith(token.lower()) and not "fail".startswith(token.lower()):
                return False
        elif column.role != "size" and not re.fullmatch(r"[-+]?\d*\.?\d*", token):
            return False
    return True


def _malformed(line: str, block: _Block) -> str:
    columns = block.columns or []
    for token, column in zip(line.split(), columns):
        if column.role == "value" and re.fullmatch(r"-\d*\.?\d+(e[-+]?\d+)?", token, re.IGNORECASE):
            return (f"negative {column.name} {token} in row {line[:60]!r} of {block.run.title}: a time, rate or "
                    "count cannot be negative")
    names = ", ".join(column.name for column in columns)
    return f"malformed row {line[:60]!r} in {block.run.title}: expected {len(columns)} columns ({names})"


def _columns_for(names: list[str], benchmark: str) -> list[Column]:
    """Column descriptions; the first figure column takes the title's metric (published tables
    sometimes head a latency column 'Bandwidth (MB/s)': the title is right)."""
    columns = [column_for(name) for name in names]
    metric = metric_of(benchmark)
    for index, column in enumerate(columns):
        if column.role == "value":
            if column.key in {"latency", "bandwidth"} and column.key != metric.name:
                columns[index] = Column(column.name, "value", metric.name, metric.unit)
            break
    return columns


def _units(columns: list[Column]) -> dict[str, str]:
    return {column.key: column.unit for column in columns if column.role == "value"}


@FORMATS.register("osu-text", order=90, detect=lambda text: True)  # the fallback: OSU text among any noise
def parse_osu_text(text: str, source: str = "<text>") -> list[ParsedRun]:
    """Every test in an OSU (or mpistack-bench) text output. Raises ParseError on malformed rows."""
    runs: list[ParsedRun] = []
    block: _Block | None = None
    last_command: Provenance | None = None

    def finish(current: _Block | None) -> None:
        if current is None:
            return
        if current.pending_bad is not None:
            current.run.incomplete = True
            current.run.messages.append(f"output cut short at line {current.pending_bad[0]}; complete rows kept")
        if current.columns is None or not current.run.rows:
            current.run.incomplete = True
        runs.append(current.run)

    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line:
            continue
        if line.startswith("$ "):
            last_command = parse_command(line[2:].strip())
            continue
        if line.startswith("#"):
            title = parse_title(line)
            if title is not None:
                finish(block)
                metric = metric_of(title.benchmark)
                run = ParsedRun(
                    benchmark=title.benchmark, title=title.text, units={metric.name: metric.unit}, suite=title.suite,
                    line=lineno,
                )
                run.provenance.device = title.device
                # OSU's defaults: host buffers, or device buffers for -d cuda/rocm; the command's positional
                # 'H D' or a '# Send Buffer on ...' line says otherwise.
                run.provenance.buffers = "D-D" if title.device else "H-H"
                if last_command is not None:
                    run.provenance.update(last_command)
                    last_command = None
                block = _Block(run)
                continue
            if block is None:
                continue
            buffer_match = _SEND_BUFFER_RE.match(line)
            if buffer_match:
                block.run.provenance.buffers = _buffers(buffer_match)
            elif block.columns is None and is_header(line):
                block.columns = _columns_for(split_header(line), block.run.benchmark)
                block.run.units = _units(block.columns) or block.run.units
            continue
        if block is None:
            continue
        validation_error = _VALIDATION_ERROR_RE.search(line)
        if validation_error:
            block.run.validation_failed = True
            block.run.messages.append(line)
            continue
        first = line[0]
        if block.columns is None or not (is_count(first) or first in "-+."):
            continue  # launcher / loader / MPI noise
        tokens = line.split()
        row = _parse_row(tokens, block.columns, lineno)
        if row is None and not _is_cut_short(tokens, block.columns):
            raise ParseError(source, lineno, _malformed(line, block))
        if block.pending_bad is not None:  # a cut-short row followed by more rows: not a truncation
            raise ParseError(source, block.pending_bad[0], block.pending_bad[1])
        if row is None:
            block.pending_bad = (lineno, _malformed(line, block))
        else:
            block.run.rows.append(row)

    if block is not None and block.run.rows and text and not text.endswith("\n"):
        # OSU ends every row with a newline: a last row without one was cut mid-write (job killed).
        last = block.run.rows[-1]
        if last.line == text.count("\n") + 1:
            block.run.rows.pop()
            block.pending_bad = block.pending_bad or (last.line, "row without its line end")
    finish(block)
    if not runs:
        raise ParseError(source, 0, "no OSU benchmark output found: expected a title line such as "
                                    "'# OSU MPI Latency Test v7.5' followed by a '# Size ...' header")
    return runs
