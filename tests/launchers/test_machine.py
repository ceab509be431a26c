"""The machine's state around a launch (steal time, runnable processes) and the settle gate before it: read
from /proc/stat as proc(5) describes it, and from the real one; a real launch records them."""

from __future__ import annotations

from pathlib import Path

from mpistack.launchers import machine
from mpistack.launchers.base import LaunchPlan
from mpistack.launchers.local import LocalLauncher

STAT = """cpu  {user} 0 100 5000 10 0 5 {steal} 0 0
cpu0 1 0 0 0 0 0 0 0 0 0
intr 12345 0 0
ctxt 999
procs_running {running}
procs_blocked 0
"""


def stat(tmp_path: Path, user: int = 1000, steal: int = 20, running: int = 1) -> Path:
    path = tmp_path / "stat"
    path.write_text(STAT.format(user=user, steal=steal, running=running))
    return path


def test_a_sample_reads_cpu_time_steal_and_runnable(tmp_path):
    assert machine.sample(stat(tmp_path, running=7)) == machine.Sample(1000 + 100 + 5000 + 10 + 5 + 20, 20, 7)
    assert machine.sample(tmp_path / "absent") is None
    real = machine.sample()
    assert real is not None and real.runnable >= 1 and real.total_ticks > real.steal_ticks >= 0


def test_steal_over_a_launch_is_a_delta_and_a_share_of_the_elapsed_cpu_time(tmp_path):
    before = machine.sample(stat(tmp_path, user=1000, steal=20, running=1))
    after = machine.sample(stat(tmp_path, user=1150, steal=70, running=4))  # 200 ticks elapsed, 50 stolen
    assert machine.facts(before, after) == {"runnable_before": "1", "runnable_after": "4", "steal_ticks": "50",
                                            "steal_share": "0.2500"}
    assert machine.facts(None, after) == {"runnable_after": "4"}


class Clock:
    """Time that passes only when the gate sleeps."""

    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_the_settle_gate_passes_a_quiet_machine_at_once(tmp_path):
    clock = Clock()
    quiet = machine.wait_until_quiet(2, path=stat(tmp_path, running=3), clock=clock, sleep=clock.sleep)
    assert quiet == machine.Quiet(0.0, False)  # 2 ranks and the reader
    assert quiet.facts() == {"settle_ms": "0", "settle_gave_up": "no"}


def test_the_settle_gate_waits_for_the_previous_launch_and_gives_up_on_a_busy_machine(tmp_path):
    clock = Clock()
    left = iter([True, True, False])  # the previous launch's processes, for two more polls

    quiet = machine.wait_until_quiet(2, clear=lambda: not next(left), path=stat(tmp_path, running=1),
                                     clock=clock, sleep=clock.sleep)
    assert not quiet.gave_up and round(quiet.waited, 3) == 0.1
    clock = Clock()
    busy = machine.wait_until_quiet(2, path=stat(tmp_path, running=4), clock=clock, sleep=clock.sleep)
    assert busy.gave_up and 2.0 <= busy.waited < 2.1
    assert busy.facts()["settle_gave_up"] == "yes"


def test_a_launch_records_the_machine_around_it():
    launcher = LocalLauncher()
    plan = LaunchPlan(argv=["sh", "-c", "true"], env={}, output=None)
    ungated = launcher.execute(plan, timeout=10)
    assert {"runnable_before", "runnable_after", "steal_ticks", "steal_share"} <= set(ungated.facts)
    assert "settle_ms" not in ungated.facts  # no ranks given: no gate
    quiet = launcher.execute(plan, timeout=10, ranks=2)
    assert 0 <= int(quiet.facts["settle_ms"]) <= machine.SETTLE_LIMIT_SECONDS * 1000 + 500
    assert quiet.facts["settle_gave_up"] in ("yes", "no")
    assert 0 <= float(quiet.facts["steal_share"]) <= 1
