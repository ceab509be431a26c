"""Shared helpers for the mpistack-bench tests (constants, environment, OSU text parser)."""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path


REPO = Path(__file__).resolve().parents[2]
BENCH = REPO / "bench"
SCHEMA = REPO / "src" / "mpistack" / "data" / "schemas" / "mpistack-bench.schema.json"

MPIS = {
    "mpich": {"cc": "mpicc.mpich", "run": ["mpiexec.mpich", "-n"]},
    "openmpi": {"cc": "mpicc.openmpi", "run": ["mpirun.openmpi", "--oversubscribe", "-n"]},
}

TITLES = {
    "latency": "OSU MPI Latency Test",
    "bw": "OSU MPI Bandwidth Test",
    "bibw": "OSU MPI Bi-Directional Bandwidth Test",
    "mbw_mr": "OSU MPI Multiple Bandwidth / Message Rate Test",
    "multi_lat": "OSU MPI Multi Latency Test",
    "barrier": "OSU MPI Barrier Latency Test",
    "bcast": "OSU MPI Broadcast Latency Test",
    "reduce": "OSU MPI Reduce Latency Test",
    "allreduce": "OSU MPI Allreduce Latency Test",
    "gather": "OSU MPI Gather Latency Test",
    "scatter": "OSU MPI Scatter Latency Test",
    "allgather": "OSU MPI Allgather Latency Test",
    "alltoall": "OSU MPI All-to-All Personalized Exchange Latency Test",
    "reduce_scatter": "OSU MPI Reduce_scatter Latency Test",
    "memcpy": "mpistack-bench memcpy",
}
PT2PT = ["latency", "bw", "bibw", "mbw_mr", "multi_lat"]
COLLECTIVES = ["barrier", "bcast", "reduce", "allreduce", "gather", "scatter", "allgather",
               "alltoall", "reduce_scatter"]
LOCAL = ["memcpy"]  # no communication: rank 0 measures the machine
TWO_RANKS_ONLY = {"latency", "bw", "bibw"}
BANDWIDTH = {"bw", "bibw", "mbw_mr"}  # OSU bandwidth tests (the "bandwidth" metric, -W)
IDENTITY = " (mpistack-bench 0.1)"

# Small, quick settings (2 shared cores)
QUICK = ["-m", "1:4096", "-i", "20", "-x", "2"]
QUICK_SIZES = [2 ** k for k in range(13)]


def bench_env() -> dict:
    env = dict(os.environ)
    env["OMPI_ALLOW_RUN_AS_ROOT"] = "1"
    env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
    # an empty UCX_TLS makes MPICH abort in MPI_Init
    if env.get("UCX_TLS", None) == "":
        del env["UCX_TLS"]
    return env


# ---------------------------------------------------------------------------
# OSU text parsing, written from OSU's own format strings:
#   header: "%-10s" "# Size" then "%18s" per column ("%12s" for Iterations)
#   rows:   "%-10d" size then "%18.2f" per figure ("%12lu"/"%12d" Iterations, "%18s" Validation)
#   barrier (no size column): header "# Avg Latency(us)", rows "%17.2f"
# ---------------------------------------------------------------------------
TITLE_RE = re.compile(r"^# (OSU MPI.* Test)(?: v\d+\.\d+| \(mpistack-bench [0-9.]+\))$")
HEADER_RE = re.compile(r"^# Size\s+(\S.*)$")
ROW_RE = re.compile(r"^(\d+)\s+(\d+\.\d{2})(.*)$")
BARRIER_ROW_RE = re.compile(r"^\s+(\d+\.\d{2})(.*)$")


def split_columns(header: str) -> list[str]:
    """Columns of a header line using OSU's fixed widths."""
    assert header.startswith("# Size") or header.startswith("# Avg Latency(us)")
    if header.startswith("# Size"):
        first, rest = header[:10], header[10:]
        assert first == "# Size    "
        cols = ["# Size"]
    else:
        cols, rest = ["Avg Latency(us)"], header[len("# Avg Latency(us)"):]
    while rest:
        width = 12 if rest[:12].strip() == "Iterations" else 18
        cols.append(rest[:width].strip())
        assert len(rest[:width]) == width, f"short column in {header!r}"
        rest = rest[width:]
    return cols


@dataclass
class Block:
    title: str
    identity: str
    preamble: list
    columns: list
    rows: list  # list of lists of strings (fixed-width split)


def parse_osu(text: str) -> list[Block]:
    lines = text.splitlines()
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        m = TITLE_RE.match(lines[i])
        if not m:
            i += 1
            continue
        assert i > 0 and lines[i - 1] == "", "a blank line precedes the title, as OSU prints"
        title = m.group(1)
        identity = lines[i][len("# ") + len(title):]
        i += 1
        pre = []
        while i < len(lines) and lines[i].startswith("#") and not (
                lines[i].startswith("# Size") or lines[i].startswith("# Avg Latency")):
            pre.append(lines[i])
            i += 1
        header = lines[i]
        cols = split_columns(header)
        i += 1
        rows = []
        while i < len(lines) and lines[i] and not lines[i].startswith("#"):
            line = lines[i]
            if cols[0] == "# Size":
                assert ROW_RE.match(line), line
                fields = [line[:10].strip()]
                rest = line[10:]
            else:
                assert BARRIER_ROW_RE.match(line), line
                fields = [line[:17].strip()]
                rest = line[17:]
            for c in cols[1:] if cols[0] == "# Size" else cols[1:]:
                width = 12 if c == "Iterations" else 18
                fields.append(rest[:width].strip())
                rest = rest[width:]
            assert rest == "", f"trailing text in row {line!r}"
            rows.append(fields)
            i += 1
        blocks.append(Block(title, identity, pre, cols, rows))
    return blocks
