"""Speed of the stack recipes: time to render the whole catalogue (goal < 1 s) and, when podman is
usable, the build times of two stacks that share a base image and common layers (pip-mpich and
pip-mpich5: same base, same toolchain and Python layers; the second builds those from cache), then the
cold and cached build times of each stack the catalogue compiles from source here (source-mpich-ofi,
source-openmpi-ofi: MPICH and Open MPI from Debian's orig tarballs against Debian's libfabric-dev).

    python benchmarks/recipes_speed.py            # render timing + all builds (about an hour on 2 cores)
    python benchmarks/recipes_speed.py --warm     # keep existing images/cache (pip builds from cache)
    python benchmarks/recipes_speed.py --no-build # render timing only
    python benchmarks/recipes_speed.py --no-source  # leave out the source builds
    python benchmarks/recipes_speed.py --only-source  # the source builds alone

Source stacks: their images go first (podman rmi, which takes each image's own layers with it). The first is
built cold (everything but the base image), then again (every layer from cache). Each later one builds with
the cache: its base, build-tool and libfabric layers, shared with the first, come from cache and its MPI is
compiled, the cost of adding a stack; then again, all from cache. The layers two images share are counted from
their root file systems. Each build says its wall time and, where the build's cgroup can be read, the CPU
time it used: on a busy machine the first says how busy it was, the second what the build costs.

    python benchmarks/recipes_speed.py --only-source --stacks source-openmpi-ofi   # one of them

Where ch-run is installed, the conversion of the first stack's image into a Charliecloud directory image is
timed cold (into an empty image store) and cached (the same digest again).

    python benchmarks/recipes_speed.py --only-conversion   # that alone

The base image and a distribution stack, by whoever runs it: as root the base comes from debootstrap into
root's podman storage, as any other user from mmdebstrap --mode=unshare into that user's rootless podman
storage (and the user's build cache). Run it both ways to compare the two paths:

    python benchmarks/recipes_speed.py --base-only                    # base anew, debian-mpich cold, cached
    runuser -u alice -- .venv/bin/python benchmarks/recipes_speed.py --base-only
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time


def render_timing(repeat: int = 5) -> None:
    from mpistack.spec import catalogue
    from mpistack.recipes import render

    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        stacks = catalogue.all_stacks()
        for stack in stacks:
            render(stack, allow_unpinned=True)
        times.append(time.perf_counter() - start)
    best, median = min(times), statistics.median(times)
    verdict = "ok" if median < 1.0 else "SLOW"
    print(f"render catalogue: {len(stacks)} stacks, best {best * 1000:.1f} ms, median {median * 1000:.1f} ms "
          f"(goal < 1000 ms: {verdict})")


def _podman_usable():
    from mpistack.engines import get_engine

    engine = get_engine("podman")
    return engine if engine.usable() else None


def build_timing(first: str, second: str, warm: bool) -> int:
    from mpistack.images.build import build_stack
    from mpistack.images.baseimage import make_base_image

    engine = _podman_usable()
    if engine is None:
        print("builds: skipped (podman not usable here)")
        return 0
    base = make_base_image(engine, "debian:bookworm")
    print(f"base image: {base.message}" + (f" ({base.seconds:.0f} s)" if base.created else ""))
    status = 0
    for name in (first, second):
        # the first build ignores the layer cache (cold, apart from the base image); the second reuses the
        # layers the first has just made
        result = build_stack(name, "podman", quiet=True, no_cache=(name == first and not warm))
        state = "ok" if result.ok else f"FAILED (log {result.log_path})"
        print(f"build {name}: {result.seconds:.1f} s {state}")
        status |= 0 if result.ok else 1
    print("(the second build shares the base, toolchain and Python layers with the first)")
    return status


SOURCE_STACKS = ("source-mpich-ofi", "source-openmpi-ofi")


def conversion_timing(name: str) -> int:
    """Cold and cached conversion of a built image for Charliecloud, into a scratch image store."""
    import os
    import tempfile

    from mpistack.engines import EngineError, get_engine
    from mpistack.spec.catalogue import load as load_stack

    engine = get_engine("charliecloud")
    reference = load_stack(name).image_ref()
    if not engine.available() or not _podman_usable() or not engine.image_exists(reference):
        print(f"charliecloud conversion: skipped (needs ch-run, podman and the image {reference})")
        return 0
    with tempfile.TemporaryDirectory(prefix="mpistack-ch-bench-") as store:
        os.environ["MPISTACK_CHARLIECLOUD_IMAGES"] = store
        try:
            times = []
            for _ in ("cold", "cached"):
                start = time.monotonic()
                engine.prepare_image(reference)
                times.append(time.monotonic() - start)
        except EngineError as error:
            print(f"charliecloud conversion of {reference}: FAILED: {error}")
            return 1
        finally:
            os.environ.pop("MPISTACK_CHARLIECLOUD_IMAGES", None)
    print(f"charliecloud conversion of {reference}: cold {times[0]:.1f} s, cached {times[1]:.2f} s")
    return 0


def _layers(engine, reference: str) -> list[str]:
    return list(engine.inspect(reference).get("RootFS", {}).get("Layers") or [])


class BuildCpu:
    """CPU time of this process's builds, read from the cgroup mpistack's containment gives each build
    (cgroup v1 cpuacct or v2 cpu.stat, sampled every 2 s until the build's cgroup goes): on a shared machine the
    wall time says how busy it was, the CPU time what the build itself costs."""

    def __init__(self):
        import os
        import threading

        self.pattern = f"mpistack-build-{os.getpid()}-"
        self.seen: dict[str, float] = {}  # cgroup name -> CPU seconds, last reading
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        from pathlib import Path

        for root, name, scale in (("/sys/fs/cgroup/cpuacct", "cpuacct.usage", 1e-9),
                                  ("/sys/fs/cgroup/unified", "cpu.stat", 1e-6), ("/sys/fs/cgroup", "cpu.stat", 1e-6)):
            for group in Path(root).glob(self.pattern + "*"):
                try:
                    text = (group / name).read_text()
                except OSError:
                    continue
                value = text.split()[0] if name == "cpuacct.usage" else \
                    next((line.split()[1] for line in text.splitlines() if line.startswith("usage_usec")), "")
                if value.isdigit():
                    self.seen[group.name] = max(self.seen.get(group.name, 0.0), int(value) * scale)

    def _sample(self) -> None:
        while not self._stop.wait(2):
            self._read()

    def total(self) -> float:
        self._read()
        return sum(self.seen.values())


def _timed_build(cpu: BuildCpu, name: str, **options):
    from mpistack.images.build import build_stack

    before = cpu.total()
    result = build_stack(name, "podman", quiet=True, **options)
    used = cpu.total() - before
    note = f", {used:.0f} CPU-s" if used > 0 else ""
    try:  # which steps podman took from its cache: what "cold" left out
        log = result.log_path.read_text(errors="replace") if result.log_path else ""
        steps, cached = log.count("\nSTEP "), log.count("--> Using cache")
        note += f", {cached} of {steps} steps from the cache" if steps else ""
    except OSError:
        pass
    return result, note


def source_timing(names: tuple[str, ...]) -> int:
    """Cold and cached build times of each source stack, and the layers the images share."""
    from mpistack.images.baseimage import make_base_image
    from mpistack.spec import catalogue

    engine = _podman_usable()
    if engine is None:
        print("source builds: skipped (podman not usable here)")
        return 0
    base = make_base_image(engine, "debian:bookworm")
    print(f"base image: {base.message}" + (f" ({base.seconds:.0f} s)" if base.created else ""))
    status = 0
    cpu = BuildCpu()
    # Cold: the images go first, and with each its own layers (podman rmi prunes the parents no other image
    # uses), so nothing of the stacks is left but what other images share (the base image). Not --no-cache:
    # podman 4.3 takes the oldest matching layer from its cache, so the layers of a --no-cache build are never
    # found again and its next build would compile everything anew.
    for name in names:
        engine.remove_image(catalogue.load(name).image_ref())
    for index, name in enumerate(names):
        cold, used = _timed_build(cpu, name)
        how = "cold" if index == 0 else f"cold but for the layers it shares with {names[0]}"
        print(f"build {name}: {cold.seconds:.0f} s{used} {how}"
              + ("" if cold.ok else f" FAILED (log {cold.log_path})"), flush=True)
        if not cold.ok:
            status = 1
            continue
        cached, used = _timed_build(cpu, name)
        print(f"build {name}: {cached.seconds:.1f} s{used} cached"
              + ("" if cached.ok else f" FAILED (log {cached.log_path})"), flush=True)
        status |= 0 if cached.ok else 1
    built = [catalogue.load(name).image_ref() for name in names if engine.image_exists(catalogue.load(name).image_ref())]
    if len(built) > 1:
        first = _layers(engine, built[0])
        for other in built[1:]:
            layers = _layers(engine, other)
            shared = next((i for i, (a, b) in enumerate(zip(first, layers)) if a != b), min(len(first), len(layers)))
            print(f"{other} shares its first {shared} of {len(layers)} layers with {built[0]}")
    return status


def base_timing(stack: str) -> int:
    """The Debian base made anew (debootstrap as root, mmdebstrap without root), then `stack` built on it cold
    (its image removed, and with it its own layers) and again, every layer from the cache."""
    import os

    from mpistack.images.baseimage import make_base_image
    from mpistack.spec import catalogue

    engine = _podman_usable()
    if engine is None:
        print("base builds: skipped (podman not usable here)")
        return 0
    who = "root, debootstrap" if os.geteuid() == 0 else "without root, mmdebstrap --mode=unshare"
    engine.remove_image(catalogue.load(stack).image_ref())
    base = make_base_image(engine, "debian:bookworm", force=True)
    print(f"base image ({who}): {base.seconds:.0f} s", flush=True)
    cpu, status = BuildCpu(), 0
    for how in ("cold", "cached"):
        result, used = _timed_build(cpu, stack)
        print(f"build {stack} ({who.split(',')[0]}): {result.seconds:.1f} s{used} {how}"
              + ("" if result.ok else f" FAILED (log {result.log_path})"), flush=True)
        status |= 0 if result.ok else 1
    return status


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--no-build", action="store_true", help="render timing only")
    parser.add_argument("--warm", action="store_true", help="keep existing images and build cache")
    parser.add_argument("--first", default="pip-mpich")
    parser.add_argument("--second", default="pip-mpich5")
    parser.add_argument("--no-source", action="store_true", help="leave out the source stacks' builds")
    parser.add_argument("--only-source", action="store_true", help="the source stacks' builds alone")
    parser.add_argument("--stacks", default=",".join(SOURCE_STACKS), help="the source stacks, comma-separated")
    parser.add_argument("--only-conversion", action="store_true", help="the Charliecloud conversion alone")
    parser.add_argument("--base-only", action="store_true",
                        help="the base image anew and debian-mpich cold and cached, by the user who runs it")
    args = parser.parse_args()
    if args.only_conversion:
        return conversion_timing(args.first)
    render_timing()
    if args.no_build:
        return 0
    if args.base_only:
        return base_timing("debian-mpich")
    status = 0 if args.only_source else build_timing(args.first, args.second, args.warm)
    status |= conversion_timing(args.first)
    if not args.no_source:
        status |= source_timing(tuple(args.stacks.split(",")))
    return status


if __name__ == "__main__":
    sys.exit(main())
