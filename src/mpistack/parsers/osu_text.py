"""Parser for the text the OSU micro-benchmarks print, every version from 5.x to 7.x, and for
mpistack-bench's identical text.

The output is read line by line (a file as a stream: never whole in memory): a title line starts a test,
the header line names its columns, rows follow. Anything else (launcher and dynamic-loader messages, one
per rank, separator lines) is noise and is skipped; a prompt line ('$ srun -n 2 -N 2 ...') and OSU's
'# [ pairs: N ]' header tell the job size. Several tests may follow each other in one file. A row that is
cut short at the end of the output marks the test incomplete and keeps the rows before it; a launcher's
abort block (launcher_messages.py) marks it failed and keeps them too; a malformed row anywhere else is an
error that names the line and what is wrong with which value.
"""

from __future__ import annotations

import io
import math
import re
import shlex
from typing import Iterable, Iterator

from ..registry import FORMATS
from ..spec.provenance import Provenance
from .launcher_messages import MAX_MESSAGES, abort_line, detail_line
from .model import INT32_MAX, INT64_MAX, NoBenchmarkOutput, ParsedRow, ParsedRun, ParseError, RowError, is_count
from ..spec.benchmarks import metric_of
from .osu_names import Column, column_for, is_header, parse_title, split_header

_SEND_BUFFER_RE = re.compile(
    r"#\s*Send Buffer on (?P<send>\w+).*?Receive Buffer on (?P<recv>\w+)", re.IGNORECASE
)
_VALIDATION_ERROR_RE = re.compile(r"DATA VALIDATION ERROR(?:.*?message size\s+(?P<size>\d+))?", re.IGNORECASE)
_BUFFER_LETTER = {"HOST": "H", "DEVICE": "D", "MANAGED": "M", "H": "H", "D": "D", "M": "M"}
_ENV_ASSIGNMENT_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
# A row starts with a number (or its sign or point); lines of dashes or '=' that frame launcher messages do not.
_ROW_START_RE = re.compile(r"[-+]?\.?\d")
# '+ mpirun -np 2 ...' (shell trace) or 'user@host:~/osu$ srun -n 2 ...' (a pasted terminal)
_PROMPT_RE = re.compile(r"^(?:\++|[^\s#$]*\$)\s+(?P<command>\S.*)$")
_LAUNCHER_RE = re.compile(r"\b(?:srun|mpirun|mpiexec|aprun|flux)\b")
# a job script's echo of what it runs: '### Running: srun -n2 -N2 ... osu_latency', 'Running command: mpirun ...'
_ECHO_RE = re.compile(r"^#*\s*(?:Running|Executing|Command)(?: command)?:\s+(?P<command>\S.*)$", re.IGNORECASE)
_PAIRS_RE = re.compile(r"^#\s*\[\s*pairs:\s*(\d{1,9})\s*\]", re.IGNORECASE)
_PROCESSES_RE = re.compile(r"^#\s*(?:number of (?:processes|ranks)|processes|ranks)\s*[:=]\s*(\d{1,9})\s*$",
                           re.IGNORECASE)


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


def _read_row(tokens: list[str], columns: list[Column], lineno: int, context: tuple[str, str]) -> ParsedRow | str | None:
    """The row whose tokens match the columns one to one; or why a token does not fit its column; or None when
    the number of tokens is wrong. `context`: the line and the test's title, for messages."""
    if len(tokens) != len(columns):
        return None
    size: int | None = None
    values: dict[str, float] = {}
    stats: dict[str, float | int] = {}
    validation = None
    for token, column in zip(tokens, columns):
        if column.role == "size":
            if not is_count(token):
                return f"{token!r} is not a message size in column {column.name}: expected a whole number of bytes"
            size = int(token)
            if size > INT64_MAX:
                return f"size {token} in column {column.name} is beyond 2^63-1, the largest a store holds"
        elif column.role == "validation":
            lowered = token.lower()
            if lowered not in {"pass", "fail"}:
                return f"{token!r} in column {column.name}: expected Pass or Fail"
            validation = lowered
        elif column.key == "iterations":
            if not is_count(token):
                return f"{token!r} is not a whole number in column {column.name}"
            if int(token) > INT32_MAX:
                return f"{token} in column {column.name} is beyond 2^31-1, the largest a store holds"
            stats["iterations"] = int(token)
        else:
            try:
                number = float(token)
            except ValueError:
                return f"{token!r} is not a number in column {column.name}"
            if math.isnan(number):
                return f"{token!r} is not a number in column {column.name}"
            if math.isinf(number):
                return f"{token!r} is not a finite number in column {column.name}"
            if column.role == "value":
                if number < 0:
                    line, title = context
                    return (f"negative {column.name} {token} in row {line[:60]!r} of {title}: a time, rate or "
                            "count cannot be negative")
                values[column.key] = number
            else:
                stats[column.key] = number
    if not values:
        return None
    return ParsedRow(size=size, values=values, stats=stats, validation=validation, line=lineno)


def _is_cut_short(tokens: list[str], columns: list[Column]) -> bool:
    """A row that stops early but whose every token is what its column expects, or the start of it
    (output killed mid-row)."""
    if not tokens or len(tokens) > len(columns):
        return False
    for token, column in zip(tokens, columns):
        if column.role == "size" and not (is_count(token) and int(token) <= INT64_MAX):
            return False
        if column.key == "iterations" and token and not (is_count(token) and int(token) <= INT32_MAX):
            return False
        if column.role == "validation":
            if not "pass".startswith(token.lower()) and not "fail".startswith(token.lower()):
                return False
        elif column.role != "size" and not re.fullmatch(r"\d*\.?\d*", token):
            return False
    return True


