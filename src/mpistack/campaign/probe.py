"""Transport evidence: one short, verbose launch per configuration of a campaign, before its timed cases.

A configuration is what decides the transport an MPI library picks: stack x approach (with its confinement)
x variant x placement x buffers. Its probe runs mpistack-bench's latency test over a few small sizes,
planned by the same approach as the configuration's cases (same container options, same environment) with
the library's verbose settings added; what the library prints is read by `parsers.transport` and recorded
with every run of the configuration (Provenance.transport). The probe's figures are not results and are not
stored. A probe that fails, times out or is refused never fails a case: it is recorded as a note.
"""

from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path
from typing import Callable

from .. import approaches
from ..approaches import Refused, Resources
from ..launchers import Execution, Launcher, LaunchPlan
from ..launchers.batch import BatchCase, read_case
from ..parsers.transport import CONFINEMENT_KEYS, parse_transport
from ..spec.campaign import BenchmarkEntry, VariantEntry
from ..spec.case import Case
from .reasons import meaningful_lines

PROBE_TIMEOUT = 30.0  # seconds: a probe is a fraction of a second when it works
PROBE_BENCHMARK = BenchmarkEntry(name="latency", options=["-m", "1:8", "-i", "10", "-x", "2"])
PROBE_VARIANT = "transport-probe"  # the variant name of a probe of plain cases (never recorded)
#: what makes each library say what it uses (parsers/transport.py reads the answers)
VERBOSE_ENV = {
    "mpich": {"UCX_LOG_LEVEL": "info", "MPIR_CVAR_DEBUG_SUMMARY": "1"},
    "openmpi": {"OMPI_MCA_pml_base_verbose": "10", "OMPI_MCA_btl_base_verbose": "10",
                "OMPI_MCA_mtl_base_verbose": "10", "OMPI_MCA_mtl_ofi_verbose": "1", "OMPI_MCA_smsc_base_verbose": "10",
                "OMPI_MCA_mpi_show_mca_params": "all", "UCX_LOG_LEVEL": "info"},
}
#: what makes each rank of mpistack-bench say its namespaces, uid and capabilities before MPI_Init
CONFINEMENT_ENV = {"MPISTACK_CONFINEMENT": "1"}
_ERROR_WORDS = ("error", "abort", "fail", "denied", "not found", "refused", "cannot", "killed")


def configuration(case: Case) -> str:
    """The key of the case's configuration: its probe's result belongs to every case with this key."""
    return "/".join([case.stack.name, case.approach_label, case.variant_name, case.placement.label, case.buffers])


def describe(mpi: str) -> str:
    """The verbose settings of a probe of this library, as recorded when it told nothing."""
    return " ".join(f"{key}={value}" for key, value in VERBOSE_ENV.get(mpi, {}).items())


def probe_label(campaign: str, case: Case, run: str = "") -> str:
    """The label of the probe's containers (to find and remove them), apart from every case's and from
    those of another run (`run`: its work directory's name)."""
    return "mpistack-probe-" + hashlib.sha1(f"{run}\0{campaign}\0{configuration(case)}".encode()).hexdigest()[:12]


def probe_case(case: Case) -> Case:
    """The case's configuration running the probe benchmark, with the library's verbose settings on top of
    the variant's (the one way every approach passes settings into its ranks and containers)."""
    verbose = {**VERBOSE_ENV.get(case.stack.mpi_impl, {}), **CONFINEMENT_ENV}
    if case.variant is None:
        variant = VariantEntry(name=PROBE_VARIANT, env=verbose)
    else:
        variant = case.variant.model_copy(update={"env": {**case.variant.env, **verbose}})
    return dataclasses.replace(case, benchmark=PROBE_BENCHMARK, repeat=0, skip=None, variant=variant)


def plan_probe(campaign: str, case: Case, resources: Resources) -> LaunchPlan:
    """The probe's exact command: no JSON output, its figures are not kept. Raises Refused."""
    return approaches.plan(probe_case(case), resources, None, [], probe_label(campaign, case, resources.workdir.name))


def failed(mpi: str, why: str) -> dict[str, str]:
    return {"probe": describe(mpi), "mpi": mpi, "note": f"probe failed: {why}"[:300]}


