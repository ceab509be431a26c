"""A small campaign written through the real store writer, with synthetic but realistic figures whose classes are
known, and its report written once for the module's tests."""

from __future__ import annotations

import random
from datetime import datetime, timezone
from pathlib import Path

import pytest
from sqlalchemy import insert

from mpistack.parsers.model import ParsedRow, ParsedRun
from mpistack.spec.provenance import Provenance
from mpistack.spec.status import RunStatus
from mpistack.store import open_database
from mpistack.store.schema import CampaignRow
from mpistack.store.writer import write_runs

SIZES = [4**power for power in range(11)]  # 1 B .. 1 MiB; small messages (below 8 KiB): 1 B .. 4 KiB
LAUNCHES = 8
HOST_LIBRARY = "MPICH Version:\t4.0.2\nMPICH Release date:\tThu Apr  7 12:34:45 CDT 2022"
PIP_LIBRARY = "MPICH Version:\t4.3.2\nMPICH Release date:\tMon Oct  6 2025"
DIGEST = "sha256:" + "ab" * 32


def latency_us(size: int) -> float:
    return 0.35 + size / 11_000  # 0.35 us start-up, ~11 GB/s


def bandwidth_mbs(size: int) -> float:
    return size / (0.45 + size / 10_000)


def _figures(benchmark: str, rng: random.Random, slow_small: bool) -> list[ParsedRow]:
    rows = []
    for size in SIZES:
        base = latency_us(size) if benchmark == "latency" else bandwidth_mbs(size)
        if slow_small and benchmark == "latency" and size < 8192:
            base *= 2.0  # the container: twice the latency for small messages
        value = base * (1 + rng.gauss(0, 0.01))
        rows.append(ParsedRow(size=size, values={"latency" if benchmark == "latency" else "bandwidth": value},
                              stats={"median": value}))
    return rows


def add_runs(engine, *, stack: str, approach: str, benchmark: str, launches: int = LAUNCHES, origin: str,
             library: str | None, variant: str | None = None, slow_small: bool = False,
             status: RunStatus | None = None, message: str | None = None, seed: int = 0) -> None:
    rng = random.Random(f"{stack}/{approach}/{variant}/{benchmark}/{seed}")
    unit = {"latency": "us"} if benchmark == "latency" else {"bandwidth": "MB/s"}
    tags = {"mpi": "mpich", "origin": origin, "mpi_version": "4.3.2" if stack == "pip-mpich" else "4.0.2"}
    if variant:
        tags |= {"variant": variant, "variant_baseline": "default"}
    environment = {"MPIR_CVAR_CH4_NETMOD": "ofi", **({"FI_PROVIDER": "tcp"} if variant == "tcp" else {})}
    command = (f"mpiexec -n 2 /opt/bench/mpistack-bench {benchmark}" if approach == "native" else
               f"mpiexec -n 2 podman run --rm --network host localhost/mpistack/{stack} mpistack-bench {benchmark}")
    with engine.begin() as connection:
        for launch in range(launches):
            if status is None:
                run = ParsedRun(benchmark=benchmark, title=benchmark, units=unit, suite="mpistack-bench 0.1",
                                rows=_figures(benchmark, rng, slow_small))
            else:
                run = ParsedRun.empty(benchmark)
            facts = Provenance(stack=stack, approach=approach, launcher="local", ranks=2, nodes=1, buffers="H-H",
                               command=command, environment=environment, mpi_library_version=library,
                               image_digest=None if approach == "native" else DIGEST, hosts=["node-a"])
            write_runs(connection, [run], tags={**tags, "repeat": str(launch)}, campaign_id=1, provenance=facts,
                       status=status, message=message)


def build_store(path: Path):
    """host-mpich natively (the system baseline); pip-mpich in a container (2x the latency below 8 KiB, at speed
    otherwise: (Y)), in a container over tcp (every launch fails: N), hybrid (at speed: Y), bind (times out: N);
    debian-mpich in a container with a single launch (?)."""
    engine = open_database(str(path))
    with engine.begin() as connection:
        connection.execute(insert(CampaignRow.__table__),
                           {"id": 1, "name": "synthetic", "created_at": datetime.now(timezone.utc)})
    for benchmark in ("latency", "bw"):
        add_runs(engine, stack="host-mpich", approach="native", benchmark=benchmark, origin="host",
                 library=HOST_LIBRARY)
        add_runs(engine, stack="pip-mpich", approach="container", benchmark=benchmark, origin="image",
                 library=PIP_LIBRARY, slow_small=True)
        add_runs(engine, stack="pip-mpich", approach="container", benchmark=benchmark, origin="image",
                 library=None, variant="tcp", status=RunStatus.FAILED,
                 message="MPIDI_OFI_mpi_init_hook(1570): OFI addrinfo() failed (provider tcp)\nmore lines")
        add_runs(engine, stack="pip-mpich", approach="hybrid", benchmark=benchmark, origin="image",
                 library=PIP_LIBRARY)
        add_runs(engine, stack="pip-mpich", approach="bind", benchmark=benchmark, origin="image", library=None,
                 launches=2, status=RunStatus.TIMEOUT, message="no output in 180 s")
        add_runs(engine, stack="debian-mpich", approach="container", benchmark=benchmark, origin="image",
                 library=HOST_LIBRARY, launches=1)
    return engine


@pytest.fixture(scope="package")
def synthetic_db(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("report") / "synthetic.db"
    build_store(path).dispose()
    return path


@pytest.fixture(scope="package")
def written(synthetic_db, tmp_path_factory):
    """The report of the synthetic campaign in every format: (Report, {format: path})."""
    from mpistack.analysis.answers import Settings
    from mpistack.report.data import collect
    from mpistack.report.write import write_report
    from mpistack.store.query import Where

    engine = open_database(str(synthetic_db))
    report = collect(engine, [Where("campaign", "=", 1)], Settings(), title="synthetic (campaign #1)",
                     campaign={"id": 1, "name": "synthetic"})
    paths = write_report(report, tmp_path_factory.mktemp("out") / "report")
    return report, {path.suffix.lstrip("."): path for path in paths}
