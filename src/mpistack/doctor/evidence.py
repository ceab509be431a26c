"""What the runs and performance rules look at, read from the store: each run's diagnostics, and the analysis of
the same runs (rows, answers against both baselines) with the transport each launch reported and the machine
bounds each campaign measured."""

from __future__ import annotations

from dataclasses import dataclass, field
from statistics import median

from sqlalchemy import Engine

from ..analysis.answers import Answer, Settings, answer
from ..analysis.bounds import MachineBounds, load_bounds
from ..analysis.evidence import Row, RowKey, load_rows
from ..store.query import Where, run_diagnostics

CAMPAIGN_SCOPE = "campaign "  # how a row's scope names a stored campaign ("campaign 3")


@dataclass
class Performance:
    rows: dict[RowKey, Row]
    answers: list[Answer]
    transports: dict[int, dict] = field(default_factory=dict)  # run id -> what its MPI said it used
    settings: Settings = Settings()
    bounds: dict[str, MachineBounds] = field(default_factory=dict)  # scope -> what its machine can do at all
    #: run id -> what the launch ran with (``run_diagnostics``: its command and environment)
    launches: dict[int, dict] = field(default_factory=dict)

    def transport_of(self, row: Row) -> dict:
        """The transport the row's launches reported (the first that reported one)."""
        return next((self.transports[run] for run in row.runs if self.transports.get(run)), {})

    def bounds_of(self, key: RowKey) -> MachineBounds | None:
        """The machine bounds of the row's campaign; None when it stored none (or the row is published)."""
        return self.bounds.get(key.scope)

    @staticmethod
    def peak(row: Row) -> tuple[int | None, float] | None:
        """(size, median) where the row's median is highest: a bandwidth row's plateau."""
        medians = [(size, median(values)) for size, values in row.figures.items() if values]
        return max(medians, key=lambda item: item[1]) if medians else None

    @staticmethod
    def median_at(row: Row, size: int | None) -> float | None:
        values = row.figures.get(size)
        return median(values) if values else None


def campaign_bounds(engine: Engine, rows: dict[RowKey, Row]) -> dict[str, MachineBounds]:
    """The stored machine bounds of each campaign the rows come from."""
    found = {}
    for scope in {key.scope for key in rows}:
        number = scope[len(CAMPAIGN_SCOPE):] if scope.startswith(CAMPAIGN_SCOPE) else ""
        if number.isdigit() and (bounds := load_bounds(engine, int(number))) is not None:
            found[scope] = bounds
    return found


def load(engine: Engine, filters: list[Where], settings: Settings = Settings(),
         analysed: tuple[dict[RowKey, Row], list[Answer]] | None = None) -> tuple[list[dict], Performance]:
    """The runs' diagnostics and their analysis; ``analysed``: the rows and answers of the same filters and
    settings where the caller has made them already (a report), so that they are not read and compared twice."""
    runs = run_diagnostics(engine, filters)
    rows, answers = analysed if analysed is not None else (rows := load_rows(engine, filters), answer(rows, settings))
    return runs, Performance(rows, answers, {run["run"]: run["transport"] for run in runs if run.get("transport")},
                             settings, campaign_bounds(engine, rows), {run["run"]: run for run in runs})
