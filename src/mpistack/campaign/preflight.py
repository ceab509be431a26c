"""What a campaign will do, and what is wrong with it, before anything launches.

The dry run opens with it and the run states it at its start: the launches per stack and approach, each
reason a launch is skipped or refused said once with its count, and warnings about mistakes that would
otherwise show only in the answer (or at launch): rows with no baseline to be compared with, too few
repeats for any verdict, benchmark options that mpistack-bench rejects (asked of the binary itself with
`--check`, which validates a command line without starting MPI).
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Sequence

from ..approaches import Refused, Resources, Undecided
from ..images.host_bench import HOST_COMPILERS, build_host_bench, host_bench_path
from ..recipes.render import RecipeError
from ..spec.campaign import DEFAULT_VARIANT, Campaign
from ..spec.case import Case
from . import stages
from .schedule import comparison_group, identity, launches_here

#: how long mpistack-bench --check may take (it parses its command line and exits)
CHECK_TIMEOUT = 30


@dataclass(frozen=True)
class VerdictNeeds:
    """What the analysis needs before it decides a row (computed by the caller from the analysis' own rule:
    the campaign stage comes before the analysis)."""

    launches: int  # launches per side below which no message-size regime gets a verdict (Y, (Y))
    paired_rounds: int  # rounds from which a candidate is compared with the baseline launch of its block


@dataclass
class Preflight:
    """The cases of a campaign as the run will treat them."""

    #: (stack, approach as compared) -> [launches that run, launches skipped or refused]
    cells: dict[tuple[str, str], list[int]] = field(default_factory=dict)
    #: reason -> (its count, the stack/approach pairs it applies to)
    skipped: dict[str, tuple[int, list[str]]] = field(default_factory=dict)
    #: reason a launch is decided only once its image is read -> count
    undecided: Counter = field(default_factory=Counter)
    warnings: list[str] = field(default_factory=list)
    #: the keys of the cases refused once planned (not skipped by the matrix): they do not launch either
    refused: set[str] = field(default_factory=set)

    @property
    def launching(self) -> int:
        return sum(run for run, _ in self.cells.values())

    def announced(self, reason: str | None) -> bool:
        """Whether a skip for this reason was said already (the run then counts it without a line)."""
        return reason is not None and first_line(reason) in self.skipped


def survey(campaign: Campaign, cases: Sequence[Case], resources: Resources,
           needs: VerdictNeeds | None = None) -> Preflight:
    """Count the cases by stack and approach, group the skips by reason, and find the mistakes that can be told
    from the campaign alone (no baseline, too few repeats). Planning is pure: nothing runs."""
    found = Preflight()
    refused_by_plan: set[str] = set()
    for case in cases:
        cell = found.cells.setdefault((case.stack.name, case.approach_label), [0, 0])
        reason = case.skip
        if reason is None:
            try:
                stages.plan(campaign, case, resources)
            except Undecided as undecided:
                found.undecided[first_line(str(undecided))] += 1
            except Refused as refused:
                reason = str(refused)
                refused_by_plan.add(case.key)
        if reason is None:
            cell[0] += 1
            continue
        cell[1] += 1
        count, where = found.skipped.get(first_line(reason), (0, []))
        pair = f"{case.stack.name} {case.approach_label}"
        found.skipped[first_line(reason)] = (count + 1, where if pair in where else [*where, pair])
    # rows and columns in the campaign file's order, not the run order
    stack_order = {entry.name: index for index, entry in enumerate(campaign.stacks)}
    approach_order = {entry.name: index for index, entry in enumerate(campaign.approaches)}
    found.cells = dict(sorted(found.cells.items(), key=lambda item: (
        stack_order.get(item[0][0], len(stack_order)), approach_order.get(item[0][1].split("+")[0], 0), item[0][1])))
    found.refused = refused_by_plan
    found.warnings += _without_baseline(cases, refused_by_plan)
    if needs is not None:
        found.warnings += _too_few_repeats(campaign, needs)
    return found


def first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else text


def _without_baseline(cases: Sequence[Case], refused: set[str]) -> list[str]:
    """One warning per stack and approach whose rows have no system baseline (the host's MPI of their family,
    natively, in the variant they are compared with) and no same-stack one (a pip stack's wheel natively),
    with how to add one."""
    launching = [case for case in cases if launches_here(case) and case.key not in refused]
    groups: dict[tuple, list[Case]] = {}
    for case in launching:
        if case.repeat == 1:
            groups.setdefault(comparison_group(case), []).append(case)
    lacking: dict[tuple[str, str, str], set[str]] = {}
    hints: dict[tuple[str, str, str], str] = {}
    # the system MPIs the campaign does run natively somewhere: (family, variant) -> the host stack's name
    systems = {(case.stack.mpi_impl, case.variant_name): case.stack.name for case in launching
               if case.stack.is_host and case.approach_label == "native"}
    for members in groups.values():
        for case in members:
            variant = case.variant.baseline if case.variant else DEFAULT_VARIANT
            if case.stack.is_host and case.approach_label == "native" and case.variant_name == variant:
                continue  # the system baseline itself
            if _has_baseline(case, members, variant):
                continue
            row = (case.stack.name, case.approach_label, case.variant_name)
            lacking.setdefault(row, set()).add(case.benchmark.name)
            hints[row] = _how_to_add(case, variant, systems.get((case.stack.mpi_impl, variant)))
    warnings = []
    for (stack, approach, variant), benchmarks in sorted(lacking.items()):
        name = f"{stack} {approach}" + ("" if variant == DEFAULT_VARIANT else f" (variant {variant})")
        warnings.append(f"no baseline for {name} ({', '.join(sorted(benchmarks))}): its rows are reported "
                        f"without a comparison; {hints[(stack, approach, variant)]}")
    return warnings


def _has_baseline(case: Case, group: Sequence[Case], variant: str) -> bool:
    for other in group:
        if identity(other) == identity(case) or other.approach_label != "native" or other.variant_name != variant:
            continue
        if other.stack.is_host and other.stack.mpi_impl == case.stack.mpi_impl:
            return True  # the system baseline
        if case.origin == "image" and other.stack.name == case.stack.name and other.origin == "venv":
            return True  # the same build natively
    return False


def _how_to_add(case: Case, variant: str, system_stack: str | None) -> str:
    """How to give the case a baseline; `system_stack`: the campaign's host stack of the case's family where
    it runs natively in the variant compared with, though not for this case's ranks and benchmark."""
    impl = case.stack.mpi_impl
    if system_stack is not None:
        nodes = case.placement.nodes
        return (f'the campaign runs {system_stack} natively in variant "{variant}", but not with '
                f"{case.placement.ranks} ranks on {nodes} node{'s' if nodes != 1 else ''} for this benchmark: an "
                "[[include]] or [[exclude]] table leaves that case out; let it run there")
    system = (f'add the system MPI natively ([[stack]] with host = "{impl}", and "native" in approaches)'
              + ("" if variant == DEFAULT_VARIANT else f', in variant "{variant}" (its baseline)'))
    if case.origin == "image" and case.stack.native_form == "venv":
        return f'{system}, or the same build natively ("native" in approaches runs {case.stack.name}\'s wheel)'
    return system


def _too_few_repeats(campaign: Campaign, needs: VerdictNeeds) -> list[str]:
    repeats = campaign.repeats
    if repeats < needs.launches:
        return [f"repeats = {repeats}: no row can be Y or (Y); the analysis decides a message-size regime from "
                f"{needs.launches} launches per side (and pairs each candidate with its block's baseline from "
                f"{needs.paired_rounds}): set repeats = {needs.paired_rounds} (docs/analysis.md)"]
    if repeats < needs.paired_rounds:
        return [f"repeats = {repeats}: rows are compared unpaired, on each side's median; from "
                f"{needs.paired_rounds} rounds each candidate launch is paired with the baseline launch of its "
                "block, which cancels a shared machine's slow spells (docs/analysis.md)"]
    return []


# ---------------------------------------------------------------- benchmark options, asked of mpistack-bench


def check_options(campaign: Campaign, cases: Iterable[Case], binary: Path) -> list[str]:
    """Ask `binary --check` about every distinct mpistack-bench command line of the cases (their host
    buffers: device buffers need a GPU build); one error per rejected one, naming the campaign field to fix."""
    problems: list[str] = []
    seen: set[tuple] = set()
    where = campaign.path or campaign.name
    for case in cases:
        if case.skip or case.benchmark.program or case.test is None:
            continue
        index = next(i for i, entry in enumerate(campaign.benchmarks) if entry == case.benchmark)
        argv = [case.benchmark.name, *campaign.benchmark_options, *case.benchmark.options]
        if case.test.takes_buffer_placement and "D" not in case.buffers:
            argv += case.buffers.split("-")
        if tuple(argv) in seen:
            continue
        seen.add(tuple(argv))
        error = _rejected(binary, argv)
        if error is None:
            continue
        alone = _rejected(binary, [case.benchmark.name, *campaign.benchmark_options])
        fields = "benchmark_options" if alone else f"benchmark.{index}.options"
        problems.append(f"{where}: {fields}: mpistack-bench rejects `{shlex.join(argv)}`: {error}")
    return problems


def _rejected(binary: Path, argv: list[str]) -> str | None:
    """mpistack-bench's own error for this command line, or None when it accepts it."""
    try:
        done = subprocess.run([str(binary), "--check", *argv], capture_output=True, text=True,
                              timeout=CHECK_TIMEOUT)
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"cannot ask {binary}: {error}"
    if done.returncode == 0:
        return None
    message = done.stderr.strip().splitlines()[0] if done.stderr.strip() else f"exit status {done.returncode}"
    return message.removeprefix("mpistack-bench: error: ")


def checker(resources: Resources, build: bool = False) -> Path | None:
    """A built mpistack-bench to ask (every build parses options alike): the host's for the campaign's host
    MPI, else any host build there is; with `build`, one is built with a host MPI compiler when none is (the
    run builds it anyway); None when there is none."""
    candidates = [*resources.host_bench.values(), *(host_bench_path(mpi) for mpi in HOST_COMPILERS)]
    found = next((Path(path) for path in candidates if Path(path).is_file()), None)
    if found is not None or not build:
        return found
    for mpi, compiler in HOST_COMPILERS.items():
        if shutil.which(compiler):
            try:
                return build_host_bench(mpi)
            except (OSError, subprocess.CalledProcessError, RecipeError):
                continue
    return None


# ---------------------------------------------------------------- the summary, as lines of text


def summary(found: Preflight, width: int = 80, pilot: Preflight | None = None, plan: str = "") -> list[str]:
    """The launches per stack (rows) and approach (columns; a variant's or a setting's "+..." on a second header
    line), or, where that table is wider than `width`, a line per stack; then each skip reason once with its
    count. A sequential campaign's cells read "pilot…most": its `pilot`'s launches, then `found`'s (every round up
    to the maximum), with `plan` (the maximum and the budget) in the heading."""
    stacks = list(dict.fromkeys(stack for stack, _ in found.cells))
    approaches = list(dict.fromkeys(approach for _, approach in found.cells))
    first = max([len("stack"), *map(len, stacks)])
    heads = [(approach.split("+", 1)[0], "+" + approach.split("+", 1)[1] if "+" in approach else "")
             for approach in approaches]
    widths = [max(len(top), len(bottom), 5) for top, bottom in heads]

    def count(stack: str, approach: str) -> str:
        run, skipped = found.cells.get((stack, approach), (0, 0))
        text = "" if run + skipped == 0 else "-" if run == 0 else str(run) if not skipped else f"{run}/{run + skipped}"
        if pilot is None or run == 0:
            return text
        return f"{pilot.cells.get((stack, approach), (0, 0))[0]}…{text}"

    partly = any(0 < run < run + skipped for run, skipped in found.cells.values())
    staged = "pilot…most; " if pilot is not None else ""
    lines = [f"launches per stack and approach ({staged}- : none runs" + ("; N/M: N of M run" if partly else "")
             + ", why below):"]
    widths = [max(width_, *(len(count(stack, approach)) for stack in stacks))
              for width_, approach in zip(widths, approaches)]
    if 2 + first + sum(w + 2 for w in widths) <= width:
        lines.append("  " + "stack".ljust(first) + "".join(f"  {top:>{w}}" for (top, _), w in zip(heads, widths)))
        if any(bottom for _, bottom in heads):
            lines.append("  " + " " * first + "".join(f"  {bottom:>{w}}" for (_, bottom), w in zip(heads, widths)))
        for stack in stacks:
            lines.append("  " + stack.ljust(first)
                         + "".join(f"  {count(stack, approach):>{w}}" for approach, w in zip(approaches, widths)))
    else:
        for stack in stacks:
            cells = [f"{approach} {text}" for approach in approaches if (text := count(stack, approach))]
            lines.append(f"  {stack}: " + ", ".join(cells))
    if plan:
        lines.append(f"  {plan}")
    for number, (reason, (count, where)) in enumerate(found.skipped.items(), start=1):
        lines.append(f"[{number}] {count} skipped ({', '.join(where)}): {reason}")
    for reason, count in found.undecided.items():
        lines.append(f"{count}× decided once the image is read: {reason}")
    return lines
