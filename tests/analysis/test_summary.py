"""The container-against-native summary: ratios per size, medians, variants kept apart, failures named."""

from datetime import datetime, timezone

import pytest
from sqlalchemy import insert

from mpistack.analysis.summary import summarise
from mpistack.parsers.model import ParsedRow, ParsedRun
from mpistack.store import open_database
from mpistack.store.schema import CampaignRow
from mpistack.spec.provenance import Provenance
from mpistack.spec.status import RunStatus
from mpistack.store.writer import write_runs


def add(engine, campaign_id, stack, approach, metric, figures, *, confinement=None, status=None, message=None,
        declared=None, library=None):
    unit = "us" if metric == "latency" else "MB/s"
    benchmark = "latency" if metric == "latency" else "bw"
    run = ParsedRun(benchmark=benchmark, title=benchmark, units={metric: unit},
                    rows=[ParsedRow(size=size, values={metric: mean}, stats={"median": median})
                          for size, (mean, median) in figures.items()])
    tags = {"mpi": "mpich", **({"confinement": confinement} if confinement else {}),
            **({"mpi_version": declared} if declared else {})}
    facts = Provenance(stack=stack, approach=approach, buffers="H-H", ranks=2, mpi_library_version=library)
    with engine.begin() as connection:
        write_runs(connection, [run], tags=tags, campaign_id=campaign_id, provenance=facts,
                   status=RunStatus(status) if status else None, message=message)


@pytest.fixture
def store(tmp_path):
    engine = open_database(str(tmp_path / "s.db"))
    with engine.begin() as connection:
        connection.execute(insert(CampaignRow.__table__), {"id": 1, "name": "s", "created_at": datetime.now(timezone.utc)})
    return engine


def test_ratios_use_medians_and_keep_variants_apart(store):
    add(store, 1, "host-mpich", "native", "latency", {1: (1.0, 1.0), 2: (1.0, 2.0)})
    # a huge mean from one preempted iteration must not decide: the medians are compared
    add(store, 1, "img", "container", "latency", {1: (900.0, 2.0), 2: (1.0, 2.0)})
    add(store, 1, "img", "container", "latency", {1: (1.0, 1.0), 2: (1.0, 2.0)}, confinement="single-copy")
    add(store, 1, "host-mpich", "native", "bandwidth", {1024: (100.0, 100.0)})
    add(store, 1, "img", "hybrid", "bandwidth", {1024: (50.0, 50.0)})
    rows = {(row["approach"], row["benchmark"]): row for row in summarise(store, 1)}
    container = rows[("container", "latency")]
    assert container["relative"] == pytest.approx((0.5 * 1.0) ** 0.5, abs=1e-3)  # sizes 1 and 2: 1/2 and 2/2
    assert (container["worst"], container["worst_size"], container["verdict"]) == (0.5, 1, "runs but slow")
    assert container["native"] == "host-mpich"
    single = rows[("container+single-copy", "latency")]
    assert single["relative"] == 1.0 and single["verdict"] == "works at speed"
    assert rows[("hybrid", "bw")]["relative"] == 0.5  # bandwidth: container rate / native rate


def test_failures_and_missing_baselines_are_named(store):
    add(store, 1, "img", "container", "latency", {1: (1.0, 1.0)})
    add(store, 1, "img", "bind", "latency", {}, status="skipped", message="bind refused: the ABIs differ\nmore")
    add(store, 1, "img", "hybrid", "latency", {}, status="timeout", message="killed after 3 s")
    verdicts = {row["approach"]: row["verdict"] for row in summarise(store, 1)}
    assert verdicts == {"container": "untested: no native mpich run to compare",
                        "bind": "untested: bind refused: the ABIs differ",
                        "hybrid": "fails (timeout): killed after 3 s"}


def test_versions_are_shown_and_a_declared_reported_mismatch_is_named(store):
    """The bind approach runs the host's library in an image that declares another version: the summary
    says which ran."""
    add(store, 1, "host-mpich", "native", "latency", {1: (1.0, 1.0)}, library="MPICH Version:      4.0.2")
    add(store, 1, "pip-mpich", "container", "latency", {1: (1.0, 1.0)}, declared="4.3.2",
        library="MPICH Version:      4.3.2")
    add(store, 1, "pip-mpich", "bind", "latency", {1: (1.0, 1.0)}, declared="4.3.2",
        library="MPICH Version:      4.0.2")
    rows = {row["approach"]: row for row in summarise(store, 1)}
    assert rows["container"]["stack"] == "pip-mpich (mpich 4.3.2)"
    assert rows["container"]["native"] == "host-mpich (mpich 4.0.2)"
    assert rows["container"]["verdict"] == "works at speed"
    assert rows["bind"]["verdict"] == "works at speed; declared 4.3.2, the library reports 4.0.2"
