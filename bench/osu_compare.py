#!/usr/bin/env python3
"""bw and bibw at 1 MiB and 2 MiB: OSU 7.4's osu_bw and osu_bibw beside mpistack-bench with OSU's fixed counts
and mpistack-bench adaptive (--stop ci:REL), several launches of each, interleaved.

OSU 7.4 is built from its release tarball against the same MPI (mpicc), once, into --build. The tarball is
checked against the sha256 pinned in src/mpistack/data/versions.toml, which names where the pin comes from
(Spack's osu-micro-benchmarks package.py); nothing is downloaded: a machine that cannot reach the release must
be given the file (--tarball). Each round launches every arm once per test, the order rotated from round to
round, so that every arm sees the machine's fast and slow spells alike.

Prints, per test and size, each arm's median over its launches (MB/s), the spread of those launches (their
range in % of the median), and whether each pair of arms agrees within noise: their medians differ by no more
than the wider of the two spreads plus --tolerance. Standard library only; run by `make -C bench osu-compare`.
Exit status: 0 every arm ran; 2 OSU could not be built (the mpistack-bench arms are still measured and
printed); 1 a launch failed.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import shlex
import statistics
import subprocess
import sys
import tarfile
import tomllib
from pathlib import Path

HERE = Path(__file__).resolve().parent
VERSIONS = HERE.parent / "src" / "mpistack" / "data" / "versions.toml"
VERSION = "7.4"
TESTS = ("bw", "bibw")
SIZES = (1 << 20, 2 << 20)
ARMS = ("osu", "fixed", "adaptive")


def pin() -> tuple[str, str, str]:
    """(sha256, url, where the pin comes from) of OSU 7.4, from the project's pinned versions."""
    table = tomllib.loads(VERSIONS.read_text())["osu"]
    return table["versions"][VERSION], table["url"].format(version=VERSION), table["source"]


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def build_osu(tarball: Path, build: Path, mpicc: str) -> tuple[dict[str, Path], str]:
    """The osu_bw and osu_bibw binaries (test -> path), built once; or ({}, why not)."""
    expected, url, source = pin()
    if not tarball.is_file():
        return {}, (f"{tarball}: no such file; OSU {VERSION} is not downloaded here: fetch {url} where the "
                    f"network allows (sha256 {expected}, pinned from {source}) and give it with "
                    f"--tarball (make -C bench osu-compare OSU_TARBALL=PATH)")
    if (found := sha256(tarball)) != expected:
        return {}, f"{tarball}: sha256 {found} is not the pinned {expected} ({source}); not built"
    source_dir = build / f"osu-micro-benchmarks-{VERSION}"
    if len(binaries := osu_binaries(source_dir)) == len(TESTS):
        return binaries, ""  # built before
    build.mkdir(parents=True, exist_ok=True)
    with tarfile.open(tarball) as archive:
        archive.extractall(build, filter="data")
    log = build / "build.log"
    with log.open("w") as out:
        for step in (["./configure", f"CC={mpicc}", f"CXX={mpicc.replace('mpicc', 'mpicxx')}"],
                     ["make", f"-j{os.cpu_count() or 1}"]):
            if subprocess.run(step, cwd=source_dir, stdout=out, stderr=subprocess.STDOUT).returncode:
                return {}, f"OSU {VERSION}: `{shlex.join(step)}` failed in {source_dir}; see {log}"
    if len(binaries := osu_binaries(source_dir)) != len(TESTS):
        return {}, f"OSU {VERSION} built, but no osu_bw or osu_bibw under {source_dir}/c/mpi/pt2pt"
    return binaries, ""


def osu_binaries(source_dir: Path) -> dict[str, Path]:
    """test -> its built OSU binary, for those there are."""
    found = {}
    for test in TESTS:
        built = [path for path in sorted(source_dir.glob(f"c/mpi/pt2pt/**/osu_{test}")) if os.access(path, os.X_OK)]
        if built:
            found[test] = built[0]
    return found


def run(cmd: list[str]) -> str:
    env = dict(os.environ)
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if proc.returncode:
        sys.exit(f"failed ({proc.returncode}): {shlex.join(cmd)}\n{proc.stderr}")
    return proc.stdout


def osu_figures(text: str) -> dict[int, float]:
    """size -> MB/s from OSU's text output (comment lines start with #)."""
    figures = {}
    for line in text.splitlines():
        fields = line.split()
        if len(fields) >= 2 and fields[0].isdigit():
            figures[int(fields[0])] = float(fields[1])
    return figures


def bench_figures(path: Path) -> dict[int, float]:
    """size -> the median MB/s of an mpistack-bench JSON document."""
    document = json.loads(path.read_text())
    return {row["size"]: row["stats"]["median"] for row in document["results"]}


