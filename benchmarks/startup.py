"""Start-up time of the mpistack command (prints figures; not a test).

The verbs people type most, each started as a fresh process several times: `mpistack --help`, `mpistack
results` and `mpistack runs` on an empty store, `mpistack stack list`; a bare `python -c pass` beside them
shows what the interpreter alone costs. Goal: --help and results well under 0.5 s. The modules each imports
come from `python -X importtime` (the heaviest few are printed for --help and results).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MPISTACK = [sys.executable, "-m", "mpistack"]


def wall_times(argv: list[str], repeats: int) -> list[float]:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        times.append(time.perf_counter() - start)
    return times


def heaviest_imports(argv: list[str], count: int = 6) -> list[tuple[int, str]]:
    """The top-level packages that took longest to import (cumulative µs), from `python -X importtime`."""
    stderr = subprocess.run([sys.executable, "-X", "importtime", *argv[1:]], capture_output=True, text=True,
                            check=True).stderr
    totals: dict[str, int] = {}
    for line in stderr.splitlines():
        if not line.startswith("import time:") or "|" not in line:
            continue
        _, cumulative, name = line.split("|")
        if name.startswith("  ") or not cumulative.strip().isdigit():
            continue  # only modules imported from the top, so that nothing is counted twice
        package = name.strip().split(".")[0]
        totals[package] = totals.get(package, 0) + int(cumulative)
    return sorted(((micros, name) for name, micros in totals.items()), reverse=True)[:count]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as workdir:
        db = str(Path(workdir) / "empty.db")
        subprocess.run([*MPISTACK, "--db", db, "db", "upgrade"], capture_output=True, check=True)
        commands = {
            "python -c pass": [sys.executable, "-c", "pass"],
            "mpistack --help": [*MPISTACK, "--help"],
            "mpistack results": [*MPISTACK, "--db", db, "results"],
            "mpistack runs": [*MPISTACK, "--db", db, "runs"],
            "mpistack stack list": [*MPISTACK, "stack", "list"],
        }
        print(f"start-up, {options.repeats} fresh processes each (seconds)")
        print(f"{'command':<22}{'min':>8}{'median':>8}{'max':>8}")
        for label, argv in commands.items():
            times = wall_times(argv, options.repeats)
            print(f"{label:<22}{min(times):>8.3f}{statistics.median(times):>8.3f}{max(times):>8.3f}")
        for label in ("mpistack --help", "mpistack results"):
            ranked = ", ".join(f"{name} {micros / 1000:.0f} ms" for micros, name in heaviest_imports(commands[label]))
            print(f"imports of {label}: {ranked}")


if __name__ == "__main__":
    main()
