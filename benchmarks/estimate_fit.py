"""The estimate model's constants fitted to a store's history (prints figures; not a test).

`campaign/estimate.py` models a launch as its ranks' start (natively, or a container per rank) plus the messages
its benchmark sends (per size: iterations x messages x a message's time, latency plus copy). Here the launches a
store recorded of the default campaign's benchmarks are grouped by approach and benchmark, and their median
durations fitted, weighted by their count, to start(native or image) + k x the modelled message time:

    .venv/bin/python benchmarks/estimate_fit.py --db mpistack.db

prints START_NATIVE_S, START_CONTAINER_S and the message constants scaled by k, beside each group's median and
what the fitted model says of it.
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

import numpy as np

from mpistack.campaign import estimate as model
from mpistack.campaign.matrix import expand
from mpistack.registry import APPROACHES
from mpistack.spec.campaign import load_campaign
from mpistack.store import open_database
from mpistack.store.campaigns import past_durations

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", type=Path, default=REPO / "mpistack.db", help="the store (default: mpistack.db)")
    parser.add_argument("--campaign-file", type=Path, default=REPO / "examples" / "local.toml")
    options = parser.parse_args()
    campaign = load_campaign(options.campaign_file)
    cases = {}
    for case in expand(campaign):
        cases.setdefault((case.benchmark.name, case.approach.name), case)
    durations = past_durations(open_database(str(options.db)), {b for b, _ in cases}, {a for _, a in cases})
    groups = []
    for (benchmark, approach), seconds in sorted(durations.items()):
        case = cases.get((benchmark, approach))
        if case is None or not seconds:
            continue
        image = APPROACHES.get(approach).image
        work = model.launch_seconds(campaign, case) - (model.START_CONTAINER_S if image else model.START_NATIVE_S)
        groups.append((benchmark, approach, image, work, statistics.median(seconds), len(seconds)))
    if len({image for _, _, image, _, _, _ in groups}) < 2:
        raise SystemExit(f"{options.db}: launches natively and in containers are both needed to fit the model")
    design = np.array([[not image, image, work] for _, _, image, work, _, _ in groups], dtype=float)
    target = np.array([median for *_, median, _ in groups])
    weight = np.sqrt([count for *_, count in groups])
    (native, container, scale), *_ = np.linalg.lstsq(design * weight[:, None], target * weight, rcond=None)
    launches = sum(count for *_, count in groups)
    print(f"{launches} launches of {options.db} in {len(groups)} groups (approach, benchmark):")
    for (benchmark, approach, image, work, median, count), row in zip(groups, design):
        fitted = row @ (native, container, scale)
        print(f"  {approach:<10} {benchmark:<10} {count:>4} launches, median {median:.2f} s, fitted {fitted:.2f} s")
    print(f"START_NATIVE_S = {native:.2f}\nSTART_CONTAINER_S = {container:.2f}\n"
          f"MESSAGE_US = {model.MESSAGE_US * scale:.3g}\nCOPY_BYTES_PER_US = {model.COPY_BYTES_PER_US / scale:.3g}")


if __name__ == "__main__":
    main()
