"""How reproducible the answer is: the same campaign run several times back to back, and the share of compared rows
that get the same class every time (prints figures; not a test).

    python benchmarks/agreement.py [CAMPAIGN] [--runs 3] [--db agreement.db]

Each run is a complete `mpistack run` of the campaign (default: examples/local.toml, what `make run` runs) into
one store; the answers of its campaigns are then set side by side, row by row (stack, approach, variant,
benchmark, placement, buffers, baseline).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from mpistack.analysis.answers import Settings, answer
from mpistack.analysis.evidence import load_rows
from mpistack.store import open_database
from mpistack.store.query import Where


def run_campaign(db: Path, campaign: Path) -> float:
    start = time.perf_counter()
    subprocess.run([str(Path(sys.executable).with_name("mpistack")), "--db", str(db), "run", str(campaign)],
                   check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def classes_of(engine, campaign_id: int, settings: Settings) -> dict[tuple, str]:
    out = {}
    for result in answer(load_rows(engine, [Where("campaign", "=", campaign_id)]), settings):
        key = result.key
        out[(key.stack, key.approach, key.variant, key.benchmark, key.metric, key.ranks, key.nodes, key.buffers,
             result.baseline)] = result.label
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("campaign", nargs="?", default="examples/local.toml", type=Path)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--db", type=Path, default=Path("agreement.db"))
    args = parser.parse_args()
    engine = open_database(str(args.db))
    with engine.connect() as connection:
        first = connection.exec_driver_sql("SELECT COALESCE(MAX(id), 0) FROM campaigns").scalar()
    for number in range(1, args.runs + 1):
        print(f"run {number}/{args.runs}: {run_campaign(args.db, args.campaign):.0f} s", flush=True)
    settings = Settings()
    runs = [classes_of(engine, first + number, settings) for number in range(1, args.runs + 1)]
    rows = sorted(set().union(*runs))
    same = [row for row in rows if len({run.get(row) for run in runs}) == 1]
    print(f"{len(same)} of {len(rows)} rows ({len(same) / len(rows):.1%}) got the same class in all {args.runs} runs")
    for number, run in enumerate(runs, start=1):
        print(f"  run {number}: " + ", ".join(f"{label} {count}" for label, count in sorted(Counter(run.values()).items())))
    for row in rows:
        if row not in same:
            print("  differs: " + " · ".join(str(part) for part in row[:4]) + f" vs {row[-1]}: "
                  + " / ".join(run.get(row, "-") for run in runs))


if __name__ == "__main__":
    main()
