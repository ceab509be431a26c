"""slurm: a campaign's cases bundled into batch jobs, each case one srun step under its own limit.

One allocation runs many cases, one after another (steps that ran side by side would disturb each other's
measurements). Every case writes into a directory of its own on the shared file system: `started` (job,
step, time), the output of srun, and `exit` (status, time), written last and atomically, so that a case
is collected as soon as it ends, and a case already ended is skipped when its job is submitted again.

    Srun                      how ranks start: srun --mpi=pmi2|pmix, -N/-n/--ntasks-per-node, --cpu-bind
    render_script(...)        the sbatch script (Jinja2, every value quoted)
    SlurmLauncher             sbatch --parsable, one squeue call for all jobs (sacct for the ones it
                              has forgotten), scancel
    read_case(directory)      a finished case's Execution, with the job, step and nodes it ran on
                              (launchers/batch.py: the layout every batch launcher shares)
"""

from __future__ import annotations

import math
import os
import re
import shlex
import subprocess
from pathlib import Path

import jinja2

from ..registry import LAUNCHERS
from ..runtime import SRUN_MPI
from ..spec.campaign import Placement, SlurmEntry
from ..spec.toml_files import load_model, read_text, user_config_file
from .base import LauncherCapabilities, PerRankStart
from .batch import BatchCase, BatchError, JobState

#: what PMIx runs set: psec=native, PMIx in Slurm's security domain (CSCS docs 'OpenMPI',
#: https://docs.cscs.ch/software/communication/openmpi/); gds=hash, the datastore every PMIx version has
#: (the shared-memory one fails between a container's PMIx and the host's)
PMIX_ENV = {"PMIX_MCA_psec": "native", "PMIX_MCA_gds": "hash"}
CPU_BIND = {"none": "none", "core": "cores", "socket": "sockets"}
#: seconds `timeout` waits after SIGTERM before it sends SIGKILL to a case's srun
KILL_AFTER_SECONDS = 10


class SlurmError(BatchError):
    """A Slurm command failed; the message carries its error output."""


class Srun:
    """Ranks started by srun inside the campaign's batch jobs."""

    def ranks(self, mpi: str, placement: Placement, program: str | None = None) -> list[str]:
        argv = ["srun", f"--mpi={SRUN_MPI[mpi]}", f"--nodes={placement.nodes}", f"--ntasks={placement.ranks}"]
        per_node = placement.ranks_per_node or (placement.ranks // placement.nodes
                                                if placement.ranks % placement.nodes == 0 else None)
        if per_node is not None:
            argv.append(f"--ntasks-per-node={per_node}")
        # a rank that fails ends the step at once rather than leaving the others waiting for it
        return [*argv, f"--cpu-bind={CPU_BIND[placement.binding]}", "--kill-on-bad-exit=1"]

    def ranks_in_containers(self, mpi: str, placement: Placement) -> PerRankStart:
        """srun's PMI-2 plug-in hands each rank a socket as file descriptor $PMI_FD; the shim moves it to
        descriptor 3, which the container keeps (podman --preserve-fds 1). Its PMIx plug-in needs nothing of
        the sort: the step's PMIx server publishes a TCP address (PMIX_SERVER_URI*) the ranks reach on the
        node's network."""
        if SRUN_MPI[mpi] == "pmix":
            return PerRankStart(self.ranks(mpi, placement))
        shim = 'exec 3>&"$PMI_FD" {PMI_FD}>&-; PMI_FD=3 exec "$@"'
        return PerRankStart([*self.ranks(mpi, placement), "bash", "-c", shim, "mpistack-pmi-fd"], preserve_fds=1)

    def one_task(self, placement: Placement) -> list[str]:
        """One task with a CPU per rank, for a container whose own mpiexec starts the ranks."""
        return ["srun", "--nodes=1", "--ntasks=1", f"--cpus-per-task={placement.ranks}", "--cpu-bind=none"]


def step_env(mpi: str) -> dict[str, str]:
    """What a step of this MPI family needs set under srun."""
    return dict(PMIX_ENV) if SRUN_MPI[mpi] == "pmix" else {}


# --- settings -----------------------------------------------------------------------------------------

def user_defaults_path() -> Path:
    override = os.environ.get("MPISTACK_SLURM_DEFAULTS")
    return Path(override) if override else user_config_file("slurm.toml")


def settings(campaign_table: SlurmEntry | None) -> SlurmEntry:
    """The campaign's [slurm] table over the user's defaults file (same keys); the campaign's keys win."""
    path = user_defaults_path()
    defaults = (load_model(SlurmEntry, read_text(path, ValueError), str(path), ValueError) if path.is_file()
                else SlurmEntry())
    if campaign_table is None:
        return defaults
    return defaults.model_copy(update=campaign_table.model_dump(exclude_unset=True))


