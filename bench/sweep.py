#!/usr/bin/env python3
"""Speed of the standard mpistack-bench sweep: one launch per test with OSU's fixed counts
versus one suite launch, fixed versus adaptive (--stop ci:REL).

Prints a table per test and size (fixed OSU figure and median vs the adaptive run, and as a
noise floor the fixed-count median of the per-test launch vs that of the suite launch) and the
wall times with speed-ups. Standard library only; run by `make -C bench sweep`."""
from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TESTS = ["latency", "bw", "bibw", "allreduce", "alltoall"]


def launch(cmd: list[str]) -> float:
    env = dict(os.environ)
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    if env.get("UCX_TLS") == "":
        del env["UCX_TLS"]
    t0 = time.monotonic()
    proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                          env=env)
    wall = time.monotonic() - t0
    if proc.returncode != 0:
        sys.exit(f"failed ({proc.returncode}): {shlex.join(cmd)}\n{proc.stderr}")
    return wall


def load(path: Path) -> dict:
    doc = json.loads(path.read_text())
    return {r["size"]: r for r in doc["results"]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--bin", default="build-sweep/mpistack-bench")
    ap.add_argument("--launch", default="mpiexec.mpich -n 2")
    ap.add_argument("--stop", default="ci:0.02")
    ap.add_argument("--tests", default=",".join(TESTS))
    ap.add_argument("--extra", default="", help="extra options for every run, e.g. '-m 1:65536'")
    ap.add_argument("--tolerance", type=float, default=0.03)
    ap.add_argument("--keep", help="directory for the JSON documents (default: temporary)")
    a = ap.parse_args()

    tests = a.tests.split(",")
    base = shlex.split(a.launch) + [a.bin]
    extra = shlex.split(a.extra)
    out = Path(a.keep) if a.keep else Path(tempfile.mkdtemp(prefix="mpistack-sweep-"))
    out.mkdir(parents=True, exist_ok=True)

    print(f"# mpistack-bench sweep: {','.join(tests)}; launcher: {a.launch}; adaptive: {a.stop}")
    uptime = Path("/proc/loadavg").read_text().split()[:3] if Path("/proc/loadavg").exists() else []
    print(f"# load average before: {' '.join(uptime)}; cores: {os.cpu_count()}")
    walls = {}
    walls["per-test launches, fixed counts"] = sum(
        launch(base + [t, "--json", str(out / f"fixed.{t}.json")] + extra) for t in tests)
    walls["one suite launch, fixed counts"] = launch(
        base + ["--suite", ",".join(tests), "--json", str(out / "suite.json")] + extra)
    walls["per-test launches, adaptive"] = sum(
        launch(base + [t, "--stop", a.stop, "--json", str(out / f"adapt1.{t}.json")] + extra)
        for t in tests)
    walls["one suite launch, adaptive"] = launch(
        base + ["--suite", ",".join(tests), "--stop", a.stop,
                "--json", str(out / "adapt.json")] + extra)

    hdr = (f"{'test':<10} {'size':>8} {'fixed it':>8} {'fixed figure':>13} {'fixed median':>13}"
           f" {'adapt it':>8} {'adapt median':>13} {'adapt figure':>13} {'vs fig %':>8}"
           f" {'vs med %':>8} {'noise %':>8}")
    print()
    print(hdr)
    print("-" * len(hdr))
    diffs, mdiffs, ndiffs, fixed_it, adapt_it = [], [], [], 0, 0
    for t in tests:
        fixed = load(out / f"fixed.{t}.json")
        adapt = load(out / f"adapt.{t}.json")
        rerun = load(out / f"suite.{t}.json")  # the same fixed counts, second launch
        for size, fr in fixed.items():
            ar = adapt[size]
            metric = next(iter(fr["values"]))
            ffig, fmed = fr["values"][metric], fr["stats"]["median"]
            amed, afig = ar["stats"]["median"], ar["values"][metric]
            diff = 100.0 * (amed - ffig) / ffig if ffig else 0.0
            dmed = 100.0 * (amed - fmed) / fmed if fmed else 0.0
            diffs.append((abs(diff), t, size))
            mdiffs.append(abs(dmed))
            rmed = rerun[size]["stats"]["median"]
            noise = 100.0 * (rmed - fmed) / fmed if fmed else 0.0
            ndiffs.append(abs(noise))
            fixed_it += fr["iterations"]
            adapt_it += ar["iterations"]
            print(f"{t:<10} {size:>8} {fr['iterations']:>8} {ffig:>13.2f} {fmed:>13.2f}"
                  f" {ar['iterations']:>8} {amed:>13.2f} {afig:>13.2f} {diff:>+8.2f}"
                  f" {dmed:>+8.2f} {noise:>+8.2f}")
    print()
    ref = walls["per-test launches, fixed counts"]
    for k, v in walls.items():
        print(f"{k:<34} {v:8.2f} s   speed-up x{ref / v:5.2f}")
    print(f"timed iterations: fixed {fixed_it}, adaptive {adapt_it}")
    within = sum(1 for d, _, _ in diffs if d <= 100 * a.tolerance)
    mwithin = sum(1 for d in mdiffs if d <= 100 * a.tolerance)
    worst = max(diffs)
    print(f"\nadaptive median within {100 * a.tolerance:.0f}% of the fixed-count OSU figure: "
          f"{within}/{len(diffs)} sizes (worst {worst[0]:.2f}% at {worst[1]} {worst[2]} B)")
    print(f"adaptive median within {100 * a.tolerance:.0f}% of the fixed-count median: "
          f"{mwithin}/{len(mdiffs)} sizes")
    nwithin = sum(1 for d in ndiffs if d <= 100 * a.tolerance)
    print(f"noise floor: fixed-count medians of two launches (per-test vs suite) within "
          f"{100 * a.tolerance:.0f}%: {nwithin}/{len(ndiffs)} sizes")
    speed = ref / walls["one suite launch, adaptive"]
    goal = speed >= 3.0 and within == len(diffs)
    print(f"goal (>= 3x and all within {100 * a.tolerance:.0f}%): {'met' if goal else 'NOT met'}")
    print(f"JSON documents in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
