"""Assemble a stack's blocks into a Containerfile and an Apptainer definition, and write a build context."""

from __future__ import annotations

import configparser
import contextlib
import json
import os
import re
import shutil
import tempfile
from collections.abc import Collection, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from .. import __version__
from ..data import data_path
from ..spec.stack import Stack
from .blocks import BUILD_BASE, DISTRO_BASE, PipMpiBlock, Step, blocks_for, environment
from .escaping import UnsafeValue, shell
from .sources import CONTEXT_SOURCES, SOURCES_MOUNT, MirrorError
from ..spec.pins import UnpinnedError


class RecipeError(ValueError):
    """A stack that cannot be turned into a recipe (unpinned version, missing sources)."""


class UnpinnedRecipe(RecipeError):
    """A recipe refused because components have no pinned sha256 (rendered anyway with allow_unpinned)."""


@dataclass
class Recipe:
    stack: Stack
    containerfile: str
    apptainer: str
    steps: list[Step]
    labels: dict[str, str]
    env: dict[str, str]
    build_packages: list[str]
    runtime_packages: list[str]
    downloads: list[dict] = field(default_factory=list)
    secrets: list[str] = field(default_factory=list)  # build secrets the Containerfile mounts
    #: files from mirror directories, {name in the context's sources/: host path}
    mirrored: dict[str, str] = field(default_factory=dict)

    @property
    def image(self) -> str:
        return self.stack.image_ref()


def _unique(items) -> list[str]:
    seen: dict[str, None] = {}
    for item in items:
        seen.setdefault(item, None)
    return list(seen)


def labels_for(stack: Stack) -> dict[str, str]:
    spec = stack.model_dump(mode="json", exclude_none=True)
    return {
        "org.opencontainers.image.title": stack.name,
        "org.opencontainers.image.description": stack.description or stack.name,
        "org.mpistack.version": __version__,
        "org.mpistack.stack": stack.name,
        "org.mpistack.tag": stack.version_tag(),
        "org.mpistack.mpi": f"{stack.mpi.impl}-{stack.mpi.version}",
        "org.mpistack.launcher": stack.launcher,
        "org.mpistack.versions": json.dumps(stack.versions(), sort_keys=True, separators=(",", ":")),
        "org.mpistack.spec": json.dumps(spec, sort_keys=True, separators=(",", ":")),
    }


def render(stack: Stack, versions_path: Path | None = None, *, allow_unpinned: bool = False,
           secrets: Collection[str] = ()) -> Recipe:
    """Render ``stack``; raises RecipeError when a source download has no pinned checksum, unless
    ``allow_unpinned`` (for review only): the unpinned block then renders as a step that fails the build.
    A value that cannot be written safely into a generated file is a RecipeError too.
    ``secrets``: ids of the build secrets the build supplies (`build_secrets`); a step mounts those it uses."""
    try:
        return _render(stack, versions_path, allow_unpinned=allow_unpinned, secrets=frozenset(secrets))
    except UnsafeValue as error:
        raise RecipeError(f"{stack.path or stack.name}: {error}") from None
    except MirrorError as error:  # the user's mirrors.toml: its message names the file and the key
        raise RecipeError(str(error)) from None


