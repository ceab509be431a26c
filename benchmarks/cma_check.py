"""Whether ranks may attach each other's memory (CMA, the single-copy path) natively and in podman containers
as mpistack starts them: one container holding both processes (the container approach, with and without
single_copy = true) and two containers sharing the host's IPC and PID namespaces (hybrid, bind). Run it as root
and as a user without root: root podman makes no user namespace, rootless podman puts all of a user's
containers in one, and the kernel lets processes of one user in one user namespace attach each other
(ptrace(2), 'Ptrace access mode checking').

    python benchmarks/cma_check.py [IMAGE]     (default: the debian-mpich image; any image runs it)
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from mpistack.engines import ContainerRun, PodmanEngine
from mpistack.spec import catalogue

SOURCE = Path(__file__).with_name("cma_check.c")


def build(directory: Path) -> Path:
    program = directory / "cma_check"
    subprocess.run(["cc", "-static", "-no-pie", "-O1", "-o", str(program), str(SOURCE)], check=True)
    directory.chmod(0o755)
    return program


def main() -> int:
    image = sys.argv[1] if len(sys.argv) > 1 else catalogue.load("debian-mpich").image_ref()
    engine = PodmanEngine()
    with tempfile.TemporaryDirectory(prefix="cma-check-") as scratch:
        program = build(Path(scratch))
        mount = [f"{scratch}:{scratch}:ro"]
        who = "root" if os.geteuid() == 0 else f"uid {os.geteuid()} (rootless podman)"
        print(f"as {who}, image {image}")
        print(f"  {'natively, two processes of one user':<48} "
              f"{subprocess.run([str(program)], capture_output=True, text=True).stdout.strip()}")
        for title, spec in (("one container (container)", ContainerRun(image, [str(program)], mounts=mount)),
                            ("one container, single_copy = true",
                             ContainerRun(image, [str(program)], mounts=mount, single_copy=True))):
            result = engine.run(spec, timeout=120)
            print(f"  {title:<48} {(result.stdout or result.stderr).strip().splitlines()[-1]}")
        per_rank = dict(mounts=mount, share_ipc=True, share_pid=True, per_rank=True)
        target = engine.run_argv(ContainerRun(image, [str(program), "sleep"], label="cma-check", **per_rank))
        target.insert(target.index("run") + 1, "-d")
        container = subprocess.run(target, env=engine.env(), capture_output=True, text=True, check=True).stdout.strip()
        try:
            pid = subprocess.run(engine.command("inspect", "--format", "{{.State.Pid}}", container), env=engine.env(),
                                 capture_output=True, text=True, check=True).stdout.strip()
            for title, extra in (("two containers, host IPC and PID (hybrid, bind)", {}),
                                 ("two containers, single_copy = true", {"single_copy": True})):
                result = engine.run(ContainerRun(image, [str(program), pid], **per_rank, **extra), timeout=120)
                print(f"  {title:<48} {(result.stdout or result.stderr).strip().splitlines()[-1]}")
        finally:
            engine.remove_containers("mpistack.case=cma-check")
    return 0


if __name__ == "__main__":
    sys.exit(main())
