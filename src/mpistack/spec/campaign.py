"""Campaign files: which stacks, deployment approaches, benchmarks and placements to run, and how.

    name = "local"
    timeout = 300                       # seconds per case; a hung case is killed and recorded as timeout
    approaches = ["native", "container", "hybrid", "bind"]
    benchmarks = ["latency", "bw"]      # or [[benchmark]] tables with options
    [[stack]]  name = "host-mpich"  host = "mpich"     # the host's own MPI (native)
    [[stack]]  name = "debian-mpich"                   # a catalogue stack (built when missing)
    [[placement]]  ranks = 2
    repeats = 8                         # launches per case, interleaved in a random order (seed = ...)
    pilot = 6                           # sequential: 6 rounds for every case, then rounds for open rows only,
                                        # up to `repeats` rounds (the maximum)
    budget = "15m"                      # the wall time the launches may take (s, m, h; or seconds)
    [[variant]]  name = "tcp"  env = { UCX_TLS = "tcp" }   # every non-native case once more with these

Errors name the file, the field and what was expected.
"""

from __future__ import annotations

import difflib
import fnmatch
import math
import re
from pathlib import Path
from typing import Annotated, Literal

from pydantic import (AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, ValidationInfo, field_validator,
                      model_validator)

from .benchmarks import BENCHMARK_NAMES
from .provenance import Provenance
from .stack import check_text
from .toml_files import load_model, read_text

#: the variant of a campaign's plain cases
DEFAULT_VARIANT = "default"
#: run fields every case records from the matrix (its stack, approach, placement, buffers)
CASE_RECORDED_FIELDS = frozenset({"stack", "approach", "launcher", "ranks", "nodes", "buffers"})

Name = Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._+-]*$", max_length=100)]
#: an environment value: one line (a new line in it would print as a forged line of `mpistack show`)
EnvValue = Annotated[str, AfterValidator(lambda value: check_text(value, 4096))]
#: a benchmark's arguments (never given to a shell, so a script for `sh -c` may span lines): as many as a
#: command line needs, not a file's worth
Options = Annotated[list[Annotated[str, Field(max_length=65536)]], Field(max_length=256)]
#: the doctor's finding ids (a rule's, or a known message's in data/doctor/signatures.toml)
FindingId = Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9._-]*$", max_length=100)]
FindingIds = FindingId | Annotated[list[FindingId], Field(min_length=1)]
#: what a control variant expects: no finding
NO_CAUSE = "none"


class CampaignError(ValueError):
    """A campaign file that cannot be used: the message names the file and the field."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class StackEntry(_Model):
    """One stack: the host's own MPI, a catalogue stack, or an inline stack table."""

    name: Name
    host: Literal["mpich", "openmpi"] | None = Field(None, description="the host's MPI, run natively")
    inline: dict | None = Field(None, description="a whole stack spec, as in a catalogue file")

    @model_validator(mode="after")
    def _one_kind(self) -> "StackEntry":
        if self.host and self.inline:
            raise ValueError("give either host (the host's MPI) or inline (a stack spec), not both")
        return self


class ApproachEntry(_Model):
    #: a registered approach (checked against the registry by the campaign stage: campaign/matrix.py)
    name: Name
    #: let ranks attach each other's memory (cross-memory attach, single-copy transfers): containers
    #: get --pid host, CAP_SYS_PTRACE and no seccomp filter. Off is podman's default confinement.
    single_copy: bool = False
    #: bind: which of the host's MPIs is mounted into the images (default: the one of each image's own family)
    host_mpi: Literal["mpich", "openmpi"] | None = None


class BenchmarkEntry(_Model):
    name: Name
    options: Options = Field(default_factory=list)
    #: another program instead of mpistack-bench (a real OSU binary, or a test program); its OSU text
    #: output is parsed
    program: str | None = None

    @model_validator(mode="after")
    def _known(self) -> "BenchmarkEntry":
        if self.program is None and self.name not in BENCHMARK_NAMES:
            raise ValueError(f"unknown benchmark {self.name!r}: expected one of {', '.join(BENCHMARK_NAMES)} "
                             "(or set program = ... to run another program)")
        return self