def _render(stack: Stack, versions_path: Path | None, *, allow_unpinned: bool, secrets: frozenset[str]) -> Recipe:
    steps: list[Step] = []
    errors: list[str] = []
    for block in blocks_for(stack, versions_path):
        try:
            steps.append(block.step())
        except UnpinnedError as error:
            errors.append(f"{stack.path or stack.name}: {error}")
            if allow_unpinned:
                message = f"mpistack: refusing to build {block.name}: {error}"
                steps.append(Step(block.name, f"{block.name}: UNPINNED, this step fails the build",
                                  commands=[f"echo {shell(message)} >&2", "exit 1"]))
    if errors and not allow_unpinned:
        raise UnpinnedRecipe("\n".join(errors))
    common = BUILD_BASE if stack.mode == "source" else DISTRO_BASE
    common_packages = _unique([*common, *stack.base.packages])
    extra_packages = [p for p in _unique(p for s in steps for p in s.build_packages) if p not in common_packages]
    build_packages = common_packages + extra_packages
    runtime_packages = _unique(p for s in steps for p in s.runtime_packages)
    env: dict[str, str] = {}
    for step in steps:
        env.update(step.env)
    if stack.gpu.kind == "cuda":
        env.setdefault("MPISTACK_GPU", "cuda")
    env.update(stack.env)
    labels = labels_for(stack)
    copies = _unique(c for s in steps for c in s.copies) if stack.multistage else []
    ctx = dict(stack=stack, version=__version__, steps=steps, build_packages=build_packages,
               common_packages=common_packages, extra_packages=extra_packages,
               runtime_packages=runtime_packages, env=env, labels=labels, multistage=stack.multistage,
               runtime_image=stack.base.runtime_image or stack.base.image, copies=copies, secrets=secrets,
               context_sources=CONTEXT_SOURCES, sources_mount=SOURCES_MOUNT)
    jenv = environment()
    containerfile = jenv.get_template("containerfile.j2").render(**ctx).strip() + "\n"
    mirrored = {pin.filename: pin.local_path for s in steps for pin in s.sources if pin.local_path}
    files = [f for s in steps for f in s.files]
    files += [(f"{CONTEXT_SOURCES}/{name}", f"{SOURCES_MOUNT}/{name}") for name in mirrored]
    bootstrap = "localimage" if stack.base.image.startswith("localhost/") else "docker"
    apptainer = jenv.get_template("apptainer.def.j2").render(bootstrap=bootstrap, files=files, **ctx).strip() + "\n"
    downloads = [{"component": pin.component, "version": pin.version, "url": pin.url, "sha256": pin.sha256,
                  "source": pin.source, "origin": pin.origin, "file": pin.local_path or None}
                 for s in steps for pin in s.sources]
    mounted = _unique(name for s in steps if s.commands for name, _ in s.secrets if name in secrets)
    return Recipe(stack, containerfile, apptainer, steps, labels, env, build_packages, runtime_packages, downloads,
                  mounted, mirrored)


# -- build context ----------------------------------------------------------------------------------

def bench_source_dir() -> Path:
    """mpistack-bench's sources (Makefile, src/): $MPISTACK_BENCH_DIR, else the copy shipped in the package
    (in a checkout, a link to the repository's bench/)."""
    override = os.environ.get("MPISTACK_BENCH_DIR")
    path = Path(override) if override else data_path("bench")
    if (path / "Makefile").is_file():
        return path
    raise RecipeError(f"mpistack-bench sources not found at {path} (expected a Makefile): set MPISTACK_BENCH_DIR")


#: scheme://USER[:PASSWORD]@ in a URL (up to the last @ before the host: a password may hold an unquoted @)
_USERINFO_RE = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)[^/\s]*@")
#: pip's own configuration files, in the order pip reads them (then $PIP_CONFIG_FILE)
PIP_CONFIG_FILES = ("/etc/pip.conf", "~/.config/pip/pip.conf", "~/.pip/pip.conf")
PIP_CONFIG_MODE = 0o644  # files of a build context: readable, never writable by others
SECRET_MODE = 0o600


def without_credentials(value: str) -> str:
    """``value`` with the user and password removed from every URL in it."""
    return _USERINFO_RE.sub(lambda match: match.group("scheme"), value)


@dataclass(frozen=True)
class PipSettings:
    """pip's ordinary configuration of this host, for the build stage: index URLs, trusted hosts, timeout and
    the CA bundle (copied, since the image's own bundle may lack a site CA)."""

    settings: dict[str, str]
    cert: Path | None = None

    @property
    def has_credentials(self) -> bool:
        return any(without_credentials(value) != value for value in self.settings.values())

    def context_config(self) -> str:
        """pip.conf for the build context: every URL without its user and password."""
        settings = {key: without_credentials(value) for key, value in self.settings.items()}
        note = ["# index credentials are not written here: the build passes them to the pip step as the",
                f"# build secret {PipMpiBlock.SECRET}, mounted for that step only"] if self.has_credentials else []
        return _pip_conf(settings, note)

    def secret_config(self) -> str | None:
        """pip.conf with the credentials, for the build secret only; None when there are none."""
        return _pip_conf(self.settings, []) if self.has_credentials else None


def _pip_conf(settings: dict[str, str], note: list[str]) -> str:
    lines = ["# pip configuration for the build stage, written by mpistack from this host's", *note, "[global]"]
    for key, value in sorted(settings.items()):
        # a multi-line value (several extra-index-url) continues on indented lines, as configparser reads it
        parts = [part.strip() for part in value.splitlines() if part.strip()]
        if parts:
            lines.append(f"{key} = " + "\n    ".join(parts))
    return "\n".join(lines) + "\n"


