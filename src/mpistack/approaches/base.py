"""What every deployment approach shares: the host facts and campaign resources it plans with, and the
pieces of a command line (host launcher, benchmark arguments, containers).

Planning is pure: everything an approach needs from the machine comes in through HostFacts (probed once,
when a campaign is prepared) and Resources, so that each approach's exact command line is testable with
a made-up host, and a dry run prints exactly what the run executes.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from ..engines import ContainerRun, ContainerRuntime, Engine, get_engine
from ..images.host_venv import NativeBuild
from ..launchers import LaunchPlan, RankStarter
from ..registry import LAUNCHERS
from ..runtime import presets
from ..spec.case import Case
from .fabric_facts import HostLibfabric, ImageFabric, dependencies, find_library, probe_host_libfabric
from .openmpi_facts import probe_host_openmpi

# The host's MPI library, the names a binary may ask it by, and how its ABI is named in messages.
HOST_MPI_LIBRARIES = {"mpich": ("libmpich.so.12", ("libmpi.so.12", "libmpich.so.12"))}
_PLUGIN_DIRS = ("/usr/lib/x86_64-linux-gnu/ucx",)


class Refused(Exception):
    """This case cannot run with this approach; the message says why (recorded as skipped)."""


class Undecided(Refused):
    """Whether this case can run rests on facts read from its image when the campaign is prepared: a dry run
    says when it is decided; a run that still lacks them records it as skipped."""


@dataclass(frozen=True)
class HostFacts:
    """What planning needs to know about this machine."""

    is_root: bool = False
    # host MPI -> (host path, name inside a container) of its library and the non-libc libraries it needs
    mpi_library_files: dict[str, tuple[tuple[str, str], ...]] = field(default_factory=dict)
    plugin_dirs: tuple[str, ...] = ()  # transport plug-ins the host MPI loads at run time (UCX modules)
    libfabric: HostLibfabric | None = None  # the host's libfabric.so.1, which fabric-swap mounts into images
    mpi_versions: dict[str, str] = field(default_factory=dict)  # host MPI -> its release, where it matters (Open MPI)
    # host MPI -> directories it loads plug-ins or help texts from, mounted at their host paths (bind)
    mpi_plugin_dirs: dict[str, tuple[str, ...]] = field(default_factory=dict)
    pmix_version: str | None = None  # the host's PMIx, which mpirun.openmpi (and srun --mpi=pmix here) serve

    @classmethod
    def probe(cls) -> "HostFacts":
        files = {}
        for mpi in HOST_MPI_LIBRARIES:
            found = _library_files(mpi)
            if found:
                files[mpi] = found
        plugin_dirs = tuple(path for path in _PLUGIN_DIRS if Path(path).is_dir())
        openmpi = probe_host_openmpi()
        extra = {}
        if openmpi is not None:
            files["openmpi"] = openmpi.library_files
            extra = {"mpi_versions": {"openmpi": openmpi.version} if openmpi.version else {},
                     "mpi_plugin_dirs": {"mpich": plugin_dirs, "openmpi": (*openmpi.plugin_dirs, *plugin_dirs)},
                     "pmix_version": openmpi.pmix_version}
        return cls(is_root=os.geteuid() == 0, mpi_library_files=files, plugin_dirs=plugin_dirs,
                   libfabric=probe_host_libfabric(), **extra)

    def mpi_library(self, mpi: str) -> str | None:
        """The host path of the MPI library itself among `mpi`'s files (libmpi.so.12 or libmpich.so.12 for MPICH,
        libmpi.so.40 for Open MPI; the others are libraries it needs), None without one."""
        files = self.mpi_library_files.get(mpi) or ()
        main = [source for source, name in files if name.startswith(("libmpi.so", "libmpich.so"))]
        return (main or [source for source, _ in files] or [None])[0]

    def plugin_dirs_of(self, mpi: str) -> tuple[str, ...]:
        """What the host's `mpi` loads at run time besides its libraries (UCX modules; Open MPI's components)."""
        return self.mpi_plugin_dirs.get(mpi, self.plugin_dirs)

    def root_env(self) -> dict[str, str]:
        """Open MPI refuses root unless told twice; campaigns here may run as root."""
        return {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"} if self.is_root else {}


def _library_files(mpi: str) -> tuple[tuple[str, str], ...]:
    library, aliases = HOST_MPI_LIBRARIES[mpi]
    found = find_library(library)
    if found is None:
        return ()
    path = os.path.realpath(found)
    return (*((path, alias) for alias in aliases), *dependencies(path))


@dataclass
class Resources:
    """What a campaign's prepare stage made available to its cases."""

    engine: Engine
    workdir: Path  # the campaign run's scratch; only a case's own directory in it is mounted into its containers
    launcher: str = "local"  # the campaign's launcher: how ranks are started (rank_starter)
    host: HostFacts = field(default_factory=HostFacts)
    host_bench: dict[str, Path] = field(default_factory=dict)  # host MPI -> host-built mpistack-bench
    images: dict[str, str] = field(default_factory=dict)  # stack name -> image reference
    digests: dict[str, str] = field(default_factory=dict)  # stack name -> image digest, once built
    failed_builds: dict[str, str] = field(default_factory=dict)  # stack name -> why its image is missing
    native_bench: dict[str, NativeBuild] = field(default_factory=dict)  # pip stack name -> its wheel natively
    failed_native: dict[str, str] = field(default_factory=dict)  # pip stack name -> why its native build is missing
    image_fabric: dict[str, ImageFabric] = field(default_factory=dict)  # stack name -> its MPI's libfabric facts
    _runtimes: dict[str, ContainerRuntime] = field(default_factory=dict)  # runtimes variants name, once each

    def runtime_for(self, case: Case) -> ContainerRuntime:
        """The container runtime of the case: its variant's engine, else the campaign's (`engine`)."""
        name = case.variant.engine if case.variant is not None else None
        if name is None or name == getattr(self.engine, "name", None):
            return self.engine
        if name not in self._runtimes:
            self._runtimes[name] = get_engine(name)
        return self._runtimes[name]

    def case_directory(self, label: str) -> Path:
        """Where the case of this label writes (its output, its JSON): the only part of the work directory
        mounted into its containers, at the same path. The runner's markers and journal lie outside it."""
        return self.workdir / "cases" / label

    def build_failure(self, case: Case) -> str | None:
        """Why what this case runs could not be built: a pip stack's image and its native build fail apart,
        each failing only the cases that run it."""
        failures = self.failed_native if case.origin == "venv" else self.failed_builds
        return failures.get(case.stack.name)


