"""Does running each case in a cgroup of its own change what it measures? Launches of the host's
mpistack-bench under the local launcher, with a cgroup per case and with the environment fallback (the
processes then stay in the runner's cgroup), interleaved in a random order (prints figures; not a test).

    python benchmarks/containment.py [--launches 10] [--iterations 2000]

Prints, per containment, the median over launches of the 1-byte and 1 KiB latency and of the launch's wall
time, the two-sided Mann-Whitney p-value of each column (launches here fall into a fast and a slow mode for
seconds at a time, so one run of this script decides little), and the time the launcher takes to end a
timed-out MPI case (limit 0.5 s).
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

from scipy.stats import mannwhitneyu

from mpistack.images.host_bench import host_bench_path
from mpistack.launchers.base import LaunchPlan
from mpistack.launchers.local import HOST_LAUNCHERS, LocalLauncher
from mpistack.parsers.osu_text import parse_osu_text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--launches", type=int, default=10)
    parser.add_argument("--iterations", type=int, default=2000)
    options = parser.parse_args()
    bench = host_bench_path("mpich")
    if not bench.exists():
        raise SystemExit(f"{bench} is missing: `make bench-build` (or a campaign's prepare stage) builds it")
    mpiexec = HOST_LAUNCHERS["mpich"]
    plan = LaunchPlan(argv=[mpiexec, "-n", "2", str(bench), "latency", "-m", "1:1024", "-i",
                            str(options.iterations), "-x", "100"], env={"UCX_TLS": "self,sm"}, output=None)
    samples: dict[str, list[tuple[float, float, float]]] = {"cgroup": [], "environment": []}
    order = [mode for _ in range(options.launches) for mode in samples]
    random.shuffle(order)
    for mode in order:
        execution = LocalLauncher(cgroups=mode == "cgroup").execute(plan, timeout=120)
        assert execution.facts["containment"] == mode and execution.exit_code == 0, execution.stderr[-500:]
        rows = {row.size: row.values["latency"] for row in parse_osu_text(execution.stdout, "latency")[0].rows}
        samples[mode].append((rows[1], rows[1024], execution.seconds))
    print(f"{options.launches} launches each, interleaved; medians over launches")
    print(f"{'containment':<12} {'1 B (us)':>9} {'1 KiB (us)':>10} {'launch (s)':>10}")
    for mode, values in samples.items():
        one, kib, wall = (statistics.median(column) for column in zip(*values))
        print(f"{mode:<12} {one:>9.2f} {kib:>10.2f} {wall:>10.2f}")
    p_values = [mannwhitneyu(a, b).pvalue for a, b in zip(zip(*samples["cgroup"]), zip(*samples["environment"]))]
    print(f"{'p (M-W)':<12} {p_values[0]:>9.3f} {p_values[1]:>10.3f} {p_values[2]:>10.3f}")
    hang = LaunchPlan(argv=[mpiexec, "-n", "2", "sh", "-c", "setsid sleep 1000 & sleep 1000"], env={},
                      output=None)
    for mode in samples:
        ends = []
        for _ in range(5):
            started = time.monotonic()
            LocalLauncher(cgroups=mode == "cgroup").execute(hang, timeout=0.5)
            ends.append(time.monotonic() - started - 0.5)
        print(f"{mode:<12} ends a timed-out case in {statistics.median(ends):.2f} s (median of 5)")


if __name__ == "__main__":
    main()
