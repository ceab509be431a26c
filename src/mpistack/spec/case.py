"""A case: one point of a campaign's matrix (stack x approach x benchmark x placement x buffers x repeat),
the typed hand-off from the campaign's matrix to the approaches that plan it."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from . import catalogue
from .benchmarks import BENCHMARKS, Benchmark
from .campaign import DEFAULT_VARIANT, ApproachEntry, BenchmarkEntry, Placement, StackEntry, VariantEntry
from .stack import Stack


@dataclass(frozen=True)
class CampaignStack:
    """A stack as a campaign uses it: the host's MPI, or a stack spec (its image; a pip stack's wheel also
    natively)."""

    entry: StackEntry
    spec: Stack | None  # None for the host's own MPI

    @property
    def name(self) -> str:
        return self.entry.name

    @property
    def is_host(self) -> bool:
        return self.entry.host is not None

    @property
    def mpi_impl(self) -> str:
        """mpich or openmpi: the implementation family (its ABI and launchers)."""
        return self.entry.host if self.entry.host else self.spec.mpi.impl

    @property
    def declared_mpi_version(self) -> str | None:
        """The MPI version the stack spec declares; the host's is what its library reports."""
        return None if self.spec is None else self.spec.mpi.version

    @property
    def native_form(self) -> str | None:
        """How the stack's MPI runs outside a container, if it can: `host` (the system's own MPI, the baseline
        a centre compares with), `venv` (a pip stack's wheel in a virtual environment on the host: the very
        build its image installs, so that a container's loss splits into the stack's effect and the
        deployment's), or None (an image only)."""
        if self.is_host:
            return "host"
        return "venv" if self.spec.mpi.channel == "pip" else None

    @property
    def has_gpu(self) -> bool:
        return self.spec is not None and self.spec.gpu.kind != "none"


def resolve_stack(entry: StackEntry) -> CampaignStack:
    """The campaign's stack entry with its spec: a catalogue stack, an inline one, or the host's MPI."""
    if entry.host:
        return CampaignStack(entry, None)
    if entry.inline is not None:
        return CampaignStack(entry, Stack.model_validate({"name": entry.name, **entry.inline}))
    return CampaignStack(entry, catalogue.load(entry.name))


@dataclass(frozen=True)
class Case:
    campaign: str
    stack: CampaignStack
    approach: ApproachEntry
    benchmark: BenchmarkEntry
    placement: Placement
    buffers: str
    repeat: int
    skip: str | None = None  # why this case cannot run here (recorded as skipped)
    variant: VariantEntry | None = None  # None: the plain case (variant `default`)
    runs_image: bool = False  # its approach runs the stack's image (the approach's `image` capability)

    @property
    def variant_name(self) -> str:
        return self.variant.name if self.variant else DEFAULT_VARIANT

    @property
    def variant_env(self) -> dict[str, str]:
        return dict(self.variant.env) if self.variant else {}

    @property
    def test(self) -> Benchmark | None:
        """The mpistack-bench test this case runs; None for another program."""
        return None if self.benchmark.program else BENCHMARKS.get(self.benchmark.name)

    @property
    def origin(self) -> str:
        """Where the run's MPI comes from: `host` (the system's own), `venv` (a pip stack's wheel run
        natively) or `image` (a container of the stack's image): what a comparison tells apart."""
        return "image" if self.runs_image else self.stack.native_form

    @property
    def single_copy(self) -> bool:
        """Whether its containers may attach each other's memory: the variant's say, else the approach's."""
        chosen = None if self.variant is None else self.variant.single_copy
        return self.approach.single_copy if chosen is None else chosen

    @property
    def approach_label(self) -> str:
        """The approach as compared: single-copy confinement is a variant of its own."""
        return self.approach.name + ("+single-copy" if self.single_copy else "")

    @cached_property
    def key(self) -> str:
        """Stable identity of a case within its campaign: --resume skips keys already done."""
        variant = [] if self.variant is None else [f"v:{self.variant.name}"]
        return "/".join([self.stack.name, self.approach_label, *variant, self.benchmark.name,
                         self.placement.label, self.buffers, f"r{self.repeat}"])

    def fields(self) -> dict[str, str]:
        return {"stack": self.stack.name, "approach": self.approach.name, "benchmark": self.benchmark.name,
                "ranks": str(self.placement.ranks), "nodes": str(self.placement.nodes), "buffers": self.buffers,
                "variant": self.variant_name}

    def describe(self) -> str:
        variant = [] if self.variant is None else [self.variant.name]
        return " · ".join([self.stack.name, self.approach_label, *variant, self.benchmark.name,
                           self.placement.label, self.buffers])