def measure(a, osu: dict[str, Path], out: Path) -> dict[tuple[str, str, int], list[float]]:
    """(arm, test, size) -> the figure of each launch, over --rounds rounds, the arms' order rotated."""
    sizes = f"{min(SIZES)}:{max(SIZES)}"
    launch = shlex.split(a.launch)
    arms = [arm for arm in ARMS if arm != "osu" or osu]
    figures: dict[tuple[str, str, int], list[float]] = {}
    for r in range(a.rounds):
        for index, test in enumerate(TESTS):
            shift = (r + index) % len(arms)
            for arm in arms[shift:] + arms[:shift]:
                if arm == "osu":
                    found = osu_figures(run(launch + [str(osu[test]), "-m", sizes]))
                else:
                    path = out / f"{arm}{r}.{test}.json"
                    rule = ["--stop", a.stop] if arm == "adaptive" else []
                    run(launch + [a.bin, test, "-m", sizes, *rule, "--json", str(path)])
                    found = bench_figures(path)
                for size in SIZES:
                    figures.setdefault((arm, test, size), []).append(found[size])
        print(f"# round {r + 1}/{a.rounds} done", flush=True)
    return figures


def spread(values: list[float]) -> float:
    """The launches' range in % of their median."""
    return 100.0 * (max(values) - min(values)) / statistics.median(values)


def agree(one: list[float], other: list[float], tolerance: float) -> tuple[float, bool]:
    """The medians' difference in % of the first, and whether it lies within the wider spread plus the
    tolerance."""
    first, second = statistics.median(one), statistics.median(other)
    diff = 100.0 * (second - first) / first
    return diff, abs(diff) <= max(spread(one), spread(other)) + 100.0 * tolerance


def report(figures: dict[tuple[str, str, int], list[float]], tolerance: float) -> int:
    """The table; returns the pairs that do not agree."""
    arms = [arm for arm in ARMS if any(key[0] == arm for key in figures)]
    print(f"\n# MB/s: median over launches [spread: range in % of the median]; agree: medians within the wider "
          f"spread + {100 * tolerance:g}%")
    print(f"{'test':<5} {'size':>8}  " + "  ".join(f"{arm:>20}" for arm in arms))
    pairs = [(a, b) for i, a in enumerate(arms) for b in arms[i + 1:]]
    apart = 0
    for test in TESTS:
        for size in SIZES:
            cells = [f"{statistics.median(v):>9.1f} [{spread(v):5.1f}%]"
                     for v in (figures[(arm, test, size)] for arm in arms)]
            print(f"{test:<5} {size >> 20:>6} M  " + "  ".join(f"{cell:>20}" for cell in cells))
            for one, other in pairs:
                diff, ok = agree(figures[(one, test, size)], figures[(other, test, size)], tolerance)
                apart += not ok
                print(f"{'':<16}{other} vs {one}: {diff:+.1f}%  {'agree' if ok else 'APART'}")
    return apart


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", required=True, help="mpistack-bench")
    ap.add_argument("--launch", required=True, help='the launcher, e.g. "mpiexec.mpich -bind-to core -n 2"')
    ap.add_argument("--mpicc", default="mpicc.mpich", help="the MPI compiler OSU is built with")
    ap.add_argument("--tarball", type=Path, default=HERE / f"osu-micro-benchmarks-{VERSION}.tar.gz")
    ap.add_argument("--build", type=Path, default=HERE / "build-osu")
    ap.add_argument("--rounds", type=int, default=5, help="launches of each arm per test (default 5)")
    ap.add_argument("--stop", default="ci:0.05", help="the adaptive arm's stop rule (default ci:0.05)")
    ap.add_argument("--tolerance", type=float, default=0.02,
                    help="added to the spread when judging agreement, as a fraction (default 0.02)")
    a = ap.parse_args()
    if a.rounds < 2:
        ap.error(f"--rounds {a.rounds}: expected at least 2 launches per arm (a spread needs two)")
    osu, why = build_osu(a.tarball, a.build, a.mpicc)
    if why:
        print(f"# OSU {VERSION} not run: {why}", flush=True)
    out = a.build / "results"
    out.mkdir(parents=True, exist_ok=True)
    uptime = Path("/proc/loadavg").read_text().split()[:3] if Path("/proc/loadavg").exists() else []
    print(f"# {a.launch}; {a.rounds} rounds; load average at the start {' '.join(uptime)}", flush=True)
    apart = report(measure(a, osu, out), a.tolerance)
    print(f"\n{apart} pair(s) apart" + (f"; OSU {VERSION} not run (why: the first line)" if why else ""))
    return 2 if why else 0


if __name__ == "__main__":
    sys.exit(main())
