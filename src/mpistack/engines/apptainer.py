"""Apptainer started by srun once per task: `srun <options> apptainer exec --no-eval [--sharens] --bind SRC:DST
... [--pwd DIR] [--env NAME=VALUE ...] IMAGE <argv>`. Unprivileged, each `apptainer exec` makes its own user
and mount namespaces and keeps the host's IPC, PID and network; `--sharens` (Apptainer 1.3, answering
apptainer/apptainer#769) puts the tasks of a node in one namespace set. Apptainer docs 'Bind Paths and Mounts'
(https://apptainer.org/docs/user/latest/bind_paths_and_mounts.html) and 'Environment and Metadata'
(https://apptainer.org/docs/user/latest/environment_and_metadata.html); `--no-eval` is in Apptainer 1.1.0 and
later (release notes, https://github.com/apptainer/apptainer/blob/main/CHANGELOG.md)."""

from __future__ import annotations

from ..registry import ENGINES
from .base import ContainerRun
from .rendering import RenderedRuntime, check_spec


def env_item(name: str, value: str) -> str:
    """NAME=VALUE for apptainer --env, written so that Apptainer reads back exactly (NAME, VALUE).

    --env is a pflag string-to-string flag: an item with one '=' is taken whole after trimming '"' from
    both ends; an item with more is read as one CSV record (',' separates pairs, '"' quotes). So a value
    without '=' goes as it is, one with '=' goes CSV-quoted, and what neither form carries is refused."""
    item = f"{name}={value}"
    if "=" not in value:
        if value.endswith('"'):
            raise ValueError(f"apptainer: the value of {name} ends with '\"', which apptainer --env strips")
        return item
    if "\r\n" in value:
        raise ValueError(f"apptainer: the value of {name} holds '=' and CRLF; --env's CSV reading turns "
                         "CRLF into LF")
    return '"' + item.replace('"', '""') + '"'


@ENGINES.register("apptainer")
class ApptainerRuntime(RenderedRuntime):
    name = "apptainer"
    join_setting = "apptainer exec --sharens (Apptainer 1.3 and later)"

    def rendered_image(self, stack: str, reference: str, asked: str | None = None) -> str:
        return asked or f"{stack}.sif"  # built from `mpistack stack render STACK --apptainer`

    def run_argv(self, spec: ContainerRun) -> list[str]:
        """apptainer exec --no-eval [--sharens] --bind SRC:DST ... [--pwd DIR] [--env NAME=VALUE ...] IMAGE argv.

        The host environment passes into the container by default (so srun's PMI variables reach each rank);
        the stack's values go with --env, which overrides the image's. --no-eval keeps those values and the
        argv literal: without it Apptainer evaluates them in a shell inside the container."""
        check_spec(spec)
        if not spec.image:
            raise ValueError("apptainer: empty image")
        if spec.image.startswith("-"):
            raise ValueError(f"apptainer: image {spec.image!r} would be read as an option")
        command = ["apptainer", "exec", "--no-eval"]
        if spec.join_ranks:
            # the tasks of a node share one set of namespaces (so CMA and UCX's proc-link work between them)
            command.append("--sharens")
        for mount in spec.mounts:
            # Apptainer splits a --bind value on ',' into several binds
            if "," in mount:
                raise ValueError(f"apptainer: mount {mount!r} contains ',', which apptainer --bind reads as "
                                 "a second bind")
            command += ["--bind", mount]
        if spec.workdir:
            # --pwd is the directory the program starts in; --workdir would be where /tmp and $HOME live
            command += ["--pwd", spec.workdir]
        for name, value in spec.env.items():
            command += ["--env", env_item(name, value)]
        return [*command, spec.image, *spec.argv]
