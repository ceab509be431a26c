"""`mpistack doctor`: why a stack is slow or fails. On this host by default; on an image (--image), stored
runs (--run, --campaign), what a campaign would run (--stack with --approach), or output files as a user has
them (FILE..., `-` for standard input: cli/doctor_files.py). Exit status 0: no problem, 1: a problem found,
2: bad usage."""

from __future__ import annotations

import json
import shutil
from typing import Annotated, Optional

import typer

from .common import DbOption, database, db_name, fail, out

STYLE = {"ok": "green", "warning": "yellow", "problem": "bold red"}


def _env(pairs: list[str] | None) -> dict[str, str]:
    env = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            fail(f"--env {pair!r}: expected KEY=VALUE")
        env[key.strip()] = value
    return env


def doctor(
    files: Annotated[Optional[list[str]], typer.Argument(metavar="FILE", show_default=False, help="Output files to read as they are (OSU text with launcher noise, mpistack-bench JSON, a whole slurm-N.out; '-': standard input); no store needed.")] = None,
    like: Annotated[Optional[str], typer.Option("--like", metavar="ref:NAME", help="With FILE or --run N: read the figures against this shipped reference (mpistack references) and its kind of system.")] = None,
    signatures: Annotated[bool, typer.Option("--signatures", help="List the known messages (the signature bank): id, verdict, meaning, fix, source.")] = False,
    image: Annotated[Optional[str], typer.Option("--image", metavar="IMG", help="Probe inside this image (with the engine).")] = None,
    run_id: Annotated[Optional[int], typer.Option("--run", metavar="ID", help="Diagnose one stored run.")] = None,
    campaign: Annotated[Optional[str], typer.Option("--campaign", metavar="NAME", help="Diagnose a stored campaign (its latest run of that name, or a number): its runs and results.")] = None,
    stack: Annotated[Optional[str], typer.Option("--stack", metavar="NAME", help="With --approach: check what a campaign would run.")] = None,
    approach: Annotated[Optional[str], typer.Option("--approach", metavar="A", help="The approach for --stack (native, container, hybrid, bind, fabric-swap).")] = None,
    mpi: Annotated[Optional[str], typer.Option("--mpi", metavar="FAMILY", help="Host check: only this host MPI (mpich, openmpi) \\[default: each installed].")] = None,
    launcher: Annotated[Optional[str], typer.Option("--launcher", metavar="PROGRAM", help="Launch the probe with this program (e.g. mpiexec.openmpi) instead of the MPI's own.")] = None,
    ranks: Annotated[int, typer.Option("--ranks", "-n", min=1, help="Ranks the probe (or the plan) starts.")] = 2,
    host_mpi: Annotated[Optional[str], typer.Option("--host-mpi", metavar="FAMILY", help="Plan check: the host MPI family bind would mount \\[default: the image's own family].")] = None,
    shm_size: Annotated[Optional[str], typer.Option("--shm-size", metavar="SIZE", help="Image check: the container's /dev/shm size (podman syntax, e.g. 64m) \\[default: mpistack's].")] = None,
    env: Annotated[Optional[list[str]], typer.Option("--env", "-e", metavar="KEY=VALUE", help="Environment for the probe or the plan; repeatable.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the findings as JSON.")] = False,
    bounds: Annotated[bool, typer.Option("--bounds", help="This machine's bounds, measured now (15 to 40 s; nothing stored): one core's memcpy, MPI over TCP loopback, each host MPI's shared-memory latency. With --campaign: the bounds stored with it (measured and stored now if it has none).")] = False,
    score: Annotated[bool, typer.Option("--score", help="With --campaign: score the findings against the causes its variants inject (expect = ...): precision and recall; exit 1 when recall < 90% or precision < 95%.")] = False,
    db: DbOption = None,
) -> None:
    """Why a stack is slow or fails: checks of this host, an image, stored runs, a planned case or output files
    (FILE...), each with its evidence, meaning, fix and public source."""
    from ..doctor import diagnose, exit_status, to_json

    settings = _env(env)
    chosen = [name for name, given in (("--image", image), ("--run", run_id), ("--campaign", campaign),
                                       ("--stack", stack)) if given is not None]
    if like is not None and not files and not signatures and chosen and chosen != ["--run"]:
        fail(f"--like reads output files (FILE...) or one run (--run N), not {' and '.join(chosen)}")
    if signatures or files or (like is not None and run_id is None):
        from .doctor_files import doctor_files

        doctor_files(files or [], like, signatures, as_json, others=chosen)
    if len(chosen) > 1:
        fail(f"{' and '.join(chosen)}: choose one subject to diagnose")
    if score:
        _score(campaign, db)
    if bounds:
        from .bounds import doctor_bounds

        doctor_bounds(campaign, mpi, as_json, db)
    if (stack is None) != (approach is None):
        fail("--stack and --approach go together: the stack and how a campaign would deploy it")
    for name, family in (("--mpi", mpi), ("--host-mpi", host_mpi)):
        if family is not None and family not in ("mpich", "openmpi"):
            fail(f"{name} {family!r}: expected mpich or openmpi")

    findings, looked_at, configurations = [], [], None
    if image is not None:
        from ..doctor.system import probe_image
        from ..engines import EngineError

        try:
            facts = probe_image(image, ranks=ranks, launcher=launcher, env=settings,
                                **({"shm_size": shm_size} if shm_size else {}))
        except EngineError as error:
            fail(f"--image {image}: {error}")
        looked_at.append(facts.where)
        findings = diagnose("image", facts)
    elif run_id is not None or campaign is not None:
        findings, looked_at, configurations = _stored(run_id, campaign, db)
        if like is not None:
            findings += _like_run(run_id, like, db)
    elif stack is not None:
        findings, looked_at = _plan(stack, approach, ranks, host_mpi, settings)
    else:
        from ..doctor.system import probe_host
        from ..launchers.local import HOST_LAUNCHERS

        families = [mpi] if mpi else [name for name, program in HOST_LAUNCHERS.items() if shutil.which(program)]
        if not families:
            fail(f"no MPI launcher on this host ({', '.join(HOST_LAUNCHERS.values())}): install one, or use --image")
        for family in families:
            facts = probe_host(family, ranks=ranks, launcher=launcher, env=settings)
            looked_at.append(facts.where)
            findings += diagnose("host", facts)
        findings = once_per_host(findings)
    if as_json:
        from ..doctor import by_cause

        # stored runs: counted as the text counts them, each cause once per configuration
        causes = [group[0] for group in by_cause(findings).values()] if configurations is not None else None
        print(json.dumps(to_json(findings, looked_at, causes), indent=2))
    elif configurations is not None:
        _print_by_configuration(findings, looked_at, configurations)
        if run_id is not None:  # an ingested output: what it said that the doctor does not know, as for its file
            from .doctor_files import print_unrecognised_run

            print_unrecognised_run(database(db, must_exist=True), run_id)
    else:
        _print(findings, looked_at)
    raise typer.Exit(exit_status(findings))


