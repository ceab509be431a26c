"""Soak: small campaigns run at once, into one store and into stores of their own, killed (SIGKILL, SIGTERM)
at random moments and resumed until each is done; then what was lost, stored twice or left running.

    python benchmarks/soak.py [--campaigns 4] [--cases 5] [--kills 8] [--seed N] [--no-container]

Half the campaigns share one SQLite store (each its own name), the other half have a store each and all one
name, `soak` (the collision of two experiments on one login node). Each case is the host's MPICH (Debian's
mpiexec.mpich, one rank) starting a script that sleeps a little and prints OSU latency output whose figure
names the store, the campaign and the case; one campaign adds a `container` case (the pip-mpich image, if it
is built). Each runner is killed at a random moment (SIGKILL: no handler runs; SIGTERM: the runner stops like
Ctrl-C) and started again with `--resume`, until it exits 0 or the time limit passes. Everything lives in a
temporary directory (its own XDG_CACHE_HOME), removed at the end unless --keep.

Prints, and exits 1 unless every one is 0:
  results lost        cases of a campaign with no final run in its store
  duplicates          cases with more than one final run in their campaign
  foreign results     figures in a store that another store's (or another campaign's) case printed
  orphan processes    processes of the soak's cases still running after the last runner ended
  orphan containers   containers of the soak's cases still there
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from mpistack.campaign.matrix import expand, resolve_stacks
from mpistack.campaign.prepare import workdir_for
from mpistack.campaign.stages import case_label
from mpistack.engines import get_engine
from mpistack.spec.campaign import load_campaign
from mpistack.store.address import store_identity

CONTAINER_STACK = "pip-mpich"
SCRIPT = """#!/bin/sh
sleep $(awk 'BEGIN {{ srand({seed} + $$); printf "%.2f", 0.2 + rand() * 1.2 }}')
printf '# OSU MPI Latency Test v7.5\\n# Size       Avg Latency(us)\\n1 %s\\n' "{figure}"
"""


class Soaked:
    """One campaign of the soak: its file, its store, the figures its cases print, its runner."""

    def __init__(self, root: Path, number: int, name: str, store: Path, cases: int, container: bool, seed: int):
        self.name, self.store, self.number = name, store, number
        directory = root / f"campaign-{number}"
        directory.mkdir()
        self.figures: dict[str, float] = {}  # benchmark name -> the figure its case prints
        body = ['order = "random"', "timeout = 60", 'approaches = ["native"]',
                '[[stack]]\nname = "h"\nhost = "mpich"', "[[placement]]\nranks = 1"]
        for case in range(cases):
            benchmark = f"c{case}"
            figure = float(f"{number + 1}{case:03d}.25")  # unique over every campaign and store
            self.figures[benchmark] = figure
            script = directory / f"{benchmark}.sh"
            script.write_text(SCRIPT.format(seed=seed + number * 100 + case, figure=figure))
            script.chmod(0o755)
            body.append(f'[[benchmark]]\nname = "{benchmark}"\nprogram = "{script}"')
        if container:  # the image's own sh, in one container; the figure on stdout
            figure = float(f"{number + 1}999.25")
            self.figures["inside"] = figure
            body[2] = 'approaches = ["native", "container"]'
            body.insert(4, f'[[stack]]\nname = "{CONTAINER_STACK}"')
            body.append('[[benchmark]]\nname = "inside"\nprogram = "sh"\noptions = ["-c", '
                        f'"sleep 0.5; printf \'# OSU MPI Latency Test v7.5\\\\n# Size Avg Latency(us)\\\\n1 {figure}\\\\n\'"]')
            # the one container case: the image's stack in its container; the scripts on the host alone
            body.append(f'[[exclude]]\nstack = "{CONTAINER_STACK}"\napproach = "native"')
            body.append('[[exclude]]\nstack = "h"\napproach = "container"')
            body.append(f'[[exclude]]\nstack = "{CONTAINER_STACK}"\nbenchmark = "c*"')
            body.append('[[exclude]]\nstack = "h"\nbenchmark = "inside"')
        self.path = directory / f"{name}.toml"
        self.path.write_text(f'name = "{name}"\n' + "\n".join(body) + "\n")
        self.process: subprocess.Popen | None = None
        self.starts = 0
        self.done = False

    def start(self, env: dict[str, str], log: Path) -> None:
        argv = [sys.executable, "-m", "mpistack.cli", "run", str(self.path), "--db", str(self.store)]
        if self.starts:
            argv.append("--resume")
        self.starts += 1
        with open(log, "a") as output:
            output.write(f"\n== campaign {self.number} start {self.starts}: {' '.join(argv)}\n")
            output.flush()
            self.process = subprocess.Popen(argv, env=env, stdout=output, stderr=subprocess.STDOUT,
                                            cwd=self.path.parent)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--campaigns", type=int, default=4)
    parser.add_argument("--cases", type=int, default=5)
    parser.add_argument("--kills", type=int, default=8, help="kills in all, at random moments")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--limit", type=float, default=1200, help="seconds before the soak gives up")
    parser.add_argument("--no-container", action="store_true", help="no container case")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    options = parser.parse_args()
    seed = options.seed if options.seed is not None else random.randrange(2**31)
    chance = random.Random(seed)
    if shutil.which("mpiexec.mpich") is None:
        raise SystemExit("Debian's mpich (mpiexec.mpich) is needed: `make host` installs it")
    engine = get_engine("podman")
    container = (not options.no_container and engine.available()
                 and bool(engine.existing_images([_image_ref(CONTAINER_STACK)])))
    root = Path(tempfile.mkdtemp(prefix="mpistack-soak-"))
    env = {**os.environ, "XDG_CACHE_HOME": str(root / "cache"), "MPISTACK_BOUNDS": "off", "COLUMNS": "100"}
    env.pop("MPISTACK_DB", None)
    shared = root / "shared.db"
    campaigns = []
    for number in range(options.campaigns):
        together = number % 2 == 0
        campaigns.append(Soaked(root, number, f"soak-{number}" if together else "soak",
                                shared if together else root / f"own-{number}.db", options.cases,
                                container and number == 1, seed))
    log = root / "runs.log"
    started = time.monotonic()
    kills = {"SIGKILL": 0, "SIGTERM": 0}
    for campaign in campaigns:
        campaign.start(env, log)
    next_kill = started + chance.uniform(2, 10)
    while not all(campaign.done for campaign in campaigns) and time.monotonic() - started < options.limit:
        time.sleep(0.1)
        for campaign in campaigns:
            if campaign.done or campaign.process.poll() is None:
                continue
            if campaign.process.returncode == 0:
                campaign.done = True
            else:  # killed, stopped, or refused while the lock changed hands: on again
                campaign.start(env, log)
        running = [campaign for campaign in campaigns if not campaign.done and campaign.process.poll() is None]
        if running and sum(kills.values()) < options.kills and time.monotonic() >= next_kill:
            victim = chance.choice(running)
            name = chance.choice(["SIGKILL", "SIGKILL", "SIGTERM"])
            victim.process.send_signal(getattr(signal, name))
            kills[name] += 1
            next_kill = time.monotonic() + chance.uniform(1, 8)
    seconds = time.monotonic() - started
    for campaign in campaigns:  # past the limit: stop what still runs, and count it as not done
        if campaign.process.poll() is None:
            campaign.process.send_signal(signal.SIGINT)
            try:
                campaign.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                campaign.process.kill()
    time.sleep(1)  # a killed case's last processes are being ended by the runner that found them
    lost, duplicates, foreign = _check_stores(campaigns)
    processes = _processes_under(root)
    containers = _containers_of(campaigns, engine) if container else []
    resumes = sum(campaign.starts - 1 for campaign in campaigns)
    print(f"soak (seed {seed}): {len(campaigns)} campaigns ({sum(1 for c in campaigns if c.store == shared)} into "
          f"one store, {sum(1 for c in campaigns if c.store != shared)} into stores of their own), "
          f"{options.cases} host cases each" + (", one container case" if container else ", no container case")
          + f"; {kills['SIGKILL']} SIGKILL, {kills['SIGTERM']} SIGTERM, {resumes} resumes; {seconds:.0f} s")
    not_done = [campaign.number for campaign in campaigns if not campaign.done]
    if not_done:
        print(f"not done within {options.limit:.0f} s: campaign(s) {', '.join(map(str, not_done))}")
    figures = {"results lost": len(lost), "duplicates": len(duplicates), "foreign results": len(foreign),
               "orphan processes": len(processes), "orphan containers": len(containers)}
    for what, count in figures.items():
        print(f"{what:<18} {count}")
    for line in [*lost, *duplicates, *foreign, *(f"process {pid}: {text}" for pid, text in processes),
                 *(f"container {name}" for name in containers)][:20]:
        print(f"  {line}")
    if options.keep or any(figures.values()) or not_done:
        print(f"kept: {root} (runs.log has every runner's output)")
    else:
        shutil.rmtree(root, ignore_errors=True)
    raise SystemExit(1 if any(figures.values()) or not_done else 0)


def _image_ref(stack: str) -> str:
    from mpistack.spec import catalogue

    return catalogue.load(stack).image_ref()


def _check_stores(campaigns: list[Soaked]) -> tuple[list[str], list[str], list[str]]:
    """What each store holds against what each campaign's cases printed."""
    lost, duplicates, foreign = [], [], []
    for campaign in campaigns:
        if not campaign.store.exists():
            lost += [f"{campaign.name} {benchmark}: no store" for benchmark in campaign.figures]
            continue
        with sqlite3.connect(campaign.store) as connection:
            rows = connection.execute(
                "SELECT t.value, r.status, (SELECT group_concat(x.value) FROM results x WHERE x.run_id = r.id) "
                "FROM runs r JOIN campaigns c ON c.id = r.campaign_id JOIN run_tags t ON t.run_id = r.id "
                "WHERE c.name = ? AND t.key = 'case'", (campaign.name,)).fetchall()
        final = {}
        for case, status, values in rows:
            benchmark = case.split("/")[2]  # STACK/APPROACH/BENCHMARK/PLACEMENT/BUFFERS/REPEAT
            final.setdefault(benchmark, []).append((status, values))
            if values and {float(value) for value in values.split(",")} != {campaign.figures.get(benchmark)}:
                foreign.append(f"{campaign.store.name} {campaign.name} {benchmark}: figures {values}")
        for benchmark in campaign.figures:
            runs = final.get(benchmark, [])
            if not runs:
                lost.append(f"{campaign.store.name} {campaign.name} {benchmark}: not stored")
            elif len(runs) > 1:
                duplicates.append(f"{campaign.store.name} {campaign.name} {benchmark}: {len(runs)} runs")
            elif runs[0][0] != "ok":
                lost.append(f"{campaign.store.name} {campaign.name} {benchmark}: stored as {runs[0][0]}")
    return lost, duplicates, foreign


