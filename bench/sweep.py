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
import math
import os
import random
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TESTS = ["latency", "bw", "bibw", "allreduce", "alltoall"]
FORMS = {"osu": ("OSU-style launches, fixed counts", "one suite launch, adaptive"),
         "suite": ("one suite launch, fixed counts", "one suite launch, adaptive"),
         "per-test": ("a launch per test, fixed counts", "a launch per test, adaptive"),
         "in-launch": ("fixed-count blocks", "adaptive blocks, in the same launches")}
GOAL_SPEEDUP = 3.0
#: the resolution of the figures mpistack-bench writes (two decimals, as OSU prints them)
RESOLUTION = 0.01


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


def split_suite(path: Path, name) -> None:
    """A suite launch's documents, one file per test as a launch of its own writes it."""
    for test, rows in load(path).items():
        name(test).write_text(json.dumps({"benchmark": test, "results": list(rows.values())}))


def spread(values: list[float]) -> str:
    return f"{min(values):.2f}-{max(values):.2f}"


def run_rounds(a, tests: list[str], base: list[str], extra: list[str], out: Path):
    """Both arms per round, alternating the order; returns their wall times per round. --form: "osu" (a launch
    per test with fixed counts against one adaptive suite launch), "suite" (both arms one suite launch) or
    "per-test" (both arms a launch per test, the two launches of each test back to back, interleaved)."""
    fixed_walls, adapt_walls = [], []
    adaptive_rule = ["--stop", a.stop] + (["--stop-min", str(a.stop_min)] if a.stop_min else [])
    for r in range(a.rounds):
        def fixed_test(t: str) -> float:
            return launch(base + [t, "--json", str(out / f"fixed{r}.{t}.json")] + extra)

        def adaptive_test(t: str) -> float:
            return launch(base + [t] + adaptive_rule + ["--json", str(out / f"adapt{r}.{t}.json")] + extra)

        def suite(arm: str, rule: list[str]) -> float:
            wall = launch(base + ["--suite", ",".join(tests)] + rule + ["--json", str(out / f"{arm}{r}.json")]
                          + extra)
            split_suite(out / f"{arm}{r}.json", lambda t: out / f"{arm}{r}.{t}.json")
            return wall

        if a.form == "in-launch":  # one launch per test; the binary alternates the arms block by block
            wall = sum(launch(base + [t] + adaptive_rule + ["--stop-check", str(a.pairs), "--json",
                                                             str(out / f"check{r}.{t}.json")] + extra)
                       for t in tests)
            fixed_walls.append(wall)
            adapt_walls.append(wall)
        elif a.form == "per-test":  # finest interleaving: per test, the two arms' launches back to back
            walls = {"fixed": 0.0, "adapt": 0.0}
            for index, t in enumerate(tests):
                order = (("fixed", fixed_test), ("adapt", adaptive_test))
                for arm, run in (order if (r + index) % 2 == 0 else order[::-1]):
                    walls[arm] += run(t)
            fixed_walls.append(walls["fixed"])
            adapt_walls.append(walls["adapt"])
        else:
            def fixed() -> float:
                return suite("fixed", []) if a.form == "suite" else sum(fixed_test(t) for t in tests)

            def adaptive() -> float:
                return suite("adapt", adaptive_rule)

            if r % 2 == 0:
                fixed_walls.append(fixed())
                adapt_walls.append(adaptive())
            else:
                adapt_walls.append(adaptive())
                fixed_walls.append(fixed())
        print(f"# round {r + 1}/{a.rounds}: fixed {fixed_walls[-1]:.2f} s, "
              f"adaptive {adapt_walls[-1]:.2f} s", flush=True)
    return fixed_walls, adapt_walls