def once_per_host(findings):
    """The host's findings with a fact of the host itself (its libfabric providers, its /dev/shm) said once, not
    once per MPI family probed: a finding alike in rule, verdict, title and meaning names every probe it came
    from."""
    import dataclasses

    kept: dict[tuple, object] = {}
    for finding in findings:
        key = (finding.rule, finding.verdict, finding.title, finding.meaning)
        if key in kept:
            first = kept[key]
            kept[key] = dataclasses.replace(first, subject=f"{first.subject}, {finding.subject}")
        else:
            kept[key] = finding
    return list(kept.values())


def _like_run(run_id, like, db):
    """An ingested run's figures read against a shipped reference, as a file's are (doctor/like.py)."""
    from ..doctor import diagnose
    from ..doctor.like import UnknownReference, figure_of_results, load
    from ..store.query import Where, query_results

    try:
        reference = load(like)
    except UnknownReference as error:
        fail(str(error))
    figure = figure_of_results(query_results(database(db, must_exist=True), [Where("run", "=", run_id)]),
                               f"run {run_id}")
    reference.figures = [figure] if figure is not None else []
    return diagnose("file", reference)


def _stored(run_id, campaign, db):
    """Findings on stored runs, what was looked at, and per configuration the transport its runs recorded."""
    from ..doctor import examine_runs
    from ..store.query import Where, run_record

    store = database(db, must_exist=True)
    if run_id is not None:
        if run_record(store, run_id) is None:
            fail(f"no run #{run_id} in {db_name(db)}")
        filters = [Where("run", "=", run_id)]
        findings, transports = examine_runs(store, filters)
        return findings, [f"run {run_id}"], transports
    number = _campaign_number(store, campaign, db)
    filters = [Where("campaign", "=", number)]
    findings, transports = examine_runs(store, filters)
    return findings, [f"campaign #{number}"], transports


