"""A campaign through a batch launcher (Slurm, or any launcher registered with can.batch: a BatchScheduler,
launchers/batch.py): cases bundled into jobs, each case stored as it ends. Nothing here names a launcher.

    settle    every case: its plan, or its outcome when it cannot launch (recorded at once)
    submit    bundles of `cases_per_job` cases, each written down (bundle-K.json) before and after submission
    watch     one squeue call per interval for every job, the interval doubling while nothing changes
    collect   a case whose `exit` file is there: parsed, classified and recorded, while its job runs on
    leftover  an ended job's unfinished cases: the one it was running is recorded with the job's end
              (timeout, cancelled) or, when its node failed, submitted again within the retry budget; the
              ones it never started are submitted again

An interrupted run leaves its jobs running; `--resume` reads the bundle files, finds the jobs again (by id,
or by name for one submitted just before the interruption) and collects them without submitting them twice.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ..cache import write_file_atomically
from ..launchers.batch import BatchCase, BatchError, BatchScheduler, JobState, read_case, started
from ..spec.case import Case
from ..spec.status import RunStatus
from . import probe, stages

#: polls in a row that may fail (the controller busy or restarting) before the run gives up
POLL_FAILURES_TOLERATED = 10
#: polls in a row a job may be unknown to squeue and sacct before it counts as gone
UNKNOWN_POLLS_TOLERATED = 3
LOG_TAIL_LINES = 10


@dataclass
class OpenCase:
    """A case that has a plan and no recorded outcome yet."""

    case: Case
    launch: stages.LaunchPlan
    directory: Path
    env: dict[str, str]  # the plan's, with what its step needs (launcher.step_env)
    submissions: int = 0
    notes: list[str] = field(default_factory=list)  # why it was submitted again
    probe_dir: Path | None = None  # its configuration's probe step in the job that runs it


@dataclass
class Bundle:
    """The cases of one batch job, as written in its bundle file."""

    number: int
    name: str
    labels: list[str]
    job_id: str | None = None
    submitted_at: float = 0.0  # time.time() of the submission, for the pending limit
    unknown_polls: int = 0
    #: when the campaign last had a job running: a job queued behind the campaign's own is not stuck
    ours_ran_at: float = 0.0


class BundleFiles:
    """bundle-K.json per job in the campaign's job directory: which cases a job runs and its id, written
    before submission (id null) and after; what --resume starts from. (The cases' results wait for the store in
    campaign/journal.py, as under any launcher.)"""

    def __init__(self, directory: Path, job_prefix: str):
        self.directory = directory
        self.job_prefix = job_prefix
        directory.mkdir(parents=True, exist_ok=True)

    def bundles(self) -> list[Bundle]:
        found = []
        for path in sorted(self.directory.glob("bundle-*.json")):
            data = json.loads(path.read_text())
            found.append(Bundle(data["number"], data["name"], data["cases"], data.get("job"),
                                data.get("submitted_at", 0.0)))
        return found

    def new_bundle(self, labels: list[str]) -> Bundle:
        number = 1 + max((bundle.number for bundle in self.bundles()), default=0)
        bundle = Bundle(number, f"{self.job_prefix}-{number}", labels)
        self.save(bundle)
        return bundle

    def save(self, bundle: Bundle) -> None:
        write_file_atomically(self.directory / f"bundle-{bundle.number}.json",
                              json.dumps({"number": bundle.number, "name": bundle.name, "cases": bundle.labels,
                                          "job": bundle.job_id, "submitted_at": bundle.submitted_at}))

    def script_path(self, bundle: Bundle) -> Path:
        return self.directory / f"{bundle.name}.sh"

    def log_path(self, bundle: Bundle) -> Path:
        return self.directory / f"{bundle.name}.out"


class BatchRun:
    """One session of a campaign on a batch launcher."""

    def __init__(self, context: stages.CaseContext, launcher: BatchScheduler, jobs_dir: Path,
                 on_outcome: Callable[[Case, stages.Outcome], None], should_stop: Callable[[], bool] = lambda: False):
        self.context = context
        self.launcher = launcher
        self.table = launcher.table
        self.on_outcome = on_outcome
        self.should_stop = should_stop
        # job names carry the run's work directory (its store and campaign id): a job of a same-name campaign
        # in another store is never taken for one of this run's
        self.bundle_files = BundleFiles(jobs_dir,
                                        f"mpistack-{context.campaign.name}-{context.resources.workdir.name}")
        self.open: dict[str, OpenCase] = {}
        # each job's probe step, read once for all the cases of its configuration (configuration, step directory)
        self.probes_read: dict[tuple, dict[str, str]] = {}
        self.active: dict[str, Bundle] = {}  # job id -> bundle
        self.bundle_of: dict[str, Bundle] = {}  # case label -> the bundle that last took it
        self.keys: dict[str, str] = {}  # case label -> case key
        self.to_submit: list[str] = []

    # -- the loop -------------------------------------------------------------------------------------
    def run(self, cases: list[Case]) -> bool:
        """Run every case to a recorded outcome; False when stopped first (jobs keep running)."""
        for case in cases:
            launch = stages.settle(self.context, case)
            if isinstance(launch, stages.Outcome):
                self.on_outcome(case, launch)
                continue
            label = stages.case_label(self.context.campaign, case, self.context.resources.workdir.name)
            # the case's directory, the one part of the work directory its containers get
            self.context.resources.case_directory(label).mkdir(parents=True, exist_ok=True)
            self.keys[label] = case.key
            self.open[label] = OpenCase(case, launch, self.bundle_files.directory / label,
                                        {**launch.env, **self.launcher.step_env(case.stack.mpi_impl)})
            missing = self.launcher.unsupported(launch.argv)
            if missing:
                self._finish_failed(label, RunStatus.FAILED, missing, launched=False)
        self._find_earlier_jobs()
        self._collect()
        queued = {label for bundle in self.active.values() for label in bundle.labels}
        self.to_submit = [label for label in self.open if label not in queued]
        interval = self.table.poll_interval
        poll_failures = 0
        while self.open:
            if self.should_stop():
                return False
            self._submit_waiting()
            changed = self._collect()
            try:
                changed |= self._watch()
                poll_failures = 0
            except BatchError:
                poll_failures += 1
                if poll_failures > POLL_FAILURES_TOLERATED:
                    raise
            interval = self.table.poll_interval if changed else min(interval * 2, self.table.max_poll_interval)
            if self.open:
                self._sleep(interval)
        return True

    def _sleep(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and not self.should_stop():
            time.sleep(min(0.2, seconds))

    # -- submit ------------------------------------------------------------------------------------------
    def _submit_waiting(self) -> None:
        while self.to_submit:
            labels, self.to_submit = (self.to_submit[:self.table.cases_per_job],
                                      self.to_submit[self.table.cases_per_job:])
            self._submit([label for label in labels if label in self.open])

    def _submit(self, labels: list[str]) -> None:
        if not labels:
            return
        bundle = self.bundle_files.new_bundle(labels)
        cases = [self.open[label] for label in labels]
        batch_cases = [BatchCase(item.directory, self.context.campaign.timeout, item.launch.argv, item.env,
                                 item.launch.output) for item in cases]
        batch_cases = self._probe_steps(bundle, cases) + batch_cases
        nodes = max(item.case.placement.nodes for item in cases)
        script = self.bundle_files.script_path(bundle)
        script.write_text(self.launcher.render_job(bundle.name, nodes, self.bundle_files.log_path(bundle), batch_cases,
                                                   title=f"campaign {self.context.campaign.name}, job {bundle.number}"))
        try:
            bundle.job_id = self.launcher.submit(script)
        except BatchError as error:
            for label in labels:
                self._finish_failed(label, RunStatus.FAILED, f"the scheduler refused the job: {error}",
                                    launched=False)
            return
        bundle.submitted_at = time.time()
        self.bundle_files.save(bundle)
        for item in cases:
            item.submissions += 1
        self.active[bundle.job_id] = bundle
        self.bundle_of.update(dict.fromkeys(labels, bundle))

    def _find_earlier_jobs(self) -> None:
        """Jobs an earlier, interrupted session submitted: by the id in their bundle file, or by name."""
        bundles = self.bundle_files.bundles()
        by_name = self.launcher.jobs_named([bundle.name for bundle in bundles if bundle.job_id is None])
        for bundle in bundles:
            bundle.job_id = bundle.job_id or by_name.get(bundle.name)
            if bundle.job_id and any(label in self.open for label in bundle.labels):
                self.bundle_files.save(bundle)
                self.active[bundle.job_id] = bundle
                self.bundle_of.update(dict.fromkeys(bundle.labels, bundle))
                self._probe_steps(bundle, [self.open[label] for label in bundle.labels if label in self.open])

    # -- collect ---------------------------------------------------------------------------------------
    def _collect(self) -> bool:
        """Record every open case whose `exit` file is there; True when there was one."""
        collected = False
        for label, item in list(self.open.items()):
            ended = read_case(item.directory, item.env, self.context.campaign.timeout)
            if ended is None:
                continue
            facts = {**ended.facts(), "attempt": str(item.submissions)}
            configuration = probe.configuration(item.case)
            if (configuration, item.probe_dir) not in self.probes_read:
                self.probes_read[configuration, item.probe_dir] = probe.read_batch_probe(
                    self.context.campaign.name, item.case, self.context.resources, item.probe_dir)
            self.context.transports[configuration] = self.probes_read[configuration, item.probe_dir]
            if item.notes:
                facts["earlier_attempts"] = "; ".join(item.notes)
            if ended.start is not None and (previous := self._previous_case(label, ended.start.job_id)):
                facts["previous_case"] = previous
            outcome = stages.conclude(self.context, item.case, item.launch, ended.execution, item.submissions,
                                      {key: value for key, value in facts.items() if value})
            del self.open[label]
            self.on_outcome(item.case, outcome)
            collected = True
        return collected

    def _previous_case(self, label: str, job_id: str) -> str | None:
        """The key of the case its job ran just before this one (the bundle's order; a case an earlier job
        ended is skipped by the script and did not run in this one)."""
        bundle = self.bundle_of.get(label)
        if bundle is None or label not in bundle.labels:
            return None
        for earlier in reversed(bundle.labels[:bundle.labels.index(label)]):
            began = started(self.bundle_files.directory / earlier)
            if began is not None and began.job_id == job_id:
                return self.keys.get(earlier)
        return None

    # -- watch -------------------------------------------------------------------------------------------
    def _watch(self) -> bool:
        """Look at every active job once; settle the ones that ended; True when one did."""
        if not self.active:
            return False
        states = self.launcher.states(list(self.active))
        ours_running = any(state.state in ("RUNNING", "COMPLETING") for state in states.values())
        changed = False
        for job_id, bundle in list(self.active.items()):
            state = states.get(job_id)
            if state is None:
                bundle.unknown_polls += 1
                if bundle.unknown_polls <= UNKNOWN_POLLS_TOLERATED:
                    continue
                state = JobState(job_id, "UNKNOWN", "neither squeue nor sacct knows the job")
            if state.ended:
                self._collect()  # cases that ended as the job did
                self._leftovers(bundle, state)
                del self.active[job_id]
                changed = True
            elif state.state == "PENDING" and ours_running:
                bundle.ours_ran_at = time.time()  # the limit counts from when the campaign's own jobs stopped
            elif (state.state == "PENDING"
                  and time.time() - max(bundle.submitted_at, bundle.ours_ran_at) > self.table.pending_limit):
                self.launcher.cancel([job_id])
                for label in bundle.labels:
                    self._finish_failed(label, RunStatus.FAILED,
                                        f"job {job_id} still pending after {self.table.pending_limit:g} s "
                                        f"(reason: {state.reason or 'none given'}); cancelled", launched=False)
                del self.active[job_id]
                changed = True
        return changed

    def _leftovers(self, bundle: Bundle, state: JobState) -> None:
        """The open cases of a job that ended: the one it was running, and the ones it never started."""
        ended = f"job {state.job_id} ended {state.state}" + (f" on {state.nodes}" if state.nodes else "")
        retries = self.context.campaign.retries
        for label in bundle.labels:
            item = self.open.get(label)
            if item is None:
                continue
            began = started(item.directory)
            ran_here = began is not None and began.job_id == state.job_id
            if not ran_here or state.infrastructure:
                why = "its node failed" if ran_here else "it had not started"
                if item.submissions <= retries + (0 if ran_here else 1):
                    item.notes.append(f"{ended}; {why}")
                    self.to_submit.append(label)
                    continue
                self._finish_failed(label, RunStatus.FAILED, f"{ended}; {why}, after {item.submissions} "
                                                             f"submission(s){self._log_tail(bundle)}",
                                    launched=ran_here)
            elif state.state == "TIMEOUT":
                self._finish_failed(label, RunStatus.TIMEOUT, f"{ended}: the job's time limit ended this case")
            elif state.state == "CANCELLED":
                self._finish_failed(label, RunStatus.FAILED, f"{ended}: cancelled while this case ran")
            else:
                self._finish_failed(label, RunStatus.FAILED, f"{ended} before this case finished"
                                                             f"{self._log_tail(bundle)}")

    def _log_tail(self, bundle: Bundle) -> str:
        path = self.bundle_files.log_path(bundle)
        lines = path.read_text(errors="replace").strip().splitlines()[-LOG_TAIL_LINES:] if path.is_file() else []
        return "\n" + "\n".join(lines) if lines else ""

    def _finish_failed(self, label: str, status: RunStatus, message: str, launched: bool = True) -> None:
        """Record an open case that ended without its own result; `launched`: whether its step ever started (a
        case the batch system never started says so, and nothing of how its ranks would have been confined)."""
        item = self.open.pop(label, None)
        if item is None:
            return
        outcome = stages.Outcome(status, message, attempts=max(item.submissions, 1))
        facts = {"attempt": str(item.submissions), **({} if launched else {stages.NOT_LAUNCHED: "queue"})}
        stages.record(self.context, item.case, outcome, [], item.launch, launcher_facts=facts)
        self.on_outcome(item.case, outcome)

    # -- transport evidence ----------------------------------------------------------------------------------
    def _probe_steps(self, bundle: Bundle, cases: list[OpenCase]) -> list[BatchCase]:
        """The probe steps that start the job, one per configuration of its cases (campaign/probe.py). Per job
        rather than per campaign: its evidence is of the nodes the job's cases run on, and it has ended before
        they start, so no case waits for another job's probe."""
        steps: dict[Path, BatchCase | None] = {}
        for item in cases:
            item.probe_dir = probe.batch_directory(self.bundle_files.directory, bundle.name, item.case)
            if item.probe_dir not in steps:
                steps[item.probe_dir] = probe.batch_probe(self.context.campaign.name, item.case,
                                                          self.context.resources, item.probe_dir,
                                                          self.launcher.step_env(item.case.stack.mpi_impl))
        return [step for step in steps.values() if step is not None]