# --- the batch script --------------------------------------------------------------------------------

def time_limit(cases: list[BatchCase], table: SlurmEntry) -> str:
    """The job's --time: the table's, or every case's limit with its kill grace and a margin, in minutes."""
    if table.time_limit:
        return table.time_limit
    seconds = sum(case.timeout + KILL_AFTER_SECONDS + 5 for case in cases) + 60
    return str(math.ceil(seconds / 60))


def sbatch_directives(name: str, nodes: int, log: Path, cases: list[BatchCase], table: SlurmEntry) -> list[str]:
    """The job's options. --no-requeue: a job whose node fails is not rerun by Slurm from its start;
    mpistack submits the unfinished cases again, within the campaign's retry budget."""
    directives = [f"--job-name={name}", f"--nodes={nodes}", f"--time={time_limit(cases, table)}",
                  "--no-requeue", f"--output={log}"]
    if table.exclusive:
        directives.append("--exclusive")
    for key in ("account", "partition", "reservation", "qos", "constraint"):
        value = getattr(table, key)
        if value:
            directives.append(f"--{key}={value}")
    return [*directives, *table.sbatch_options]


def _environment() -> jinja2.Environment:
    environment = jinja2.Environment(loader=jinja2.PackageLoader("mpistack.launchers", "templates"),
                                     autoescape=False, undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    environment.filters["quote"] = lambda value: shlex.quote(str(value))
    environment.filters["command"] = lambda argv: shlex.join(str(item) for item in argv)
    return environment


def render_script(name: str, nodes: int, log: Path, cases: list[BatchCase], table: SlurmEntry,
                  title: str = "") -> str:
    """The sbatch script that runs `cases` one after another, each under its own limit."""
    for directive in (name, str(log)):
        if re.search(r"[\s'\"\\$`]", directive):
            raise ValueError(f"{directive!r} cannot go into an #SBATCH line: no white space or quotes")
    return _environment().get_template("sbatch.sh.j2").render(
        title=title, directives=sbatch_directives(name, nodes, log, cases, table), cases=cases,
        kill_after=KILL_AFTER_SECONDS)


# --- the Slurm commands ---------------------------------------------------------------------------------

def open_for(campaign, resources, **_) -> "SlurmLauncher":
    """The launcher of a campaign: its [slurm] table over the user's defaults."""
    return SlurmLauncher(settings(campaign.slurm))


def shared_workdir(campaign) -> str | None:
    """The [slurm] table's workdir (over the user's defaults): where job scripts and case output go."""
    return settings(campaign.slurm).workdir


@LAUNCHERS.register("slurm", starter=Srun(), open=open_for, shared_workdir=shared_workdir,
                    can=LauncherCapabilities(batch=True, max_nodes=None, per_rank_containers=True,
                                             pmi=("pmi2", "pmix")))
class SlurmLauncher:
    """The Slurm client commands, with the settings of one campaign. Each call is one command for all the
    jobs it concerns, so that polling costs the controller one RPC per interval. A BatchScheduler
    (launchers/batch.py)."""

    def __init__(self, table: SlurmEntry, env: dict[str, str] | None = None, command_timeout: float = 120):
        self.table = table
        self.env = env if env is not None else dict(os.environ)
        self.command_timeout = command_timeout
        self._offered: tuple[set[str] | None] | None = None  # srun --mpi=list, asked once

    def render_job(self, name: str, nodes: int, log: Path, cases: list[BatchCase], title: str = "") -> str:
        return render_script(name, nodes, log, cases, self.table, title=title)

    def step_env(self, mpi: str) -> dict[str, str]:
        return step_env(mpi)

    def allocation_env(self) -> dict[str, str]:
        """The table's account, partition, reservation, qos and constraint as the variables an srun outside a
        job reads for the allocation it makes (srun(1), INPUT ENVIRONMENT VARIABLES): what a launch from the
        submit host (the machine bounds) needs where the cluster asks for them."""
        return {f"SLURM_{key.upper()}": value for key in ("account", "partition", "reservation", "qos", "constraint")
                if (value := getattr(self.table, key))}

    def unsupported(self, argv: list[str]) -> str | None:
        """The case's `srun --mpi=X` when this cluster's srun does not offer X (srun --mpi=list)."""
        if self._offered is None:
            self._offered = (self.mpi_plugins(),)
        offered = self._offered[0]
        wanted = next((item for item in argv if item.startswith("--mpi=")), None)
        if offered is None or wanted is None or wanted.removeprefix("--mpi=") in offered:
            return None
        return f"srun {wanted}: this cluster's srun offers {', '.join(sorted(offered))} (srun --mpi=list)"

    def _run(self, *argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        try:
            proc = subprocess.run(list(argv), env=self.env, capture_output=True, text=True,
                                  timeout=self.command_timeout)
        except (OSError, subprocess.TimeoutExpired) as error:
            raise SlurmError(f"{argv[0]}: {error}") from error
        if check and proc.returncode != 0:
            raise SlurmError(f"{shlex.join(argv)} exited {proc.returncode}: {proc.stderr.strip()[-2000:]}")
        return proc

    def submit(self, script: Path) -> str:
        """sbatch --parsable SCRIPT -> the job id."""
        out = self._run("sbatch", "--parsable", str(script)).stdout.strip()
        job_id = out.split(";")[0]  # JOBID[;CLUSTER]
        if not job_id.isdigit():
            raise SlurmError(f"sbatch printed {out!r}, not a job id")
        return job_id

    def states(self, job_ids: list[str]) -> dict[str, JobState]:
        """The state of every job squeue still knows, and of the others from sacct."""
        if not job_ids:
            return {}
        found = self._squeue(job_ids)
        missing = [job for job in job_ids if job not in found]
        if missing:
            found.update(self._sacct(missing))
        return found

    def _squeue(self, job_ids: list[str]) -> dict[str, JobState]:
        proc = self._run("squeue", "-h", "--states=all", f"--jobs={','.join(job_ids)}", "-o", "%i|%T|%r|%N",
                         check=False)
        if proc.returncode != 0 and "Invalid job id" not in proc.stderr:
            raise SlurmError(f"squeue exited {proc.returncode}: {proc.stderr.strip()[-2000:]}")
        return _parse_states(proc.stdout, job_ids)

    def _sacct(self, job_ids: list[str]) -> dict[str, JobState]:
        """From the accounting database, or from the job completion file (`sacct -c`) where a cluster
        has no slurmdbd."""
        fields = ["-n", "-P", "-X", f"--jobs={','.join(job_ids)}", "--format=JobID,State,Reason,NodeList"]
        proc = self._run("sacct", *fields, check=False)
        if proc.returncode != 0 or not proc.stdout.strip():
            proc = self._run("sacct", "-c", "-n", "-P", f"--jobs={','.join(job_ids)}",
                             "--format=JobID,State,NodeList", check=False)
            return {job: JobState(job, state, "", nodes) for job, state, nodes in
                    (line.split("|")[:3] for line in proc.stdout.splitlines() if line.count("|") >= 2)
                    if job in job_ids}
        return _parse_states(proc.stdout, job_ids)

    def mpi_plugins(self) -> set[str] | None:
        """The PMI plug-ins this cluster's srun offers (`srun --mpi=list`), None when it cannot tell."""
        try:
            proc = self._run("srun", "--mpi=list", check=False)
        except SlurmError:
            return None
        if proc.returncode != 0:
            return None
        return parse_mpi_plugins(proc.stdout + proc.stderr)

    def cancel(self, job_ids: list[str]) -> None:
        if job_ids:
            self._run("scancel", *job_ids, check=False)

    def jobs_named(self, names: list[str]) -> dict[str, str]:
        """job name -> id of this user's jobs squeue knows by these names (a job submitted just before
        mpistack was killed, whose id it never wrote down). Only this user's: another's job of the same name
        is never taken for one of this campaign's."""
        if not names:
            return {}
        proc = self._run("squeue", "-h", "--states=all", f"--user={os.getuid()}", f"--name={','.join(names)}",
                         "-o", "%i|%j", check=False)
        return {name: job for job, name in (line.split("|", 1) for line in proc.stdout.splitlines() if "|" in line)}


def _parse_states(text: str, job_ids: list[str]) -> dict[str, JobState]:
    states = {}
    for line in text.splitlines():
        parts = line.strip().split("|")
        if len(parts) < 4 or parts[0] not in job_ids:
            continue
        job, state, reason, nodes = parts[:4]
        states[job] = JobState(job, state.split()[0] if state else "UNKNOWN", reason, nodes)
    return states


def parse_mpi_plugins(text: str) -> set[str]:
    """The plug-in names in `srun --mpi=list` output: one per line, after an "srun:" prefix in older
    releases, and "pmix_v4"-style versions on a line of their own in newer ones."""
    names = set()
    for line in text.splitlines():
        words = line.removeprefix("srun:").replace(":", " ").split()
        if len(words) == 1 and re.fullmatch(r"[a-z][a-z0-9_]*", words[0]):
            names.add(words[0])
        elif line.strip().startswith("specific pmix plugin versions available"):
            names.update(word for word in words if re.fullmatch(r"pmix_v\d+", word))
    return names
