"""`mpistack stack list|show|render|check|build|run` and `mpistack base` (thin: they delegate)."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Annotated, Optional

import typer
from .common import err, out
from rich.markup import escape


stack_app = typer.Typer(help="Stack recipes: list, show, render, check, build and run MPI container images.",
                        no_args_is_help=True)

NameArg = Annotated[str, typer.Argument(metavar="NAME", help="a catalogue stack name or a stack .toml file")]
EngineOpt = Annotated[str, typer.Option("--engine", help="container engine: podman or docker")]


def _load(name: str):
    from ..spec import catalogue
    from ..spec.stack import StackError

    try:
        return catalogue.load(name)
    except StackError as error:
        err.print(f"[red]error:[/red] {escape(str(error))}", highlight=False, soft_wrap=True)
        raise typer.Exit(2) from None


def _print_findings(findings: list, verbose: bool = False) -> None:
    colour = {"error": "red", "warning": "yellow", "info": "cyan"}
    for f in findings:
        err.print(f"[{colour[f.severity]}]{f.severity}[/]: {escape(f'[{f.rule}] {f.message}')}", highlight=False,
                  soft_wrap=True)
        if verbose:
            err.print(escape(f"    why: {f.reason}\n    source: {f.source}"), highlight=False, soft_wrap=True)


@stack_app.command("list")
def list_command() -> None:
    """The catalogue: every named stack with its image tag."""
    from ..report.tables import print_table
    from ..spec import catalogue
    from ..spec.stack import StackError

    rows = []
    for path in catalogue.stack_files():
        try:
            s = catalogue.load(str(path))
        except StackError as error:
            rows.append({"name": path.stem, "image tag": "invalid", "mpi": str(error)[:60]})
            continue
        transport = s.mpi.device + (f" ofi {s.libfabric.version}" if s.libfabric else "")
        gpu = f"{s.gpu.kind} {s.gpu.version or ''}".strip() if s.gpu.kind != "none" else "-"
        mode = s.mode if s.mode == "source" else f"{s.mode}/{s.mpi.channel}"
        rows.append({"name": s.name, "image tag": s.version_tag(), "mpi": f"{s.mpi.impl} {s.mpi.version}",
                     "transport": transport, "gpu": gpu, "mode": mode})
    print_table(rows, ["name", "image tag", "mpi", "transport", "gpu", "mode"])


@stack_app.command("show")
def show_command(name: NameArg) -> None:
    """A stack's settings, versions, image name and compatibility findings."""
    from .. import compat, runtime

    s = _load(name)
    out.print(f"[bold]{s.name}[/bold]  {s.description}", highlight=False)
    out.print(f"image:    {s.image_ref()}", highlight=False)
    out.print(f"origin:   {s.origin}", highlight=False)
    out.print(f"base:     {s.base.image}" + (f" (made by `mpistack base {s.base.make}`)" if s.base.make else ""),
              highlight=False)
    out.print("versions: " + ", ".join(f"{k} {v}" for k, v in s.versions().items()), highlight=False)
    out.print(f"launch:   {' '.join(runtime.launch_command(s, 2, ['mpistack-bench', 'latency']))}; "
              f"srun --mpi={runtime.srun_mpi(s)}", highlight=False)
    _print_findings(compat.check(s), verbose=True)