def _malformed(line: str, block: _Block) -> str:
    columns = block.columns or []
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


def _command_line(line: str) -> Provenance | None:
    """What a shell prompt line says: '$ srun -n 2 ...' (any command), or an xtrace '+ mpirun -np 2 ...', a
    'user@host:~$ mpiexec ...' prompt, a script's '### Running: srun ...' or a launcher named by its path
    ('$HOME/ompi/bin/mpirun -n 2 ...') when the command starts a launcher."""
    if line.startswith("$ "):
        return parse_command(line[2:].strip())
    match = _PROMPT_RE.match(line) or _ECHO_RE.match(line)
    # or the command pasted bare, its launcher named by a path ('$HOME/ompi/bin/mpirun -n 2 ...')
    facts = parse_command(match.group("command") if match else line)
    return facts if facts.launcher else None


def _count_line(line: str, block: _Block) -> bool:
    """A header line that tells the job size ('# [ pairs: 2 ] ...': two ranks a pair; '# Number of processes:
    4'); the rank count is taken unless a command line gave it."""
    pairs = _PAIRS_RE.match(line)
    processes = None if pairs else _PROCESSES_RE.match(line)
    if not pairs and not processes:
        return False
    ranks = 2 * int(pairs.group(1)) if pairs else int(processes.group(1))
    if block.run.provenance.ranks is None and ranks > 0:
        block.run.provenance.ranks = ranks
    return True


def _note_abort(run: ParsedRun, line: str) -> None:
    run.aborted = True
    if len(run.messages) < MAX_MESSAGES:
        run.messages.append(line)


def _note_validation_error(run: ParsedRun, line: str, match: re.Match) -> None:
    run.validation_failed = True
    run.messages.append(line)
    if match.group("size") is not None:
        size = int(match.group("size"))
        if size <= INT64_MAX and not run.rows.mark_failed(size):
            run.messages.append(f"message size {size} failed validation before its row was printed")


def _text_lines(text: str) -> Iterator[str]:
    """Lines with their ends, split as a file read with newline='' splits them (\\n, \\r\\n or \\r)."""
    return iter(io.StringIO(text, newline=""))


@FORMATS.register("osu-text", order=90, detect=lambda text: True,  # the fallback: OSU text among any noise
                  lines=lambda lines, source: parse_osu_lines(lines, source))
def parse_osu_text(text: str, source: str = "<text>") -> list[ParsedRun]:
    """Every test in an OSU (or mpistack-bench) text output. Raises ParseError on malformed rows."""
    return parse_osu_lines(_text_lines(text), source)


def parse_osu_lines(lines: Iterable[str], source: str = "<text>") -> list[ParsedRun]:
    """Every test in OSU text read line by line (lines with their ends, as a file yields them), so that a file
    is never held whole in memory."""
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

    lineno = 0
    ended = True  # whether the last line had its line end
    for lineno, raw in enumerate(lines, start=1):
        ended = raw.endswith(("\n", "\r"))
        if "\x00" in raw:
            raise ParseError(source, lineno, "NUL character in the text: expected OSU benchmark output as text")
        line = raw.strip()
        if not line:
            continue
        maybe = line[0] in "$+" or "$ " in line or ((line[0] == "/" or ": " in line) and _LAUNCHER_RE.search(line))
        command = _command_line(line) if maybe else None
        if command is not None:
            last_command = command
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
            elif _count_line(line, block):
                pass
            elif block.columns is None and is_header(line):
                block.columns = _columns_for(split_header(line), block.run.benchmark)
                block.run.units = _units(block.columns) or block.run.units
            continue
        if block is None:
            continue
        if block.columns is None or not _ROW_START_RE.match(line):
            validation_error = _VALIDATION_ERROR_RE.search(line)
            if validation_error:
                _note_validation_error(block.run, line, validation_error)
            elif abort_line(line) or (block.run.aborted and detail_line(line)):
                _note_abort(block.run, line)
            continue  # otherwise launcher / loader / MPI noise, separator lines
        tokens = line.split()
        row = _read_row(tokens, block.columns, lineno, (line, block.run.title))
        if not isinstance(row, ParsedRow) and not _is_cut_short(tokens, block.columns):
            raise ParseError(source, lineno, row or _malformed(line, block))
        if block.pending_bad is not None:  # a cut-short row followed by more rows: not a truncation
            raise ParseError(source, block.pending_bad[0], block.pending_bad[1])
        if not isinstance(row, ParsedRow):
            block.pending_bad = (lineno, row or _malformed(line, block))
        else:
            try:
                block.run.rows.append(row)
            except RowError as error:
                raise ParseError(source, lineno, str(error)) from None

    if block is not None and block.run.rows and lineno and not ended:
        # OSU ends every row with a newline: a last row without one was cut mid-write (job killed).
        if block.run.rows[-1].line == lineno:
            block.run.rows.pop()
            block.pending_bad = block.pending_bad or (lineno, "row without its line end")
    finish(block)
    if not runs:
        raise NoBenchmarkOutput(source, 0, "no OSU benchmark output found: expected a title line such as "
                                    "'# OSU MPI Latency Test v7.5' followed by a '# Size ...' header")
    return runs
