"""Confidence intervals and two-sample tests over per-seed values (the statistics under ``taco aggregate``).

Intervals (:func:`interval`): the t interval by default (:func:`t_interval`: Student t for a mean,
Welch t for a difference of means) or a bootstrap interval (:func:`bootstrap_ci`,
``scipy.stats.bootstrap``: BCa, percentile, basic); :func:`summarize` describes one sample.
Tests: one- and two-sided permutation p-values of a difference of means, optionally against a
shifted null (:func:`permutation_pvalue`; :func:`min_attainable_pvalue` is the smallest p it can
give), Holm's step-down adjustment (:func:`holm`), Hedges' g (:func:`hedges_g`), and
:func:`compare`, which runs all of them for two cells into a :class:`Comparison`. Every random
draw gets its own generator :func:`rng_for` ``(seed, label)``, so a result does not depend on the
order of calls. Every name here is also importable from ``taco.stats.aggregate``, which reads the
metrics and aggregates them.
"""

from __future__ import annotations

import math
import warnings
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats as sst


def rng_for(seed: int, label: str) -> np.random.Generator:
    """A generator seeded by ``(seed, crc32(label))``: deterministic and independent of call order."""
    return np.random.default_rng([int(seed), zlib.crc32(label.encode())])


def _mean_diff(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.mean(x, axis=axis) - np.mean(y, axis=axis)


def _mean(x: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.mean(x, axis=axis)


def bootstrap_ci(samples: Sequence[Sequence[float]], statistic, *, confidence_level: float,
                 n_resamples: int, method: str, rng: np.random.Generator) -> tuple[float, float, str]:
    """Bootstrap CI of ``statistic`` over one or two independent samples (``scipy.stats.bootstrap``).

    Returns ``(low, high, method_used)``. Any sample with fewer than 2 values gives ``(nan, nan,
    'none')``. When BCa cannot be computed (e.g. all values equal, where its acceleration is 0/0)
    the percentile method is used on the same generator state and ``method_used`` says so.
    """
    arrays = [np.asarray(s, dtype=float) for s in samples]
    if any(a.size < 2 for a in arrays):
        return math.nan, math.nan, "none"
    state = rng.bit_generator.state
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = sst.bootstrap(tuple(arrays), statistic, n_resamples=n_resamples, vectorized=True,
                            confidence_level=confidence_level, method=method, rng=rng)
    low, high = float(res.confidence_interval.low), float(res.confidence_interval.high)
    if method != "percentile" and not (math.isfinite(low) and math.isfinite(high)):
        rng.bit_generator.state = state
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = sst.bootstrap(tuple(arrays), statistic, n_resamples=n_resamples, vectorized=True,
                                confidence_level=confidence_level, method="percentile", rng=rng)
        low, high = float(res.confidence_interval.low), float(res.confidence_interval.high)
        return low, high, "percentile (BCa undefined)"
    return low, high, method


#: the t-based interval (:func:`t_interval`), the default ``ci_method``
T_METHOD = "t"
#: bootstrap methods :func:`bootstrap_ci` accepts (``scipy.stats.bootstrap``)
BOOTSTRAP_METHODS = ("BCa", "percentile", "basic")


def ci_method_name(method: str) -> str:
    """The interval method in words, for pages and table notes."""
    if method == T_METHOD:
        return "t interval (Student t for a mean, Welch t for a difference of means)"
    return f"{method} bootstrap interval (scipy.stats.bootstrap)"


def t_interval(samples: Sequence[Sequence[float]], *, confidence_level: float) -> tuple[float, float, str]:
    """t-based CI of the mean of one sample or of ``mean(a) - mean(b)`` of two independent samples.

    One sample: Student t, ``mean +- t_{(1+cl)/2, n-1} s / sqrt(n)``. Two samples: Welch's t,
    ``delta +- t_{(1+cl)/2, nu} sqrt(s_a^2/n_a + s_b^2/n_b)`` with the Welch-Satterthwaite degrees
    of freedom nu (the interval of ``scipy.stats.ttest_ind(equal_var=False)``; computed here with
    ``scipy.stats.t.ppf`` because the test object is ten times slower). Returns ``(low, high, 't')``; a sample with
    fewer than 2 values gives ``(nan, nan, 'none')``; zero variance gives the point itself
    (``'t (zero variance)'``: the claims page warns about it).
    """
    arrays = [np.asarray(s, dtype=float) for s in samples]
    if len(arrays) not in (1, 2):
        raise ValueError(f"t_interval takes one or two samples, got {len(arrays)}")
    if any(a.size < 2 for a in arrays):
        return math.nan, math.nan, "none"
    if all(np.ptp(a) == 0 for a in arrays):
        point = float(arrays[0][0] - (arrays[1][0] if len(arrays) == 2 else 0.0))
        return point, point, "t (zero variance)"
    v = [float(np.var(a, ddof=1)) / a.size for a in arrays]  # squared standard errors
    if len(arrays) == 1:
        centre, df = float(np.mean(arrays[0])), arrays[0].size - 1
    else:
        centre = float(np.mean(arrays[0]) - np.mean(arrays[1]))
        df = (v[0] + v[1]) ** 2 / (v[0] ** 2 / (arrays[0].size - 1) + v[1] ** 2 / (arrays[1].size - 1))
    half = float(sst.t.ppf(0.5 + confidence_level / 2.0, df)) * math.sqrt(sum(v))
    return centre - half, centre + half, T_METHOD


def interval(samples: Sequence[Sequence[float]], *, confidence_level: float, method: str = T_METHOD,
             n_resamples: int = 9999, rng: np.random.Generator | None = None) -> tuple[float, float, str]:
    """The CI of the mean (one sample) or of the difference of means (two samples) by ``method``:
    :data:`T_METHOD` (:func:`t_interval`) or a bootstrap method (:func:`bootstrap_ci`, which needs
    ``rng``). Returns ``(low, high, method_used)``."""
    if method == T_METHOD:
        return t_interval(samples, confidence_level=confidence_level)
    if method not in BOOTSTRAP_METHODS:
        raise ValueError(f"unknown ci_method {method!r}; expected {T_METHOD!r} or one of {BOOTSTRAP_METHODS}")
    statistic = _mean if len(samples) == 1 else _mean_diff
    return bootstrap_ci(samples, statistic, confidence_level=confidence_level, n_resamples=n_resamples,
                        method=method, rng=rng if rng is not None else np.random.default_rng(0))


def summarize(values: Sequence[float], *, confidence_level: float = 0.95, n_resamples: int = 9999,
              method: str = T_METHOD, seed: int = 0, label: str = "") -> dict[str, Any]:
    """Summary of one cell's per-seed values (any unit; returned in the same unit).

    Returns n, mean, std (sample, ddof=1; nan for n < 2), median, min, max and the CI of the mean
    by ``method`` (:func:`interval`: Student t by default; a bootstrap method uses the generator
    ``rng_for(seed, label)``); empty input gives nan.
    """
    v = np.asarray([x for x in values if x is not None and math.isfinite(x)], dtype=float)
    out: dict[str, Any] = {"n": int(v.size)}
    if v.size == 0:
        out.update(mean=math.nan, std=math.nan, median=math.nan, min=math.nan, max=math.nan,
                   ci_low=math.nan, ci_high=math.nan, ci_method="none")
        return out
    low, high, used = interval((v,), confidence_level=confidence_level, method=method,
                               n_resamples=n_resamples, rng=rng_for(seed, label))
    out.update(mean=float(np.mean(v)), std=float(np.std(v, ddof=1)) if v.size > 1 else math.nan,
               median=float(np.median(v)), min=float(np.min(v)), max=float(np.max(v)),
               ci_low=low, ci_high=high, ci_method=used)
    return out


def permutation_pvalue(a: Sequence[float], b: Sequence[float], *, shift: float = 0.0,
                       alternative: str = "two-sided", n_resamples: int = 9999,
                       rng: np.random.Generator) -> float:
    """p-value of a two-sample permutation test of ``mean(a) - mean(b)`` against ``shift``.

    Under the shift model, testing H0: delta = shift is a permutation test on ``(a - shift, b)``
    (``scipy.stats.permutation_test``, independent samples; exact when ``n_resamples`` covers all
    partitions). ``alternative``: 'greater' (H1: delta > shift), 'less', 'two-sided'.
    Returns nan if either sample has fewer than 2 values (scipy requires two or more).
    """
    a = np.asarray(a, dtype=float) - shift
    b = np.asarray(b, dtype=float)
    if a.size < 2 or b.size < 2:
        return math.nan
    res = sst.permutation_test((a, b), _mean_diff, permutation_type="independent", vectorized=True,
                               n_resamples=n_resamples, alternative=alternative, rng=rng)
    return float(res.pvalue)


def min_attainable_pvalue(n_a: int, n_b: int, n_resamples: int) -> float:
    """Smallest one-sided p-value a permutation test on samples of sizes n_a, n_b can give.

    Exact test: 1 / C(n_a + n_b, n_a). Randomised (more partitions than ``n_resamples``): scipy
    counts the observed statistic, so 1 / (n_resamples + 1).
    """
    n_part = math.comb(n_a + n_b, n_a)
    return 1.0 / n_part if n_part <= n_resamples else 1.0 / (n_resamples + 1)


def pooled_sd(a: Sequence[float], b: Sequence[float]) -> float:
    """The pooled SD of two samples, sqrt(((n_a - 1) var(a) + (n_b - 1) var(b)) / (n_a + n_b - 2)) (ddof=1);
    nan when either sample has < 2 values."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    na, nb = a.size, b.size
    if na < 2 or nb < 2:
        return math.nan
    return float(math.sqrt(((na - 1) * np.var(a, ddof=1) + (nb - 1) * np.var(b, ddof=1)) / (na + nb - 2)))


def hedges_g(a: Sequence[float], b: Sequence[float]) -> float:
    """Hedges' g: (mean(a) - mean(b)) / :func:`pooled_sd`, times the small-sample correction
    J = 1 - 3 / (4 (n_a + n_b) - 9). nan when either sample has < 2 values or the pooled SD is 0."""
    s = pooled_sd(a, b)
    if not s > 0:
        return math.nan
    a, b = np.asarray(a, float), np.asarray(b, float)
    j = 1.0 - 3.0 / (4.0 * (a.size + b.size) - 9.0)
    return float(j * (a.mean() - b.mean()) / s)


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm-Bonferroni adjusted p-values (step-down, monotone, capped at 1); nan entries stay nan
    and do not count in the family size. (scipy has no Holm; this is the textbook procedure,
    Holm 1979.)"""
    p = np.asarray(pvalues, dtype=float)
    out = np.full(p.shape, np.nan)
    idx = np.flatnonzero(~np.isnan(p))
    m = idx.size
    if m == 0:
        return out.tolist()
    order = idx[np.argsort(p[idx], kind="stable")]
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p[i]))
        out[i] = running
    return out.tolist()


