"""The demo Slurm cluster (scripts/slurm-cluster) started once for the tests of this directory."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "slurm-cluster"
OWNER_FILE = Path("/run/mpistack-slurm-cluster.dir")  # written by the script while a cluster runs


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "slurm: needs the two-node demo Slurm cluster (root, slurm-wlm, munge; scripts/slurm-cluster)"
    )


@dataclass
class SlurmCluster:
    dir: Path

    @property
    def conf(self) -> Path:
        return self.dir / "slurm.conf"

    def env(self, **extra: str) -> dict[str, str]:
        """The environment of a Slurm command: no variables of an enclosing job, SLURM_CONF set."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "SBATCH_", "SRUN_", "SALLOC_"))}
        env["SLURM_CONF"] = str(self.conf)
        env.update(extra)
        return env

    def script(self, command: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(SCRIPT), command], env=self.env(MPISTACK_SLURM_DIR=str(self.dir)),
            capture_output=True, text=True, timeout=timeout,
        )

    def run(self, *args: str, timeout: float = 60, check: bool = True, **extra: str) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(list(args), env=self.env(**extra), capture_output=True, text=True, timeout=timeout)
        if check and proc.returncode != 0:
            raise AssertionError(f"{' '.join(args)} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
        return proc

    def log_tail(self, name: str, lines: int = 30) -> str:
        path = self.dir / "log" / name
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:]) if path.exists() else ""


def _skip_reason() -> str | None:
    if os.geteuid() != 0:
        return "the demo Slurm cluster needs root (network namespaces, veth pairs)"
    for prog in ("slurmctld", "slurmd", "munged", "srun", "ip", "nsenter", "unshare"):
        if shutil.which(prog) is None:
            return f"{prog} not installed (make host installs slurm-wlm and munge)"
    if OWNER_FILE.exists() and Path("/run/netns/mpistack-node1").exists():
        return f"a demo Slurm cluster already runs (state in {OWNER_FILE.read_text().strip()}); stop it first"
    return None


@pytest.fixture(scope="session")
def slurm_cluster():
    reason = _skip_reason()
    if reason:
        pytest.skip(reason)
    # munged wants every directory above its socket to be searchable by all, so not under pytest's 0700 tmp
    state = Path(tempfile.mkdtemp(prefix="mpistack-slurm-test-", dir="/tmp"))
    state.chmod(0o755)
    cluster = SlurmCluster(state)
    started = cluster.script("start")
    try:
        if started.returncode != 0:
            pytest.fail(
                f"slurm-cluster start exited {started.returncode}\n{started.stdout}\n{started.stderr}\n"
                f"{cluster.log_tail('slurmctld.log')}\n{cluster.log_tail('slurmd-node1.log')}"
            )
        yield cluster
    finally:
        cluster.script("stop")
        shutil.rmtree(state, ignore_errors=True)