@stack_app.command("render")
def render_command(
    name: NameArg,
    output: Annotated[Optional[Path], typer.Option("--out", "-o", help="write the build context (Containerfile, "
                                                   "Apptainer definition, bench/ sources) and runtime files here")] = None,
    apptainer: Annotated[bool, typer.Option("--apptainer", help="print the Apptainer definition")] = False,
    edf: Annotated[bool, typer.Option("--edf", help="print the CSCS Container Engine EDF")] = False,
    env: Annotated[bool, typer.Option("--env", help="print the runtime environment preset (sh)")] = False,
    binds: Annotated[Optional[str], typer.Option("--binds", metavar="APPROACH",
                                                 help="print the Apptainer bind list for hybrid or bind")] = None,
    gpu: Annotated[bool, typer.Option("--gpu/--no-gpu", help="GPU buffers in the runtime presets")] = False,
    image: Annotated[Optional[str], typer.Option("--image", help="image reference for the EDF (e.g. the pushed "
                                                 "quay.io/... name; default: the local tag)")] = None,
    allow_unpinned: Annotated[bool, typer.Option("--allow-unpinned", help="render unpinned components as steps "
                                                 "that fail the build (for review)")] = False,
    srun: Annotated[Optional[str], typer.Option("--srun", metavar="RUNTIME",
                                                help="print the srun line that starts one container per rank "
                                                     "with a centre's runtime: pyxis, cscs-ce or apptainer")] = None,
    ranks: Annotated[int, typer.Option("--ranks", min=1, help="ranks of the --srun line")] = 2,
    nodes: Annotated[int, typer.Option("--nodes", min=1, help="nodes of the --srun line")] = 2,
) -> None:
    """Render a stack: Containerfile on stdout (or --apptainer/--edf/--env/--binds/--srun), or everything to
    --out."""
    from .. import runtime
    from ..recipes import RecipeError, render, write_context

    s = _load(name)
    if srun:
        print(_srun_line(s, srun, ranks, nodes, image, gpu))
        return
    if edf or env or binds:
        if edf:
            print(runtime.edf(s, gpu=gpu, image=image), end="")
        if env:
            print(runtime.env_script(s, gpu=gpu), end="")
        if binds:
            try:
                print("\n".join(runtime.apptainer_binds(s, binds)))
            except ValueError as error:
                err.print(f"[red]error:[/red] --binds: {error}")
                raise typer.Exit(2) from None
        return
    try:
        recipe = render(s, allow_unpinned=allow_unpinned)
    except RecipeError as error:
        err.print(f"[red]error:[/red] {escape(str(error))}", highlight=False, soft_wrap=True)
        err.print("(use --allow-unpinned to render for review; such a recipe fails when built)")
        raise typer.Exit(2) from None
    if output:
        write_context(recipe, output)
        files = runtime.write_runtime(s, output / "runtime", gpu=gpu or None)
        err.print(f"wrote {output}/Containerfile, {output}/mpistack.def, {output}/bench/ and "
                  f"{len(files)} runtime files under {output}/runtime/")
        return
    print(recipe.apptainer if apptainer else recipe.containerfile, end="")


def _srun_line(s, container_runtime: str, ranks: int, nodes: int, image: str | None, gpu: bool) -> str:
    """The benchmark under srun, one container per rank: pyxis takes the image reference, Apptainer the
    image built from `--apptainer` (NAME.sif), the CSCS Container Engine the EDF from `--edf` (~/.edf/NAME)."""
    import shlex

    from .. import runtime
    from ..launchers.slurm import Srun, step_env
    from ..launchers.srun_containers import RankContainer, srun_environment, wrap
    from ..spec.campaign import Placement

    default_image = f"{s.name}.sif" if container_runtime == "apptainer" else s.image_ref()
    container = RankContainer(image=image or default_image, env={**runtime.presets(s, gpu=gpu).env,
                                                                  **step_env(s.mpi.impl)}, edf=s.name)
    try:
        placement = Placement(ranks=ranks, nodes=nodes)
        argv = wrap(container_runtime, Srun().ranks(s.mpi.impl, placement), container,
                    ["mpistack-bench", "latency"])
    except (KeyError, ValueError) as error:
        message = error.args[0] if isinstance(error, KeyError) else str(error)  # str() of a KeyError is quoted
        err.print(f"[red]error:[/red] --srun: {escape(message)}", highlight=False)
        raise typer.Exit(2) from None
    settings = srun_environment(container_runtime, container)
    prefix = ["env", *(f"{key}={value}" for key, value in settings.items())] if settings else []
    return shlex.join([*prefix, *argv])


@stack_app.command("check")
def check_command(
    name: NameArg,
    host_libfabric: Annotated[Optional[str], typer.Option("--host-libfabric", metavar="VERSION",
                                                          help="the host libfabric a hybrid run swaps in")] = None,
    approach: Annotated[Optional[str], typer.Option("--approach", help="container, hybrid, bind or opensource")] = None,
) -> None:
    """Compatibility rules: errors stop a build, warnings inform. Exit 1 on any error."""
    from .. import compat

    s = _load(name)
    findings = compat.check(s, host_libfabric=host_libfabric, approach=approach)
    _print_findings(findings, verbose=True)
    n_err = len(compat.errors(findings))
    err.print(f"{s.name}: {n_err} error(s), {len(findings) - n_err} other finding(s)")
    raise typer.Exit(1 if n_err else 0)


