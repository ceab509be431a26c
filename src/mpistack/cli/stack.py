"""`mpistack stack list|show|render|check|build|run` and `mpistack base` (thin: they delegate)."""

from __future__ import annotations

import contextlib
import os
import re
import signal
from pathlib import Path
from typing import Annotated, Optional

import typer
from .common import FormatOption, OutputFormat, err, out
from .listing import ColumnsOption, Layout, WideOption, print_listing
from rich.markup import escape


stack_app = typer.Typer(help="Stack recipes: list, show, render, check, build and run MPI container images.",
                        no_args_is_help=True)

NameArg = Annotated[str, typer.Argument(metavar="NAME", help="a catalogue stack name or a stack .toml file")]
EngineOpt = Annotated[str, typer.Option("--engine", help="container engine: podman or docker")]

STACK_COLUMNS = ("name", "image tag", "built", "problem", "mpi", "transport", "gpu", "mode", "from")
# On a terminal: the stack, whether it is here, why it cannot be used, then what it holds; the image tag repeats the
# versions, so it is left out before them when the terminal is narrow.
STACKS_LAYOUT = Layout(noun="stack", priority=("name", "built", "from", "problem", "mpi", "transport", "gpu",
                                               "image tag", "mode"),
                       context=frozenset({"built", "from", "gpu", "mode"}), fold=frozenset({"problem"}))


def _load(name: str):
    from ..spec import catalogue
    from ..spec.stack import StackError

    try:
        return catalogue.load(name)
    except StackError as error:
        err.print(f"[red]error:[/red] {escape(str(error))}", highlight=False, soft_wrap=True)
        raise typer.Exit(2) from None


def _print_findings(findings: list, verbose: bool = False, console=err) -> None:
    from ..spec.terminal import hanging

    colour = {"error": "red", "warning": "yellow", "info": "cyan"}
    width = console.width
    for f in findings:
        line = hanging(f"{f.severity}: [{f.rule}] {f.message}", width)
        console.print(f"[{colour[f.severity]}]{f.severity}[/]" + escape(line[len(f.severity):]), highlight=False,
                      soft_wrap=True)
        if verbose:
            console.print(escape(hanging(f"    why: {f.reason}", width, " " * 9) + "\n"
                                 + hanging(f"    source: {f.source}", width, " " * 12)), highlight=False,
                          soft_wrap=True)


@stack_app.callback()
def stack_options(
    stacks: Annotated[Optional[Path], typer.Option(
        "--stacks", metavar="DIR", file_okay=False,
        help="Your own stack files (NAME.toml), listed and used beside the shipped ones \\[default: $MPISTACK_STACKS, "
             "else the stacks_dir key of ~/.config/mpistack/config.toml]")] = None,
) -> None:
    from ..spec import catalogue

    catalogue.use_stacks_dir(stacks)


@stack_app.command("list")
def list_command(
    engine: EngineOpt = "podman",
    output_format: FormatOption = OutputFormat.table,
    columns: ColumnsOption = None,
    wide: WideOption = False,
) -> None:
    """The catalogue: every named stack (yours marked "own") with its image tag and whether that image is built
    here."""
    from ..engines import EngineError, get_engine
    from ..spec import catalogue
    from ..spec.stack import StackError

    try:
        files = catalogue.stack_files()
    except StackError as error:
        err.print(f"[red]error:[/red] {escape(str(error))}", highlight=False, soft_wrap=True)
        raise typer.Exit(2) from None
    records = []  # the data, as JSON gives it; the table's rows are made from it (_stack_row)
    for path in files:
        record = {"name": path.stem, "file": str(path), "own": not catalogue.shipped(path), "problem": None}
        try:
            s = catalogue.load(str(path))
        except StackError as error:
            records.append({**record, "problem": "; ".join(str(error).splitlines())})  # one line: rows are lines
            continue
        records.append({**record, "name": s.name, "image": s.image_ref(), "image_tag": s.version_tag(),
                        "mpi": s.mpi.impl, "mpi_version": s.mpi.version, "device": s.mpi.device,
                        "libfabric": s.libfabric.version if s.libfabric else None,
                        "gpu": None if s.gpu.kind == "none" else {"kind": s.gpu.kind, "version": s.gpu.version},
                        "mode": s.mode, "channel": None if s.mode == "source" else s.mpi.channel})
    images = sorted(record["image"] for record in records if record.get("image"))
    try:
        container_engine = get_engine(engine)
        built = container_engine.existing_images(images)  # one inspect for all
    except (EngineError, KeyError, ValueError) as error:
        err.print(f"[yellow]note:[/yellow] cannot tell which images are built: {escape(str(error))}", highlight=False)
        container_engine, built = None, set()
    for record in records:
        record["built"] = None if container_engine is None else record.get("image") in built
    rows = [_stack_row(record) for record in records]
    print_listing(STACKS_LAYOUT, output_format, records, rows, STACK_COLUMNS, columns_option=columns, wide=wide,
                  title=f"{len(rows)} stacks, {len(built)} built here ({engine})")


