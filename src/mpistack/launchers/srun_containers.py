"""One container per MPI rank under Slurm's srun: the command lines HPC centres use, rendered as argv lists
(never shell strings, so no value is ever split or expanded by a shell on the way).

Three container runtimes, each a function ``wrap(srun, container, argv) -> argv`` registered in
``SRUN_CONTAINERS`` under its name; srun's own options come first, then the runtime's, then the rank's argv:

``cscs-ce``
    The CSCS Container Engine, a Slurm plug-in: ``srun <options> --environment=<EDF> <argv>``. The image,
    mounts, working directory and environment live in the environment definition file (TOML), rendered by
    ``mpistack.runtime.edf``; the command line names only that file (an absolute path, a ``./`` relative
    one, or a name in the EDF search path, without ``.toml``). CSCS docs 'Container Engine'
    (https://docs.cscs.ch/software/container-engine/), 'Running containerized environments'
    (https://docs.cscs.ch/software/container-engine/run/), 'EDF reference'
    (https://docs.cscs.ch/software/container-engine/edf/).

``pyxis``
    NVIDIA's pyxis, a SPANK plug-in that adds ``--container-*`` options to srun and runs each task in an
    enroot container: ``srun <options> --container-image=IMAGE --container-mounts=SRC:DST[,...]
    [--container-workdir=DIR] [--container-env=NAME[,NAME...]] <argv>``. Registry images are spelled
    ``registry#name:tag``. NVIDIA/pyxis README and wiki 'Usage' (https://github.com/NVIDIA/pyxis,
    https://github.com/NVIDIA/pyxis/wiki/Usage).

``apptainer``
    Apptainer started by srun once per task: ``srun <options> apptainer exec --no-eval [--sharens] --bind
    SRC:DST ... [--pwd DIR] [--env NAME=VALUE ...] IMAGE <argv>``; ``--sharens`` (Apptainer 1.3, answering
    apptainer/apptainer#769) puts the tasks of a node in one namespace set. Apptainer docs 'Bind Paths and Mounts'
    (https://apptainer.org/docs/user/latest/bind_paths_and_mounts.html) and 'Environment and Metadata'
    (https://apptainer.org/docs/user/latest/environment_and_metadata.html); ``--no-eval`` is in Apptainer
    1.1.0 and later (release notes, https://github.com/apptainer/apptainer/blob/main/CHANGELOG.md).

How the stack's environment reaches the ranks differs, and each registration says so as data
(``env_via``): in the EDF (cscs-ce), in srun's own environment, named by ``--container-env`` (pyxis), or on
the command line (apptainer). ``srun_environment`` gives what to set in srun's environment.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..registry import SRUN_CONTAINERS
from ..runtime import ce_image

ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class RankContainer:
    """What each rank's container is: its image, the stack's environment, bind mounts ("src:dst" or
    "src:dst:flags", flags in the runtime's own spelling), the working directory inside it, and for the
    CSCS Container Engine the EDF that holds all of these (a path or a name in the EDF search path)."""

    image: str
    env: dict[str, str] = field(default_factory=dict)
    mounts: list[str] = field(default_factory=list)
    workdir: str | None = None
    edf: str | None = None
    #: the ranks of a node in one namespace set (apptainer --sharens), not a user namespace each
    joined: bool = False

    def __post_init__(self):
        # copies: a frozen container should not change because the caller's dict or list does
        object.__setattr__(self, "env", dict(self.env))
        object.__setattr__(self, "mounts", list(self.mounts))
        _check_text("image", self.image)
        for name, value in self.env.items():
            if not isinstance(name, str) or not ENV_NAME.fullmatch(name):
                raise ValueError(f"environment variable name {name!r}: expected [A-Za-z_][A-Za-z0-9_]*")
            _check_text(f"environment variable {name}", value)
        for mount in self.mounts:
            _split_mount(mount)
        if self.workdir is not None:
            _check_text("workdir", self.workdir)
            if not self.workdir.startswith("/"):
                raise ValueError(f"workdir {self.workdir!r}: expected an absolute path inside the container")
        if self.edf is not None:
            _check_text("EDF", self.edf)


def _check_text(what: str, value: object) -> None:
    if not isinstance(value, str):
        raise ValueError(f"{what}: expected a string, got {type(value).__name__}")
    # no argv item and no environment value can hold a NUL byte (execve ends strings there)
    if "\0" in value:
        raise ValueError(f"{what} {value!r}: contains a NUL byte")


def _split_mount(mount: str) -> tuple[str, str, str | None]:
    """"src:dst[:flags]" -> (src, dst, flags); every runtime here splits on ':', so there is no escaping a
    ':' inside a path."""
    _check_text("mount", mount)
    parts = mount.split(":")
    if len(parts) < 2:
        raise ValueError(f"mount {mount!r}: expected SRC:DST (no ':')")
    if len(parts) > 3:
        raise ValueError(f"mount {mount!r}: expected SRC:DST[:FLAGS]; a ':' inside a path cannot be mounted")
    src, dst = parts[0], parts[1]
    if not src or not dst:
        raise ValueError(f"mount {mount!r}: empty source or destination")
    if not dst.startswith("/"):
        raise ValueError(f"mount {mount!r}: the destination {dst!r} must be an absolute path in the container")
    flags = parts[2] if len(parts) == 3 else None
    if flags == "":
        raise ValueError(f"mount {mount!r}: empty flags after the last ':'")
    return src, dst, flags


def _check_call(srun: list[str], argv: list[str]) -> None:
    if not srun:
        raise ValueError("srun: empty command (expected e.g. ['srun', '--mpi=pmi2', ...])")
    for item in srun:
        _check_text("srun option", item)
    if not argv or not argv[0]:
        raise ValueError("argv: empty command for the ranks")
    for item in argv:
        _check_text("argv item", item)
    # srun (and apptainer) read options up to the first word that is not one: a program name starting with
    # '-' would be taken as an option instead of being run
    if argv[0].startswith("-"):
        raise ValueError(f"argv[0] {argv[0]!r}: a program name starting with '-' would be read as an option")


@SRUN_CONTAINERS.register("cscs-ce", env_via="edf")
def cscs_ce(srun: list[str], container: RankContainer, argv: list[str]) -> list[str]:
    """srun ... --environment=EDF argv. Image, mounts, workdir and environment are the EDF's (render it
    with mpistack.runtime.edf(stack, image=..., mounts=..., workdir=...)), so only container.edf is used."""
    _check_call(srun, argv)
    edf = container.edf
    if edf is None or not edf.strip():
        raise ValueError("cscs-ce: empty EDF path (container.edf): --environment needs an EDF file or name")
    if edf != edf.strip():
        raise ValueError(f"cscs-ce: EDF {edf!r} has leading or trailing whitespace")
    # the CE reads a relative path only when it starts with ./ and looks a bare name up in the EDF search
    # path with .toml appended (CSCS docs 'Running containerized environments')
    if "/" in edf and not edf.startswith(("/", "./", "../")):
        raise ValueError(f"cscs-ce: EDF {edf!r}: a relative path must start with ./ (./{edf})")
    if "/" not in edf and edf.endswith(".toml"):
        raise ValueError(f"cscs-ce: EDF {edf!r}: a name in the EDF search path is given without .toml; "
                         f"for a file in the working directory write ./{edf}")
    return [*srun, f"--environment={edf}", *argv]


def _pyxis_image(image: str) -> str:
    """pyxis takes an image starting with / or . as a squashfs file, anything else as an enroot URI,
    [USER@][REGISTRY#]IMAGE[:TAG]: a registry host is separated by '#', which ce_image writes."""
    if image.startswith(("/", ".")):
        return image
    return ce_image(image.removeprefix("docker://"))


def _not_exported(srun: list[str], names: list[str]) -> list[str]:
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


@SRUN_CONTAINERS.register("pyxis", env_via="srun-environment")
def pyxis(srun: list[str], container: RankContainer, argv: list[str]) -> list[str]:
    """srun ... --container-image=IMAGE --container-mounts=... [--container-workdir=DIR]
    [--container-env=NAME,...] argv. The environment's values go in srun's own environment
    (srun_environment): --container-env takes names only."""
    _check_call(srun, argv)
    if not container.image:
        raise ValueError("pyxis: empty image")
    for mount in container.mounts:  # each already SRC:DST[:FLAGS] (RankContainer checks)
        # pyxis splits --container-mounts on ',' and hands each mount to enroot as a whitespace-separated
        # fstab line, so neither can be in a path
        if "," in mount:
            raise ValueError(f"pyxis: mount {mount!r} contains ',', which pyxis reads as a second mount")
        if any(c.isspace() for c in mount):
            raise ValueError(f"pyxis: mount {mount!r} contains whitespace, which splits enroot's mount entry")
    missing = _not_exported(srun, list(container.env))
    if missing:
        raise ValueError(f"pyxis: srun --export keeps {', '.join(missing)} from the tasks, and pyxis takes "
                         "the values of --container-env from the tasks' environment")
    command = [*srun, f"--container-image={_pyxis_image(container.image)}"]
    if container.mounts:
        command.append("--container-mounts=" + ",".join(container.mounts))
    if container.workdir:
        command.append(f"--container-workdir={container.workdir}")
    if container.env:
        # without --container-env the image's own value of a variable wins over the host's (pyxis's srun
        # --help): naming them makes the stack's settings the ones the ranks see
        command.append("--container-env=" + ",".join(container.env))
    return [*command, *argv]


def _apptainer_env_item(name: str, value: str) -> str:
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


@SRUN_CONTAINERS.register("apptainer", env_via="argv")
def apptainer(srun: list[str], container: RankContainer, argv: list[str]) -> list[str]:
    """srun ... apptainer exec --no-eval --bind SRC:DST ... [--pwd DIR] [--env NAME=VALUE ...] IMAGE argv.

    The host environment passes into the container by default (so srun's PMI variables reach each rank);
    the stack's values go with --env, which overrides the image's. --no-eval keeps those values and the
    argv literal: without it Apptainer evaluates them in a shell inside the container."""
    _check_call(srun, argv)
    if not container.image:
        raise ValueError("apptainer: empty image")
    if container.image.startswith("-"):
        raise ValueError(f"apptainer: image {container.image!r} would be read as an option")
    command = [*srun, "apptainer", "exec", "--no-eval"]
    if container.joined:
        # Apptainer 1.3 and later: the tasks of a node share one set of namespaces (so CMA and UCX's
        # proc-link work between them); without it an unprivileged run gives each task its own
        command.append("--sharens")
    for mount in container.mounts:
        # Apptainer splits a --bind value on ',' into several binds
        if "," in mount:
            raise ValueError(f"apptainer: mount {mount!r} contains ',', which apptainer --bind reads as "
                             "a second bind")
        command += ["--bind", mount]
    if container.workdir:
        # --pwd is the directory the program starts in; --workdir would be where /tmp and $HOME live
        command += ["--pwd", container.workdir]
    for name, value in container.env.items():
        command += ["--env", _apptainer_env_item(name, value)]
    return [*command, container.image, *argv]


def wrap(runtime: str, srun: list[str], container: RankContainer, argv: list[str]) -> list[str]:
    """The full command of ``runtime`` (a SRUN_CONTAINERS name): srun options, the runtime's, then argv."""
    return SRUN_CONTAINERS.get(runtime).plugin(srun, container, argv)


def srun_environment(runtime: str, container: RankContainer) -> dict[str, str]:
    """What to set in srun's own environment for ``runtime``: the stack's values where the runtime takes
    them from there (pyxis), nothing where the EDF or the command line carries them."""
    if SRUN_CONTAINERS.get(runtime).env_via == "srun-environment":
        return dict(container.env)
    return {}
