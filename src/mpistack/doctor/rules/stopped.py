"""A configuration none of whose cases launched: its image could not be made, its container runtime is missing,
or its approach refused it; or whose containers the engine would not start (podman's own `Error: ...`, before
any rank ran). The cause is known (the run's message), so the answer and the doctor say it, once per
configuration, instead of "no known cause"."""

from __future__ import annotations

import re

from ...campaign.stages import NOT_LAUNCHED
from ..model import rule
from .runs import run_cell, subject_of


@rule("not-launched", "runs", "the run's own message, what the campaign found before the case could launch; "
      "measured on a 2-core Debian 12 KVM guest: a campaign of a user without root whose image could not be made "
      "answered 'no known cause'",
      "a case that never launched (its image, runtime or build failed, its approach refused it, or the batch "
      "system never started it)")
def not_launched(rule, run: dict):
    why = run["tags"].get(NOT_LAUNCHED)
    if why is None:
        return
    message = (run.get("message") or "").strip()
    first = message.splitlines()[0] if message else "no message recorded"
    if why == "queue":
        yield rule.finding("problem", f"never started by the batch system: {first}",
                           "The job holding this case ended, or was cancelled, before the case's step began: no "
                           "rank ran, so its 'N' says nothing about MPI in a container.",
                           "See why the job did not run (squeue --start, sacct -j JOB, the reason in the message); "
                           "raise the campaign's [slurm] pending_limit, or run again with --resume.",
                           subject=subject_of(run), cell=run_cell(run), cause="not-launched", status=run.get("status"))
        return
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


#: how podman and docker begin the line that says why they did not run a container (after the case's exit status)
ENGINE_ERROR = re.compile(r"^(?:exit status \d+: )?Error: (.+)")


@rule("container-not-started", "runs", "podman-run(1) (https://docs.podman.io/en/latest/markdown/podman-run.1.html) "
      "and docker-run(1): the client ends with 'Error: ...' when the container could not be made or started; "
      "measured on a 2-core Debian 12 KVM guest with rootless podman 4.3 (an OCI runtime that fails: every case "
      "'N', the doctor 'no known cause')",
      "a failed container case whose engine said it could not start the container (podman's 'Error: ...')")
def container_not_started(rule, run: dict):
    said = ENGINE_ERROR.match((run.get("message") or "").strip())
    runtime = run["tags"].get("runtime")
    if run.get("status") != "failed" or runtime not in ("podman", "docker") or said is None:
        return
    yield rule.finding("problem", f"container not started: {said.group(1)}",
                       f"{runtime} did not start the container, so no rank ran and nothing was measured: the 'N' "
                       "says nothing about MPI in a container. A cause of the engine's set-up (its runtime, "
                       "storage, the user's subordinate ids) stops every case of the configuration alike.",
                       f"Run `{runtime} run --rm IMAGE true` as the user who ran the campaign: it fails with the same "
                       "message until its cause is removed; `podman info` shows the runtime and storage in use.",
                       subject=subject_of(run), cell=run_cell(run), cause="container-not-started",
                       status=run.get("status"))
