"""The compatibility matrix: stacks against approaches, one class per cell, derived from the answers (never typed).

A row is a stack (with the MPI version its spec declares and the library version line its own build reports), a
column an approach (native, container, hybrid, bind, fabric-swap, then any other), followed by one column per
non-default variant of it (``container+tcp``). A cell is the class of that stack, approach and variant over all
its benchmarks (and placements) against the ``system`` baseline:

* ``N`` if any benchmark row is ``N`` (the error);
* else ``(Y)`` if any is ``(Y)`` (the benchmarks and where they are slower);
* else ``?`` if any is ``?`` (why);
* else ``Y``.

Pure: no I/O.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Iterable

from ..spec.campaign import DEFAULT_VARIANT
from .answers import SYSTEM, Answer, where_slow

__all__ = ["APPROACH_ORDER", "Cell", "Column", "LEGEND", "Matrix", "StackRow", "column_order", "compat_matrix",
           "placement_text"]

#: Columns come in this order; approaches not listed follow, alphabetically.
APPROACH_ORDER = ("native", "container", "hybrid", "bind", "fabric-swap")

#: What each class means in a matrix cell (the legend printed under the matrix).
LEGEND = {
    "Y": "at native speed in every message-size regime",
    "(Y)": "runs, but slower (where)",
    "N": "does not run (the error)",
    "?": "not tested or inconclusive (why)",
}

_PRIORITY = {"N": 0, "(Y)": 1, "?": 2, "Y": 3}
_MAX_LISTED = 3  # slow benchmarks named in a (Y) cell's reason before "and k more"


@dataclass(frozen=True, order=True)
class Column:
    """An approach in one variant; the default variant is the approach alone."""

    approach: str
    variant: str = DEFAULT_VARIANT

    @property
    def label(self) -> str:
        return self.approach if self.variant == DEFAULT_VARIANT else f"{self.approach}+{self.variant}"


@dataclass(frozen=True)
class StackRow:
    """A stack with its versions: ``declared`` from its spec, ``library`` the first line its own build reports."""

    stack: str
    scope: str = ""
    declared_version: str | None = None
    library_version: str | None = None

    @property
    def key(self) -> tuple[str, str]:
        return (self.scope, self.stack)


@dataclass(frozen=True)
class Cell:
    label: str  # Y, (Y), N, ?
    reason: str  # one line
    rows: int = 0  # benchmark rows (benchmark x placement x buffers) behind it


@dataclass
class Matrix:
    rows: list[StackRow] = field(default_factory=list)
    columns: list[Column] = field(default_factory=list)
    cells: dict[tuple[tuple[str, str], Column], Cell] = field(default_factory=dict)
    baselines: list[str] = field(default_factory=list)  # the system baselines' stacks

    def cell(self, row: StackRow, column: Column) -> Cell | None:
        return self.cells.get((row.key, column))

    @property
    def scoped(self) -> bool:
        """Whether rows come from more than one scope (a campaign and a published reference), so that a row must
        name its scope."""
        return len({row.scope for row in self.rows}) > 1

    def records(self) -> list[dict]:
        """One dict per cell, rows then columns in order (the JSON form)."""
        out = []
        for row in self.rows:
            for column in self.columns:
                cell = self.cell(row, column)
                if cell is not None:
                    out.append({"scope": row.scope, "stack": row.stack, "declared_version": row.declared_version,
                                "library_version": row.library_version, "approach": column.approach,
                                "variant": column.variant, "column": column.label, "class": cell.label,
                                "reason": cell.reason, "rows": cell.rows})
        return out


def placement_text(answer: Answer) -> str:
    """``n2N1 H-H``: ranks, nodes and buffers, as case labels write them (``n?`` where the source gave no
    placement, as published tables often do)."""
    return f"{answer.key.placement} {answer.key.buffers}"


def column_order(column: Column) -> tuple:
    """Sort key of columns: the known approaches in order, others after; each variant after its approach."""
    known = column.approach in APPROACH_ORDER
    return (0 if known else 1, APPROACH_ORDER.index(column.approach) if known else 0, column.approach,
            column.variant != DEFAULT_VARIANT, column.variant)


def _names(names: Iterable[str]) -> str:
    return ", ".join(dict.fromkeys(names))


def _cell(answers: list[Answer], name) -> Cell:
    by_label: dict[str, list[Answer]] = defaultdict(list)
    for answer_ in answers:
        by_label[answer_.label].append(answer_)
    label = min(by_label, key=_PRIORITY.__getitem__)
    chosen = by_label[label]
    if label == "N":
        first = chosen[0]
        reason = f"{name(first)}: {first.row_class.reason}"
        if len(chosen) > 1:
            reason += f"; also fails in {_names(name(a) for a in chosen[1:])}"
    elif label == "(Y)":
        parts = [f"{name(a)} {where_slow(a)}" for a in chosen[:_MAX_LISTED]]
        reason = "slower: " + "; ".join(parts)
        if len(chosen) > _MAX_LISTED:
            reason += f"; and {len(chosen) - _MAX_LISTED} more ({_names(name(a) for a in chosen[_MAX_LISTED:])})"
        if by_label.get("?"):
            reason += f"; inconclusive in {_names(name(a) for a in by_label['?'])}"
    elif label == "?":
        causes: dict[str, list[str]] = defaultdict(list)
        for answer_ in chosen:
            causes[answer_.row_class.cause or answer_.row_class.reason].append(name(answer_))
        reason = "; ".join(f"{_names(names)}: {why}" for why, names in causes.items())
        if by_label.get("Y"):
            reason += f"; at native speed in {_names(name(a) for a in by_label['Y'])}"
    else:
        reason = f"at native speed in every regime of {_names(name(a) for a in chosen)}"
    return Cell(label, reason, len(answers))


def _versions(answers: list[Answer]) -> tuple[str | None, str | None]:
    """The declared version, and the library line of the stack's own build: its container (the image's own MPI)
    or native (a stack installed natively) runs first; bind and fabric-swap report the host's library."""
    declared = next((a.declared_version for a in answers if a.declared_version), None)
    preference = {"container": 0, "native": 1, "hybrid": 2}
    own = sorted((a for a in answers if a.library_version and a.key.approach in preference),
                 key=lambda a: (preference[a.key.approach], a.key.variant != DEFAULT_VARIANT))
    return declared, own[0].library_version if own else None


