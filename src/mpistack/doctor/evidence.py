"""What the runs and performance rules look at, read from the store: each run's diagnostics, and the analysis of
the same runs (rows, answers against both baselines) with the transport each launch reported."""

from __future__ import annotations

from dataclasses import dataclass, field
from statistics import median

from sqlalchemy import Engine

from ..analysis.answers import Answer, Settings, answer
from ..analysis.evidence import Row, RowKey, load_rows
from ..store.query import Where, run_diagnostics


@dataclass
class Performance:
    rows: dict[RowKey, Row]
    answers: list[Answer]
    transports: dict[int, dict] = field(default_factory=dict)  # run id -> what its MPI said it used
    settings: Settings = Settings()

    def transport_of(self, row: Row) -> dict:
        """The transport the row's launches reported (the first that reported one)."""
        return next((self.transports[run] for run in row.runs if self.transports.get(run)), {})

    @staticmethod
    def peak(row: Row) -> tuple[int | None, float] | None:
        """(size, median) where the row's median is highest: a bandwidth row's plateau."""
        medians = [(size, median(values)) for size, values in row.figures.items() if values]
        return max(medians, key=lambda item: item[1]) if medians else None


def load(engine: Engine, filters: list[Where], settings: Settings = Settings()) -> tuple[list[dict], Performance]:
    runs = run_diagnostics(engine, filters)
    rows = load_rows(engine, filters)
    return runs, Performance(rows, answer(rows, settings), {run["run"]: run["transport"] for run in runs
                                                            if run.get("transport")}, settings)