def _stack_row(record: dict) -> dict:
    """A stack's line of the table, from its record."""
    row = {"name": record["name"], "from": "own" if record["own"] else "",
           "built": {None: "?", True: "yes", False: "no"}[record["built"]]}
    if record["problem"]:
        return {**row, "image tag": "invalid", "problem": record["problem"]}
    gpu = record["gpu"]
    return {**row, "image tag": record["image_tag"], "mpi": f"{record['mpi']} {record['mpi_version']}",
            "transport": record["device"] + (f" ofi {record['libfabric']}" if record["libfabric"] else ""),
            "gpu": f"{gpu['kind']} {gpu['version'] or ''}".strip() if gpu else "-",
            "mode": record["mode"] if record["channel"] is None else f"{record['mode']}/{record['channel']}"}


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
                                                 help="print the Apptainer bind list of an approach (hybrid, bind, "
                                                      "fabric-swap) on the --system")] = None,
    system: Annotated[Optional[str], typer.Option("--system", metavar="NAME",
                                                  help="the system profile host paths of --binds and --out come "
                                                       "from: local (this machine's Debian paths), lumi or alps "
                                                       "\\[default: local]")] = None,
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
    host_script: Annotated[bool, typer.Option("--host-script", help="print a bash script that builds the stack "
                                              "on a host without a container or a network: build.sh SOURCES "
                                              "PREFIX CUDA")] = False,
) -> None:
    """Render a stack: Containerfile on stdout (or --apptainer/--edf/--env/--binds/--srun/--host-script), or
    everything to --out."""
    from .. import runtime
    from ..approaches import apptainer as apptainer_settings  # not `apptainer`: the --apptainer flag
    from ..recipes import RecipeError, UnpinnedRecipe, render

    s = _load(name)
    if system is not None and not (binds or output):
        err.print("note: --system changes only --binds and --out", highlight=False)
    system = system or "local"
    try:
        apptainer_settings.load_system(system)
    except runtime.systems.SystemProfileError as error:
        err.print(f"[red]error:[/red] --system: {escape(str(error))}", highlight=False)
        raise typer.Exit(2) from None
    if srun:
        print(_srun_line(s, srun, ranks, nodes, image, gpu))
        return
    if host_script:
        from ..recipes.host_script import render_host_script
        try:
            print(render_host_script(s), end="")
        except RecipeError as error:
            err.print(f"[red]error:[/red] --host-script: {escape(str(error))}", highlight=False, soft_wrap=True)
            raise typer.Exit(2) from None
        return
    if edf or env or binds:
        if edf:
            print(runtime.edf(s, gpu=gpu, image=image), end="")
        if env:
            print(runtime.env_script(s, gpu=gpu), end="")
        if binds:
            try:
                paths = apptainer_settings.apptainer_binds(s, binds, system=system)
            except ValueError as error:
                err.print(f"[red]error:[/red] --binds {escape(repr(binds))}: {escape(str(error))}", highlight=False,
                          soft_wrap=True)
                raise typer.Exit(2) from None
            if paths:
                print("\n".join(paths))
            else:
                err.print(f"{binds} binds no host path on system {system}", highlight=False)
            # stdout stays a plain bind list for scripts; what the container also needs goes to the terminal
            needed = apptainer_settings.apptainer_env(s, binds, system=system)
            if needed:
                err.print(f"note: the container also needs {' '.join(f'{k}={v}' for k, v in needed.items())} "
                          f"(apptainer-{binds}.sh, written by --out, sets {'it' if len(needed) == 1 else 'them'})",
                          highlight=False, soft_wrap=True)
        return
    try:
        recipe = render(s, allow_unpinned=allow_unpinned)
    except RecipeError as error:
        err.print(f"[red]error:[/red] {escape(str(error))}", highlight=False, soft_wrap=True)
        if isinstance(error, UnpinnedRecipe):
            err.print("(use --allow-unpinned to render for review; such a recipe fails when built)")
        raise typer.Exit(2) from None
    if output:
        count = _write_render_output(recipe, output, gpu, system)
        err.print(f"wrote {output}/Containerfile, {output}/mpistack.def, {output}/bench/ and "
                  f"{count} runtime files under {output}/runtime/")
        return
    print(recipe.apptainer if apptainer else recipe.containerfile, end="")


