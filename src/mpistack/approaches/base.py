"""What every deployment approach returns: the exact command, environment and cleanup handle of a case."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from ..campaign.matrix import Case
from ..engines import Engine
from ..runtime import presets

HOST_LAUNCHERS = {
    "mpich": ["mpiexec.mpich"],
    # --oversubscribe: campaigns here may run more ranks than cores (2-core CI machines)
    "openmpi": ["mpirun.openmpi", "--oversubscribe"],
}
HOST_COMPILERS = {"mpich": "mpicc.mpich", "openmpi": "mpicc.openmpi"}
POINT_TO_POINT = {"latency", "bw", "bibw", "mbw_mr", "multi_lat"}
# Podman confinement that lets ranks in containers attach each other's memory (CMA, single copy).
SINGLE_COPY_FLAGS = ["--pid", "host", "--cap-add", "SYS_PTRACE", "--security-opt", "seccomp=unconfined"]


class Refused(Exception):
    """This case cannot run with this approach; the message says why (recorded as skipped)."""


@dataclass
class Context:
    """What approaches need to know about this machine and this campaign run."""

    engine: Engine
    workdir: Path  # per-campaign scratch; each case gets a subdirectory visible inside containers
    host_bench: dict[str, Path] = field(default_factory=dict)  # host MPI -> host-built mpistack-bench
    images: dict[str, str] = field(default_factory=dict)  # stack name -> image reference
    digests: dict[str, str] = field(default_factory=dict)  # stack name -> image digest, once built
    failed_builds: dict[str, str] = field(default_factory=dict)  # stack name -> why its image is missing


@dataclass
class Launch:
    argv: list[str]
    env: dict[str, str]
    output: Path | None  # JSON the benchmark writes (None: parse its standard output as OSU text)
    label: str | None = None  # label on every container of the case, to remove them after a timeout
    image: str | None = None
    facts: dict[str, str] = field(default_factory=dict)  # recorded with the run (confinement, bound MPI)


def root_env() -> dict[str, str]:
    """Open MPI refuses root unless told twice; campaigns here run as root."""
    if os.geteuid() != 0:
        return {}
    return {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}


def benchmark_argv(case: Case, program: str, output: Path | None, extra_options: list[str]) -> list[str]:
    """mpistack-bench TEST [options] [buffers] --json OUT, or the campaign's own program with its options."""
    if case.benchmark.program:
        return [case.benchmark.program, *case.benchmark.options]
    argv = [program, case.benchmark.name, *extra_options, *case.benchmark.options]
    if case.benchmark.name in POINT_TO_POINT:
        argv += case.buffers.split("-")
    elif "D" in case.buffers:
        argv += ["-d", "cuda"]
    if output is not None:
        argv += ["--json", str(output)]
    return argv


def host_launcher(mpi: str, ranks: int, binding: str) -> list[str]:
    argv = [*HOST_LAUNCHERS[mpi], "-n", str(ranks)]
    if binding != "none":
        argv += ["-bind-to", binding] if mpi == "mpich" else ["--bind-to", binding]
    return argv


def image_env(case: Case) -> dict[str, str]:
    """The stack's runtime preset, passed into its containers."""
    return presets(case.stack.spec, local_root=os.geteuid() == 0, gpu="D" in case.buffers).env


def image_launch(case: Case, context: Context, argv: list[str], output: Path | None, label: str,
                 host_env: dict[str, str] | None = None, **facts: str) -> Launch:
    """A launch that starts containers: the engine's environment, cleanup label, image and confinement."""
    confinement = "single-copy" if case.approach.single_copy else "default"
    return Launch(argv=argv, env={**os.environ, **context.engine.env(), **(host_env or {})}, output=output,
                  label=label, image=context.images[case.stack.name], facts={"confinement": confinement, **facts})


def container_run(context: Context, case: Case, image: str, label: str, env: dict[str, str],
                  extra: list[str] = ()) -> list[str]:
    """`podman run` for one container of a case, with the case directory mounted at the same path."""
    case_dir = str(context.workdir)
    argv = context.engine.command("run", "--rm", "--network", "host", "--ipc", "host", "--label",
                                  f"mpistack.case={label}", "-v", f"{case_dir}:{case_dir}")
    if case.approach.single_copy:
        argv += SINGLE_COPY_FLAGS
    argv += list(extra)
    for key, value in sorted(env.items()):
        argv += ["--env", f"{key}={value}"]
    return [*argv, image]
