"""The smallest difference a claim's verdict rule detects at the seeds it has (issue 51.4: "report the smallest
difference the capped seeds can detect"; issue 64.2: of the whole rule, not the test alone).

A claim of :mod:`taco.stats.claims` is decided by a one-sided two-sample permutation test of the difference in
means at level alpha (``scipy.stats.permutation_test``; exact at the run counts users have) *and* its 1 - 2
alpha decision interval (Welch t, the default ``ci_method``) lying past the claim's boundary. With n_A and n_B
units and a spread s, the rule decides with probability ``power`` only when the true difference lies at
least some distance from the boundary: :func:`detectable_gap` is that distance, for normal values with SD s,
found by simulating the rule itself (not a normal approximation, which at 3-5 seeds per arm promises far
more: at 3 seeds per arm the test's smallest p is 1 / C(6, 3) = 0.05, so it rejects only when every value of
A lies above every value of B, and the interval needs more still: 2.81 SD at 3 vs 3 against the test's 2.57).
With a bootstrap ``ci_method`` the printed gap is the t rule's (an approximation stated on the page).

Computed in units of s (the distance scales with s), with common random numbers across the bisection, and
cached per (n_A, n_B, alpha, power). ``tests/test_power.py`` checks, on fresh simulations, that the test
rejects at the printed distance with the stated power, and that at large counts it agrees with the normal
formula ``(z_{1-alpha} + z_power) s sqrt(1/n_A + 1/n_B)``. Torch-free.
"""

from __future__ import annotations

import itertools
import math
from functools import lru_cache

import numpy as np

#: simulated experiments per distance (Monte Carlo SE of a power near 0.8: sqrt(0.16 / 4000) = 0.006)
REPS = 4000
#: above this many splits a random sample of them stands in for the exact enumeration
MAX_EXACT_SPLITS = 5000


def _split_weights(n_a: int, n_b: int, rng: np.random.Generator) -> np.ndarray:
    """(splits, n_a + n_b) weights whose product with the pooled values is mean(A) - mean(B) for every way
    of labelling n_a of the values A (the identity first), all of them, or a random sample beyond
    :data:`MAX_EXACT_SPLITS`."""
    n = n_a + n_b
    if math.comb(n, n_a) <= MAX_EXACT_SPLITS:
        idx = [list(c) for c in itertools.combinations(range(n), n_a)]
    else:
        idx = [list(range(n_a))] + [list(rng.permutation(n)[:n_a]) for _ in range(MAX_EXACT_SPLITS - 1)]
    w = np.full((len(idx), n), -1.0 / n_b)
    for row, chosen in enumerate(idx):
        w[row, chosen] = 1.0 / n_a
    return w


def permutation_pvalues(x: np.ndarray, n_a: int, rng: np.random.Generator | None = None) -> np.ndarray:
    """One-sided p values of mean(A) - mean(B) > 0 for each row of ``x`` (shape (reps, n_a + n_b): A's values
    first): the share of the labellings of n_a values as A whose difference is at least the observed one, the
    observed labelling included (``scipy.stats.permutation_test(..., alternative="greater")``; exact up to
    :data:`MAX_EXACT_SPLITS` labellings, else a random sample of them drawn from ``rng``)."""
    x = np.atleast_2d(np.asarray(x, float))
    w = _split_weights(n_a, x.shape[1] - n_a, rng or np.random.default_rng(0))
    stats = x @ w.T  # (reps, splits); column 0 is the observed labelling
    return (stats >= stats[:, :1] - 1e-12 * np.maximum(1.0, np.abs(stats[:, :1]))).mean(axis=1)


def welch_lower_bounds(x: np.ndarray, n_a: int, alpha: float) -> np.ndarray:
    """The one-sided 1 - ``alpha`` lower bound of mean(A) - mean(B) for each row of ``x`` (shape (reps, n_a +
    n_b): A's values first): the low end of the 1 - 2 alpha Welch t interval of
    :func:`taco.stats.inference.t_interval`, vectorised (``scipy.stats.t``, Welch-Satterthwaite df)."""
    from scipy import stats as st

    a, b = x[:, :n_a], x[:, n_a:]
    va, vb = a.var(axis=1, ddof=1) / n_a, b.var(axis=1, ddof=1) / (x.shape[1] - n_a)
    with np.errstate(divide="ignore", invalid="ignore"):
        df = (va + vb) ** 2 / (va ** 2 / (n_a - 1) + vb ** 2 / (x.shape[1] - n_a - 1))
    return a.mean(axis=1) - b.mean(axis=1) - st.t.ppf(1 - alpha, df) * np.sqrt(va + vb)