def first_error_line(execution: Execution) -> str:
    """The first meaningful line (campaign/reasons.py) that names an error, else the first: a verbose library
    says much before it says what went wrong."""
    lines = [*meaningful_lines(execution.stderr), *meaningful_lines(execution.stdout)]
    return next((line for line in lines if any(word in line.lower() for word in _ERROR_WORDS)),
                lines[0] if lines else "no output")


def evidence(mpi: str, launch: LaunchPlan, execution: Execution) -> dict[str, str]:
    """The transport record of a probe that ended (or a note saying why it tells nothing)."""
    if execution.interrupted:
        return failed(mpi, "interrupted")
    # MPICH sends to ranks of its own node through its netmod, not its shared memory, under MPIR_CVAR_NOLOCAL=1
    nolocal = launch.env.get("MPIR_CVAR_NOLOCAL") == "1" or "MPIR_CVAR_NOLOCAL=1" in launch.argv
    found = parse_transport(f"{execution.stdout}\n{execution.stderr}", mpi, nolocal)
    # what the ranks said of their namespaces before MPI_Init stands even when the launch failed or hung
    confined = {key: found[key] for key in CONFINEMENT_KEYS if key in found}
    if execution.timed_out:
        # a library that hangs in MPI_Finalize has already said what it used: keep that, and say it hung
        hung = failed(mpi, f"no answer within {PROBE_TIMEOUT:g} s")
        if set(found) <= {"mpi", *CONFINEMENT_KEYS}:
            return {**hung, **confined}
        return {**hung, **found, "note": "; ".join(filter(None, [found.get("note"), hung["note"]]))[:300]}
    if execution.exit_code != 0:
        return {**failed(mpi, f"exit status {execution.exit_code}: {first_error_line(execution)}"), **confined}
    if set(found) <= {"mpi", *CONFINEMENT_KEYS}:
        return {"probe": describe(mpi), "mpi": mpi, "note": "the library printed no transport lines", **confined}
    return found


def probe_configurations(launcher: Launcher, campaign: str, cases: list[Case], resources: Resources,
                         should_stop: Callable[[], bool] = lambda: False,
                         say: Callable[[str], None] = lambda text: None) -> dict[str, dict[str, str]]:
    """Probe each configuration of the runnable cases once, in the order they first appear; returns the
    transport record per configuration."""
    found: dict[str, dict[str, str]] = {}
    for case in cases:
        key = configuration(case)
        if key in found or case.skip or resources.build_failure(case) or should_stop():
            continue
        mpi = case.stack.mpi_impl
        try:
            launch = plan_probe(campaign, case, resources)
        except Refused as refused:
            found[key] = failed(mpi, f"refused: {refused}")
            continue
        say(f"probing the transport of {key}")
        found[key] = evidence(mpi, launch, launcher.execute(launch, PROBE_TIMEOUT))
    return found


# -- under a batch launcher: a probe step at the start of each job, for each configuration it runs ---------

def batch_directory(jobs_dir: Path, bundle_name: str, case: Case) -> Path:
    """Where a job's probe of the case's configuration leaves its files (stable: --resume finds it)."""
    digest = hashlib.sha1(configuration(case).encode()).hexdigest()[:12]
    return jobs_dir / f"{bundle_name}-probe-{digest}"


def batch_probe(campaign: str, case: Case, resources: Resources, directory: Path,
                step_env: dict[str, str]) -> BatchCase | None:
    """The probe step of a job (None when the approach refuses the probe: the job's cases say why)."""
    try:
        launch = plan_probe(campaign, case, resources)
    except Refused:
        return None
    # its containers get the probe's own case directory, as a case's get theirs: it must be there (podman
    # refuses a missing bind source), and no local launcher makes it for a job
    resources.case_directory(probe_label(campaign, case, resources.workdir.name)).mkdir(parents=True, exist_ok=True)
    return BatchCase(directory, PROBE_TIMEOUT, launch.argv, {**launch.env, **step_env})


def read_batch_probe(campaign: str, case: Case, resources: Resources, directory: Path | None) -> dict[str, str]:
    """The transport record a job's probe step left (a note when it left none)."""
    mpi = case.stack.mpi_impl
    try:
        launch = plan_probe(campaign, case, resources)
    except Refused as refused:
        return failed(mpi, f"refused: {refused}")
    ended = read_case(directory, launch.env, PROBE_TIMEOUT) if directory is not None else None
    if ended is None:
        return failed(mpi, "the job's probe step left no exit status")
    return evidence(mpi, launch, ended.execution)
