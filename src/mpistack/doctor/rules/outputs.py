"""Rules on output that mpistack did not launch: what the text of an output file (or of the same file ingested)
proves by itself (a test that never finished, a validation that failed), and its figures beside a published
reference that the user names (``mpistack doctor FILE --like ref:NAME``)."""

from __future__ import annotations

from ...analysis.classes import format_size
from ...spec.status import RunStatus
from ..like import Figure, LikeSubject
from ..model import rule
from ..signatures import match
from .fixes import FABRIC_FIX
from .performance import FABRIC_FACTOR, TYPICAL_TCP_MBPS
from .runs import subject_of

#: a figure at least this share of the reference's best is at its level
AT_LEVEL = 0.8
#: a latency this many times the reference's is a different class of path (TCP, or no fabric at all)
LATENCY_CLASS = 10.0
LATENCY_SLOWER = 2.0


@rule("output-ended", "runs", "the output's own text: the launcher's abort lines of Open MPI's mpirun "
      "(https://docs.open-mpi.org/en/v5.0.x/man-openmpi/man1/mpirun.1.html), MPICH's Hydra "
      "(https://github.com/pmodels/mpich/blob/main/doc/wiki/how_to/Using_the_Hydra_Process_Manager.md) and Slurm's "
      "srun (https://slurm.schedmd.com/srun.html), and the OSU micro-benchmarks' validation column "
      "(https://mvapich.cse.ohio-state.edu/benchmarks/)",
      "an output mpistack did not launch (a file, or one ingested) whose test ended before its table did, or "
      "whose validation failed, where no known message of the problem kind says why")
def output_ended(rule, run: dict):
    if run.get("campaign") is not None or run.get("status") not in (RunStatus.FAILED.value,
                                                                      RunStatus.VALIDATION_FAILED.value):
        return
    lines = (run.get("message") or "").splitlines()
    if any(hit.verdict == "problem" for hit in match(run.get("message"))):
        return  # a known message says why (run-signatures)
    if run["status"] == RunStatus.VALIDATION_FAILED.value:
        yield rule.finding("problem", "the data validation failed",
                           "The benchmark checked the data it received and found it wrong: its figures are not "
                           "a measurement of a working transfer.",
                           "Read the messages above the failing rows; an Open MPI reduction failing from 16 B on "
                           "is its AVX op (OMPI_MCA_op=^avx).", subject=subject_of(run),
                           failed_sizes=run.get("failed_sizes") or [], status=run["status"])
        return
    yield rule.finding("problem", "the test did not finish",
                       "The output stops before its table ends (or before it starts): the job failed or was killed, "
                       "and no known message of a problem says why. The lines the doctor does not know are listed "
                       "as unrecognised.",
                       "Fix what the unrecognised lines name, then rerun; with none, rerun with the MPI's "
                       "verbose settings (UCX_LOG_LEVEL=info, FI_LOG_LEVEL=warn, OMPI_MCA_btl_base_verbose=100).",
                       subject=subject_of(run), status=run["status"],
                       **({"first_message": lines[0]} if lines else {}))


@rule("like-reference", "file", "the published references mpistack ships (mpistack references), each with its "
      "source; CSCS docs 'Container Engine' (https://docs.cscs.ch/software/container-engine/resource-hook/): "
      "osu_bw without the CXI hook 1280-3764 MB/s against about 24000 MB/s with it",
      "a file's bandwidth plateau and small-message latency against the reference's rows of the same test: the "
      "fabric's class, TCP's class (below 5000 MB/s where the reference reaches 3 times more), 10 times the "
      "reference's latency")
def like_reference(rule, subject: LikeSubject):
    for figure in subject.figures:
        rows = _comparable(figure, subject.reference)
        common = {"subject": figure.label, "reference": f"ref:{subject.name}"}
        if not rows:
            yield rule.finding("ok", f"{figure.benchmark}: no comparable row in ref:{subject.name}",
                               "The reference publishes no row of this test and placement.", **common)
            continue
        if figure.metric == "bandwidth":
            yield _bandwidth(rule, subject, figure, rows, common)
        else:
            yield _latency(rule, subject, figure, rows, common)


