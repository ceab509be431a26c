"""How reproducible the answer is: the share of compared rows that get the same class when a campaign is run again.

Prints figures; it is not a test.

    python benchmarks/agreement.py [CAMPAIGN] [--runs 3] [--db agreement.db]
    python benchmarks/agreement.py --campaigns 1,2,3 [--db agreement.db]
    python benchmarks/agreement.py --modes 2 [--db agreement.db]
    python benchmarks/agreement.py --replay 8,16,32 [--db agreement.db] [--trials 6] [--floor 0.1]

Each run is a complete `mpistack run` of the campaign (default: examples/local.toml, what `make run` runs) into
one store; the answers of its campaigns are then set side by side, row by row (stack, approach, variant,
benchmark, placement, buffers, baseline).

Besides the share of rows with one class in every run, it counts the rows that *contradict* themselves: `Y` in
one run and `(Y)` in another. A row that is `?` in one run and decided in another is a run that could not
decide and said so; a contradiction would be a wrong answer.

`--replay N,...` runs nothing: it pools the launches of every campaign stored in the database, case by case, and
draws campaigns of N launches per case from that pool (with replacement, whole launches, so the figures of one
launch stay together), three at a time, to estimate how the agreement would change with more or fewer launches.
The pool stands in for the machine, so it is an estimate for this machine's noise, not a measurement.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import random
import signal
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from mpistack.analysis.answers import Settings, answer
from mpistack.analysis.evidence import Row, RowKey, load_rows
from mpistack.analysis.statistics import DEFAULT_FLOOR
from mpistack.store import open_database
from mpistack.store.query import Where, campaign_summaries, query_results, query_runs

ClassKey = tuple  # a compared row without its scope: key fields and the baseline it was compared with
Launch = dict  # one launch of a row: its figure per size


def run_campaign(db: Path, campaign: Path) -> float:
    start = time.perf_counter()
    subprocess.run([str(Path(sys.executable).with_name("mpistack")), "--db", str(db), "run", str(campaign)],
                   check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def classes_of(rows: dict[RowKey, Row], settings: Settings) -> dict[ClassKey, str]:
    out = {}
    for result in answer(rows, settings):
        key = result.key
        out[(key.stack, key.approach, key.variant, key.benchmark, key.metric, key.ranks, key.nodes, key.buffers,
             result.baseline)] = result.label
    return out


def stored_campaigns(engine) -> list[int]:
    """The ids of the campaigns in the store, oldest first."""
    return [summary["id"] for summary in campaign_summaries(engine)]


def campaign_rows(engine, campaign_id: int) -> dict[RowKey, Row]:
    return load_rows(engine, [Where("campaign", "=", campaign_id)])


def agreement(runs: list[dict[ClassKey, str]]) -> tuple[list[ClassKey], list[ClassKey], list[ClassKey]]:
    """The rows compared in any of the runs, those with one class in all of them, and those that contradict
    themselves (Y in one run, (Y) in another)."""
    rows = sorted(set().union(*runs))
    same = [row for row in rows if len({run.get(row) for run in runs}) == 1]
    contradicting = [row for row in rows if {"Y", "(Y)"} <= {run.get(row) for run in runs}]
    return rows, same, contradicting


def report(runs: list[dict[ClassKey, str]]) -> None:
    """Print how far the runs agree, the classes of each and the rows that differ."""
    rows, same, contradicting = agreement(runs)
    print(f"{len(same)} of {len(rows)} rows ({len(same) / len(rows):.1%}) got the same class in all {len(runs)} runs; "
          f"{len(contradicting)} row(s) were Y in one run and (Y) in another")
    for number, run in enumerate(runs, start=1):
        counts = sorted(Counter(run.values()).items())
        print(f"  run {number}: " + ", ".join(f"{label} {count}" for label, count in counts))
    for row in rows:
        if row not in same:
            print("  differs: " + " · ".join(str(part) for part in row[:4]) + f" vs {row[-1]}: "
                  + " / ".join(run.get(row, "-") for run in runs))


# --- replay: campaigns drawn from the stored launches -------------------------------------------------------------

REPLAY = "replay"


def pooled_launches(engine, campaign_ids: list[int]) -> dict[RowKey, tuple[Row, list[Launch]]]:
    """Every case's launches over the given campaigns, as (a row to copy, its launches). Only sizes that every
    launch of a campaign's row reports are kept, so that a drawn launch is always whole."""
    pool: dict[RowKey, tuple[Row, list[Launch]]] = {}
    for campaign_id in campaign_ids:
        for key, row in campaign_rows(engine, campaign_id).items():
            key = key.with_(scope=REPLAY)
            whole = {size: values for size, values in row.figures.items() if len(values) == row.launches}
            launches = [{size: values[index] for size, values in whole.items()} for index in range(row.launches)]
            if key in pool:
                template, earlier = pool[key]
                earlier.extend(launches)
                template.failures.extend(row.failures)
                template.skipped.extend(row.skipped)
                template.library_versions.update(row.library_versions)
            else:
                template = dataclasses.replace(row, key=key, figures={}, launches=0, runs=[],
                                               failures=list(row.failures), skipped=list(row.skipped),
                                               library_versions=set(row.library_versions))
                pool[key] = (template, launches)
    return pool