def compat_matrix(answers: Iterable[Answer]) -> Matrix:
    """The matrix of the answers against the ``system`` baseline (``same-stack`` answers are left out)."""
    chosen = [a for a in answers if a.baseline == SYSTEM]
    placements = {(a.key.ranks, a.key.nodes, a.key.buffers) for a in chosen}

    def name(answer_: Answer) -> str:
        return answer_.key.benchmark + (f" ({placement_text(answer_)})" if len(placements) > 1 else "")

    groups: dict[tuple[tuple[str, str], Column], list[Answer]] = defaultdict(list)
    per_stack: dict[tuple[str, str], list[Answer]] = defaultdict(list)
    for answer_ in sorted(chosen, key=lambda a: a.key):
        stack_key = (answer_.key.scope, answer_.key.stack)
        groups[(stack_key, Column(answer_.key.approach, answer_.key.variant))].append(answer_)
        per_stack[stack_key].append(answer_)

    rows = []
    for (scope, stack), stack_answers in sorted(per_stack.items()):
        declared, library = _versions(stack_answers)
        rows.append(StackRow(stack, scope, declared, library))
    columns = sorted({column for _, column in groups}, key=column_order)
    cells = {key: _cell(group, name) for key, group in groups.items()}
    baselines = sorted({a.baseline_row.stack for a in chosen if a.baseline_row is not None})
    return Matrix(rows, columns, cells, baselines)
