"""Peak memory of `mpistack ingest` on one large OSU table (prints figures; not a test).

A 200 MB osu_bw output (about 7 million rows, as a long sweep or many repeats printed into one table) is
ingested into a new SQLite store by the real command in a child process; its peak resident set size is read
from the kernel (getrusage of the finished child). Goal: a small multiple of the file's size.

    python benchmarks/ingest_memory.py [--mb 200]
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROW_SIZES = [2**power for power in range(23)]  # 1 B .. 4 MiB, as osu_bw prints them


def write_table(path: Path, megabytes: int) -> int:
    """An OSU bandwidth table of about `megabytes` MB; returns its row count."""
    target = megabytes * 1_000_000
    rows = 0
    with path.open("w") as out:
        out.write("$ srun -n 2 -N 2 ./osu_bw\n# OSU MPI Bandwidth Test v7.5\n# Datatype: MPI_CHAR.\n"
                  "# Size      Bandwidth (MB/s)\n")
        block = "".join(f"{size:<10d}{1000 + index * 0.37:>18.2f}\n" for index, size in enumerate(ROW_SIZES))
        while out.tell() < target:
            out.write(block * 1000)
            rows += len(ROW_SIZES) * 1000
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=200, help="size of the generated table in MB (default 200)")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="mpistack-bench-ingest-memory-") as directory:
        table = Path(directory) / "osu_bw.txt"
        rows = write_table(table, options.mb)
        size = table.stat().st_size
        command = [sys.executable, "-m", "mpistack.cli", "--db", str(Path(directory) / "big.db"), "ingest",
                   str(table), "-t", "stack=bench", "-t", "approach=native"]
        start = time.perf_counter()
        result = subprocess.run(command, capture_output=True, text=True)
        elapsed = time.perf_counter() - start
        if result.returncode != 0:
            sys.exit(f"ingest failed ({result.returncode}):\n{result.stderr}")
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024  # Linux reports KiB
        print(f"ingest memory: {size / 1e6:.0f} MB OSU table ({rows:,} rows) -> peak RSS {peak / 1e6:.0f} MB "
              f"= {peak / size:.2f} x the file (goal: a small multiple); {elapsed:.1f} s, {rows / elapsed:,.0f} rows/s")


if __name__ == "__main__":
    main()