def _score(campaign, db) -> None:
    """--score: the fault matrix's table and figures (docs/doctor.md); exits 1 below the targets."""
    from ..doctor.score import score_campaign, score_table, summary

    if campaign is None:
        fail("--score scores a fault campaign: give --campaign NAME")
    store = database(db, must_exist=True)
    number = _campaign_number(store, campaign, db)
    result = score_campaign(store, number)
    if not result.configurations:
        fail(f"campaign #{number} declares no expected causes (expect = ... in its variants)")
    out.print(f"mpistack doctor: fault matrix of campaign #{number}", highlight=False)
    out.print(score_table(result))
    out.print(summary(result), highlight=False)
    raise typer.Exit(0 if result.passed else 1)


def _campaign_number(store, campaign: str, db) -> int:
    """A stored campaign's id: the number given, or the latest campaign of that name."""
    from ..store.campaigns import campaign_name, latest_campaign

    number = int(campaign) if campaign.isdigit() else latest_campaign(store, campaign)
    if number is None or campaign_name(store, number) is None:
        fail(f"no campaign {campaign!r} in {db_name(db)}")
    return number


def _plan(stack_name, approach, ranks, host_mpi, env):
    from ..approaches.base import HostFacts
    from ..doctor import diagnose
    from ..doctor.rules.plan import PlanSubject
    from ..launchers.slurm import SlurmLauncher
    from ..registry import APPROACHES
    from ..spec import catalogue
    from ..spec.campaign import SlurmEntry
    from ..spec.stack import StackError

    try:
        spec = catalogue.load(stack_name)
    except StackError as error:
        fail(f"--stack {stack_name}: {error}")
    if approach not in APPROACHES:
        fail(f"--approach {approach!r}: expected one of {', '.join(APPROACHES.names())}")
    subject = PlanSubject(spec, approach, ranks=ranks, env=env)
    if host_mpi is not None:  # a view of another host: the library of that family, as bind would find it
        subject.host_mpi = host_mpi
    subject.host_library = HostFacts.probe().mpi_library(subject.bound_mpi)
    # None without srun, or where it cannot answer (no slurm.conf reachable)
    offered = SlurmLauncher(SlurmEntry(), command_timeout=30).mpi_plugins()
    subject.srun_mpi_types = sorted(offered) if offered else None
    return diagnose("plan", subject), [subject.where]


def _indented(text: str, style: str = "", by: int = 9) -> None:
    """Text wrapped between words under an indent; a word wider than the line (a URL) is left whole, so that it
    can still be copied."""
    import textwrap

    from rich.text import Text

    lines = textwrap.fill(text, max(out.width, by + 20), initial_indent=" " * by, subsequent_indent=" " * by,
                          break_long_words=False, break_on_hyphens=False)
    out.print(Text(lines, style=style), highlight=False, soft_wrap=True)


def transport_line(transport: dict, confinement: str) -> str:
    """What a configuration's MPI said it used under one confinement, on one line (as `results` and the report
    describe it)."""
    from ..parsers.transport import describe_transport

    return f"transport ({confinement}): {describe_transport(transport) or 'not recorded'}"


