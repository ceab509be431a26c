"""`mpistack show RUN`: everything stored about one run, its provenance included."""

from __future__ import annotations

import json
import sys
from typing import Annotated

import typer

from ..spec.terminal import printable
from .common import DbOption, fail, reader


VERSION_LINES = 3  # of the MPI library's version text, which can run to dozens of lines


def replay_note(command: str, environment: dict) -> str | None:
    """What a recorded podman command needs to replay as mpistack ran it: mpistack starts podman with its own
    containers.conf (engines/podman.py) named in CONTAINERS_CONF, which the command line does not show."""
    import shlex

    if "podman" not in command or "CONTAINERS_CONF" in environment:
        return None
    from ..engines.podman import containers_conf_path

    return (f"CONTAINERS_CONF={shlex.quote(str(containers_conf_path()))} before the command (mpistack's "
            "containers.conf, default_ulimits = []: without it podman may fail to raise its ulimits)")


def _indented(text: str) -> str:
    return "".join(f"\n    {line}" for line in text.rstrip().splitlines())


def describe(record: dict) -> str:
    """The run as plain text, one field a line, long values indented below their name."""
    lines = [f"run {record['run']}: {record['benchmark']}"
             + (f" ({record['title']})" if record.get("title") and record["title"] != record["benchmark"] else ""),
             f"  status: {record['status']}" + (" (incomplete)" if record.get("incomplete") else "")]

    def add(name: str, value) -> None:
        if value in (None, "", [], {}):
            return
        text = str(value)
        lines.append(f"  {name}:" + (_indented(text) if "\n" in text else f" {text}"))

    add("message", record.get("message"))
    if record.get("campaign") is not None:
        add("campaign", f"{record['campaign']} ({record.get('campaign_name') or '?'})")
    for name in ("stack", "approach", "launcher"):
        add(name, record.get(name))
    add("variant", record["tags"].get("variant"))
    if record.get("ranks") is not None:
        add("placement", f"n{record['ranks']}N{record['nodes']} ({record['ranks']} rank(s) on "
                         f"{record['nodes']} node(s))")
    add("buffers", record.get("buffers"))
    add("device", record.get("device"))
    add("suite", record.get("benchmark_suite"))
    add("command", record.get("command"))
    add("replay", replay_note(record.get("command") or "", record.get("environment") or {}))
    environment = record.get("environment") or {}
    add("environment", "\n".join(f"{key}={environment[key]}" for key in sorted(environment)) + "\n"
        if environment else None)
    version = (record.get("mpi_library_version") or "").strip().splitlines()
    if version:
        shown = version[:VERSION_LINES] + ([f"... ({len(version) - VERSION_LINES} more line(s))"]
                                           if len(version) > VERSION_LINES else [])
        add("MPI library", "\n".join(shown) + ("\n" if len(shown) > 1 else ""))
    add("libfabric", " ".join(part for part in (record.get("libfabric_version"),
                                                 f"provider {record['libfabric_provider']}"
                                                 if record.get("libfabric_provider") else None) if part))
    from ..parsers.transport import KEYS as TRANSPORT_KEYS

    transport = record.get("transport") or {}
    add("transport", "\n".join(f"{key}: {transport[key]}" for key in TRANSPORT_KEYS if transport.get(key)) + "\n"
        if transport else None)
    add("image digest", record.get("image_digest"))
    add("hosts", ", ".join(record.get("hosts") or []))
    add("tool version", record.get("tool_version"))
    add("source", record.get("source"))
    add("started", record.get("started_at"))
    add("finished", record.get("finished_at"))
    add("recorded", record.get("created_at"))
    tags = record["tags"]
    add("tags", "\n".join(f"{key}={tags[key]}" for key in sorted(tags)) + "\n" if tags else None)
    results = f"{record['results']}"
    if record["results"] and record.get("min_size") is not None:
        results += f" (sizes {record['min_size']} .. {record['max_size']})"
    add("results", results)
    return "\n".join(lines) + "\n"


def show(
    run_id: Annotated[int, typer.Argument(metavar="RUN", help="The run's id (see `mpistack runs`).")],
    output_format: Annotated[str, typer.Option("--format", "-f", metavar="text|json",
                                               help="Output format: text or json.")] = "text",
    db: DbOption = None,
) -> None:
    """Show everything stored about one run: status, whole message, command, environment, provenance, tags."""
    from ..store.query import run_record

    if output_format not in {"text", "json", "table"}:
        fail(f"--format {output_format!r}: expected text or json")
    store = reader(db)
    record = run_record(store, run_id)
    if record is None:
        fail(f"no run {run_id} in the store (see `mpistack runs`)")
    if output_format == "json":
        json.dump(record, sys.stdout, indent=1, default=str)
        sys.stdout.write("\n")
        return
    # stored text is the benchmark's and the user's: no terminal control in it reaches the terminal raw
    sys.stdout.write(printable(describe(record)))
    if record.get("campaign") is not None and record.get("min_size") is not None:
        from .bounds import show_section

        sizes = sorted({record["min_size"], record["max_size"]})
        sys.stdout.write(printable(show_section(store, record["campaign"], record["benchmark"], sizes)))
