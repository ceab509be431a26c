"""The confidence interval of the median in bench/src/stats.c, checked against the binomial
distribution it comes from (Le Boudec, "Performance Evaluation of Computer and Communication
Systems", Thm 2.1 and Table A.1): a tiny C driver is compiled against the real stats.c."""
from __future__ import annotations

import math
import shutil
import subprocess

import pytest

from conftest import load_benchlib  # noqa: E402  (tests/bench/conftest.py)

lib = load_benchlib()

DRIVER = r"""
#include <stdio.h>
#include <stdlib.h>
void median_ci_ranks(long n, long *lo, long *hi);
int ci_converged(const double *x, long n, double *scratch, double rel);
int main(int argc, char **argv)
{
    if (argc > 1) { /* ci_converged REL x1 x2 ... */
        long n = argc - 2;
        double *x = malloc(sizeof(double) * (size_t)n), *s = malloc(sizeof(double) * (size_t)n);
        for (long i = 0; i < n; i++)
            x[i] = atof(argv[i + 2]);
        printf("%d\n", ci_converged(x, n, s, atof(argv[1])));
        return 0;
    }
    for (long n = 1; n <= 2000; n++) {
        long lo, hi;
        median_ci_ranks(n, &lo, &hi);
        printf("%ld %ld %ld\n", n, lo + 1, hi + 1);
    }
    return 0;
}
"""


@pytest.fixture(scope="module")
def driver(tmp_path_factory):
    cc = lib.MPIS["mpich"]["cc"]
    if shutil.which(cc) is None:
        pytest.skip(f"{cc} not installed")
    d = tmp_path_factory.mktemp("median-ci")
    (d / "driver.c").write_text(DRIVER)
    exe = d / "driver"
    proc = subprocess.run([cc, "-std=c11", "-O2", "-I", str(lib.BENCH / "src"),
                           str(d / "driver.c"), str(lib.BENCH / "src" / "stats.c"), "-lm",
                           "-o", str(exe)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return exe


def ranks(driver) -> dict[int, tuple[int, int]]:
    out = subprocess.run([str(driver)], capture_output=True, text=True, check=True).stdout
    return {int(n): (int(j), int(k)) for n, j, k in (line.split() for line in out.splitlines())}


def below(n: int, j: int) -> float:
    """P(B <= j - 1), B ~ Binomial(n, 1/2): the chance that x(j) lies above the median"""
    return sum(math.comb(n, i) for i in range(j)) / 2 ** n


def test_small_samples_use_the_exact_binomial_ranks(driver):
    got = ranks(driver)
    # Le Boudec, Table A.1 (95%)
    assert got[6] == (1, 6) and got[9] == (2, 8) and got[10] == (2, 9)
    assert got[20] == (6, 15) and got[30] == (10, 21) and got[70] == (27, 44)
    for n in range(6, 71):
        j, k = got[n]
        assert k == n + 1 - j, n  # symmetric
        assert 1 - 2 * below(n, j) >= 0.95, n  # covers at least 95% ...
        assert 1 - 2 * below(n, j + 1) < 0.95, n  # ... and is the narrowest that does


def test_large_samples_use_the_normal_approximation_and_stay_valid(driver):
    got = ranks(driver)
    for n in (71, 100, 500, 1000, 2000):
        s = 0.98 * math.sqrt(n)
        assert got[n] == (math.floor(n / 2 - s), math.ceil(n / 2 + 1 + s)), n
        j, _ = got[n]
        assert 1 - 2 * below(n, j) >= 0.95, n


def test_fewer_than_six_samples_give_min_and_max(driver):
    got = ranks(driver)
    assert [got[n] for n in range(1, 6)] == [(1, 1), (1, 2), (1, 3), (1, 4), (1, 5)]


@pytest.mark.parametrize("samples, rel, stops", [
    ([100, 101, 99, 100, 102, 98], 0.03, 1),      # six samples within 3%: [min, max] suffices
    ([100, 101, 99, 100, 102, 90], 0.03, 0),      # one low outlier among six: the CI is [min, max]
    ([100, 101, 99, 100, 102, 98, 100, 101, 99, 150], 0.03, 1),  # ten: [x(2), x(9)] drops it
    ([100, 101, 99, 100, 102], 0.5, 0),           # five samples never stop
])
def test_stop_rule(driver, samples, rel, stops):
    out = subprocess.run([str(driver), str(rel)] + [str(x) for x in samples],
                         capture_output=True, text=True, check=True).stdout
    assert int(out) == stops