class Approach:
    """One way to deploy a stack. Subclasses register in APPROACHES and implement `plan`."""

    def plan(self, case: Case, resources: Resources, output: Path | None, options: list[str],
             label: str) -> LaunchPlan:  # pragma: no cover - abstract
        raise NotImplementedError

    def mount_points(self, case: Case, resources: Resources) -> list[str]:
        """The host paths its containers get bound in (SRC:DST[:FLAGS]) beyond the case's own directory, known
        once the campaign is prepared: a runtime whose images need each target to exist (Charliecloud's
        directory images) makes them then. Refused or Undecided as `plan` would be."""
        return []


def benchmark_argv(case: Case, program: str, output: Path | None, extra_options: list[str]) -> list[str]:
    """mpistack-bench TEST [options] [buffers] --json OUT, or the campaign's own program with its options."""
    if case.benchmark.program:
        return [case.benchmark.program, *case.benchmark.options]
    argv = [program, case.benchmark.name, *extra_options, *case.benchmark.options]
    if case.test is not None and case.test.takes_buffer_placement:
        argv += case.buffers.split("-")
    elif "D" in case.buffers:
        argv += ["-d", "cuda"]
    if output is not None:
        argv += ["--json", str(output)]
    return argv


def rank_starter(resources: "Resources") -> RankStarter:
    """How the campaign's launcher starts ranks: mpiexec on this machine, srun under Slurm."""
    return LAUNCHERS.get(resources.launcher).starter


def image_env(case: Case, host: HostFacts) -> dict[str, str]:
    """The stack's runtime preset with the case's variant on top: passed into its containers, and set for
    the natively run wheel of a pip stack, so that both sides of a comparison run the MPI alike. A podman
    container's ranks are root in it also without root (rootless podman maps the user to uid 0), where Open MPI
    refuses to start unless told it may."""
    return {**presets(case.stack.spec, local_root=True, gpu="D" in case.buffers).env, **case.variant_env}


def container(case: Case, resources: Resources, label: str, env: dict[str, str], argv: list[str] = (),
              *, per_rank: bool = False, mounts: list[str] = (), passthrough: list[str] = (),
              preserve_fds: int = 0) -> ContainerRun:
    """One container of a case, with the case's own directory (and nothing else of the campaign's work
    directory: a hostile benchmark must not reach the runner's markers or other cases) mounted at the same
    path. Ranks in
    one container per rank share the host's IPC namespace (shared-memory transport) and process ids, unless the
    case's variant says otherwise (its shm_size, share_ipc and single_copy: how a fault campaign takes them away)."""
    own = str(resources.case_directory(label))
    variant = case.variant
    share_ipc = per_rank if variant is None or variant.share_ipc is None else variant.share_ipc
    shm_size = {"shm_size": variant.shm_size} if variant is not None and variant.shm_size else {}
    joined = per_rank and variant is not None and variant.namespaces == "joined"
    image = resources.runtime_for(case).planned_image(resources.images[case.stack.name])
    return ContainerRun(image=image, argv=list(argv), env=env, label=label,
                        mounts=[f"{own}:{own}", *mounts], share_ipc=share_ipc, share_pid=per_rank,
                        **shm_size,
                        single_copy=case.single_copy, passthrough=list(passthrough),
                        preserve_fds=preserve_fds, per_rank=per_rank,
                        join_ranks=ranks_per_node(case.placement) if joined else 0)


def ranks_per_node(placement) -> int:
    """The most ranks one node of the placement holds (the rest of an uneven spread on the first)."""
    return placement.ranks_per_node or -(-placement.ranks // placement.nodes)


def container_plan(case: Case, resources: Resources, argv: list[str], output: Path | None, label: str,
                   run: ContainerRun, host_env: dict[str, str] | None = None, **facts: str) -> LaunchPlan:
    """A plan that starts containers: the runtime's environment, cleanup label, image and confinement (the
    typed value, `engines.Confinement`, and its one word for tables)."""
    runtime = resources.runtime_for(case)
    confinement = runtime.confinement(run)
    recorded = {"confinement": confinement.word(), "confinement_record": confinement.record(),
                "runtime": runtime.name, **facts}
    return LaunchPlan(argv=argv, env={**runtime.env_overrides(), **(host_env or {})}, output=output,
                      label=label, image=run.image, facts=recorded)