class Placement(_Model):
    ranks: Annotated[int, Field(strict=True, ge=1, le=4096)] = 2
    nodes: Annotated[int, Field(strict=True, ge=1, le=100000)] = 1
    ranks_per_node: Annotated[int, Field(strict=True, ge=1, le=4096)] | None = None
    binding: Literal["none", "core", "socket"] = "none"

    @model_validator(mode="after")
    def _consistent(self) -> "Placement":
        if self.ranks_per_node is not None and self.ranks_per_node * self.nodes != self.ranks:
            raise ValueError(f"ranks ({self.ranks}) must equal nodes ({self.nodes}) x ranks_per_node "
                             f"({self.ranks_per_node})")
        if self.ranks < self.nodes:
            raise ValueError(f"ranks ({self.ranks}) must be at least nodes ({self.nodes})")
        return self

    @property
    def label(self) -> str:
        return f"n{self.ranks}N{self.nodes}" + ("" if self.binding == "none" else f"-{self.binding}")


class VariantEntry(_Model):
    """A named set of settings a case runs with, beside the campaign's plain cases (variant `default`).

    It applies to the cases whose stack and approach match one of its shell patterns (default: every stack,
    every approach but native). Its cases are compared with the native runs of variant `baseline`.
    """

    name: Name
    env: dict[str, EnvValue] = Field(default_factory=dict, max_length=256)
    stacks: list[str] = Field(default_factory=lambda: ["*"])
    approaches: list[str] | None = Field(None, description="shell patterns; default: every approach but native")
    #: the variant whose native runs this one is compared with
    baseline: Name = "default"
    #: an A/A control: a harmless setting on the system MPI, compared with the system MPI itself, so that the
    #: answer can state how often this machine tells two identical configurations apart
    control: bool = False
    #: container options of its cases: a private /dev/shm of this size (podman's --shm-size), whether ranks in a
    #: container each share the host's IPC namespace, whether they may attach each other's memory (as an
    #: approach's single_copy); None: the approach's choice
    shm_size: Annotated[str, Field(pattern=r"^[0-9]+[bkmg]?$")] | None = None
    share_ipc: bool | None = None
    single_copy: bool | None = None
    #: a container per rank: each rank's namespaces as its runtime makes them ("separate": Charliecloud's and
    #: unprivileged Apptainer's default), or one set for the ranks of a node ("joined": ch-run --join-ct,
    #: apptainer --sharens); None: the runtime's default
    namespaces: Literal["separate", "joined"] | None = None
    #: the container runtime of its cases (a registered engine: podman, docker, charliecloud); None: the campaign's
    engine: Name | None = None
    #: the cause this variant injects, as the doctor's finding id (or the ids that name it), or "none" for a
    #: control: `mpistack doctor --campaign NAME --score` checks the doctor against it (docs/doctor.md)
    expect: FindingIds | None = None

    @model_validator(mode="after")
    def _valid(self) -> "VariantEntry":
        if self.name == DEFAULT_VARIANT:
            raise ValueError(f"{DEFAULT_VARIANT!r} is the name of the plain cases; choose another variant name")
        if isinstance(self.expect, list) and NO_CAUSE in self.expect and len(self.expect) > 1:
            raise ValueError(f"expect: {NO_CAUSE!r} (a control) cannot be listed beside a cause")
        bad = [key for key in self.env if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key)]
        if bad:
            raise ValueError(f"env: {bad[0]!r} is not an environment variable name (letters, digits, _)")
        return self

    def applies(self, stack: str, approach: str) -> bool:
        approach_matches = (approach != "native" if self.approaches is None
                            else any(fnmatch.fnmatchcase(approach, pattern) for pattern in self.approaches))
        return approach_matches and any(fnmatch.fnmatchcase(stack, pattern) for pattern in self.stacks)


class AnalysisEntry(_Model):
    """How the campaign's answers are decided (docs/analysis.md): the practical floor and the size regimes."""

    #: a loss smaller than this fraction of the baseline does not count (0.10 = 10%)
    floor: Annotated[float, Field(allow_inf_nan=False, ge=0.0, lt=1.0)] = 0.10
    #: a latency difference smaller than this many microseconds does not count either
    floor_us: Annotated[float, Field(allow_inf_nan=False, ge=0.0, le=1e6)] = 0.05
    #: messages below this many bytes are "small" (latency-bound), from large_from on "large"
    small_below: Annotated[int, Field(strict=True, ge=1, le=2**40)] = 8 * 1024
    large_from: Annotated[int, Field(strict=True, ge=1, le=2**40)] = 512 * 1024
    #: the level of the one-sided rank test, after the Benjamini-Hochberg adjustment over a row's sizes
    alpha: Annotated[float, Field(allow_inf_nan=False, gt=0.0, lt=0.5)] = 0.05

    @model_validator(mode="after")
    def _ordered(self) -> "AnalysisEntry":
        if self.small_below > self.large_from:
            raise ValueError(f"small_below ({self.small_below}) must not exceed large_from ({self.large_from})")
        return self