def drawn_campaign(pool: dict[RowKey, tuple[Row, list[Launch]]], launches: int,
                   rng: random.Random) -> dict[RowKey, Row]:
    """One campaign of ``launches`` launches per case, drawn with replacement from the pool."""
    rows = {}
    for key, (template, pooled) in pool.items():
        drawn = [rng.choice(pooled) for _ in range(launches)] if pooled else []
        sizes = set(drawn[0]).intersection(*drawn[1:]) if drawn else set()
        rows[key] = dataclasses.replace(template, figures={size: [launch[size] for launch in drawn] for size in sizes},
                                        launches=len(drawn), failures=list(template.failures))
    return rows


def replay(engine, counts: list[int], trials: int, runs: int, seed: int, settings: Settings,
           campaign_ids: list[int] | None = None) -> None:
    """Agreement of drawn campaigns; the pool is every stored campaign, or the ones named."""
    campaign_ids = campaign_ids or stored_campaigns(engine)
    pool = pooled_launches(engine, campaign_ids)
    per_case = sorted(len(launches) for _, launches in pool.values() if launches)
    print(f"pool: {len(campaign_ids)} campaign(s), {len(pool)} cases, "
          f"{per_case[len(per_case) // 2] if per_case else 0} launches per case (median); the shares below are of "
          "compared rows (a case against each of its baselines)")
    rng = random.Random(seed)
    print(f"{'launches':>8}  {'same class':>10}  {'contradicting':>13}  classes (share of all compared rows drawn)")
    for count in counts:
        shares, contradictions, labels = [], 0, Counter()
        for _ in range(trials):
            drawn = [classes_of(drawn_campaign(pool, count, rng), settings) for _ in range(runs)]
            for classes in drawn:
                labels.update(classes.values())
            rows, same, contradicting = agreement(drawn)
            shares.append(len(same) / len(rows))
            contradictions += len(contradicting)
        total = sum(labels.values())
        print(f"{count:>8}  {sum(shares) / len(shares):>10.1%}  {contradictions / trials:>13.2f}  "
              + ", ".join(f"{label} {labels[label] / total:.0%}" for label in ("Y", "(Y)", "?", "N")))


# --- modes: whole launches that run slow ---------------------------------------------------------------------------

SLOW = math.log(1.25)  # a launch more than 25% slower than its case's median, at the median of its sizes


def launch_modes(engine, campaign_id: int) -> None:
    """How often whole launches of a campaign run slow, whether slow launches come in clusters, and in which
    approaches: each launch's slowness is the median over its sizes of log(figure / its case's median figure),
    oriented so that positive is slower."""
    filters = [Where("campaign", "=", campaign_id), Where("status", "=", "ok")]
    figures: dict[int, dict] = {}
    for result in query_results(engine, filters):
        if result["value"] > 0:
            figures.setdefault(result["run"], {})[(result["size"], result["metric"])] = result["value"]
    # in the order they were recorded, which is the order a local campaign launched them in
    runs = [(run["run"], run["stack"], run["approach"], run["benchmark"], run["tags"].get("variant"))
            for run in query_runs(engine, filters)]
    cases: dict[tuple, list[int]] = {}
    for run_id, *case in runs:
        cases.setdefault(tuple(case), []).append(run_id)
    medians = {}
    for case, ids in cases.items():
        for point in {point for run_id in ids for point in figures.get(run_id, {})}:
            medians[case, point] = statistics.median(figures[i][point] for i in ids if point in figures.get(i, {}))
    slowness, approaches = [], []
    for run_id, *case in runs:
        logs = [math.log(value / medians[tuple(case), point]) * (-1 if case[2] in ("bw", "bibw") else 1)
                for point, value in figures.get(run_id, {}).items()]
        slowness.append(statistics.median(logs) if logs else 0.0)
        approaches.append(case[1])
    if not slowness:
        print(f"campaign {campaign_id}: no launch ended ok, so none can be compared with its case")
        return
    slow = [value > SLOW for value in slowness]
    after_slow = [now for before, now in zip(slow, slow[1:]) if before]
    lags = {lag: statistics.correlation(slowness[:-lag], slowness[lag:]) if len(slowness) > lag + 2 else math.nan
            for lag in (1, 24)}
    print(f"campaign {campaign_id}: {len(slow)} launches, {sum(slow) / len(slow):.0%} more than 25% slower than "
          f"their case's median; after a slow launch the next is slow in "
          f"{sum(after_slow) / max(len(after_slow), 1):.0%}; autocorrelation of slowness {lags[1]:.2f} at lag 1, "
          f"{lags[24]:.2f} at lag 24")
    for approach in sorted(set(approaches)):
        of = [flag for flag, name in zip(slow, approaches) if name == approach]
        print(f"  {approach}: {sum(of) / len(of):.0%} of {len(of)} launches slow")


