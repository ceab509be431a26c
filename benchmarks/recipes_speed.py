"""Speed of the stack recipes: time to render the whole catalogue (goal < 1 s) and, when podman is
usable, the build times of two stacks that share a base image and common layers (pip-mpich and
pip-mpich5: same base, same toolchain and Python layers; the second builds those from cache).

    python benchmarks/recipes_speed.py            # render timing + both builds (first one --no-cache)
    python benchmarks/recipes_speed.py --warm     # keep existing images/cache (both from cache)
    python benchmarks/recipes_speed.py --no-build # render timing only
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
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


def build_timing(first: str, second: str, warm: bool) -> int:
    from mpistack.images.build import build_stack
    from mpistack.engines import get_engine
    from mpistack.images.baseimage import make_base_image

    engine = get_engine("podman")
    probe = subprocess.run(engine.command("info"), env=engine.env(), capture_output=True, text=True)
    if shutil.which("podman") is None or probe.returncode != 0:
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--no-build", action="store_true", help="render timing only")
    parser.add_argument("--warm", action="store_true", help="keep existing images and build cache")
    parser.add_argument("--first", default="pip-mpich")
    parser.add_argument("--second", default="pip-mpich5")
    args = parser.parse_args()
    render_timing()
    if args.no_build:
        return 0
    return build_timing(args.first, args.second, args.warm)


if __name__ == "__main__":
    sys.exit(main())