def _write_render_output(recipe, output: Path, gpu: bool, system: str = "local") -> int:
    """The build context and runtime files, all at once (recipes.atomic): an error leaves nothing behind."""
    from ..approaches import apptainer
    from ..recipes import RecipeError, write_context
    from ..recipes.atomic import DirectoryInUse, atomic_directory

    try:
        with atomic_directory(output) as staging:
            write_context(recipe, staging)
            return len(apptainer.write_runtime(recipe.stack, staging / "runtime", gpu=gpu or None, system=system))
    except (RecipeError, DirectoryInUse) as error:
        err.print(f"[red]error:[/red] --out: {escape(str(error))}", highlight=False, soft_wrap=True)
    except OSError as error:
        err.print(f"[red]error:[/red] --out {escape(str(output))}: {escape(error.strerror or str(error))}"
                  + (f" ({escape(str(error.filename))})" if error.filename else ""), highlight=False, soft_wrap=True)
    raise typer.Exit(2)


def _srun_line(s, container_runtime: str, ranks: int, nodes: int, image: str | None, gpu: bool) -> str:
    """The benchmark under srun, one container per rank: pyxis takes the image reference, Apptainer the
    image built from `--apptainer` (NAME.sif), the CSCS Container Engine the EDF from `--edf` (~/.edf/NAME)."""
    import shlex

    from .. import runtime
    from ..engines import ContainerRun, EngineError, get_engine
    from ..launchers.slurm import Srun, step_env
    from ..spec.campaign import Placement

    try:
        engine = get_engine(container_runtime)
        container = ContainerRun(image=engine.rendered_image(s.name, s.image_ref(), image),
                                 argv=["mpistack-bench", "latency"], per_rank=True,
                                 env={**runtime.presets(s, gpu=gpu).env, **step_env(s.mpi.impl)})
        argv = engine.launch_argv(Srun().ranks(s.mpi.impl, Placement(ranks=ranks, nodes=nodes)), container)
    except (EngineError, ValueError) as error:
        err.print(f"[red]error:[/red] --srun: {escape(str(error))}", highlight=False)
        raise typer.Exit(2) from None
    settings = engine.launcher_env(container)
    prefix = ["env", *(f"{key}={value}" for key, value in settings.items())] if settings else []
    return shlex.join([*prefix, *argv])


@stack_app.command("check")
def check_command(
    name: NameArg,
    host_libfabric: Annotated[Optional[str], typer.Option("--host-libfabric", metavar="VERSION",
                                                          help="the host libfabric a fabric-swap run swaps in")] = None,
    approach: Annotated[Optional[str], typer.Option("--approach", help="native, container, hybrid, bind or fabric-swap")] = None,
) -> None:
    """Compatibility rules: errors stop a build, warnings inform. Exit 1 on any error."""
    from .. import compat

    s = _load(name)
    findings = compat.check(s, host_libfabric=host_libfabric, approach=approach)
    _print_findings(findings, verbose=True, console=out)  # the findings are the answer: stdout
    n_err = len(compat.errors(findings))
    out.print(f"{s.name}: {n_err} error(s), {len(findings) - n_err} other finding(s)", highlight=False)
    raise typer.Exit(1 if n_err else 0)