def arms_of(a, t: str, out: Path) -> tuple[list[dict], list[dict]]:
    """Per round (per block with --form in-launch), size -> row of each arm, for one test."""
    if a.form != "in-launch":
        return ([load(out / f"fixed{r}.{t}.json")[t] for r in range(a.rounds)],
                [load(out / f"adapt{r}.{t}.json")[t] for r in range(a.rounds)])
    arms: tuple[list[dict], list[dict]] = ([], [])
    for r in range(a.rounds):
        rows = load(out / f"check{r}.{t}.json")[t]
        for k in range(a.pairs):
            for arm, name in zip(arms, ("fixed", "adaptive")):  # a block's median, its count not recorded
                arm.append({size: {"stats": {"median": row["stop_check"][name][k]},
                                   "iterations": row["iterations"] if name == "adaptive" else float("nan")}
                            for size, row in rows.items()})
    return arms


def compare_medians(a, tests: list[str], out: Path) -> tuple[int, int, list]:
    """Prints the per-size table; returns (sizes within noise, sizes, worst rows)."""
    hdr = (f"{'test':<10} {'size':>8} {'fixed it':>8} {'adapt it':>8} {'fixed median':>13}"
           f" {'adapt median':>13} {'diff %':>8} {'noise %':>8} {'within':>6}")
    print()
    print("# medians: median over rounds; noise: range of the fixed-count medians over rounds,")
    print(f"# in % of their median; within: adaptive median inside that range widened by"
          f" {100 * a.tolerance:g}% (at least one step of the figures' {RESOLUTION:g} resolution)")
    print(hdr)
    print("-" * len(hdr))
    within, total, worst, noises, diffs = 0, 0, [], [], []
    for t in tests:
        fixed, adapt = arms_of(a, t, out)
        for size in fixed[0]:
            fmeds = [f[size]["stats"]["median"] for f in fixed]
            ameds = [d[size]["stats"]["median"] for d in adapt]
            fmed, amed = statistics.median(fmeds), statistics.median(ameds)
            # a block's median is written with two decimals, as OSU prints its figures: at 0.2 us one step of
            # that resolution is 5 %, more than the floor, so the band is never narrower than one step
            floor = max(a.tolerance * fmed, RESOLUTION)
            ok = min(fmeds) - floor <= amed <= max(fmeds) + floor
            diff = 100.0 * (amed - fmed) / fmed if fmed else 0.0
            noise = 100.0 * (max(fmeds) - min(fmeds)) / fmed if fmed else 0.0
            fit = statistics.median(f[size]["iterations"] for f in fixed)
            ait = statistics.median(d[size]["iterations"] for d in adapt)
            within += ok
            total += 1
            noises.append(noise)
            diffs.append((diff, ok))
            if not ok:
                worst.append((abs(diff), t, size, noise))
            print(f"{t:<10} {size:>8} {'-' if math.isnan(fit) else f'{fit:.0f}':>8} {ait:>8.0f} {fmed:>13.2f} {amed:>13.2f}"
                  f" {diff:>+8.2f} {noise:>8.2f} {'yes' if ok else 'NO':>6}")
    return within, total, sorted(worst, reverse=True), noises, diffs


