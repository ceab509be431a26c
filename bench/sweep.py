#!/usr/bin/env python3
"""Speed of the standard mpistack-bench sweep: OSU-style launches (one per test, OSU's fixed
counts) against one adaptive suite launch (--stop ci:REL), paired and interleaved.

Each round runs both arms, alternating which goes first, so that both see the same machine
state (launches on a shared machine fall into fast and slow modes for seconds at a time). The
report gives, per test and size, the median over rounds of the fixed-count medians and of the
adaptive medians, the spread of the fixed-count medians between rounds (the launch-to-launch
noise), and whether the adaptive median lies within that noise; then the wall times of each
arm (median and range over rounds) and the speed-up, as the ratio of the medians and per round.
Standard library only; run by `make -C bench sweep`."""
from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TESTS = ["latency", "bw", "bibw", "allreduce", "alltoall"]
GOAL_SPEEDUP = 3.0


def launch(cmd: list[str]) -> float:
    """Wall seconds of one launch; stops the sweep with the command and its stderr on failure."""
    env = dict(os.environ)
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    if env.get("UCX_TLS") == "":
        del env["UCX_TLS"]  # an empty UCX_TLS makes MPICH abort in MPI_Init
    t0 = time.monotonic()
    proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                          env=env)
    wall = time.monotonic() - t0
    if proc.returncode != 0:
        sys.exit(f"failed ({proc.returncode}): {shlex.join(cmd)}\n{proc.stderr}")
    return wall


def load(path: Path) -> dict:
    """test -> size -> result row, from an mpistack-bench JSON file: one document, or the array a
    suite launch writes"""
    try:
        data = json.loads(path.read_text())
        docs = data if isinstance(data, list) else [data]
        return {doc["benchmark"]: {r["size"]: r for r in doc["results"]} for doc in docs}
    except (OSError, ValueError, KeyError, TypeError) as exc:
        sys.exit(f"{path}: not an mpistack-bench result document ({exc})")


def spread(values: list[float]) -> str:
    return f"{min(values):.2f}-{max(values):.2f}"


def run_rounds(a, tests: list[str], base: list[str], extra: list[str], out: Path):
    """Both arms per round, alternating the order; returns their wall times per round."""
    fixed_walls, adapt_walls = [], []
    for r in range(a.rounds):
        def fixed() -> float:
            return sum(launch(base + [t, "--json", str(out / f"fixed{r}.{t}.json")] + extra)
                       for t in tests)

        def adaptive() -> float:
            return launch(base + ["--suite", ",".join(tests), "--stop", a.stop]
                          + (["--stop-min", str(a.stop_min)] if a.stop_min else [])
                          + ["--json", str(out / f"adapt{r}.json")] + extra)

        if r % 2 == 0:
            fixed_walls.append(fixed())
            adapt_walls.append(adaptive())
        else:
            adapt_walls.append(adaptive())
            fixed_walls.append(fixed())
        print(f"# round {r + 1}/{a.rounds}: fixed {fixed_walls[-1]:.2f} s, "
              f"adaptive {adapt_walls[-1]:.2f} s", flush=True)
    return fixed_walls, adapt_walls