def _processes_under(root: Path) -> list[tuple[int, str]]:
    """Live processes whose command line names the soak's directory (its cases' scripts)."""
    needle = str(root).encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            command = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if needle in command:
            found.append((int(entry.name), command.replace(b"\0", b" ").decode(errors="replace")[:120]))
    return found


def _containers_of(campaigns: list[Soaked], engine) -> list[str]:
    """Containers labelled as one of the soak's cases (their labels: the run's work directory and the case)."""
    labels = set()
    for campaign in campaigns:
        spec = load_campaign(campaign.path)
        if not campaign.store.exists():
            continue
        with sqlite3.connect(campaign.store) as connection:
            ids = [row[0] for row in connection.execute("SELECT id FROM campaigns WHERE name = ?", (spec.name,))]
        for campaign_id in ids:
            run = workdir_for(spec, store_identity(str(campaign.store)), campaign_id).name
            labels.update(case_label(spec, case, run) for case in expand(spec, resolve_stacks(spec)))
    listing = subprocess.run(engine.command("ps", "-a", "--format", "{{.Names}} {{.Labels}}"), env=engine.env(),
                             capture_output=True, text=True).stdout
    return [line.split()[0] for line in listing.splitlines()
            if any(f"mpistack.case:{label}" in line or f"mpistack.case={label}" in line for label in labels)]


if __name__ == "__main__":
    main()