def host_pip_settings() -> PipSettings:
    """The host's pip configuration files (/etc/pip.conf, the user's, $PIP_CONFIG_FILE) and PIP_* variables."""
    parser = configparser.ConfigParser(interpolation=None)
    files = [os.path.expanduser(name) for name in PIP_CONFIG_FILES]
    if os.environ.get("PIP_CONFIG_FILE"):
        files.append(os.environ["PIP_CONFIG_FILE"])
    parser.read([f for f in files if os.path.isfile(f)])
    settings: dict[str, str] = {}
    if parser.has_section("global"):
        settings.update(parser["global"])
    for key in ("index-url", "extra-index-url", "trusted-host", "cert", "timeout", "default-timeout"):
        value = os.environ.get("PIP_" + key.upper().replace("-", "_"))
        if value:
            settings[key] = value
    settings.pop("find-links", None)  # host paths mean nothing inside the build
    settings.pop("client-cert", None)  # a host path too, and a private key: never copied
    cert = settings.pop("cert", None)
    cert_path = Path(cert) if cert and Path(cert).is_file() else None
    if cert_path:
        settings["cert"] = "/etc/mpistack/pip/ca-bundle.crt"
    settings.setdefault("disable-pip-version-check", "true")
    return PipSettings(settings, cert_path)


def _uses_pip(steps: list[Step]) -> bool:
    return any(s.component == "mpi" and s.files and s.files[0][0] == "pip" for s in steps)


def _write(path: Path, text: str, mode: int = PIP_CONFIG_MODE) -> None:
    path.write_text(text)
    os.chmod(path, mode)  # whatever the umask or an earlier file's mode


@contextlib.contextmanager
def build_secrets(stack: Stack, context: Path) -> Iterator[dict[str, Path]]:
    """The build secrets a build of ``stack`` needs, {id: file}: the host's pip configuration with its index
    credentials when it has any, else nothing. Each file is mode 0600 in a private temporary directory outside
    the build ``context``, removed when the block ends, also on an exception or Ctrl-C."""
    if not any(isinstance(block, PipMpiBlock) for block in blocks_for(stack)):
        yield {}
        return
    secret = host_pip_settings().secret_config()
    if secret is None:
        yield {}
        return
    directory = Path(tempfile.mkdtemp(prefix="mpistack-secrets-"))  # mode 0700
    try:
        if directory.resolve().is_relative_to(context.resolve()):
            raise RecipeError(f"temporary directory {directory} lies inside the build context {context}: "
                              "set TMPDIR to a directory outside it")
        path = directory / f"{PipMpiBlock.SECRET}.conf"
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, SECRET_MODE)
        with os.fdopen(descriptor, "w") as handle:
            handle.write(secret)
        yield {PipMpiBlock.SECRET: path}
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def write_context(recipe: Recipe, directory: Path) -> Path:
    """Write Containerfile, Apptainer definition, bench/ sources and pip config into ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    _write(directory / "Containerfile", recipe.containerfile)
    _write(directory / "mpistack.def", recipe.apptainer)
    bench_dst = directory / "bench"
    if bench_dst.exists():
        shutil.rmtree(bench_dst)
    src = bench_source_dir()
    bench_dst.mkdir()
    shutil.copy2(src / "Makefile", bench_dst / "Makefile")
    shutil.copytree(src / "src", bench_dst / "src", ignore=shutil.ignore_patterns("*.o", "build*"))
    for extra in src.glob("*.[ch]"):
        shutil.copy2(extra, bench_dst / extra.name)
    if _uses_pip(recipe.steps):
        pip_dir = directory / "pip"
        pip_dir.mkdir(exist_ok=True)
        pip = host_pip_settings()
        _write(pip_dir / "pip.conf", pip.context_config())  # no credentials: those go as a build secret
        if pip.cert:
            shutil.copyfile(pip.cert, pip_dir / "ca-bundle.crt")
            os.chmod(pip_dir / "ca-bundle.crt", PIP_CONFIG_MODE)
    sources = directory / CONTEXT_SOURCES
    if sources.exists():
        shutil.rmtree(sources)
    if recipe.mirrored:
        sources.mkdir()
        for name, host_path in recipe.mirrored.items():
            # a copy (not a link: the build reads the context, not the host); the build verifies it
            try:
                shutil.copyfile(host_path, sources / name)
            except OSError as error:
                raise RecipeError(f"mirror file {host_path}: cannot copy it into the build context: "
                                  f"{error.strerror or error}") from None
    _write(directory / ".containerignore", "bench/build*\n")
    return directory / "Containerfile"
