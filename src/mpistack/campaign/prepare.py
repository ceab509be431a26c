"""The prepare stage, once per campaign: probe the host, build the host's mpistack-bench, the pip stacks'
wheels on the host (for their native cases) and the missing images. What cannot be had fails the cases that
need it, with the reason; the others still run."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path
from typing import Callable

from ..approaches import HostFacts, Resources, mount_points
from ..approaches.fabric_facts import probe_image_fabric
from ..cache import cache_dir, private_directory
from ..engines import EngineError, get_engine
from ..images.build import build_stack
from ..images.host_bench import build_host_bench, host_bench_path
from ..images.host_venv import build_native, native_build_paths, wheel_installed
from ..recipes.render import RecipeError
from ..registry import LAUNCHERS
from ..spec.campaign import Campaign
from ..spec.case import Case, CampaignStack
from ..spec.pins import UnpinnedError
from .build_times import record_build_time, recorded_build_times


def workdir_for(campaign: Campaign, store: str | None = None, campaign_id: int | None = None) -> Path:
    """Scratch of one campaign run: its journal, its markers and a directory per case (the only part mounted
    into the case's containers). Keyed by the store (`journal.store_identity`) and the campaign's id, never by
    its name alone: two campaigns of one name in two stores, run at once, must not share it. Without an id
    (a dry run, before the store gives one) the path ends in `-next`. Under Slurm it lies under the [slurm]
    table's workdir, on a file system every node sees."""
    key = hashlib.sha256((store or "").encode()).hexdigest()[:12]
    name = f"{key}-{campaign_id if campaign_id is not None else 'next'}"
    # a batch launcher's cases run on other nodes: its work directory lies on a file system they all see
    shared_workdir = LAUNCHERS.get(campaign.launcher).capabilities.get("shared_workdir")
    if shared_workdir is not None and (shared := shared_workdir(campaign)):
        return Path(shared).expanduser() / name
    return cache_dir() / "work" / name


def planning_resources(campaign: Campaign, stacks: list[CampaignStack], host: HostFacts | None = None,
                       workdir: Path | None = None) -> Resources:
    """What planning needs, without building or running anything (a dry run stops here)."""
    resources = Resources(engine=get_engine(campaign.engine), workdir=workdir or workdir_for(campaign),
                          launcher=campaign.launcher, host=host if host is not None else HostFacts.probe())
    for stack in stacks:
        if stack.is_host:
            resources.host_bench[stack.entry.host] = host_bench_path(stack.entry.host)
        else:
            resources.images[stack.name] = stack.spec.image_ref()
        if stack.native_form == "venv":
            resources.native_bench[stack.name] = native_build_paths(stack.spec)
    return resources


def prepare(cases: list[Case], resources: Resources, say: Callable[[str], None] = print) -> None:
    """Build what the runnable cases need."""
    private_directory(resources.workdir)
    runnable = [case for case in cases if not case.skip]
    for mpi in sorted({case.stack.entry.host for case in runnable if case.origin == "host"}):
        say(f"building mpistack-bench for the host's {mpi}")
        try:
            resources.host_bench[mpi] = build_host_bench(mpi)
        except (OSError, subprocess.CalledProcessError, RecipeError) as error:
            detail = getattr(error, "stderr", "") or str(error)
            _failed(resources.failed_builds, [case.stack.name for case in runnable if case.stack.entry.host == mpi],
                    f"cannot build mpistack-bench with the host's {mpi}: {detail.strip()[-500:]}", say)
    for stack in _stacks(runnable, "venv"):
        _ensure_native(stack, resources, say)
    for stack in _stacks(runnable, "image"):
        runtimes = {id(runtime): runtime for runtime in (resources.runtime_for(case) for case in runnable
                                                         if case.stack.name == stack.name)}
        try:
            _ensure_image(stack, resources, say, list(runtimes.values()))
        except ConversionError:
            raise
        except (EngineError, RecipeError) as error:  # the error says what failed: podman, a base, a recipe
            _failed(resources.failed_builds, [stack.name], f"image {stack.spec.image_ref()} not prepared: {error}",
                    say)
    # fabric-swap checks the image's libfabric needs before it plans: read once per image (cached by digest)
    for stack in _stacks([case for case in runnable if case.approach.name == "fabric-swap"], "image"):
        if stack.name not in resources.failed_builds:
            resources.image_fabric[stack.name] = probe_image_fabric(resources.engine, stack.spec.image_ref())
    # the host paths bind and fabric-swap mount, made to exist where the runtime binds only onto existing ones
    for stack in _stacks(runnable, "image"):
        if stack.name in resources.failed_builds:
            continue
        by_runtime: dict[int, tuple] = {}
        for case in (case for case in runnable if case.stack.name == stack.name):
            runtime = resources.runtime_for(case)
            by_runtime.setdefault(id(runtime), (runtime, set()))[1].update(mount_points(case, resources))
        for runtime, mounts in by_runtime.values():
            if mounts:
                try:
                    runtime.prepare_mounts(stack.spec.image_ref(), sorted(mounts))
                except EngineError as error:
                    raise ConversionError(str(error)) from None


def missing_images(cases: list[Case], resources: Resources) -> list[str] | None:
    """`reference (stack NAME): expected build time` for each image the runnable cases need that the engine
    does not have, i.e. what `prepare` would build; None when the engine cannot be asked."""
    if not resources.engine.available():
        return None
    times = recorded_build_times()
    stacks = _stacks([case for case in cases if not case.skip], "image")
    present = resources.engine.existing_images([stack.spec.image_ref() for stack in stacks])  # one inspect
    missing = []
    for stack in stacks:
        reference = stack.spec.image_ref()
        if reference not in present:
            seconds = times.get(reference)
            expected = f"last build took {seconds:.0f} s" if seconds is not None else "build time unknown"
            missing.append(f"{reference} (stack {stack.name}): {expected}")
    return missing


def _stacks(cases: list[Case], origin: str) -> list[CampaignStack]:
    """The stacks of the cases that run this origin's MPI, once each."""
    return list({case.stack.name: case.stack for case in cases if case.origin == origin}.values())


def _failed(failures: dict[str, str], stacks: list[str], message: str, say: Callable[[str], None]) -> None:
    """The cases of these stacks that need what failed (Resources.failed_builds: their image or the host's
    mpistack-bench; failed_native: their wheel on the host) will be recorded as failed with this message."""
    say(message.splitlines()[0])
    for name in stacks:
        failures[name] = message


def _ensure_image(stack: CampaignStack, resources: Resources, say: Callable[[str], None], runtimes=()) -> None:
    engine, reference = resources.engine, stack.spec.image_ref()
    if not engine.image_exists(reference):
        say(f"building image {reference} (stack {stack.name})")
        result = build_stack(stack.spec, engine.program, quiet=True)
        if not result.ok:
            message = f"image build failed ({result.returncode}); log: {result.log_path}"
            _failed(resources.failed_builds, [stack.name], "\n".join([message, *result.tail[-10:]]), say)
            return
        say(f"built {reference} in {result.seconds:.0f} s")
        record_build_time(reference, result.seconds)
    resources.digests[stack.name] = engine.inspect_digest(reference)
    for runtime in runtimes:  # the built image, as each runtime its cases use runs it (Charliecloud: converted)
        try:
            runtime.prepare_image(reference, resources.digests[stack.name])
        except EngineError as error:
            raise ConversionError(str(error)) from None


class ConversionError(EngineError):
    """A built image the campaign's runtime cannot be given: stops the campaign before any launch."""


def _ensure_native(stack: CampaignStack, resources: Resources, say: Callable[[str], None]) -> None:
    """The stack's wheel in a virtual environment with mpistack-bench; a failure (no index, a checksum that
    does not match) fails its native cases only."""
    try:
        if not wheel_installed(stack.spec):
            say(f"installing the {stack.mpi_impl} {stack.declared_mpi_version} wheel natively (stack {stack.name})")
        resources.native_bench[stack.name] = build_native(stack.spec)
    except (OSError, subprocess.CalledProcessError, RecipeError, UnpinnedError) as error:
        detail = getattr(error, "stderr", "") or str(error)
        resources.native_bench.pop(stack.name, None)
        _failed(resources.failed_native, [stack.name], f"cannot build {stack.name} natively: {detail.strip()[-500:]}",
                say)