#: a value written into an `#SBATCH` line: no white space, quotes, backslashes, `$` or back-quotes, which
#: sbatch's directive parser or a shell would read as more than one word
SbatchValue = Annotated[str, Field(pattern=r"^[^\s'\"\\$`]+$", max_length=1024)]
SbatchOption = Annotated[str, Field(pattern=r"^--?[A-Za-z][^\s'\"\\$`]*$", max_length=256)]


class SlurmEntry(_Model):
    """How the Slurm launcher submits a campaign (`launcher = "slurm"`): the allocation of its batch jobs.
    Keys left out come from the user's defaults (~/.config/mpistack/slurm.toml, the same keys)."""

    account: SbatchValue | None = None
    partition: SbatchValue | None = None
    reservation: SbatchValue | None = None
    qos: SbatchValue | None = None
    constraint: SbatchValue | None = None
    #: sbatch --time of each job (minutes, or [D-]HH:MM:SS); default: enough for its cases' timeouts
    time_limit: Annotated[str, Field(pattern=r"^(\d+|(\d+-)?\d{1,2}(:\d{2}){0,2})$")] | None = None
    #: more sbatch options, each one word, e.g. "--gres=gpu:4" or "--mem=0"
    sbatch_options: list[SbatchOption] = Field(default_factory=list)
    #: whole nodes for the jobs (sbatch --exclusive): no other job disturbs the measurements
    exclusive: bool = True
    #: cases per batch job: one allocation runs many cases, one after another
    cases_per_job: Annotated[int, Field(strict=True, ge=1, le=100000)] = 50
    #: seconds between two looks at the jobs (one squeue call for all); it doubles while nothing changes,
    #: up to max_poll_interval
    poll_interval: Annotated[float, Field(allow_inf_nan=False, ge=0.1, le=600)] = 2.0
    max_poll_interval: Annotated[float, Field(allow_inf_nan=False, ge=0.1, le=3600)] = 30.0
    #: a job still pending after this many seconds is cancelled and its cases recorded as failed with the
    #: pending reason (counted while none of the campaign's own jobs runs)
    pending_limit: Annotated[float, Field(allow_inf_nan=False, gt=0, le=30 * 86400)] = 6 * 3600
    #: a directory on a file system every node sees: job scripts and each case's output (default: the
    #: campaign's work directory); it goes into #SBATCH lines, so it has no white space or quotes
    workdir: SbatchValue | None = None


_DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*(h|min|m|s)?", re.IGNORECASE)
_SECONDS = {"h": 3600.0, "min": 60.0, "m": 60.0, "s": 1.0, None: 1.0}


def parse_duration(value: str | int | float) -> float:
    """Seconds from a duration as a person writes it: `900`, `900s`, `15m`, `15min`, `1h30m`, `1.5h`. A
    ValueError says what was expected for anything else, zero or a negative time."""
    if isinstance(value, bool):
        raise ValueError("expected a duration such as 15m, 1h30m or 900 (seconds)")
    if isinstance(value, (int, float)):
        seconds = float(value)
    else:
        text = value.strip().replace(" ", "")
        parts = list(_DURATION.finditer(text))
        if not text or "".join(part.group(0) for part in parts) != text or \
                (len(parts) > 1 and any(part.group(2) is None for part in parts)):
            raise ValueError("expected a duration such as 15m, 1h30m or 900 (seconds)")
        seconds = sum(float(part.group(1)) * _SECONDS[(part.group(2) or "").lower() or None] for part in parts)
    if not seconds > 0 or not math.isfinite(seconds):
        raise ValueError("expected a positive time")
    return seconds


#: how far apart the planned looks of a sequential campaign are: each at about this many times the rounds of
#: the one before (rounded up to an even count, so that every look ends a counterbalanced pair of rounds)
LOOK_GROWTH = 1.5


def planned_looks(pilot: int | None, maximum: int) -> tuple[int, ...]:
    """The rounds after which a sequential campaign looks at its rows: the pilot, then about LOOK_GROWTH times
    the rounds of the look before, up to the maximum; () for a fixed design (no pilot), whose one look is its
    last round. The analysis splits its level over exactly these looks (analysis/sequential.py)."""
    if pilot is None:
        return ()
    looks = [min(pilot, maximum)]
    while looks[-1] < maximum:
        grown = math.ceil(looks[-1] * LOOK_GROWTH)
        grown += grown % 2
        looks.append(min(max(grown, looks[-1] + 2), maximum))
    return tuple(looks)


