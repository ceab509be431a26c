"""From stored runs to answers: which launches are compared with which baseline, and what each row is called."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from mpistack.analysis.answers import SAME_STACK, SYSTEM, Settings, answer
from mpistack.analysis.evidence import rows_from

SIZES = [1, 8, 64, 512, 4096, 32768, 262144, 1048576]
HOST_LIBRARY = "MPICH Version:  4.0.2\nMPICH Release date: ..."
PIP_LIBRARY = "MPICH Version:  4.3.2\nMPICH Release date: ..."


class Store:
    """Runs and results in the shape ``store.query.launch_evidence`` returns."""

    def __init__(self):
        self.runs: dict[int, dict] = {}
        self.results: list[tuple] = []
        self.ids = itertools.count(1)
        self.rng = np.random.default_rng(7)

    def launches(self, stack, approach, *, n=8, benchmark="latency", metric="latency", origin, variant="default",
                 scale=lambda size: 1.0, status="ok", message=None, library=HOST_LIBRARY, campaign=1, **tags):
        for _ in range(n):
            run = next(self.ids)
            self.runs[run] = {
                "run": run, "campaign": campaign, "benchmark": benchmark, "status": status, "stack": stack,
                "approach": approach, "ranks": 2, "nodes": 1, "buffers": "H-H", "message": message,
                "mpi_library_version": library, "libfabric_version": None, "libfabric_provider": None,
                "source": "test",
                "tags": {"mpi": "mpich", "origin": origin, "variant": variant, **tags},
            }
            if status != "ok":
                continue
            for size in SIZES:
                base = 0.5 + size / 5000 if metric == "latency" else 100.0 + size / 100
                figure = base * scale(size) * self.rng.lognormal(0.0, 0.03)
                self.results.append((run, size, metric, figure))

    def answers(self, settings=Settings()):
        return {(a.key.stack, a.key.approach, a.key.variant, a.baseline): a
                for a in answer(rows_from(self.runs, self.results), settings)}


def slower_below(limit, factor):
    return lambda size: factor if size < limit else 1.0


def test_container_rows_are_compared_with_the_system_mpi_and_slow_sizes_are_named():
    store = Store()
    store.launches("host-mpich", "native", origin="host")
    store.launches("debian-mpich", "container", origin="image", scale=slower_below(4096, 2.0))
    store.launches("debian-mpich", "hybrid", origin="image")
    answers = store.answers()
    assert set(answers) == {("debian-mpich", "container", "default", SYSTEM),
                            ("debian-mpich", "hybrid", "default", SYSTEM)}
    slow = answers[("debian-mpich", "container", "default", SYSTEM)]
    assert slow.label == "(Y)", slow.row_class.reason
    (where,) = slow.row_class.slow
    assert where.regime == "small" and where.sizes == [1, 8, 64, 512]
    assert where.worst_ratio == pytest.approx(0.5, rel=0.1)
    assert answers[("debian-mpich", "hybrid", "default", SYSTEM)].label == "Y"
    # the same library version string as the host's: the same build, no separate same-stack row
    assert slow.same_build_as_system and slow.baseline_row.stack == "host-mpich"


def test_an_mpich_of_the_same_release_built_for_another_device_is_not_the_same_build():
    """MPICH's first line names its release only: MPICH 4.0.2 compiled for ch4:ofi in an image is not Debian's
    4.0.2 for ch4:ucx on the host (their device and configure lines differ), while the host's library bound into
    the image is."""
    host = "MPICH Version:\t4.0.2\nMPICH Device:\tch4:ucx\nMPICH configure:\t--prefix=/usr --with-device=ch4:ucx"
    source = "MPICH Version:\t4.0.2\nMPICH Device:\tch4:ofi\nMPICH configure:\t--prefix=/usr --with-device=ch4:ofi"
    store = Store()
    store.launches("host-mpich", "native", origin="host", library=host)
    store.launches("source-mpich-ofi", "container", origin="image", library=source, scale=slower_below(4096, 1.5))
    store.launches("source-mpich-ofi", "bind", origin="image", library=host)
    answers = store.answers()
    built = answers[("source-mpich-ofi", "container", "default", SYSTEM)]
    assert not built.same_build_as_system
    assert ("source-mpich-ofi", "container", "default", SAME_STACK) not in answers  # no build of its own natively
    assert answers[("source-mpich-ofi", "bind", "default", SYSTEM)].same_build_as_system


def test_a_pip_stack_gets_both_baselines_and_the_loss_splits_into_stack_and_deployment_effects():
    store = Store()
    store.launches("host-mpich", "native", origin="host")
    store.launches("pip-mpich", "native", origin="venv", library=PIP_LIBRARY, scale=lambda size: 0.5)
    store.launches("pip-mpich", "container", origin="image", library=PIP_LIBRARY, scale=lambda size: 0.5)
    answers = store.answers()
    stack_effect = answers[("pip-mpich", "native", "default", SYSTEM)]
    total = answers[("pip-mpich", "container", "default", SYSTEM)]
    deployment = answers[("pip-mpich", "container", "default", SAME_STACK)]
    assert stack_effect.label == "Y" and total.label == "Y"  # half the latency: faster, not slower
    assert stack_effect.row_class.faster and total.row_class.faster
    assert deployment.label == "Y" and not deployment.row_class.faster  # the container adds nothing
    assert deployment.baseline_row.stack == "pip-mpich" and deployment.baseline_row.approach == "native"
    assert not total.same_build_as_system


def test_a_variant_is_compared_with_the_native_runs_of_its_baseline_variant():
    store = Store()
    store.launches("host-mpich", "native", origin="host")
    store.launches("host-mpich", "native", origin="host", variant="tcp", scale=lambda size: 10.0)
    store.launches("debian-mpich", "container", origin="image", variant="tcp", variant_baseline="default",
                   scale=slower_below(8192, 10.0))
    store.launches("debian-mpich", "container", origin="image", variant="tcp-vs-tcp", variant_baseline="tcp",
                   scale=lambda size: 10.0)
    answers = store.answers()
    assert answers[("debian-mpich", "container", "tcp", SYSTEM)].label == "(Y)"
    assert answers[("debian-mpich", "container", "tcp-vs-tcp", SYSTEM)].label == "Y"
    # native in a variant is a candidate too (against native in its baseline variant)
    assert answers[("host-mpich", "native", "tcp", SYSTEM)].label == "(Y)"


def test_failures_skips_and_missing_baselines_are_answers_too():
    store = Store()
    store.launches("host-mpich", "native", origin="host")
    store.launches("debian-mpich", "container", n=3, origin="image", status="failed",
                   message="exit status 255\nexecvp error on file mpistack-bench")
    store.launches("debian-mpich", "bind", n=8, origin="image", status="skipped",
                   message="no host MPI library to bind")
    store.launches("lonely", "container", origin="image", mpi="openmpi")
    answers = store.answers()
    failed = answers[("debian-mpich", "container", "default", SYSTEM)]
    assert failed.label == "N" and "exit status 255" in failed.row_class.reason and "3 launches" in failed.row_class.reason
    skipped = answers[("debian-mpich", "bind", "default", SYSTEM)]
    assert skipped.label == "?" and "no host MPI library to bind" in skipped.row_class.reason
    lonely = answers[("lonely", "container", "default", SYSTEM)]
    assert lonely.label == "?" and "no system MPI baseline" in lonely.row_class.reason


def test_too_few_launches_is_inconclusive_and_says_how_many_would_settle_it():
    store = Store()
    store.launches("host-mpich", "native", origin="host", n=2)
    store.launches("debian-mpich", "container", origin="image", n=2, scale=lambda size: 1.3)
    (only,) = store.answers().values()
    assert only.label == "?" and "too few launches" in only.row_class.reason
    assert only.row_class.launches_needed and only.row_class.launches_needed >= 6


def test_the_practical_floor_is_a_setting():
    store = Store()
    store.launches("host-mpich", "native", origin="host")
    store.launches("debian-mpich", "container", origin="image", scale=lambda size: 1.15)  # 15% slower everywhere
    assert store.answers(Settings.of({"floor": 0.10}))[("debian-mpich", "container", "default", SYSTEM)].label == "(Y)"
    assert store.answers(Settings.of({"floor": 0.25}))[("debian-mpich", "container", "default", SYSTEM)].label == "Y"


def test_json_form_has_the_documented_fields():
    store = Store()
    store.launches("host-mpich", "native", origin="host")
    store.launches("debian-mpich", "container", origin="image", scale=slower_below(64, 2.0))
    (only,) = store.answers().values()
    data = only.to_dict()
    for field in ("stack", "approach", "variant", "benchmark", "ranks", "nodes", "buffers", "baseline", "class",
                  "slow", "sizes"):
        assert field in data
    assert data["class"] == "(Y)" and data["slow"][0]["sizes"] == [1, 8]
    assert [entry["size"] for entry in data["sizes"]] == SIZES
    assert {"ratio", "ci_low", "ci_high", "p_value", "verdict"} <= set(data["sizes"][0])


def test_a_bound_host_library_is_the_system_build_not_the_images():
    store = Store()
    store.launches("host-mpich", "native", origin="host")
    store.launches("pip-mpich", "native", origin="venv", library=PIP_LIBRARY)
    store.launches("pip-mpich", "container", origin="image", library=PIP_LIBRARY)
    store.launches("pip-mpich", "bind", origin="image", library=HOST_LIBRARY)  # the host's MPI mounted in
    answers = store.answers()
    assert ("pip-mpich", "bind", "default", SAME_STACK) not in answers
    assert answers[("pip-mpich", "bind", "default", SYSTEM)].same_build_as_system
    assert ("pip-mpich", "container", "default", SAME_STACK) in answers


def test_cases_that_did_not_run_get_one_answer_not_one_per_baseline():
    store = Store()
    store.launches("host-mpich", "native", origin="host")
    store.launches("pip-mpich", "native", origin="venv", library=PIP_LIBRARY)
    store.launches("pip-mpich", "hybrid", origin="image", status="skipped", message="refused: no PMI")
    answers = store.answers()
    assert ("pip-mpich", "hybrid", "default", SYSTEM) in answers
    assert ("pip-mpich", "hybrid", "default", SAME_STACK) not in answers