@stack_app.command("sources")
def sources_command(
    name: NameArg,
    verify: Annotated[bool, typer.Option("--verify", help="tie each Debian orig-tarball pin to the archive's signed "
                                                          "InRelease (downloads the suite's Sources index, ~10 MB)")]
    = False,
    suite: Annotated[Optional[str], typer.Option("--suite", help="the Debian suite --verify reads \\[default: the "
                                                                 "stack's base suite, else bookworm]")] = None,
) -> None:
    """Where each source of a stack comes from (upstream, the Debian archive or a mirror directory: the user's
    ~/.config/mpistack/mirrors.toml, then the stack's [sources]), with its pinned sha256 and where that was
    published."""
    from ..recipes import RecipeError, render
    from ..recipes.debian_archive import ArchiveCheckError, check_debian_pin, verified_sources

    s = _load(name)
    try:
        recipe = render(s)
    except RecipeError as error:
        err.print(f"[red]error:[/red] {escape(str(error))}", highlight=False, soft_wrap=True)
        raise typer.Exit(2) from None
    if not recipe.downloads:
        out.print(f"{s.name} downloads nothing ({s.mode} mode: {s.mpi.channel})", highlight=False)
        return
    for download in recipe.downloads:
        origin = {"upstream": "upstream", "debian": "Debian archive"}.get(download["origin"], "mirror directory")
        out.print(f"[bold]{escape(download['component'])} {escape(download['version'])}[/bold]  {origin}",
                  highlight=False)
        out.print(escape(f"  {download['file'] or download['url']}"), highlight=False, soft_wrap=True)
        if download["file"]:
            out.print(escape(f"  a copy of {download['url']}"), highlight=False, soft_wrap=True)
        out.print(f"  sha256 {download['sha256']}", highlight=False, soft_wrap=True)
        out.print(escape(f"  pinned from {download['source']}"), highlight=False)
    debian = [d for d in recipe.downloads if d["origin"] == "debian" or "Debian source package" in d["source"]]
    if not verify:
        return
    if not debian:
        err.print(f"--verify: {s.name} has no Debian orig tarball to check", highlight=False)
        return
    suite = suite or (s.base.make.partition(":")[2] if s.base.make and s.base.make.startswith("debian:") else "")
    suite = suite or "bookworm"
    archive = next(d["url"] for d in debian).split("/pool/", 1)[0]
    try:
        _, index = verified_sources(archive, suite)
        for download in debian:
            check = check_debian_pin(download["component"], download["version"], archive, suite, sources=index)
            out.print(f"[green]verified[/green] {escape(check.component)} {escape(check.version)} "
                      f"(Debian {escape(check.package)} {escape(check.debian_version)}, {suite}):", highlight=False)
            for step in check.steps:
                out.print(escape(f"  {step}"), highlight=False)
    except ArchiveCheckError as error:
        err.print(f"[red]not verified:[/red] {escape(str(error))}", highlight=False, soft_wrap=True)
        raise typer.Exit(1) from None


def _progress_printer():
    step_re = re.compile(r"^(STEP \d+/\d+|\[\d+/\d+\] STEP \d+/\d+):")

    def on_line(line: str) -> None:
        if step_re.match(line) or line.startswith(("COMMIT", "Successfully", "Error", "error")):
            err.print(f"[dim]{line[:160]}[/dim]", highlight=False)
    return on_line


