"""Speed of the results store (prints figures; not a test).

Ingest rate of 10,000 generated OSU files into SQLite (goal: >= 1,000 files/s on one core), and the
time of a filtered `mpistack results` query over one million stored results (goal: < 1 s).
"""

from __future__ import annotations

import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from sqlalchemy import insert

from mpistack.ingest.files import ingest_files
from mpistack.store import open_database
from mpistack.store.query import Where, query_results
from mpistack.store.schema import ResultRow, RunRow, RunTagRow, utcnow

FILES = 10_000
RESULTS = 1_000_000
SIZES = [2**power for power in range(23)]  # 1 B .. 4 MiB: 23 rows, as osu_bw prints
SYSTEMS = ["alps", "lumi", "frontier", "local"]
APPROACHES = ["native", "container", "bind", "hybrid", "fabric-swap"]


def osu_text(rng: random.Random) -> str:
    rows = "".join(f"{size:<10d}{rng.uniform(0.1, 25000):>18.2f}{'Pass':>18}\n" for size in SIZES)
    noise = "/opt/osu/osu_bw: /usr/lib/libnl-3.so.200: no version information available\n" * 2
    return f"{noise}\n# OSU MPI Bandwidth Test v7.5\n# Datatype: MPI_CHAR.\n# Size      Bandwidth (MB/s)        Validation\n{rows}"


def ingest_rate(workdir: Path) -> None:
    rng = random.Random(1)
    files = []
    for index in range(FILES):
        path = workdir / f"osu_bw_{index}.txt"
        path.write_text(osu_text(rng))
        files.append(path)
    engine = open_database(str(workdir / "ingest.db"))
    start = time.perf_counter()
    report = ingest_files(engine, files, {"system": "bench"})
    elapsed = time.perf_counter() - start
    assert report.files == FILES and not report.errors, report.errors[:3]
    print(f"ingest: {FILES} OSU files ({report.results} results) in {elapsed:.2f} s = "
          f"{FILES / elapsed:,.0f} files/s (goal >= 1,000 files/s)")


def filled_store(path: Path):
    """One million results in 43,478 runs of 23 sizes, tagged across systems and approaches."""
    engine = open_database(str(path))
    rng = random.Random(2)
    runs = RESULTS // len(SIZES) + 1
    with engine.begin() as connection:
        for first in range(1, runs + 1, 5000):
            ids = range(first, min(first + 5000, runs + 1))
            connection.execute(insert(RunRow.__table__), [
                {"id": run_id, "benchmark": "bw", "status": "ok", "incomplete": False, "created_at": utcnow(),
                 "approach": APPROACHES[run_id % len(APPROACHES)]} for run_id in ids])
            connection.execute(insert(RunTagRow.__table__), [
                {"run_id": run_id, "key": "system", "value": SYSTEMS[run_id % len(SYSTEMS)]} for run_id in ids])
            connection.execute(insert(ResultRow.__table__), [
                {"run_id": run_id, "benchmark": "bw", "size": size, "metric": "bandwidth",
                 "value": rng.uniform(0.1, 25000), "unit": "MB/s"} for run_id in ids for size in SIZES])
    return engine


def query_time(workdir: Path) -> None:
    db = workdir / "million.db"
    start = time.perf_counter()
    engine = filled_store(db)
    print(f"store: {RESULTS:,} results written in {time.perf_counter() - start:.1f} s (bulk insert)")
    filters = [Where.parse(text) for text in ("system=lumi", "approach=native", "benchmark=bw", "size=4194304")]
    query_results(engine, filters)  # warm the page cache as a second query would find it
    start = time.perf_counter()
    rows = query_results(engine, filters)
    elapsed = time.perf_counter() - start
    print(f"query: {len(rows):,} of {RESULTS:,} results matched in {elapsed:.3f} s (goal < 1 s)")
    command = [sys.executable, "-m", "mpistack.cli", "--db", str(db), "results", "-w", "system=lumi", "-w",
               "approach=native", "-w", "benchmark=bw", "-w", "size=4194304", "-f", "json"]
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    print(f"query: `mpistack results` command end to end (process start included) {time.perf_counter() - start:.3f} s")


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="mpistack-bench-store-") as directory:
        ingest_rate(Path(directory))
        query_time(Path(directory))


if __name__ == "__main__":
    main()
