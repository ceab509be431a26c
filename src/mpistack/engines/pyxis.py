"""NVIDIA's pyxis, a SPANK plug-in that adds `--container-*` options to srun and runs the tasks in an enroot
container: `srun <options> --container-image=IMAGE --container-mounts=SRC:DST[,...] [--container-workdir=DIR]
[--container-env=NAME[,NAME...]] <argv>`. Registry images are spelled `registry#name:tag`. All tasks of a
step on one node run in the same container, same user and mount namespaces (NVIDIA/pyxis#141), so they are
joined whatever the setting. NVIDIA/pyxis README and wiki 'Usage' (https://github.com/NVIDIA/pyxis,
https://github.com/NVIDIA/pyxis/wiki/Usage)."""

from __future__ import annotations

from collections.abc import Sequence

from ..registry import ENGINES
from .base import ContainerRun
from .rendering import RenderedRuntime, check_spec, registry_image


def _image(image: str) -> str:
    """pyxis takes an image starting with / or . as a squashfs file, anything else as an enroot URI,
    [USER@][REGISTRY#]IMAGE[:TAG]."""
    if image.startswith(("/", ".")):
        return image
    return registry_image(image.removeprefix("docker://"))


def not_exported(srun: Sequence[str], names: list[str]) -> list[str]:
    """Those of ``names`` that srun's --export keeps from the tasks: all with NONE or NIL, the unlisted
    ones with a list that does not start with ALL (srun's default, no --export, passes everything)."""
    missing: list[str] = []
    for i, item in enumerate(srun):
        if item.startswith("--export="):
            value = item.partition("=")[2]
        elif item == "--export" and i + 1 < len(srun):
            value = srun[i + 1]
        else:
            continue
        parts = value.split(",")
        if parts[0] == "ALL":
            continue
        listed = set() if parts[0] in ("NONE", "NIL") else {part.partition("=")[0] for part in parts}
        missing += [name for name in names if name not in listed and name not in missing]
    return missing


@ENGINES.register("pyxis")
class PyxisRuntime(RenderedRuntime):
    name = "pyxis"
    one_container_per_node = True

    def run_argv(self, spec: ContainerRun) -> list[str]:
        """--container-image=IMAGE --container-mounts=... [--container-workdir=DIR] [--container-env=NAME,...]
        argv. The environment's values go in srun's own environment (`launcher_env`): --container-env takes
        names only."""
        check_spec(spec)
        if not spec.image:
            raise ValueError("pyxis: empty image")
        for mount in spec.mounts:  # each already SRC:DST[:FLAGS] (check_spec)
            # pyxis splits --container-mounts on ',' and hands each mount to enroot as a whitespace-separated
            # fstab line, so neither can be in a path
            if "," in mount:
                raise ValueError(f"pyxis: mount {mount!r} contains ',', which pyxis reads as a second mount")
            if any(c.isspace() for c in mount):
                raise ValueError(f"pyxis: mount {mount!r} contains whitespace, which splits enroot's mount entry")
        command = [f"--container-image={_image(spec.image)}"]
        if spec.mounts:
            command.append("--container-mounts=" + ",".join(spec.mounts))
        if spec.workdir:
            command.append(f"--container-workdir={spec.workdir}")
        if spec.env:
            # without --container-env the image's own value of a variable wins over the host's (pyxis's srun
            # --help): naming them makes the stack's settings the ones the ranks see
            command.append("--container-env=" + ",".join(spec.env))
        return [*command, *spec.argv]

    def launch_argv(self, starter: Sequence[str], spec: ContainerRun) -> list[str]:
        missing = not_exported(starter, list(spec.env))
        if missing:
            raise ValueError(f"pyxis: srun --export keeps {', '.join(missing)} from the tasks, and pyxis takes "
                             "the values of --container-env from the tasks' environment")
        return super().launch_argv(starter, spec)

    def launcher_env(self, spec: ContainerRun) -> dict[str, str]:
        return dict(spec.env)
