"""The compatibility matrix: derived from answers, one class per stack x approach (+variant), with a reason."""

from mpistack.analysis.answers import SAME_STACK, SYSTEM, Answer
from mpistack.analysis.classes import RowClass, SlowRange, failed_class, untested_class
from mpistack.analysis.evidence import RowKey
from mpistack.analysis.matrix import LEGEND, Column, compat_matrix

BASE = RowKey("campaign 1", "host-mpich", "native", "default", "latency", "latency", 2, 1, "H-H")


def answer(stack, approach, benchmark, row_class, *, variant="default", baseline=SYSTEM, buffers="H-H",
           library=None, declared=None, scope="campaign 1"):
    key = RowKey(scope, stack, approach, variant, benchmark, "latency", 2, 1, buffers)
    return Answer(key, baseline, BASE.with_(benchmark=benchmark), row_class, launches=8, baseline_launches=8,
                  library_version=library, declared_version=declared)


Y = RowClass("Y", [], "at native speed at all 21 sizes (1 B–1 MiB)")


def slow(regime="small", sizes=(1, 2, 4), worst=0.5):
    return RowClass("(Y)", [SlowRange(regime, list(sizes), worst, sizes[0])], "slower at ...")


def test_the_worst_class_wins_in_order_n_then_slower_then_unknown():
    matrix = compat_matrix([
        answer("pip-mpich", "container", "latency", slow()),
        answer("pip-mpich", "container", "bw", failed_class("failed: segfault in MPI_Init")),
        answer("pip-mpich", "hybrid", "latency", slow()),
        answer("pip-mpich", "hybrid", "bw", untested_class("no system MPI baseline to compare with")),
        answer("pip-mpich", "bind", "latency", Y),
        answer("pip-mpich", "bind", "bw", RowClass("?", [], "not settled: large messages 0.95× (90% CI 0.85–1.02): "
                                                   "...; ~4 more launches per side would settle it",
                                                   cause="not settled at large messages: ~4 more launches per side "
                                                         "would settle it")),
        answer("pip-mpich", "native", "latency", Y),
        answer("pip-mpich", "native", "bw", Y),
    ])
    (row,) = matrix.rows
    cells = {column.label: matrix.cell(row, column) for column in matrix.columns}
    assert [column.label for column in matrix.columns] == ["native", "container", "hybrid", "bind"]
    assert {label: cell.label for label, cell in cells.items()} == {
        "native": "Y", "container": "N", "hybrid": "(Y)", "bind": "?"}
    assert cells["container"].reason == "bw: failed: segfault in MPI_Init"
    assert cells["hybrid"].reason.startswith("slower: latency small 1 B–4 B 0.50× at worst")
    assert "inconclusive in bw" in cells["hybrid"].reason
    assert cells["bind"].reason.startswith("bw: not settled at large messages: ~4 more launches per side would settle it")
    assert "at native speed in latency" in cells["bind"].reason
    assert cells["native"].reason == "at native speed in every regime of bw, latency"
    assert all("\n" not in cell.reason for cell in cells.values())
    assert set(LEGEND) == {"Y", "(Y)", "N", "?"}


def test_variants_get_their_own_column_after_their_approach_and_others_come_last():
    matrix = compat_matrix([
        answer("s", "zz-new", "latency", Y),
        answer("s", "container", "latency", Y, variant="tcp"),
        answer("s", "fabric-swap", "latency", Y),
        answer("s", "container", "latency", slow()),
        answer("s", "bind", "latency", Y),
        answer("s", "native", "latency", Y),
        answer("s", "hybrid", "latency", Y),
    ])
    assert [column.label for column in matrix.columns] == [
        "native", "container", "container+tcp", "hybrid", "bind", "fabric-swap", "zz-new"]
    (row,) = matrix.rows
    assert matrix.cell(row, Column("container", "tcp")).label == "Y"
    assert matrix.cell(row, Column("container")).label == "(Y)"


def test_same_stack_answers_stay_out_and_stacks_carry_their_own_versions():
    matrix = compat_matrix([
        answer("pip-mpich", "container", "latency", Y, library="MPICH Version: 4.3.2", declared="4.3.2"),
        answer("pip-mpich", "container", "latency", slow(), baseline=SAME_STACK),
        answer("pip-mpich", "bind", "latency", Y, library="MPICH Version: 4.0.2", declared="4.3.2"),
        answer("debian-mpich", "bind", "latency", failed_class("timeout: no output in 180 s")),
    ])
    rows = {row.stack: row for row in matrix.rows}
    assert list(rows) == ["debian-mpich", "pip-mpich"]
    assert (rows["pip-mpich"].declared_version, rows["pip-mpich"].library_version) == ("4.3.2", "MPICH Version: 4.3.2")
    assert rows["debian-mpich"].library_version is None  # bind reports the host's library, not the stack's
    assert matrix.cell(rows["pip-mpich"], Column("container")).label == "Y"
    assert matrix.cell(rows["debian-mpich"], Column("container")) is None
    assert matrix.baselines == ["host-mpich"]
    records = matrix.records()
    assert {(r["stack"], r["column"], r["class"]) for r in records} == {
        ("debian-mpich", "bind", "N"), ("pip-mpich", "container", "Y"), ("pip-mpich", "bind", "Y")}


def test_slow_reasons_name_benchmarks_and_placements_and_stay_short():
    answers = [answer("s", "container", benchmark, slow("mid", (16384, 32768), 0.8), buffers=buffers)
               for benchmark in ("bw", "bibw", "latency", "allreduce", "alltoall") for buffers in ("H-H", "D-D")]
    matrix = compat_matrix(answers)
    (row,) = matrix.rows
    cell = matrix.cell(row, Column("container"))
    assert cell.label == "(Y)" and cell.rows == 10
    assert "allreduce (n2N1 D-D) mid 16 KiB–32 KiB 0.80× at worst" in cell.reason
    assert "and 7 more" in cell.reason


def test_unknown_cells_group_benchmarks_by_cause():
    open_ = "not settled at small messages: ~3 more launches per side would settle it"
    matrix = compat_matrix([
        answer("s", "container", "latency", RowClass("?", [], "not settled: small messages 0.91× (...); ~3 more "
                                                     "launches per side would settle it", cause=open_)),
        answer("s", "container", "bw", RowClass("?", [], "not settled: small messages 1.09× (...); ~3 more "
                                                "launches per side would settle it", cause=open_)),
        answer("s", "container", "bibw", untested_class("the system MPI baseline (host-mpich native) did not run: "
                                                        "failed: boom")),
    ])
    (row,) = matrix.rows
    assert matrix.cell(row, Column("container")).reason == (
        "bibw: the system MPI baseline (host-mpich native) did not run: failed: boom; "
        "bw, latency: not settled at small messages: ~3 more launches per side would settle it")


def test_an_empty_list_gives_an_empty_matrix():
    matrix = compat_matrix([])
    assert matrix.rows == [] and matrix.columns == [] and matrix.records() == []