def compare_medians(a, tests: list[str], out: Path) -> tuple[int, int, list]:
    """Prints the per-size table; returns (sizes within noise, sizes, worst rows)."""
    hdr = (f"{'test':<10} {'size':>8} {'fixed it':>8} {'adapt it':>8} {'fixed median':>13}"
           f" {'adapt median':>13} {'diff %':>8} {'noise %':>8} {'within':>6}")
    print()
    print("# medians: median over rounds; noise: range of the fixed-count medians over rounds,")
    print(f"# in % of their median; within: adaptive median inside that range widened by"
          f" {100 * a.tolerance:g}%")
    print(hdr)
    print("-" * len(hdr))
    within, total, worst, noises = 0, 0, [], []
    for t in tests:
        fixed = [load(out / f"fixed{r}.{t}.json")[t] for r in range(a.rounds)]
        adapt = [load(out / f"adapt{r}.json")[t] for r in range(a.rounds)]
        for size in fixed[0]:
            fmeds = [f[size]["stats"]["median"] for f in fixed]
            ameds = [d[size]["stats"]["median"] for d in adapt]
            fmed, amed = statistics.median(fmeds), statistics.median(ameds)
            floor = a.tolerance * fmed
            ok = min(fmeds) - floor <= amed <= max(fmeds) + floor
            diff = 100.0 * (amed - fmed) / fmed if fmed else 0.0
            noise = 100.0 * (max(fmeds) - min(fmeds)) / fmed if fmed else 0.0
            fit = statistics.median(f[size]["iterations"] for f in fixed)
            ait = statistics.median(d[size]["iterations"] for d in adapt)
            within += ok
            total += 1
            noises.append(noise)
            if not ok:
                worst.append((abs(diff), t, size, noise))
            print(f"{t:<10} {size:>8} {fit:>8.0f} {ait:>8.0f} {fmed:>13.2f} {amed:>13.2f}"
                  f" {diff:>+8.2f} {noise:>8.2f} {'yes' if ok else 'NO':>6}")
    return within, total, sorted(worst, reverse=True), noises


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default="build-sweep/mpistack-bench")
    ap.add_argument("--launch", default="mpiexec.mpich -bind-to core -n 2")
    ap.add_argument("--stop", default="ci:0.05", help="adaptive stop rule (default ci:0.05)")
    ap.add_argument("--stop-min", type=int, default=0,
                    help="--stop-min of the adaptive launch (default: the binary's)")
    ap.add_argument("--tests", default=",".join(TESTS))
    ap.add_argument("--rounds", type=int, default=3,
                    help="paired rounds, each running both arms (default 3, at least 2)")
    ap.add_argument("--extra", default="", help="extra options for every run, e.g. '-m 1:65536'")
    ap.add_argument("--tolerance", type=float, default=0.03,
                    help="practical floor of the noise band, relative (default 0.03)")
    ap.add_argument("--keep", help="directory for the JSON documents (default: temporary)")
    a = ap.parse_args()
    if a.rounds < 2:
        ap.error("--rounds must be at least 2: the noise is the spread between fixed-count runs")

    tests = a.tests.split(",")
    base = shlex.split(a.launch) + [a.bin]
    extra = shlex.split(a.extra)
    out = Path(a.keep) if a.keep else Path(tempfile.mkdtemp(prefix="mpistack-sweep-"))
    out.mkdir(parents=True, exist_ok=True)

    print(f"# mpistack-bench sweep: {','.join(tests)}; launcher: {a.launch}; adaptive: {a.stop}"
          f"{f' --stop-min {a.stop_min}' if a.stop_min else ''}; rounds: {a.rounds}")
    load_avg = Path("/proc/loadavg").read_text().split()[:3] if Path("/proc/loadavg").exists() \
        else []
    print(f"# load average before: {' '.join(load_avg)}; cores: {os.cpu_count()}")
    fixed_walls, adapt_walls = run_rounds(a, tests, base, extra, out)
    within, total, worst, noises = compare_medians(a, tests, out)

    fmed, amed = statistics.median(fixed_walls), statistics.median(adapt_walls)
    paired = [f / d for f, d in zip(fixed_walls, adapt_walls)]
    speed = fmed / amed
    print()
    print(f"{'OSU-style launches, fixed counts':<34} median {fmed:7.2f} s  (range "
          f"{spread(fixed_walls)} s)")
    print(f"{'one suite launch, adaptive':<34} median {amed:7.2f} s  (range "
          f"{spread(adapt_walls)} s)")
    print(f"speed-up: x{speed:.2f} (ratio of the medians); per round x"
          + ", x".join(f"{p:.2f}" for p in paired)
          + f" (median x{statistics.median(paired):.2f})")
    print(f"adaptive medians within the fixed-count noise: {within}/{total} sizes"
          + ("; outside: " + ", ".join(f"{t} {s} B ({d:.1f}% vs noise {n:.1f}%)"
                                       for d, t, s, n in worst[:5]) if worst else ""))
    # what one launch's precision target is worth: the fixed-count launches themselves differ by this much
    rel = float(a.stop.split(":", 1)[1]) if a.stop.startswith("ci:") else 0.0
    print(f"fixed-count launches differ between rounds by {statistics.median(noises):.1f}% (median over sizes);"
          f" {sum(n < 100 * rel for n in noises)}/{total} sizes by less than the adaptive +-{100 * rel:g}%")
    goal = speed >= GOAL_SPEEDUP and within == total
    print(f"goal (>= x{GOAL_SPEEDUP:g} and every median within the noise): "
          f"{'met' if goal else 'NOT met'}")
    print(f"JSON documents in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
