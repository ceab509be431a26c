"""How a run ended: the one status vocabulary of the runner, the parsers, the store and the analysis."""

from __future__ import annotations

import enum


class RunStatus(str, enum.Enum):
    OK = "ok"
    FAILED = "failed"
    TIMEOUT = "timeout"
    VALIDATION_FAILED = "validation-failed"
    SKIPPED = "skipped"

    def __str__(self) -> str:
        return self.value


#: every recorded status ends a case: --resume does not run it again
FINAL_STATUSES = tuple(RunStatus)