class _Stopped(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised like Ctrl-C so that the engine ends what it started before the verb exits."""


@contextlib.contextmanager
def _signals_stop():
    """For the length of the block, SIGTERM and SIGHUP (a closed terminal) stop the verb as Ctrl-C does:
    by default they would end it at once and leave its build or container running."""
    def stop(number, _frame):
        raise _Stopped(signal.Signals(number).name)
    previous = {number: signal.signal(number, stop) for number in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


@stack_app.command("build")
def build_command(
    names: Annotated[list[str], typer.Argument(metavar="NAME...", help="catalogue stack names or stack .toml files, "
                                                                      "built in this order")],
    engine: EngineOpt = "podman",
    log: Annotated[Optional[Path], typer.Option("--log", help="build log (default: ~/.cache/mpistack/logs/; with "
                                                             "one NAME only)")] = None,
    no_check: Annotated[bool, typer.Option("--no-check", help="skip the compatibility rules")] = False,
) -> None:
    """Build stacks' images (making a local base image first when a stack says how); the first that fails stops
    the others, as make does."""
    if log is not None and len(names) > 1:
        err.print("[red]error:[/red] --log names one file: give one NAME with it", highlight=False)
        raise typer.Exit(2)
    for name in names:
        _build_one(name, engine, log, no_check)


def _build_one(name: str, engine: str, log: Path | None, no_check: bool) -> None:
    from ..engines import EngineError
    from ..images.build import build_stack
    from ..recipes import RecipeError
    from ..spec.stack import StackError

    try:
        with _signals_stop(), err.status(f"building {name} ...", spinner="dots"):
            result = build_stack(name, engine, log=log, check=not no_check, on_line=_progress_printer())
    except (RecipeError, StackError, EngineError) as error:
        err.print(f"[red]error:[/red] {escape(str(error))}", highlight=False, soft_wrap=True)
        raise typer.Exit(2) from None
    except KeyboardInterrupt as stopped:
        err.print(f"[yellow]build interrupted[/yellow] ({stopped or 'Ctrl-C'}): its steps and working containers "
                  "were removed", highlight=False)
        raise typer.Exit(130) from None
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
    timeout: Annotated[Optional[float], typer.Option("--timeout", min=0.1, metavar="SECONDS",
                                                     help="end the container after this long (exit 124)")] = None,
) -> None:
    """Run a command in a stack's image with its own launcher, e.g. `stack run debian-mpich -n 2 -- mpistack-bench latency`.
    On --timeout, Ctrl-C, SIGTERM or SIGHUP the container ends with the command."""
    from .. import runtime
    from ..engines import ContainerRun, EngineError, get_engine

    s = _load(name)
    argv = list(ctx.args) or ["mpistack-bench", "latency", "-m", "1:1024"]
    command = runtime.launch_command(s, ranks, argv) if ranks else argv
    # the container's processes are root in it, under rootless podman too: Open MPI is told it may
    env = runtime.presets(s, local_root=True, network="tcp" if s.network in ("cxi", "lnx") else None).env
    try:
        with _signals_stop():
            result = get_engine(engine).run(ContainerRun(s.image_ref(), command, env=env), timeout=timeout)
    except EngineError as error:
        err.print(f"[red]error:[/red] {error}")
        raise typer.Exit(2) from None
    except KeyboardInterrupt as stopped:
        err.print(f"[yellow]interrupted[/yellow] ({stopped or 'Ctrl-C'}): the container was removed", highlight=False)
        raise typer.Exit(130) from None
    print(result.stdout, end="")
    if result.stderr:
        err.print(result.stderr, end="", highlight=False)
    if result.timed_out:  # the engine said so on stderr
        raise typer.Exit(124)
    raise typer.Exit(result.returncode)


def base_command(
    name: Annotated[str, typer.Argument(help="debian:<suite>, e.g. debian:bookworm")] = "debian:bookworm",
    force: Annotated[bool, typer.Option("--force", help="rebuild even if the image exists")] = False,
    mirror: Annotated[Optional[str], typer.Option("--mirror", help="Debian mirror (default: this host's apt mirror)")] = None,
    engine: EngineOpt = "podman",
) -> None:
    """Make a base image without a registry: debootstrap (or, without root, mmdebstrap) from this host's Debian
    mirror, then import."""
    from ..engines import EngineError, get_engine
    from ..images.baseimage import make_base_image

    try:
        with err.status(f"making base image {name} ({'debootstrap' if os.geteuid() == 0 else 'mmdebstrap'}) ...",
                        spinner="dots"):
            result = make_base_image(get_engine(engine), name, force=force, mirror=mirror)
    except EngineError as error:
        err.print(f"[red]error:[/red] {escape(str(error))}", highlight=False, soft_wrap=True)
        raise typer.Exit(2) from None
    out.print(result.message + (f" in {result.seconds:.0f} s" if result.created else ""), highlight=False)