def _configuration(cell) -> str:
    from ..analysis.matrix import Column

    scope, stack, approach, variant = cell
    return f"{stack} {Column(approach, variant).label} ({scope})"


def _print_by_configuration(findings, looked_at, transports) -> None:
    """Stored runs: per configuration its recorded transport, then its findings, each cause once (with the runs
    it was found in) rather than once per launch."""
    from rich.text import Text

    out.print(Text.assemble(("mpistack doctor", "bold"), ": ", ", ".join(looked_at)), highlight=False)
    cells = list(dict.fromkeys([*transports, *(f.cell for f in findings if f.cell is not None)]))
    causes = []  # the first finding of each cause, as printed
    for cell in [*cells, None]:
        mine = [f for f in findings if f.cell == cell]
        if cell is None and not mine:
            continue
        if cell is not None:
            out.print(Text(_configuration(cell), style="bold"), highlight=False)
            for confinement, transport in (transports.get(cell) or {"not recorded": {}}).items():
                _indented(transport_line(transport, confinement), "cyan", by=2)
        from ..doctor import by_cause

        for group in by_cause(mine).values():
            subjects = [f.subject for f in group if f.subject]
            _print_finding(group[0], f"in {_runs(subjects)}" if subjects else "")
            causes.append(group[0])
    _print_counts(causes, per="cause")


def _runs(subjects: list[str]) -> str:
    """``run 1 (x)``, ``run 3 (x)`` -> ``runs 1, 3 (x)``; the runs' numbers alone when what follows differs (a
    cause found in latency and bw runs); other subjects as they are."""
    numbers = [subject.split()[1] for subject in subjects if subject.startswith("run ")]
    if len(subjects) > 1 and len(numbers) == len(subjects):
        rests = {subject.split(" ", 2)[2] if subject.count(" ") >= 2 else "" for subject in subjects}
        return f"runs {', '.join(numbers)} {rests.pop() if len(rests) == 1 else ''}".rstrip()
    return "; ".join(dict.fromkeys(subjects))


def _print(findings, looked_at) -> None:
    from rich.text import Text

    out.print(Text.assemble(("mpistack doctor", "bold"), ": ", ", ".join(looked_at)), highlight=False)
    for finding in findings:
        where = f"in {finding.subject}" if finding.subject and finding.subject not in looked_at else ""
        _print_finding(finding, where)
    _print_counts(findings)


def _print_finding(finding, where: str, sources_shown: set[str] | None = None) -> None:
    """A finding under its verdict; ``sources_shown``: the sources printed already in this listing, each said
    once (a rule's list of sources is the same for every file it finds in)."""
    from rich.text import Text

    import textwrap

    style = STYLE[finding.verdict]
    # a long title goes on under its own indent, not back at the verdict's column
    first, *rest = textwrap.wrap(finding.title, max(out.width - 9, 20), break_long_words=False,
                                 break_on_hyphens=False) or [""]
    out.print(Text.assemble((f"{finding.verdict:>7}", style), "  ", first), highlight=False, soft_wrap=True)
    if rest:
        _indented(" ".join(rest))
    if finding.verdict != "ok":
        if where:
            _indented(where, "dim")
        _indented(finding.meaning)
        if finding.fix:
            _indented(f"fix: {finding.fix}", "bold")
        for key, value in finding.to_dict()["evidence"].items():
            _indented(f"{key}: {value if isinstance(value, str) else json.dumps(value)}", "dim")
        if sources_shown is not None and finding.source in sources_shown:
            _indented(f"rule {finding.rule}; source: as above", "dim")
        else:
            _indented(f"rule {finding.rule}; source: {finding.source}", "dim")
        if sources_shown is not None:
            sources_shown.add(finding.source)


def _print_counts(findings, per: str = "") -> None:
    from ..doctor.model import counts

    found = counts(findings)
    out.print(f"{found['problem']} problem(s), {found['warning']} warning(s), {found['ok']} ok"
              + (f" (one per {per} and configuration)" if per else ""), highlight=False)
