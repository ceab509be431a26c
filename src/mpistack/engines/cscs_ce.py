"""The CSCS Container Engine, a Slurm plug-in: `srun <options> --environment=<EDF> <argv>`. The image, mounts,
working directory and environment live in the environment definition file (TOML, `edf_text`); the command
line names only that file, so a container of this runtime is named by its EDF (`ContainerRun.image`: an
absolute path, a `./` relative one, or a name in the EDF search path, without `.toml`). The tasks of a node
are taken to share one container, as under pyxis, whose model the CE follows. CSCS docs 'Container Engine' (https://docs.cscs.ch/software/container-engine/), 'Running
containerized environments' (https://docs.cscs.ch/software/container-engine/run/), 'EDF reference'
(https://docs.cscs.ch/software/container-engine/edf/)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence

from ..recipes.escaping import comment
from ..registry import ENGINES
from .base import ContainerRun
from .rendering import RenderedRuntime, check_spec, registry_image


def _toml_str(value: str) -> str:
    return json.dumps(str(value))  # a JSON string is a valid TOML basic string


def edf_text(image: str, *, env: Mapping[str, str] = {}, mounts: Sequence[str] = (), workdir: str | None = None,
             cxi_hook: bool = True, title: str = "", srun_mpi: str = "pmi2") -> str:
    """An EDF: the image in the CE's spelling (registry#name:tag), bind mounts, the working directory, the
    environment, and whether the Slingshot (CXI) hook is on."""
    lines = ["# " + comment(f"CSCS Container Engine EDF{' for ' + title if title else ''}, written by mpistack"),
             f"# run with: srun --mpi={srun_mpi} --environment=<this file> ...",
             f"image = {_toml_str(registry_image(image))}"]
    if mounts:
        lines.append("mounts = [" + ", ".join(_toml_str(m) for m in mounts) + "]")
    if workdir:
        lines.append(f"workdir = {_toml_str(workdir)}")
    if env:  # names checked by the caller, each a TOML bare key
        lines += ["", "[env]"] + [f"{name} = {_toml_str(value)}" for name, value in env.items()]
    lines += ["", "[annotations]", f"com.hooks.cxi.enabled = {_toml_str('true' if cxi_hook else 'false')}"]
    return "\n".join(lines) + "\n"


@ENGINES.register("cscs-ce")
class CscsContainerEngine(RenderedRuntime):
    name = "cscs-ce"
    one_container_per_node = True

    def rendered_image(self, stack: str, reference: str, asked: str | None = None) -> str:
        return stack  # the EDF `mpistack stack render STACK --edf` writes (~/.edf/STACK.toml) names the image

    def planned_image(self, reference: str) -> str:
        """The EDF's name in the search path (~/.edf/NAME.toml) for the image `reference`."""
        return re.sub(r"[^A-Za-z0-9._-]", "_", reference).removesuffix(".toml")

    def run_argv(self, spec: ContainerRun) -> list[str]:
        """--environment=EDF argv: image, mounts, workdir and environment are the EDF's (`edf_text`)."""
        check_spec(spec)
        edf = spec.image
        if not edf.strip():
            raise ValueError("cscs-ce: empty EDF path (the container's image): --environment needs an EDF file "
                             "or name")
        if edf != edf.strip():
            raise ValueError(f"cscs-ce: EDF {edf!r} has leading or trailing whitespace")
        # the CE reads a relative path only when it starts with ./ and looks a bare name up in the EDF search
        # path with .toml appended (CSCS docs 'Running containerized environments')
        if "/" in edf and not edf.startswith(("/", "./", "../")):
            raise ValueError(f"cscs-ce: EDF {edf!r}: a relative path must start with ./ (./{edf})")
        if "/" not in edf and edf.endswith(".toml"):
            raise ValueError(f"cscs-ce: EDF {edf!r}: a name in the EDF search path is given without .toml; "
                             f"for a file in the working directory write ./{edf}")
        return [f"--environment={edf}", *spec.argv]
