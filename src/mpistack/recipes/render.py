"""Assemble a stack's blocks into a Containerfile and an Apptainer definition, and write a build context."""

from __future__ import annotations

import configparser
import json
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from .. import __version__
from ..data import data_path
from ..spec.stack import Stack
from .blocks import BUILD_BASE, DISTRO_BASE, Step, blocks_for, environment
from .escaping import UnsafeValue, shell
from ..spec.pins import UnpinnedError


class RecipeError(ValueError):
    """A stack that cannot be turned into a recipe (unpinned version, missing sources)."""


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


def render(stack: Stack, versions_path: Path | None = None, *, allow_unpinned: bool = False) -> Recipe:
    """Render ``stack``; raises RecipeError when a source download has no pinned checksum, unless
    ``allow_unpinned`` (for review only): the unpinned block then renders as a step that fails the build.
    A value that cannot be written safely into a generated file is a RecipeError too."""
    try:
        return _render(stack, versions_path, allow_unpinned=allow_unpinned)
    except UnsafeValue as error:
        raise RecipeError(f"{stack.path or stack.name}: {error}") from None


def _render(stack: Stack, versions_path: Path | None, *, allow_unpinned: bool) -> Recipe:
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
        raise RecipeError("\n".join(errors))
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
               runtime_image=stack.base.runtime_image or stack.base.image, copies=copies)
    jenv = environment()
    containerfile = jenv.get_template("containerfile.j2").render(**ctx).strip() + "\n"
    files = [f for s in steps for f in s.files]
    bootstrap = "localimage" if stack.base.image.startswith("localhost/") else "docker"
    apptainer = jenv.get_template("apptainer.def.j2").render(bootstrap=bootstrap, files=files, **ctx).strip() + "\n"
    downloads = [{"component": s.pin.component, "version": s.pin.version, "url": s.pin.url,
                  "sha256": s.pin.sha256, "source": s.pin.source} for s in steps if s.pin]
    return Recipe(stack, containerfile, apptainer, steps, labels, env, build_packages, runtime_packages, downloads)


# -- build context ----------------------------------------------------------------------------------

def bench_source_dir() -> Path:
    """mpistack-bench's sources (Makefile, src/): $MPISTACK_BENCH_DIR, else the copy shipped in the package
    (in a checkout, a link to the repository's bench/)."""
    override = os.environ.get("MPISTACK_BENCH_DIR")
    path = Path(override) if override else data_path("bench")
    if (path / "Makefile").is_file():
        return path
    raise RecipeError(f"mpistack-bench sources not found at {path} (expected a Makefile): set MPISTACK_BENCH_DIR")


def _host_pip_config() -> tuple[str, Path | None]:
    """pip's ordinary configuration of this host, for the build stage: index URLs, trusted hosts,
    timeout and the CA bundle (copied, since the image's own bundle may lack a site CA)."""
    parser = configparser.ConfigParser()
    files = ["/etc/pip.conf", os.path.expanduser("~/.config/pip/pip.conf"), os.path.expanduser("~/.pip/pip.conf")]
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
    cert = settings.pop("cert", None)
    cert_path = Path(cert) if cert and Path(cert).is_file() else None
    if cert_path:
        settings["cert"] = "/etc/mpistack/pip/ca-bundle.crt"
    settings.setdefault("disable-pip-version-check", "true")
    lines = ["# pip configuration for the build stage, written by mpistack from this host's", "[global]"]
    lines += [f"{k} = {v}" for k, v in sorted(settings.items()) if "\n" not in v]
    return "\n".join(lines) + "\n", cert_path


def write_context(recipe: Recipe, directory: Path) -> Path:
    """Write Containerfile, Apptainer definition, bench/ sources and pip config into ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "Containerfile").write_text(recipe.containerfile)
    (directory / "mpistack.def").write_text(recipe.apptainer)
    bench_dst = directory / "bench"
    if bench_dst.exists():
        shutil.rmtree(bench_dst)
    src = bench_source_dir()
    bench_dst.mkdir()
    shutil.copy2(src / "Makefile", bench_dst / "Makefile")
    shutil.copytree(src / "src", bench_dst / "src", ignore=shutil.ignore_patterns("*.o", "build*"))
    for extra in src.glob("*.[ch]"):
        shutil.copy2(extra, bench_dst / extra.name)
    if any(s.component == "mpi" and s.files and s.files[0][0] == "pip" for s in recipe.steps):
        pip_dir = directory / "pip"
        pip_dir.mkdir(exist_ok=True)
        text, cert = _host_pip_config()
        (pip_dir / "pip.conf").write_text(text)
        if cert:
            shutil.copy2(cert, pip_dir / "ca-bundle.crt")
    (directory / ".containerignore").write_text("bench/build*\n")
    return directory / "Containerfile"
