"""`mpistack doctor --bounds`: this machine's bounds (memcpy, TCP loopback, the shared-memory floor), measured
now, or a stored campaign's; and the short section `mpistack show` prints for a run's campaign."""

from __future__ import annotations

import json
import shutil

import typer

from .common import database, db_name, err, fail, out


def _measured_now(families: list[str], sizes: str | None, skip=frozenset()):
    """Measure this host's bounds with a spinner on standard error; (machine record, measurements)."""
    from rich.markup import escape
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    from ..campaign.bounds import machine, measure_bounds

    with Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(), console=err,
                  transient=True) as progress:
        task = progress.add_task("machine bounds")
        measurements = measure_bounds(families, sizes, skip,
                                      say=lambda text: progress.update(task, description=escape(text)))
    return machine(), measurements


def _as_bounds(host: dict, measurements):
    from ..analysis.bounds import BoundFigure, BoundSource, bounds_from

    figures = [BoundFigure(m.kind, f["size"], f["value"], f["low"], f["high"], f["launches"], m.mpi)
               for m in measurements for f in m.figures]
    sources = [BoundSource(m.kind, m.mpi, host["host"], m.command, m.library_version, m.measured_at, m.launches,
                           m.status, m.message) for m in measurements]
    return bounds_from(host, figures, sources)


def doctor_bounds(campaign: str | None, mpi: str | None, as_json: bool, db: str | None) -> None:
    """Print this host's bounds, measured now (stored nothing); with `campaign`, that campaign's stored bounds,
    measured now and stored with it when it has none (a campaign run before bounds were measured)."""
    from ..analysis.bounds import load_bounds
    from ..launchers.local import HOST_LAUNCHERS

    families = [mpi] if mpi else [name for name, program in HOST_LAUNCHERS.items() if shutil.which(program)]
    where = "this host, measured now"
    if campaign is None:
        bounds = _as_bounds(*_measured_now(families, None))
    else:
        from ..campaign.bounds import campaign_sizes
        from ..store.bounds import write_bounds
        from ..store.campaigns import campaign_spec, latest_campaign

        store = database(db, must_exist=True)
        number = int(campaign) if campaign.isdigit() else latest_campaign(store, campaign)
        spec = campaign_spec(store, number) if number is not None else None
        if spec is None:
            fail(f"no campaign {campaign!r} in {db_name(db)}")
        bounds = load_bounds(store, number)
        where = f"campaign #{number}, stored"
        if bounds is None:
            host, measurements = _measured_now(families, campaign_sizes(spec.get("benchmark_options") or []))
            if spec.get("launcher", "local") == "local":
                write_bounds(store, number, host, [m.record() for m in measurements])
                bounds = load_bounds(store, number)
                where = f"campaign #{number}: none stored, measured now on this host and stored with it"
            else:  # its nodes were the batch system's, not this host
                bounds = _as_bounds(host, measurements)
                where = (f"campaign #{number} ran under {spec['launcher']}: none stored; this host's, measured now "
                         "(not stored: the campaign's nodes were others)")
    if as_json:
        print(json.dumps(bounds_json(bounds), indent=1, default=str))
    else:
        print_bounds(bounds, where)
    raise typer.Exit(0)


def bounds_json(bounds) -> dict:
    from dataclasses import asdict

    return {"host": bounds.host, "cpu_model": bounds.cpu_model, "kernel": bounds.kernel, "network": bounds.network,
            "figures": [asdict(f) for f in bounds.figures], "sources": [asdict(s) for s in bounds.sources]}


def print_bounds(bounds, where: str) -> None:
    from rich.table import Table
    from rich.text import Text

    from ..report.bounds import bounds_rows, floor_line, headers, source_lines

    out.print(Text.assemble(("mpistack doctor --bounds", "bold"), f": {where}: {bounds.describe()}"),
              highlight=False)
    table = Table(*headers(bounds), box=None, pad_edge=False)
    for column in table.columns[1:]:
        column.justify = "right"
    for row in bounds_rows(bounds):
        table.add_row(*row)
    out.print(table)
    out.print(floor_line(bounds), highlight=False)
    out.print(f"inter-node network: {bounds.network}", highlight=False)
    for line in source_lines(bounds):
        out.print(Text(f"  {line}", style="dim"), highlight=False, soft_wrap=True)


def show_section(store, campaign_id: int, benchmark: str, sizes: list[int]) -> str:
    """`mpistack show`'s lines on the bounds of a run's campaign at `sizes` (its smallest and largest): memcpy
    and TCP bandwidth for a bandwidth benchmark, the shm floor and TCP latency otherwise; empty when the campaign
    has none."""
    from ..analysis.bounds import load_bounds
    from ..analysis.classes import format_size
    from ..report.bounds import number

    bounds = load_bounds(store, campaign_id)
    if bounds is None:
        return ""
    lines = [f"  machine bounds: {bounds.describe()}"]
    if benchmark in ("bw", "bibw", "mbw_mr"):
        for size in sizes:
            lines.append(f"    {format_size(size):>8}: memcpy {number(bounds.memcpy_mbs(size, 'cache'))} MB/s in "
                         f"cache, {number(bounds.memcpy_mbs(size, 'memory'))} from memory; TCP "
                         f"{number(bounds.tcp_bandwidth_mbs(size))} MB/s"
                         + (f", between nodes {number(bounds.net_bandwidth_mbs(size))}"
                            if bounds.net_bandwidth_mbs(size) is not None else ""))
    else:
        lines.append(f"    shared-memory floor {number(bounds.shm_latency_us())} us")
        for size in sizes:
            lines.append(f"    {format_size(size):>8}: TCP latency {number(bounds.tcp_latency_us(size))} us"
                         + (f", between nodes {number(bounds.net_latency_us(size))}"
                            if bounds.net_latency_us(size) is not None else ""))
    if bounds.net_latency_us(1) is not None:
        lines.append(f"    network: {bounds.network}")
    return "\n".join(lines) + "\n"