def budgeted_looks(pilot: int, maximum: int) -> tuple[int, ...]:
    """The looks of a campaign whose budget planned its maximum: the pilot's and the maximum's, no look between.
    A budget reaches few rounds beyond the pilot, and a look between them spends level that is lost when the
    rules stop the open rows there (the A/A control unable to resolve them): replayed on a stored run, looks
    after 6, 10 and 12 rounds decided 23 rows where looks after 6 and 10 decided 33."""
    return (pilot,) if maximum <= pilot else (pilot, maximum)


#: the key of a campaign's recorded spec that holds the looks a budgeted sequential campaign planned when its
#: pilot ended (campaign/sequence.py, planned_maximum): not a field of the file but a fact of the run, kept as
#: the rounds themselves so that a later mpistack reads a campaign with the looks it ran
PLANNED_LOOKS = "planned_looks"


def recorded_looks(spec: dict | None) -> tuple[int, ...]:
    """The planned looks of a campaign as the store recorded it (() for one run as a fixed design): those its
    budget planned when its pilot ended, when it has them (a budgeted campaign whose pilot has not ended has
    planned none: the pilot's look is its only one so far), else planned_looks to its `repeats`."""
    spec = spec or {}
    pilot, maximum = spec.get("pilot"), spec.get("repeats", 1)
    if not isinstance(pilot, int) or not isinstance(maximum, int):
        return ()
    planned = spec.get(PLANNED_LOOKS)
    if isinstance(planned, list) and planned and all(isinstance(rounds, int) for rounds in planned):
        return tuple(planned)
    if spec.get("budget") is not None:
        return budgeted_looks(pilot, pilot)
    return planned_looks(pilot, maximum)


def _checked_tags(tags: dict[str, str]) -> dict[str, str]:
    """Tags go on every run: one naming a run field must have its type (ranks = "two" is refused before the
    first case), and none may contradict what each case records of itself."""
    Provenance().split_tags(tags)
    for key in sorted(set(tags) & CASE_RECORDED_FIELDS):
        raise ValueError(f"tag {key}={tags[key]!r}: {key} is recorded by each case from the campaign's matrix, "
                         "not set by a tag")
    return tags


class CaseFilter(_Model):
    """Case fields matched with shell-style patterns: stack, approach, benchmark, ranks, nodes, buffers, variant."""

    model_config = ConfigDict(extra="forbid")
    stack: str | None = None
    approach: str | None = None
    benchmark: str | None = None
    ranks: str | int | None = None
    nodes: str | int | None = None
    buffers: str | None = None
    variant: str | None = None