@dataclass
class Comparison:
    """Result of comparing cell A with cell B (``delta = mean(A) - mean(B)``, unit of the inputs).

    ``p_two_sided`` tests delta = 0. ``p_greater[s]`` / ``p_less[s]`` test H1: delta > s / delta < s
    for each shift s asked for (margins), all by permutation.
    """

    n_a: int
    n_b: int
    mean_a: float
    mean_b: float
    delta: float
    ci_low: float
    ci_high: float
    ci_method: str
    p_two_sided: float
    p_greater: dict[float, float]
    p_less: dict[float, float]
    hedges_g: float
    min_p_one_sided: float

def compare(a: Sequence[float], b: Sequence[float], *, shifts: Iterable[float] = (0.0,),
            one_sided: Iterable[tuple[float, str]] | None = None,
            confidence_level: float = 0.95, n_resamples: int = 9999, method: str = T_METHOD,
            seed: int = 0, label: str = "") -> Comparison:
    """Compare two independent samples of per-seed values (e.g. GLUE averages of two cells).

    CI of the difference of means by ``method`` (:func:`interval`: Welch t by default), a
    two-sided permutation test of delta = 0, one-sided permutation tests (``scipy.stats.
    permutation_test``) and Hedges' g. One-sided tests: ``one_sided`` lists (shift, 'greater' |
    'less') pairs; when None, both directions at every ``shift`` (and at 0). Each test derives its
    generator from ``(seed, label, test)``, so results do not depend on which other tests ran.
    """
    a = np.asarray([x for x in a if math.isfinite(x)], float)
    b = np.asarray([x for x in b if math.isfinite(x)], float)
    low, high, used = interval((a, b), confidence_level=confidence_level, method=method,
                               n_resamples=n_resamples, rng=rng_for(seed, f"ci|{label}"))
    if one_sided is None:
        one_sided = [(float(s), alt) for s in sorted({float(s) for s in shifts} | {0.0})
                     for alt in ("greater", "less")]
    pg: dict[float, float] = {}
    pl: dict[float, float] = {}
    for s, alt in one_sided:
        s = float(s)
        tag = "pg" if alt == "greater" else "pl"
        if alt not in ("greater", "less"):
            raise ValueError(f"one_sided alternative must be 'greater' or 'less', got {alt!r}")
        (pg if alt == "greater" else pl)[s] = permutation_pvalue(
            a, b, shift=s, alternative=alt, n_resamples=n_resamples, rng=rng_for(seed, f"{tag}{s}|{label}"))
    p2 = permutation_pvalue(a, b, alternative="two-sided", n_resamples=n_resamples,
                            rng=rng_for(seed, f"p2|{label}"))
    return Comparison(
        n_a=int(a.size), n_b=int(b.size),
        mean_a=float(a.mean()) if a.size else math.nan, mean_b=float(b.mean()) if b.size else math.nan,
        delta=float(a.mean() - b.mean()) if a.size and b.size else math.nan,
        ci_low=low, ci_high=high, ci_method=used, p_two_sided=p2, p_greater=pg, p_less=pl,
        hedges_g=hedges_g(a, b),
        min_p_one_sided=min_attainable_pvalue(a.size, b.size, n_resamples) if a.size and b.size else math.nan,
    )