def permutation_power(n_a: int, n_b: int, gap_in_sd: float, alpha: float, reps: int = REPS, seed: int = 0) -> float:
    """The probability that the verdict rule of a claim decides "A beyond the boundary" when A's values are
    N(gap_in_sd, 1) and B's N(0, 1): the one-sided permutation test of mean(A) - mean(B) > 0 at ``alpha``
    (:func:`permutation_pvalues`) rejects *and* the decision interval (1 - 2 alpha Welch t,
    :func:`welch_lower_bounds`) lies past the boundary (:mod:`taco.stats.claim_rules`: every kind needs both);
    over ``reps`` simulated experiments drawn from ``seed``."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((reps, n_a + n_b))
    x[:, :n_a] += gap_in_sd
    test = permutation_pvalues(x, n_a, rng) <= alpha + 1e-12
    return float((test & (welch_lower_bounds(x, n_a, alpha) > 0)).mean())


#: up to this many labellings (C(n_A + n_B, n_A): 5 vs 5 has 252) the rule is simulated exactly; beyond, the
#: permutation test is as fine-grained as the t test and the rule's power is the t test's (:func:`_t_gap`)
MAX_SIMULATED_SPLITS = 300


def _t_gap(n_a: int, n_b: int, alpha: float, power: float) -> float:
    """The distance (in SDs) at which the one-sided t test at ``alpha`` (df n_A + n_B - 2, the Welch df for equal
    SDs) has ``power``: the noncentral t (``scipy.stats.nct``) solved for its noncentrality."""
    from scipy import optimize
    from scipy import stats as st

    df = n_a + n_b - 2
    crit = st.t.ppf(1 - alpha, df)
    scale = math.sqrt(1 / n_a + 1 / n_b)
    return float(optimize.brentq(lambda g: st.nct.sf(crit, df, g / scale) - power, 1e-6, 100.0))


@lru_cache(maxsize=256)
def _gap_in_sd(n_a: int, n_b: int, alpha: float, power: float) -> float:
    """:func:`detectable_gap` for s = 1 (inf when the rule cannot reach ``power`` at any distance): simulated up
    to :data:`MAX_SIMULATED_SPLITS` labellings, the t test's beyond (``tests/test_power.py`` checks the two
    agree where they meet)."""
    if math.comb(n_a + n_b, n_a) > MAX_SIMULATED_SPLITS:
        return _t_gap(n_a, n_b, alpha, power)
    if permutation_power(n_a, n_b, 50.0, alpha, reps=200) < power:
        return math.inf  # even a huge difference does not give p <= alpha often enough: too few splits
    lo, hi = 0.0, 1.0
    while permutation_power(n_a, n_b, hi, alpha) < power:
        lo, hi = hi, hi * 2
    for _ in range(10):  # to 1/1024 of the bracket
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if permutation_power(n_a, n_b, mid, alpha) < power else (lo, mid)
    return hi


def detectable_gap(n_a: int, n_b: int, sd: float, alpha: float, power: float = 0.8) -> float:
    """The smallest true distance of mean(A) - mean(B) from a claim's boundary (in the values' unit) at which
    the verdict rule at ``alpha`` (:func:`permutation_power`: the one-sided permutation test and the decision
    interval past the boundary) decides with probability ``power``, for normal
    values with SD ``sd`` and ``n_a`` / ``n_b`` units (seeds, or pre-training runs).

    Returns inf when no distance gives that power at these counts (1 / C(n_a + n_b, n_a) > alpha), nan when
    an arm has fewer than 2 units or ``sd`` is not a positive finite number. Raises ValueError for an alpha or
    power outside (0, 1)."""
    if not (0 < alpha < 1 and 0 < power < 1):
        raise ValueError(f"alpha and power must lie in (0, 1), got {alpha} and {power}")
    if n_a < 2 or n_b < 2 or not (math.isfinite(sd) and sd > 0):
        return math.nan
    return _gap_in_sd(int(n_a), int(n_b), float(alpha), float(power)) * sd


def seeds_for_gap(gap_in_sd: float, alpha: float, power: float = 0.8, start: int = 2) -> float:
    """The fewest units per arm (equal arms, at least ``start``) with which the verdict rule at ``alpha`` detects
    a true difference of ``gap_in_sd`` SDs with probability ``power`` (:func:`detectable_gap`: simulated where
    the labellings are few, the t test beyond). nan for a gap that is 0 or not finite. An order of magnitude
    when the SD comes from 3 seeds (its own error is then a factor of about 2 either way)."""
    gap = abs(float(gap_in_sd))
    if not (math.isfinite(gap) and gap > 0):
        return math.nan
    n = max(2, int(start))
    while _gap_in_sd(n, n, float(alpha), float(power)) > gap:
        if math.comb(2 * n, n) > MAX_SIMULATED_SPLITS:  # the t test from here on: solve for n directly
            from scipy import stats as st

            while True:
                z = st.t.ppf(1 - alpha, 2 * n - 2) + st.t.ppf(power, 2 * n - 2)
                need = math.ceil(2 * z * z / (gap * gap))
                if need <= n and _t_gap(n, n, alpha, power) <= gap:
                    return float(n)
                n = max(need, n + 1)
        n += 1
    return float(n)
