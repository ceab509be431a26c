"""OSU vocabulary: test titles -> benchmark names, column headers -> what they hold.

Titles are read from the first line of each test's output, e.g. '# OSU MPI-CUDA Bandwidth Test v7.5'.
Columns are read from the header line, never guessed from file names or positions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Title text (after the API word, before the version) -> benchmark name (OSU binary without osu_).
TITLE_TO_BENCHMARK = {
    "latency test": "latency",
    "bandwidth test": "bw",
    "bi-directional bandwidth test": "bibw",
    "multiple bandwidth / message rate test": "mbw_mr",
    "multi latency test": "multi_lat",
    "multi-threaded latency test": "latency_mt",
    "multi-process latency test": "latency_mp",
    "persistent latency test": "latency_persistent",
    "barrier latency test": "barrier",
    "broadcast latency test": "bcast",
    "reduce latency test": "reduce",
    "allreduce latency test": "allreduce",
    "gather latency test": "gather",
    "gatherv latency test": "gatherv",
    "scatter latency test": "scatter",
    "scatterv latency test": "scatterv",
    "allgather latency test": "allgather",
    "allgatherv latency test": "allgatherv",
    "all-to-all personalized exchange latency test": "alltoall",
    "all-to-allv personalized exchange latency test": "alltoallv",
    "all-to-allw personalized exchange latency test": "alltoallw",
    "reduce_scatter latency test": "reduce_scatter",
    "reduce_scatter_block latency test": "reduce_scatter_block",
    # one-sided tests ('OSU MPI_Put Latency Test') reuse these names; parse_title prefixes the operation
}

TITLE_RE = re.compile(
    r"^#?\s*OSU\s+(?P<api>MPI(?:-[A-Za-z]+)?|MPI_\w+|OpenSHMEM|UPC\+*|NCCL|RCCL|XCCL|CUDA|ROCM)\s*(?P<text>.*?)\s*"
    r"(?:v(?P<version>\d[\w.+-]*)|\((?P<tool>mpistack-bench[^)]*)\))?\s*$",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Title:
    benchmark: str
    text: str  # the title as printed, without '# ' and version
    suite: str  # "osu 7.5" or "mpistack-bench 0.1"
    device: str | None  # from MPI-CUDA / MPI-ROCM / MPI-OPENACC


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")


def parse_title(line: str) -> Title | None:
    """The benchmark a title line announces, or None when the line is not an OSU title."""
    match = TITLE_RE.match(line.strip())
    if not match or not match.group("text"):
        return None
    api, text = match.group("api"), match.group("text")
    if not re.search(r"\btest\b", text, re.IGNORECASE):
        return None
    key = text.lower()
    benchmark = TITLE_TO_BENCHMARK.get(key)
    device = None
    upper_api = api.upper()
    if upper_api.startswith("MPI-"):
        device = upper_api[4:].lower()
    elif upper_api.startswith("MPI_"):  # one-sided: MPI_Put Latency Test -> put_latency
        operation = upper_api[4:].lower()
        base = TITLE_TO_BENCHMARK.get(key, _slug(key.removesuffix(" test")))
        benchmark = f"{operation[:3] if operation.startswith('acc') else operation}_{base}"
    elif upper_api in {"NCCL", "RCCL", "XCCL"}:
        benchmark = f"xccl_{benchmark or _slug(key.removesuffix(' test'))}"
        device = device or ("rocm" if upper_api == "RCCL" else "cuda" if upper_api == "NCCL" else None)
    if benchmark is None:
        nonblocking = re.match(r"non-blocking (.+)", key)
        inner = TITLE_TO_BENCHMARK.get(nonblocking.group(1)) if nonblocking else None
        benchmark = f"i{inner}" if inner else _slug(key.removesuffix(" test"))
    if match.group("tool"):
        suite = match.group("tool").strip()
    else:
        suite = f"osu {match.group('version')}" if match.group("version") else "osu"
    return Title(benchmark=benchmark, text=f"OSU {api} {text}", suite=suite, device=device)


@dataclass(frozen=True)
class Column:
    """What one header column holds."""

    name: str  # as printed
    role: str  # size | value | stat | validation
    key: str  # metric name for values; stat field for stats
    unit: str = ""


_KNOWN_COLUMNS = {
    "size": Column("Size", "size", "size"),
    "validation": Column("Validation", "validation", "validation"),
    "iterations": Column("Iterations", "stat", "iterations"),
    "avg latency(us)": Column("Avg Latency(us)", "value", "latency", "us"),
    "latency (us)": Column("Latency (us)", "value", "latency", "us"),
    "latency(us)": Column("Latency(us)", "value", "latency", "us"),
    "min latency(us)": Column("Min Latency(us)", "stat", "min", "us"),
    "max latency(us)": Column("Max Latency(us)", "stat", "max", "us"),
    "min bw (mb/s)": Column("Min BW (MB/s)", "stat", "min", "MB/s"),  # mpistack-bench -f, point-to-point
    "max bw (mb/s)": Column("Max BW (MB/s)", "stat", "max", "MB/s"),
    "bandwidth (mb/s)": Column("Bandwidth (MB/s)", "value", "bandwidth", "MB/s"),
    "bandwidth(mb/s)": Column("Bandwidth(MB/s)", "value", "bandwidth", "MB/s"),
    "bandwidth": Column("Bandwidth", "value", "bandwidth", "MB/s"),
    "mb/s": Column("MB/s", "value", "bandwidth", "MB/s"),
    "messages/s": Column("Messages/s", "value", "message_rate", "messages/s"),
    "overall(us)": Column("Overall(us)", "value", "latency", "us"),
}
for _p in ("P50", "P90", "P99"):
    _KNOWN_COLUMNS[f"{_p.lower()} tail lat(us)"] = Column(f"{_p} Tail Lat(us)", "stat", _p.lower(), "us")
    _KNOWN_COLUMNS[f"{_p.lower()} tail bw(mb/s)"] = Column(f"{_p} Tail BW(MB/s)", "stat", _p.lower(), "MB/s")

# Known names first (longest first, so 'Avg Latency(us)' wins over 'Latency(us)'), then any run of
# text up to two spaces: OSU pads every column to 18 characters, so two spaces always separate names.
_HEADER_TOKEN_RE = re.compile(
    "|".join(re.escape(column.name) for column in sorted(_KNOWN_COLUMNS.values(), key=lambda c: -len(c.name)))
    + r"|\S+(?: \S+)*",
    re.IGNORECASE,
)


def column_for(name: str) -> Column:
    """Describe a header column; unknown columns become extra metrics named after the header."""
    known = _KNOWN_COLUMNS.get(name.lower())
    if known:
        return known
    unit_match = re.search(r"\(([^)]*)\)\s*$", name)
    unit = unit_match.group(1) if unit_match else ""
    metric = _slug(re.sub(r"\([^)]*\)\s*$", "", name)) or "value"
    return Column(name, "value", metric, unit)


def split_header(line: str) -> list[str]:
    """Column names of an OSU header line such as '# Size      Bandwidth (MB/s)        Validation'."""
    text = line.strip().lstrip("#").strip()
    return [token.group(0) for token in _HEADER_TOKEN_RE.finditer(text)]


def is_header(line: str) -> bool:
    """A '#' line that names columns: it starts with Size, or (barrier) is only latency columns."""
    if not line.lstrip().startswith("#"):
        return False
    names = split_header(line)
    if not names:
        return False
    if names[0].lower() == "size":
        return True
    return all(name.lower() in _KNOWN_COLUMNS for name in names)
