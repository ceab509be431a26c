"""Container against native, per benchmark: the terminal summary at the end of a campaign.

Relative speed at one message size is native time / container time for latencies and container rate /
native rate for bandwidths, so 1.0 is native speed and 0.5 is half of it. Medians of the per-iteration
figures are compared where the benchmark reports them (mpistack-bench does): on a shared machine a few
preempted iterations move the OSU mean far more than the median. Each (stack, approach,
benchmark) is compared with the native run of the host MPI of the same implementation, size by size.
"""

from __future__ import annotations

import math
import re
from statistics import median
from collections import defaultdict

from sqlalchemy import Engine

from ..spec.benchmarks import HIGHER_IS_BETTER
from ..spec.status import RunStatus
from ..store.query import Where, query_results, query_runs

AT_SPEED = 0.90  # a first threshold, not yet noise-aware


def _relative(metric: str, value: float, native: float) -> float | None:
    if value <= 0 or native <= 0:
        return None
    return value / native if metric in HIGHER_IS_BETTER else native / value


def summarise(store: Engine, campaign_id: int) -> list[dict]:
    rows = query_results(store, [Where("campaign", "=", campaign_id)])
    primary = [row for row in rows if row["metric"] in ("latency", "bandwidth")]
    # native figure per (mpi, benchmark, buffers, ranks, size): the median over repeats
    native: dict[tuple, list[float]] = defaultdict(list)
    native_stacks: dict[str, set[str]] = defaultdict(set)
    reported: dict[tuple, set[str]] = defaultdict(set)  # (stack, approach) -> versions its MPI library reported
    measured: dict[tuple, dict[int | None, list[float]]] = defaultdict(lambda: defaultdict(list))
    declared: dict[str, str | None] = {}  # stack -> the MPI version its spec declares
    for row in primary:
        if row["status"] != "ok":
            continue
        figure = row.get("median", row["value"])
        if reported_version(row.get("mpi_library_version")):
            reported[(row["stack"], _approach_label(row))].add(reported_version(row["mpi_library_version"]))
        if row["approach"] == "native":
            native[(row["mpi"], row["benchmark"], row["buffers"], row["ranks"], row["size"])].append(figure)
            native_stacks[row["mpi"]].add(row["stack"])
        else:
            key = (row["stack"], _approach_label(row), row["benchmark"], row["mpi"], row["buffers"], row["ranks"],
                   row["metric"])
            declared[row["stack"]] = row.get("mpi_version")
            measured[key][row["size"]].append(figure)
    summary = []
    for (stack, approach, benchmark, mpi, buffers, ranks, metric), by_size in sorted(measured.items()):
        ratios = []
        for size, values in sorted(by_size.items(), key=lambda item: item[0] or 0):
            baseline = native.get((mpi, benchmark, buffers, ranks, size))
            if not baseline:
                continue
            ratio = _relative(metric, median(values), median(baseline))
            if ratio is not None:
                ratios.append((ratio, size))
        natives = sorted(native_stacks.get(mpi, ()))
        ran = reported[(stack, approach)]
        entry = {"stack": _with_version(stack, mpi, declared.get(stack) or _one(ran)),
                 "approach": approach, "benchmark": benchmark, "buffers": buffers, "ranks": ranks,
                 "native": ", ".join(_with_version(name, mpi, _one(reported[(name, "native")])) for name in natives)}
        mismatch = _mismatch(declared.get(stack), ran)
        if not ratios:
            summary.append({**entry, "verdict": f"untested: no native {mpi} run to compare"})
            continue
        geomean = math.exp(sum(math.log(ratio) for ratio, _ in ratios) / len(ratios))
        worst, worst_size = min(ratios)
        summary.append({**entry, "sizes": len(ratios), "relative": round(geomean, 3), "worst": round(worst, 3),
                        "worst_size": worst_size,
                        "verdict": ("works at speed" if geomean >= AT_SPEED else "runs but slow") + mismatch})
    summary.extend(_unsuccessful(store, campaign_id))
    return summary


def reported_version(library_version: str | None) -> str | None:
    """'MPICH Version:  4.0.2 ...' or 'Open MPI v4.1.4, ...' -> '4.0.2' (the first dotted number)."""
    match = re.search(r"\d+\.\d+(?:\.\d+)?", library_version or "")
    return match.group(0) if match else None


def _one(versions: set[str]) -> str | None:
    return next(iter(versions)) if len(versions) == 1 else None


def _with_version(stack: str, mpi: str, version: str | None) -> str:
    return f"{stack} ({mpi} {version})" if version else stack


def _mismatch(declared: str | None, reported: set[str]) -> str:
    """A note when the library that ran is not the version the stack declares (e.g. the host's MPI bound
    into an image)."""
    other = sorted(version for version in reported if declared and version != declared)
    return f"; declared {declared}, the library reports {', '.join(other)}" if other else ""


def _approach_label(row: dict) -> str:
    """The approach as the campaign named it: single-copy confinement is a variant of its own."""
    return row["approach"] + ("+single-copy" if row.get("confinement") == "single-copy" else "")


def _unsuccessful(store: Engine, campaign_id: int) -> list[dict]:
    """Failed, timed-out and skipped runs: 'fails' and 'untested' with their reason."""
    out = []
    for run in query_runs(store, [Where("campaign", "=", campaign_id), Where("status", "!=", "ok")]):
        reason = run["message"].splitlines()[0] if run["message"] else ""
        verdict = "untested" if run["status"] == RunStatus.SKIPPED.value else f"fails ({run['status']})"
        out.append({"stack": run["stack"], "approach": run["approach"], "benchmark": run["benchmark"],
                    "buffers": run["buffers"], "ranks": run["ranks"],
                    "verdict": f"{verdict}: {reason}" if reason else verdict})
    return out
