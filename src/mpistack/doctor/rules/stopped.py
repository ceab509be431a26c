"""A configuration none of whose cases launched: its image could not be made, its container runtime is missing,
or its approach refused it. The cause is known (the run's message), so the answer and the doctor say it,
once per configuration, instead of "no known cause"."""

from __future__ import annotations

from ...campaign.stages import NOT_LAUNCHED
from ..model import rule
from .runs import run_cell, subject_of


@rule("not-launched", "runs", "the run's own message, what the campaign found before the case could launch; "
      "measured on a 2-core Debian 12 KVM guest: a campaign of a user without root whose image could not be made "
      "answered 'no known cause'",
      "a case that never launched (its image, runtime or build failed, or its approach refused it)")
def not_launched(rule, run: dict):
    why = run["tags"].get(NOT_LAUNCHED)
    if why is None:
        return
    message = (run.get("message") or "").strip()
    first = message.splitlines()[0] if message else "no message recorded"
    if why == "refused":
        yield rule.finding("warning", f"not run here: {first}",
                           "The approach refused this case before launching it: it cannot run as asked on this "
                           "host. The whole configuration is missing from the answer for this reason alone.",
                           "Do what the reason says, or leave the approach out of the campaign.",
                           subject=subject_of(run), cell=run_cell(run), cause="not-launched",
                           status=run.get("status"))
        return
    yield rule.finding("problem", f"never launched: {first}",
                       "Every case of this configuration failed before it launched, for this one reason; nothing "
                       "was measured, so the configuration's 'N' says nothing about MPI in a container.",
                       "Remove the cause the message names (its fix is in it), then run the campaign again.",
                       subject=subject_of(run), cell=run_cell(run), cause="not-launched", status=run.get("status"))