def _numbers(parser: argparse.ArgumentParser, option: str, text: str | None, least: int) -> list[int]:
    """A comma-separated list of whole numbers of at least `least`, or a usage error naming the option."""
    try:
        numbers = [int(part) for part in (text or "").split(",") if part.strip()]
    except ValueError:
        parser.error(f"{option} {text!r}: expected whole numbers separated by commas")
    if any(number < least for number in numbers):
        parser.error(f"{option} {text!r}: every number must be at least {least}")
    return numbers


def _stored(parser: argparse.ArgumentParser, engine, option: str, campaign_ids: list[int]) -> None:
    """A usage error for campaign ids the store does not hold."""
    known = stored_campaigns(engine)
    missing = [number for number in campaign_ids if number not in known]
    if missing:
        parser.error(f"{option}: no campaign {', '.join(map(str, missing))} in the store "
                     f"(it holds {', '.join(map(str, sorted(known))) or 'none'})")


def main() -> None:
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `| head` ends the listing quietly
    parser = argparse.ArgumentParser(
        description="How often the same campaign, run again, gets the same class per compared row. Without "
                    "--campaigns, --modes or --replay it RUNS the campaign --runs times into --db (the default "
                    "campaign takes about 9 minutes a run on 2 cores).",
)
    parser.add_argument("campaign", nargs="?", default="examples/local.toml", type=Path,
                        help="the campaign file to run (default: %(default)s)")
    parser.add_argument("--runs", type=int, default=3,
                        help="runs back to back, and drawn campaigns per replay trial (default: %(default)s)")
    parser.add_argument("--db", type=Path, default=Path("agreement.db"),
                        help="the store the runs go into (default: %(default)s)")
    parser.add_argument("--campaigns", help="stored campaign ids to set side by side, comma-separated (runs "
                                            "nothing); with --replay, the campaigns whose launches are pooled "
                                            "(default: all)")
    parser.add_argument("--modes", type=int, metavar="CAMPAIGN",
                        help="how often whole launches of a stored campaign run slow (runs nothing)")
    parser.add_argument("--replay", metavar="N,...", help="launches per case to draw, comma-separated (runs nothing)")
    parser.add_argument("--trials", type=int, default=6,
                        help="replay: sets of --runs drawn campaigns per count (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=1, help="replay: seed of the draws (default: %(default)s)")
    parser.add_argument("--floor", type=float, default=DEFAULT_FLOOR.relative,
                        help="the relative practical floor the classes are judged with (default: %(default)s)")
    args = parser.parse_args()
    if not 0 < args.floor < 1:
        parser.error(f"--floor {args.floor}: expected a fraction between 0 and 1, e.g. 0.1 for 10%")
    if args.runs < 2 or args.trials < 1:
        parser.error("--runs must be at least 2 and --trials at least 1")
    settings = Settings(floor=dataclasses.replace(DEFAULT_FLOOR, relative=args.floor))
    campaign_ids = _numbers(parser, "--campaigns", args.campaigns, 1)
    reading = args.replay or args.modes is not None or campaign_ids
    if reading and not args.db.exists():
        parser.error(f"{args.db} does not exist: run `make agreement` first, or name a store with --db")
    engine = open_database(str(args.db))
    if reading:
        _stored(parser, engine, "--modes" if args.modes is not None else "--campaigns",
                [args.modes] if args.modes is not None else campaign_ids)
    if args.replay:
        replay(engine, _numbers(parser, "--replay", args.replay, 2), args.trials, args.runs, args.seed, settings,
               campaign_ids)
    elif args.modes is not None:
        launch_modes(engine, args.modes)
    elif campaign_ids:
        report([classes_of(campaign_rows(engine, number), settings) for number in campaign_ids])
    else:
        first = max(stored_campaigns(engine), default=0)
        for number in range(1, args.runs + 1):
            print(f"run {number}/{args.runs}: {run_campaign(args.db, args.campaign):.0f} s", flush=True)
        report([classes_of(campaign_rows(engine, first + number), settings) for number in range(1, args.runs + 1)])


if __name__ == "__main__":
    main()
