"""Parser for mpistack-bench's JSON: one document per test, or an array of them (suite mode).

The format is defined once, in mpistack/data/schemas/mpistack-bench.schema.json; documents are validated
against it before they are read.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from importlib import resources

from ..registry import FORMATS
from ..spec.provenance import Provenance, parse_time
from .model import ParsedRow, ParsedRun, ParseError, RowError

SCHEMA_ID = "mpistack-bench/1"
_STAT_FIELDS = ("mean", "min", "median", "p90", "p99", "max", "stddev", "ci95_low", "ci95_high")
_PROVENANCE_ENV_PREFIXES = ("FI_PROVIDER",)


@lru_cache(maxsize=1)
def schema() -> dict:
    return json.loads(resources.files("mpistack.data").joinpath("schemas/mpistack-bench.schema.json").read_text())


@lru_cache(maxsize=1)
def _validator():
    import jsonschema

    return jsonschema.Draft202012Validator(schema())


_JSON_START_RE = re.compile(r'\s*(?:\{\s*"|\[\s*\{|\[\s*\]\s*$)')


def looks_like_bench_json(text: str) -> bool:
    """A JSON object or array of objects (Markdown that starts with '[](...)' is not)."""
    return _JSON_START_RE.match(text) is not None


def _line_of(text: str, index: int) -> int:
    """Line of the index-th document in an array, for error messages (1 for a single document)."""
    if index == 0:
        return 1
    count = 0
    for lineno, line in enumerate(text.splitlines(), start=1):
        if '"schema"' in line:
            if count == index:
                return lineno
            count += 1
    return 1


def _buffers(value) -> str | None:
    """'H H', ['D', 'H'] or 'D' (collectives) -> the 'H-H' form OSU text parsing gives."""
    if not value:
        return None
    letters = value if isinstance(value, list) else str(value).replace("-", " ").split()
    if len(letters) == 1:
        letters = letters * 2
    return "-".join(letter.upper() for letter in letters)


def _run_from_document(document: dict, source: str, line: int) -> ParsedRun:
    metrics = {metric["name"]: metric["unit"] for metric in document["metrics"]}
    options = document.get("options", {})
    device = options.get("device")
    device = None if device in (None, "", "none") else device
    buffers = _buffers(options.get("buffers"))
    mpi = document["mpi"]
    environment = document.get("environment") or {}
    tool = document["tool"]
    run = ParsedRun(
        benchmark=document["benchmark"],
        title=document["title"],
        units=metrics,
        suite=f"{tool['name']} {tool['version']}",
        validation_failed=document["status"] == "validation-failed",
        line=line,
    )
    hosts = mpi.get("hosts") or []
    run.provenance = Provenance(
        device=device, buffers=buffers, command=options.get("command_line"), environment=dict(environment),
        mpi_library_version=mpi.get("library_version"), ranks=mpi.get("ranks"), nodes=len(set(hosts)) or None,
        hosts=list(hosts), tool_version=tool["version"], started_at=parse_time(document.get("started")),
        finished_at=parse_time(document.get("finished")), libfabric_provider=environment.get("FI_PROVIDER"),
        libfabric_version=(mpi.get("libfabric") or {}).get("version"),  # what the process really loaded
    )
    for entry in document["results"]:
        stats: dict[str, float | int] = {"iterations": entry["iterations"]}
        if entry.get("stats"):
            stats.update({name: entry["stats"][name] for name in _STAT_FIELDS})
        # OSU's collective -f columns (min/max over ranks) win over the per-iteration extremes, so that
        # min/max mean the same for OSU text and for our JSON.
        if entry.get("rank_min") is not None:
            stats["min"] = entry["rank_min"]
        if entry.get("rank_max") is not None:
            stats["max"] = entry["rank_max"]
        try:
            run.rows.append(ParsedRow(size=entry["size"], values=dict(entry["values"]), stats=stats,
                                      validation=entry.get("validation"), line=line))
        except RowError as error:
            raise ParseError(source, line, f"result at size {entry['size']}: {error}") from None
    return run


class _NotANumber(ValueError):
    """NaN, Infinity or -Infinity, which Python's json module would otherwise read as floats."""


def _no_constant(token: str):
    raise _NotANumber(token)


def _line_of_token(text: str, token: str) -> int:
    position = text.find(token)
    return text.count("\n", 0, position) + 1 if position >= 0 else 1


@FORMATS.register("mpistack-bench-json", order=10, detect=looks_like_bench_json)
def parse_bench_json(text: str, source: str = "<json>") -> list[ParsedRun]:
    """Every test document in an mpistack-bench JSON file."""
    try:
        data = json.loads(text, parse_constant=_no_constant)
    except json.JSONDecodeError as error:
        raise ParseError(source, error.lineno, f"not valid JSON ({error.msg}); expected an mpistack-bench "
                                               "document or an array of them") from None
    except _NotANumber as error:
        raise ParseError(source, _line_of_token(text, str(error)),
                         f"{error} is not a number (JSON has no NaN or infinities; a figure must be finite)") from None
    except RecursionError:
        raise ParseError(source, 1, "JSON nested too deeply to read; expected an mpistack-bench document "
                                    "(a few levels deep) or an array of them") from None
    documents = data if isinstance(data, list) else [data]
    if not documents:
        raise ParseError(source, 1, "empty JSON array: expected mpistack-bench documents")
    runs = []
    for index, document in enumerate(documents):
        line = _line_of(text, index)
        try:
            errors = sorted(_validator().iter_errors(document), key=lambda e: list(e.absolute_path))
        except RecursionError:
            raise ParseError(source, line, f"document {index}: nested too deeply to check against the schema "
                                           f"{SCHEMA_ID}") from None
        if errors:
            first = errors[0]
            where = "/".join(str(part) for part in first.absolute_path) or "(document)"
            raise ParseError(source, line, f"document {index}: field {where}: {first.message} "
                                           f"(schema {SCHEMA_ID})")
        runs.append(_run_from_document(document, source, line))
    return runs