def chance_within(rounds: int, draws: int = 20000) -> float:
    """The probability that the median of `rounds` launches lies inside the range of `rounds` others drawn from
    the same distribution: what 'within the noise' gives without any bias, where the floor does not help (0.60
    for 3 rounds). Simulated with a fixed seed: it depends on the round count alone."""
    rng = random.Random(0)
    inside = 0
    for _ in range(draws):
        fixed = [rng.random() for _ in range(rounds)]
        inside += min(fixed) <= statistics.median(rng.random() for _ in range(rounds)) <= max(fixed)
    return inside / draws


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
    ap.add_argument("--pairs", type=int, default=8,
                    help="--form in-launch: fixed-count and adaptive blocks per size and launch (default 8)")
    ap.add_argument("--tolerance", type=float, default=0.03,
                    help="practical floor of the noise band, relative (default 0.03)")
    ap.add_argument("--keep", help="directory for the JSON documents (default: temporary)")
    ap.add_argument("--form", choices=FORMS, default="osu",
                    help="osu: a launch per test with fixed counts against one adaptive suite launch (the "
                         "speed-up of the standard sweep); suite: both arms one suite launch; per-test: both arms "
                         "a launch per test, each test's two launches back to back (the stop rule alone differs)")
    a = ap.parse_args()
    if a.rounds < (1 if a.form == "in-launch" else 2):
        ap.error("--rounds must be at least 2: the noise is the spread between fixed-count runs")

    tests = a.tests.split(",")
    base = shlex.split(a.launch) + [a.bin]
    extra = shlex.split(a.extra)
    out = Path(a.keep) if a.keep else Path(tempfile.mkdtemp(prefix="mpistack-sweep-"))
    out.mkdir(parents=True, exist_ok=True)

    print(f"# mpistack-bench sweep: {','.join(tests)}; launcher: {a.launch}; adaptive: {a.stop}"
          f"; arms: {' against '.join(FORMS[a.form])}"
          f"{f' --stop-min {a.stop_min}' if a.stop_min else ''}; rounds: {a.rounds}")
    load_avg = Path("/proc/loadavg").read_text().split()[:3] if Path("/proc/loadavg").exists() \
        else []
    print(f"# load average before: {' '.join(load_avg)}; cores: {os.cpu_count()}")
    fixed_walls, adapt_walls = run_rounds(a, tests, base, extra, out)
    within, total, worst, noises, diffs = compare_medians(a, tests, out)

    fmed, amed = statistics.median(fixed_walls), statistics.median(adapt_walls)
    paired = [f / d for f, d in zip(fixed_walls, adapt_walls)]
    speed = fmed / amed
    print()
    fixed_arm, adapt_arm = FORMS[a.form]
    if a.form == "in-launch":  # both arms in every launch: no speed to compare
        print(f"launches with both arms, block by block: {spread(fixed_walls)} s a round")
    else:
        print(f"{fixed_arm:<34} median {fmed:7.2f} s  (range {spread(fixed_walls)} s)")
        print(f"{adapt_arm:<34} median {amed:7.2f} s  (range {spread(adapt_walls)} s)")
        print(f"speed-up: x{speed:.2f} (ratio of the medians); per round x"
              + ", x".join(f"{p:.2f}" for p in paired)
              + f" (median x{statistics.median(paired):.2f})")
    print(f"adaptive medians within the fixed-count noise: {within}/{total} sizes"
          + ("; outside: " + ", ".join(f"{t} {s} B ({d:.1f}% vs noise {n:.1f}%)"
                                       for d, t, s, n in worst[:5]) if worst else ""))
    # how to read that count: launch modes alone put a size outside now and then; a bias moves sizes one way
    wide = [ok for (_, ok), noise in zip(diffs, noises) if noise > 200 * a.tolerance]
    runs = a.rounds * (a.pairs if a.form == "in-launch" else 1)
    chance = chance_within(runs)
    print(f"without any bias, the median of {runs} adaptive runs lies inside the range of {runs} "
          f"fixed-count ones with probability {chance:.2f}: of the {len(wide)} sizes whose launches differ by more "
          f"than twice the floor, about {chance * len(wide):.0f} would be within by chance; {sum(wide)} are")
    print(f"direction: adaptive above fixed at {sum(d > 0 for d, _ in diffs)} sizes, below at "
          f"{sum(d < 0 for d, _ in diffs)} (median difference {statistics.median(d for d, _ in diffs):+.1f}%)")
    # what one launch's precision target is worth: the fixed-count launches themselves differ by this much
    rel = float(a.stop.split(":", 1)[1]) if a.stop.startswith("ci:") else 0.0
    print(f"fixed-count launches differ between rounds by {statistics.median(noises):.1f}% (median over sizes);"
          f" {sum(n < 100 * rel for n in noises)}/{total} sizes by less than the adaptive +-{100 * rel:g}%")
    if a.form != "osu":  # the speed-up against OSU-style launches is the standard sweep's to show
        goal = within == total
        print(f"goal (every median within the noise): {'met' if goal else 'NOT met'}")
    else:
        goal = speed >= GOAL_SPEEDUP and within == total
        print(f"goal (>= x{GOAL_SPEEDUP:g} and every median within the noise): "
              f"{'met' if goal else 'NOT met'}")
    print(f"JSON documents in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