def _progress_printer():
    step_re = re.compile(r"^(STEP \d+/\d+|\[\d+/\d+\] STEP \d+/\d+):")

    def on_line(line: str) -> None:
        if step_re.match(line) or line.startswith(("COMMIT", "Successfully", "Error", "error")):
            err.print(f"[dim]{line[:160]}[/dim]", highlight=False)
    return on_line


@stack_app.command("build")
def build_command(
    name: NameArg,
    engine: EngineOpt = "podman",
    log: Annotated[Optional[Path], typer.Option("--log", help="build log (default: ~/.cache/mpistack/logs/)")] = None,
    no_check: Annotated[bool, typer.Option("--no-check", help="skip the compatibility rules")] = False,
) -> None:
    """Build a stack's image (making a local base image first when the stack says how)."""
    from ..engines import EngineError
    from ..images.build import build_stack
    from ..recipes import RecipeError
    from ..spec.stack import StackError

    try:
        with err.status(f"building {name} ...", spinner="dots"):
            result = build_stack(name, engine, log=log, check=not no_check, on_line=_progress_printer())
    except (RecipeError, StackError, EngineError) as error:
        err.print(f"[red]error:[/red] {escape(str(error))}", highlight=False, soft_wrap=True)
        raise typer.Exit(2) from None
    if not result.ok:
        err.print("\n".join(result.tail[-20:]), highlight=False)
        err.print(f"[red]build failed[/red] ({result.returncode}) after {result.seconds:.0f} s; log: {result.log_path}")
        raise typer.Exit(1)
    out.print(f"built {result.tag} in {result.seconds:.1f} s\ndigest {result.digest}\nlog {result.log_path}",
              highlight=False)


@stack_app.command("run", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def run_command(
    ctx: typer.Context,
    name: NameArg,
    ranks: Annotated[int, typer.Option("--ranks", "-n", help="MPI ranks (0: run the command without a launcher)")] = 2,
    engine: EngineOpt = "podman",
) -> None:
    """Run a command in a stack's image with its own launcher, e.g. `stack run debian-mpich -n 2 -- mpistack-bench latency`."""
    from .. import runtime
    from ..engines import ContainerRun, EngineError, get_engine

    s = _load(name)
    argv = list(ctx.args) or ["mpistack-bench", "latency", "-m", "1:1024"]
    command = runtime.launch_command(s, ranks, argv) if ranks else argv
    env = runtime.presets(s, local_root=os.geteuid() == 0, network="tcp" if s.network in ("cxi", "lnx") else None).env
    try:
        result = get_engine(engine).run(ContainerRun(s.image_ref(), command, env=env), timeout=None)
    except EngineError as error:
        err.print(f"[red]error:[/red] {error}")
        raise typer.Exit(2) from None
    print(result.stdout, end="")
    if result.stderr:
        err.print(result.stderr, end="", highlight=False)
    raise typer.Exit(result.returncode)


def base_command(
    name: Annotated[str, typer.Argument(help="debian:<suite>, e.g. debian:bookworm")] = "debian:bookworm",
    force: Annotated[bool, typer.Option("--force", help="rebuild even if the image exists")] = False,
    mirror: Annotated[Optional[str], typer.Option("--mirror", help="Debian mirror (default: this host's apt mirror)")] = None,
    engine: EngineOpt = "podman",
) -> None:
    """Make a base image without a registry: debootstrap from this host's Debian mirror, then import."""
    from ..engines import EngineError, get_engine
    from ..images.baseimage import make_base_image

    try:
        with err.status(f"making base image {name} (debootstrap) ...", spinner="dots"):
            result = make_base_image(get_engine(engine), name, force=force, mirror=mirror)
    except EngineError as error:
        err.print(f"[red]error:[/red] {escape(str(error))}", highlight=False, soft_wrap=True)
        raise typer.Exit(2) from None
    out.print(result.message + (f" in {result.seconds:.0f} s" if result.created else ""), highlight=False)
