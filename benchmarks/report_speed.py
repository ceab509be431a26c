"""Speed of the analysis and the report (prints figures; not a test).

A store of one million results shaped like real campaigns (a native baseline and four container rows per
benchmark, 8 launches each, 23 message sizes), then:

* the statistics of one campaign (every row's answer);
* the JSON classes over the whole store (every campaign's answers, `mpistack report --format json`);
* `mpistack report` (Markdown, HTML with plots, JSON) of one campaign and of the whole store.

Goal: under 10 s for the report and for the JSON classes over one million results.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from sqlalchemy import insert

from mpistack.analysis.answers import answer
from mpistack.analysis.evidence import load_rows
from mpistack.store import open_database
from mpistack.store.query import Where
from mpistack.store.schema import CampaignRow, ResultRow, RunRow, RunTagRow, utcnow

RESULTS = 1_000_000
SIZES = [2**power for power in range(23)]  # 1 B .. 4 MiB
LAUNCHES = 8
BENCHMARKS = {"latency": ("latency", "us"), "bw": ("bandwidth", "MB/s"), "bibw": ("bandwidth", "MB/s"),
              "allreduce": ("latency", "us"), "alltoall": ("latency", "us")}
ROWS = [("host-mpich", "native", "host"), ("debian-mpich", "container", "image"),
        ("debian-mpich", "hybrid", "image"), ("pip-mpich", "container", "image"), ("pip-mpich", "bind", "image")]
RUNS_PER_CAMPAIGN = len(ROWS) * len(BENCHMARKS) * LAUNCHES
CAMPAIGNS = RESULTS // (RUNS_PER_CAMPAIGN * len(SIZES)) + 1


def figure(rng: random.Random, metric: str, size: int, slow: float) -> float:
    base = 0.5 + size / 4000 if metric == "latency" else 100 + size / 80
    noise = rng.lognormvariate(0.0, 0.05)
    return base * noise * (slow if metric == "latency" else 1 / slow)


def filled_store(path: Path):
    engine = open_database(str(path))
    rng = random.Random(3)
    run_id = 0
    with engine.begin() as connection:
        for campaign in range(1, CAMPAIGNS + 1):
            connection.execute(insert(CampaignRow.__table__),
                               [{"id": campaign, "name": "nightly", "spec": {}, "created_at": utcnow()}])
            runs, tags, results = [], [], []
            for stack, approach, origin in ROWS:
                slow = 1.6 if (stack, approach) == ("pip-mpich", "bind") else 1.0
                for benchmark, (metric, unit) in BENCHMARKS.items():
                    for repeat in range(1, LAUNCHES + 1):
                        run_id += 1
                        runs.append({"id": run_id, "campaign_id": campaign, "benchmark": benchmark, "status": "ok",
                                     "incomplete": False, "created_at": utcnow(), "stack": stack,
                                     "approach": approach, "ranks": 2, "nodes": 1, "buffers": "H-H",
                                     "mpi_library_version": "MPICH Version: 4.0.2"})
                        tags += [{"run_id": run_id, "key": key, "value": value} for key, value in
                                 (("mpi", "mpich"), ("origin", origin), ("variant", "default"),
                                  ("campaign", "nightly"), ("repeat", str(repeat)))]
                        results += [{"run_id": run_id, "benchmark": benchmark, "size": size, "metric": metric,
                                     "value": figure(rng, metric, size, slow), "unit": unit} for size in SIZES]
            connection.execute(insert(RunRow.__table__), runs)
            connection.execute(insert(RunTagRow.__table__), tags)
            connection.execute(insert(ResultRow.__table__), results)
    return engine, CAMPAIGNS * RUNS_PER_CAMPAIGN * len(SIZES)


def timed(what: str, function):
    start = time.perf_counter()
    value = function()
    print(f"{what}: {time.perf_counter() - start:.2f} s")
    return value


def report_cli(db: Path, out: Path, *args: str) -> float:
    mpistack = Path(sys.executable).with_name("mpistack")
    start = time.perf_counter()
    subprocess.run([str(mpistack), "--db", str(db), "report", *args, "--out", str(out)], check=True,
                   capture_output=True, text=True)
    return time.perf_counter() - start


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="mpistack-report-bench-") as directory:
        workdir = Path(directory)
        db = workdir / "million.db"
        start = time.perf_counter()
        engine, count = filled_store(db)
        print(f"store: {count:,} results in {CAMPAIGNS} campaigns written in {time.perf_counter() - start:.1f} s")
        rows = timed("statistics of one campaign (load + answers, "
                     f"{len(ROWS) - 1} rows x {len(BENCHMARKS)} benchmarks x {len(SIZES)} sizes)",
                     lambda: answer(load_rows(engine, [Where("campaign", "=", CAMPAIGNS)])))
        assert any(a.label == "(Y)" for a in rows), "the slow row must be found"
        answers = timed(f"JSON classes over the whole store ({count:,} results)",
                        lambda: answer(load_rows(engine)))
        print(f"  {len(answers):,} answers; classes: "
              + ", ".join(f"{label} {sum(a.label == label for a in answers)}" for label in ("Y", "(Y)", "?", "N")))
        print(f"mpistack report of one campaign (md, html, json): "
              f"{report_cli(db, workdir / 'one', str(CAMPAIGNS)):.2f} s")
        print(f"mpistack report --format json over the whole store: "
              f"{report_cli(db, workdir / 'all', '--where', 'campaign>=1', '--format', 'json'):.2f} s "
              "(goal < 10 s)")
        print(f"mpistack report over the whole store (md, html, json): "
              f"{report_cli(db, workdir / 'all-html', '--where', 'campaign>=1'):.2f} s (goal < 10 s)")


if __name__ == "__main__":
    os.environ.setdefault("MPLBACKEND", "Agg")
    main()