def _comparable(figure: Figure, rows: list[Figure]) -> list[Figure]:
    """The reference's rows of the same test and buffers, of the same node count where the file says it."""
    same = [row for row in rows if (row.benchmark, row.metric) == (figure.benchmark, figure.metric)
            and (figure.buffers is None or row.buffers in (None, figure.buffers))]
    if figure.nodes is not None:
        same = [row for row in same if (row.nodes or 1) == figure.nodes]
    return same


def _shown(figure: Figure) -> str:
    unit = "MB/s" if figure.metric == "bandwidth" else "us"
    return f"{figure.value:.{0 if figure.metric == 'bandwidth' else 2}f} {unit} at {format_size(figure.size)}"


def _bandwidth(rule, subject: LikeSubject, figure: Figure, rows: list[Figure], common: dict):
    best = max(rows, key=lambda row: row.value)
    fallback = [row for row in rows if row.value <= TYPICAL_TCP_MBPS and best.value >= FABRIC_FACTOR * row.value]
    evidence = {**common, "figure": _shown(figure), "reference_figure": f"{_shown(best)} ({best.label})",
                "ratio": round(figure.value / best.value, 3), "reference_source": subject.source}
    if fallback:
        evidence["reference_tcp_row"] = f"{_shown(fallback[0])} ({fallback[0].label})"
    nodes = f", {figure.nodes} nodes" if figure.nodes else ""
    if figure.value <= TYPICAL_TCP_MBPS and best.value >= FABRIC_FACTOR * figure.value:
        also = (f", as the reference's own fallback row does ({_shown(fallback[0])}, {fallback[0].label})"
                if fallback else "")
        return rule.finding(
            "problem", f"TCP-class bandwidth: {_shown(figure)} against {best.value:.0f} MB/s like "
                       f"ref:{subject.name}",
            f"On the reference's system ({subject.title}) the same test reaches {_shown(best)} ({best.label}{nodes}); "
            f"this one plateaus at {_shown(figure)}, where TCP does (below {TYPICAL_TCP_MBPS:.0f} MB/s){also}: "
            "its MPI most likely sent over TCP, not the fabric's provider (cxi, verbs, efa).",
            FABRIC_FIX, cause="tcp-inter", **evidence)
    if figure.value >= AT_LEVEL * best.value:
        return rule.finding("ok", f"bandwidth at the level of ref:{subject.name}: {_shown(figure)}",
                            f"The reference reaches {_shown(best)} ({best.label}).", **evidence)
    return rule.finding(
        "warning", f"bandwidth below ref:{subject.name}: {_shown(figure)} against {best.value:.0f} MB/s",
        f"The reference reaches {_shown(best)} ({best.label}); this test reaches {evidence['ratio']:.2f} of it, "
        "above TCP's class: a slower fabric path (another provider, fewer NICs, no GPU-direct path), or another "
        "kind of system than the reference's.",
        "Compare the provider and NIC settings with the reference's (its source says how it ran).", **evidence)


def _latency(rule, subject: LikeSubject, figure: Figure, rows: list[Figure], common: dict):
    at_size = [row for row in rows if row.size == figure.size] or rows
    best = min(at_size, key=lambda row: row.value)
    ratio = figure.value / best.value if best.value > 0 else float("inf")
    evidence = {**common, "figure": _shown(figure), "reference_figure": f"{_shown(best)} ({best.label})",
                "times_reference": round(ratio, 1), "reference_source": subject.source}
    if ratio >= LATENCY_CLASS:
        return rule.finding(
            "problem", f"latency {ratio:.0f}x ref:{subject.name}: {_shown(figure)} against {best.value:.2f} us",
            f"On the reference's system ({subject.title}) the same test takes {_shown(best)} ({best.label}); "
            f"{ratio:.0f} times that is another class of path: TCP instead of the fabric between nodes, or no "
            "shared memory between ranks of one node.", FABRIC_FIX, **evidence)
    if ratio >= LATENCY_SLOWER:
        return rule.finding(
            "warning", f"latency {ratio:.1f}x ref:{subject.name}: {_shown(figure)} against {best.value:.2f} us",
            f"The reference takes {_shown(best)} ({best.label}): slower by more than noise, less than a change of "
            "transport class.", "Compare the provider, binding and placement with the reference's.", **evidence)
    return rule.finding("ok", f"latency at the level of ref:{subject.name}: {_shown(figure)}",
                        f"The reference takes {_shown(best)} ({best.label}).", **evidence)