class Campaign(_Model):
    name: Name
    description: str = ""
    #: a registered launcher and container engine (checked by the campaign stage, as approach names are)
    launcher: Name = "local"
    engine: Name = "podman"
    #: seconds per case (at most a week)
    timeout: Annotated[float, Field(allow_inf_nan=False, gt=0, le=7 * 86400)] = 600
    retries: Annotated[int, Field(strict=True, ge=0, le=10)] = 1
    #: launches per case; they are independent repeats, run interleaved with the cases they are compared with.
    #: With `pilot`, the most rounds a case may get (the maximum of a sequential campaign)
    repeats: Annotated[int, Field(strict=True, ge=1, le=100)] = 1
    #: a sequential campaign: this many rounds for every case, then rounds for the cases of open rows only, at
    #: planned looks (docs/analysis.md, "Sequential campaigns"); absent: every case gets `repeats` launches
    pilot: Annotated[int, Field(strict=True, ge=2, le=100)] | None = None
    #: the wall time the launches may take, in seconds (written `15m`, `1h30m`, `900s` or a number of seconds);
    #: a round starts only when what is left of it fits
    budget: Annotated[float, BeforeValidator(parse_duration)] | None = None
    #: the random order of the cases (recorded with the campaign; drawn when absent)
    seed: Annotated[int, Field(strict=True, ge=0, lt=2**63)] | None = None
    #: "random" (rounds of repeats, each in an order drawn from the seed) or "matrix" (as listed: for
    #: debugging a campaign, not for comparisons)
    order: Literal["random", "matrix"] = "random"
    buffers: list[Annotated[str, Field(pattern=r"^[HDM]-[HDM]$")]] = Field(default_factory=lambda: ["H-H"])
    #: options given to every mpistack-bench invocation, before each benchmark's own
    benchmark_options: Options = Field(default_factory=list)
    tags: Annotated[dict[str, str], AfterValidator(_checked_tags)] = Field(default_factory=dict)
    stacks: list[StackEntry] = Field(alias="stack", min_length=1)
    approaches: list[ApproachEntry] = Field(min_length=1)
    benchmarks: list[BenchmarkEntry] = Field(min_length=1)
    placements: list[Placement] = Field(alias="placement", default_factory=lambda: [Placement()])
    variants: list[VariantEntry] = Field(alias="variant", default_factory=list)
    analysis: AnalysisEntry = Field(default_factory=AnalysisEntry)
    #: the Slurm launcher's settings (only with launcher = "slurm")
    slurm: SlurmEntry | None = None
    include: list[CaseFilter] = Field(default_factory=list)
    exclude: list[CaseFilter] = Field(default_factory=list)
    #: where the file was read from (not part of the file)
    path: str | None = Field(None, exclude=True)

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    @model_validator(mode="before")
    @classmethod
    def _shorthands(cls, data):
        """`approaches = ["native"]` and `benchmarks = ["latency"]` stand for lists of tables."""
        if isinstance(data, dict):
            data = dict(data)
            for key in ("approaches", "benchmarks"):
                if isinstance(data.get(key), list):
                    data[key] = [{"name": item} if isinstance(item, str) else item for item in data[key]]
            if "benchmark" in data and "benchmarks" not in data:
                data["benchmarks"] = data.pop("benchmark")
            if "approach" in data and "approaches" not in data:
                data["approaches"] = data.pop("approach")
        return data

    @field_validator("pilot")
    @classmethod
    def _pilot_within_maximum(cls, pilot: int | None, info: ValidationInfo) -> int | None:
        repeats = info.data.get("repeats")
        if pilot is not None and isinstance(repeats, int) and pilot > repeats:
            raise ValueError(f"more than repeats = {repeats}, the most rounds a case may get: lower "
                             "the pilot or raise repeats")
        return pilot

    @property
    def looks(self) -> tuple[int, ...]:
        """The rounds after which the campaign looks at its rows (planned_looks) when it has no budget; with one,
        the maximum is planned as its pilot ends (campaign/sequence.py, planned_maximum)."""
        return planned_looks(self.pilot, self.repeats)

    @model_validator(mode="after")
    def _unique_names(self) -> "Campaign":
        for kind, names in (("stack", [stack.name for stack in self.stacks]),
                            ("variant", [variant.name for variant in self.variants])):
            duplicates = sorted({name for name in names if names.count(name) > 1})
            if duplicates:
                raise ValueError(f"{kind} names must be unique; repeated: {', '.join(duplicates)}")
        if self.slurm is not None and self.launcher != "slurm":
            raise ValueError(f"a [slurm] table needs launcher = \"slurm\" (the launcher is {self.launcher!r})")
        known = {DEFAULT_VARIANT, *(variant.name for variant in self.variants)}
        for variant in self.variants:
            if variant.baseline not in known:
                raise ValueError(f"variant {variant.name}: baseline {variant.baseline!r} is not a variant "
                                 f"(expected one of {', '.join(sorted(known))})")
            _selects_something(variant.name, "stacks", variant.stacks, [stack.name for stack in self.stacks])
            _selects_something(variant.name, "approaches", variant.approaches or [],  # native: the baselines'
                               list(dict.fromkeys(["native", *(approach.name for approach in self.approaches)])))
        return self


def _selects_something(variant: str, field: str, patterns: list[str], names: list[str]) -> None:
    """A variant whose patterns match none of the campaign's names selects nothing, silently: a typo
    (``debian-mpch``), said as an error naming the closest name. (Each pattern need not match: a variant written for
    several campaigns names approaches one of them lacks.)"""
    if not patterns or any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns for name in names):
        return
    close = difflib.get_close_matches(patterns[0], names, n=1, cutoff=0.6)
    hint = f"did you mean {close[0]!r}?" if close else f"expected one of {', '.join(names)}"
    raise ValueError(f"variant {variant}: {field} {', '.join(map(repr, patterns))} match(es) none of the "
                     f"campaign's {field} ({hint}); the variant would select nothing")


def load_campaign_text(text: str, path: str = "<campaign>") -> Campaign:
    campaign = load_model(Campaign, text, path, CampaignError)
    campaign.path = path
    return campaign


def load_campaign(path: str | Path) -> Campaign:
    return load_campaign_text(read_text(path, CampaignError), str(path))
