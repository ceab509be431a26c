"""Peak memory of `mpistack ingest` on one large OSU table, and of `mpistack doctor FILE` on the same table and
on a job log of the same size that is all noise and messages (prints figures; not a test).

A 200 MB osu_bw output (about 7 million rows, as a long sweep or many repeats printed into one table) is
ingested into a new SQLite store by the real command in a child process; its peak resident set size is read
from the kernel (getrusage of the finished child). Goal: a small multiple of the file's size. The doctor reads
the same table (it keeps the figures, as ingest does), then the log (it keeps a bounded set of messages: goal,
about the interpreter's own size, whatever the log's).

    python benchmarks/ingest_memory.py [--mb 200] [--doctor-only]
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


def write_log(path: Path, megabytes: int) -> int:
    """A job log of about `megabytes` MB: warnings from every rank (numbers differ), distinct errors, and
    application chatter, no table; returns its line count."""
    target = megabytes * 1_000_000
    lines = 0
    with path.open("w") as out:
        while out.tell() < target:
            block = []
            for index in range(1000):
                number = lines + index
                block.append(f"[nid{number % 4096:06d}:{number}] UNPACK-PMIX-VALUE: UNSUPPORTED TYPE 104\n")
                block.append(f"step {number}: residual {number * 1e-9:.3e} (solver chatter)\n")
                block.append(f"warning: module m{number} failed to load its cache {number:x}\n")
            out.write("".join(block))
            lines += len(block)
    return lines


def child_peak(command: list[str]) -> tuple[int, float, float]:
    """Exit status, peak RSS in bytes and seconds of `command`, measured in a process of its own (getrusage of
    the children of a fresh interpreter, so that one measurement does not carry another's peak)."""
    probe = ("import resource, subprocess, sys, time; start = time.perf_counter(); "
             "status = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode; "
             "print(status, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024, "
             "time.perf_counter() - start)")
    status, peak, seconds = subprocess.run([sys.executable, "-c", probe, *command], capture_output=True, text=True,
                                           check=True).stdout.split()
    return int(status), float(peak), float(seconds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=200, help="size of the generated table in MB (default 200)")
    parser.add_argument("--doctor-only", action="store_true", help="measure mpistack doctor FILE alone")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="mpistack-bench-ingest-memory-") as directory:
        table = Path(directory) / "osu_bw.txt"
        rows = write_table(table, options.mb)
        size = table.stat().st_size
        if not options.doctor_only:
            command = [sys.executable, "-m", "mpistack.cli", "--db", str(Path(directory) / "big.db"), "ingest",
                       str(table), "-t", "stack=bench", "-t", "approach=native"]
            start = time.perf_counter()
            result = subprocess.run(command, capture_output=True, text=True)
            elapsed = time.perf_counter() - start
            if result.returncode != 0:
                sys.exit(f"ingest failed ({result.returncode}):\n{result.stderr}")
            peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024  # Linux reports KiB
            print(f"ingest memory: {size / 1e6:.0f} MB OSU table ({rows:,} rows) -> peak RSS {peak / 1e6:.0f} MB "
                  f"= {peak / size:.2f} x the file (goal: a small multiple); {elapsed:.1f} s, "
                  f"{rows / elapsed:,.0f} rows/s")
        doctor = [sys.executable, "-m", "mpistack.cli", "doctor", "--json"]
        status, peak, seconds = child_peak([*doctor, str(table)])
        print(f"doctor memory: {size / 1e6:.0f} MB OSU table -> peak RSS {peak / 1e6:.0f} MB = {peak / size:.2f} x the "
              f"file; {seconds:.1f} s (exit status {status})")
        table.unlink()
        log = Path(directory) / "slurm-1.out"
        lines = write_log(log, options.mb)
        size = log.stat().st_size
        status, peak, seconds = child_peak([*doctor, str(log)])
        print(f"doctor memory: {size / 1e6:.0f} MB job log ({lines:,} lines, no table) -> peak RSS {peak / 1e6:.0f} MB "
              f"= {peak / size:.2f} x the file (goal: bounded, whatever the log's size); {seconds:.1f} s "
              f"(exit status {status})")


if __name__ == "__main__":
    main()
