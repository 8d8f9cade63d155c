"""The decision rules of the claims: verdicts, the tests each claim kind needs, and how they decide.

Pure functions of a claim kind (``KINDS``), the analysis spec (:class:`AnalysisConfig`: alpha,
margins, ``match_rule``) and the numbers of one comparison: :func:`rule_text` (the rule in words),
:func:`tests_for` (the one-sided permutation tests a kind needs), :func:`pvalue_set` (their
p-values by name), :func:`decide` (interval and p-values -> verdict and reason),
:func:`equivalence_detail` (TOST as a detail), :func:`decision_level` (1 - 2 alpha), and the seed
counts :func:`fewest_seeds` / :func:`seeds_for_power`. The rules themselves are described in
``taco.stats.claims``, which evaluates the claims with them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
from scipy import stats as sst

from taco.stats.analysis_config import AnalysisConfig
from taco.stats.inference import min_attainable_pvalue

SUPPORTED, NOT_SUPPORTED, INCONCLUSIVE, NOT_RUN = "supported", "not supported", "inconclusive", "not run"
VERDICTS = (SUPPORTED, NOT_SUPPORTED, INCONCLUSIVE, NOT_RUN)
KINDS = ("match", "competitive", "improvement", "below", "not_better", "helps")
#: power used by the ``seeds_for_power`` estimate
TARGET_POWER = 0.8


def decision_level(cfg: AnalysisConfig) -> float:
    """Level of the decision interval: 1 - 2 alpha (the two-sided interval whose ends are the
    one-sided 1 - alpha bounds that one-sided tests and TOST at alpha correspond to)."""
    return round(1.0 - 2.0 * cfg.alpha, 12)


def _decides_by_non_inferiority(kind: str, cfg: AnalysisConfig) -> bool:
    return kind == "competitive" or (kind == "match" and cfg.match_rule == "non_inferiority")


def rule_text(kind: str, cfg: AnalysisConfig) -> str:
    """The decision rule of a claim kind with this spec's margins, in words."""
    d, a = cfg.equivalence_margin, cfg.alpha
    dl = f"{decision_level(cfg) * 100:g}%"
    t, m = cfg.improvement_target, cfg.improvement_margin
    if _decides_by_non_inferiority(kind, cfg):
        every = "on every score key (intersection-union test, no multiplicity correction): " \
            if kind == "competitive" else ""
        against = (f"not supported if on some key the {dl} CI high < -{d} and the Holm-adjusted (over the keys) "
                   f"p(delta < -{d}) <= {a}" if kind == "competitive"
                   else f"not supported if the {dl} CI high < -{d} and p(delta < -{d}) <= {a}")
        return (f"non-inferiority, margin {d} points, {every}supported if the {dl} CI low > -{d} and "
                f"p(delta > -{d}) <= {a}; {against}"
                + ("; equivalence within +-{d} (TOST) reported as a detail".format(d=d) if kind == "match" else ""))
    if kind == "match":
        return (f"equivalence (TOST), margin +-{d} points: supported if the {dl} CI lies inside (-{d}, {d}) and "
                f"both one-sided permutation tests give p <= {a}; not supported if the {dl} CI lies beyond a "
                f"margin and the one-sided test beyond it gives p <= {a}")
    if kind == "improvement":
        return (f"improvement of about {t} (at least {t - m:g} = {t} - {m}): supported if the {dl} CI low > "
                f"{t - m:g} and p(delta > {t - m:g}) <= {a} (a larger improvement supports it); not supported "
                f"if the {dl} CI high < {t - m:g} and p(delta < {t - m:g}) <= {a}")
    if kind == "below":
        return (f"A below B: supported if the {dl} CI high < 0 and p(delta < 0) <= {a}; not supported if the "
                f"{dl} CI low > 0 and p(delta > 0) <= {a}, or equivalence within +-{d} is shown (TOST)")
    if kind == "helps":
        return (f"one-sided improvement, margin 0: supported if the {dl} CI low > 0 and p(delta > 0) <= {a}; "
                f"not supported if the {dl} CI high < 0 and p(delta < 0) <= {a}")
    if kind == "not_better":
        return (f"non-superiority, margin {d} points: supported if the {dl} CI high < {d} and "
                f"p(delta < {d}) <= {a}; not supported if the {dl} CI low > {d} and p(delta > {d}) <= {a}")
    raise ValueError(f"unknown claim kind {kind!r}")


def pvalue_set(cmp, cfg: AnalysisConfig) -> dict[str, float]:
    """Named one-sided p-values of a :class:`taco.stats.aggregate.Comparison` used by the rules
    (nan where the test was not run)."""
    d, t, m = cfg.equivalence_margin, cfg.improvement_target, cfg.improvement_margin
    pg, pl = cmp.p_greater, cmp.p_less
    nan = math.nan
    return {
        "gt_neg_margin": pg.get(-d, nan), "lt_margin": pl.get(d, nan), "gt_margin": pg.get(d, nan),
        "lt_neg_margin": pl.get(-d, nan), "tost": _max(pg.get(-d, nan), pl.get(d, nan)),
        "gt0": pg.get(0.0, nan), "lt0": pl.get(0.0, nan),
        "gt_target_low": pg.get(t - m, nan), "lt_target_low": pl.get(t - m, nan),
    }


def _max(*xs: float) -> float:
    """Largest value; nan if any is nan (a TOST p needs both tests)."""
    return math.nan if any(not math.isfinite(x) for x in xs) else max(xs)


def tests_for(kind: str, cfg: AnalysisConfig) -> list[tuple[float, str]]:
    """The one-sided permutation tests (shift, alternative) the rule of ``kind`` and its details need."""
    d, t, m = cfg.equivalence_margin, cfg.improvement_target, cfg.improvement_margin
    if kind not in KINDS:
        raise ValueError(f"unknown claim kind {kind!r}")
    return {
        "match": [(-d, "greater"), (-d, "less"), (d, "less"), (d, "greater")],
        "competitive": [(-d, "greater"), (-d, "less")],
        "improvement": [(t - m, "greater"), (t - m, "less"), (0.0, "greater")],
        "below": [(0.0, "less"), (0.0, "greater"), (-d, "greater"), (d, "less")],
        "not_better": [(d, "less"), (d, "greater"), (0.0, "greater")],
        "helps": [(0.0, "greater"), (0.0, "less")],
    }[kind]


def _sig(p: float, a: float) -> bool:
    return math.isfinite(p) and p <= a


def equivalence_detail(lo: float, hi: float, p: Mapping[str, float], cfg: AnalysisConfig) -> str:
    """TOST at alpha with the 1 - 2 alpha interval, in words (a detail of the match claims)."""
    d, a = cfg.equivalence_margin, cfg.alpha
    if -d < lo and hi < d and _sig(p["tost"], a):
        return f"equivalent within +-{d} (TOST p={p['tost']:.3g})"
    if lo > d and _sig(p["gt_margin"], a):
        return f"A better than B by more than {d} (p={p['gt_margin']:.3g}): not equivalent, A ahead"
    if hi < -d and _sig(p["lt_neg_margin"], a):
        return f"A worse than B by more than {d} (p={p['lt_neg_margin']:.3g})"
    return f"equivalence within +-{d} not shown (TOST p={p['tost']:.3g})"


def decide(kind: str, ci_low: float, ci_high: float, p: Mapping[str, float],
           cfg: AnalysisConfig) -> tuple[str, str, float, float]:
    """Apply the rule of ``kind`` -> (verdict, reason, p supporting, p against).

    ``ci_low``, ``ci_high``: the decision interval (level :func:`decision_level`, 1 - 2 alpha) of
    delta = mean(A) - mean(B) in GLUE points; ``p``: :func:`pvalue_set` (one-sided permutation
    p-values). A non-finite interval (fewer than 2 seeds in a cell) gives inconclusive.
    """
    a, d = cfg.alpha, cfg.equivalence_margin
    t, m = cfg.improvement_target, cfg.improvement_margin
    lo, hi = ci_low, ci_high
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return INCONCLUSIVE, "no confidence interval (fewer than 2 seeds in a cell)", math.nan, math.nan
    ci = f"{decision_level(cfg) * 100:g}% CI [{lo:.2f}, {hi:.2f}]"
    if _decides_by_non_inferiority(kind, cfg):
        ps, pa = p["gt_neg_margin"], p["lt_neg_margin"]
        if lo > -d and _sig(ps, a):
            return SUPPORTED, f"{ci} above -{d}: not worse by more than the margin, p={ps:.3g}", ps, pa
        if hi < -d and _sig(pa, a):
            return NOT_SUPPORTED, f"{ci} below -{d}: A worse than B by more than the margin, p={pa:.3g}", ps, pa
        return INCONCLUSIVE, f"{ci}, p={ps:.3g}: non-inferiority at margin {d} neither shown nor refuted", ps, pa
    if kind == "match":
        ps = p["tost"]
        if -d < lo and hi < d and _sig(ps, a):
            return SUPPORTED, f"{ci} inside +-{d}, TOST p={ps:.3g}", ps, math.nan
        if lo > d and _sig(p["gt_margin"], a):
            return NOT_SUPPORTED, f"{ci} above +{d}: A better than B by more than the margin, p={p['gt_margin']:.3g}", ps, p["gt_margin"]
        if hi < -d and _sig(p["lt_neg_margin"], a):
            return NOT_SUPPORTED, f"{ci} below -{d}: A worse than B by more than the margin, p={p['lt_neg_margin']:.3g}", ps, p["lt_neg_margin"]
        return INCONCLUSIVE, f"{ci}, TOST p={ps:.3g}: neither equivalence within +-{d} nor a difference beyond it shown", ps, math.nan
    if kind == "improvement":
        floor = t - m
        ps, pa = p["gt_target_low"], p["lt_target_low"]
        if lo > floor and _sig(ps, a):
            return SUPPORTED, f"{ci} above {floor:g}: an improvement of at least about {t}, p={ps:.3g}", ps, pa
        if hi < floor and _sig(pa, a):
            return NOT_SUPPORTED, f"{ci} below {floor:g}: improvement smaller than claimed, p={pa:.3g}", ps, pa
        return INCONCLUSIVE, f"{ci}, p(delta > {floor:g})={ps:.3g}: an improvement of about {t} neither shown nor refuted", ps, pa
    if kind == "below":
        ps = p["lt0"]
        if hi < 0 and _sig(ps, a):
            return SUPPORTED, f"{ci} < 0, p={ps:.3g}", ps, p["gt0"]
        if lo > 0 and _sig(p["gt0"], a):
            return NOT_SUPPORTED, f"{ci} > 0: A above B, p={p['gt0']:.3g}", ps, p["gt0"]
        if -d < lo and hi < d and _sig(p["tost"], a):
            return NOT_SUPPORTED, f"{ci} inside +-{d}: no meaningful difference, TOST p={p['tost']:.3g}", ps, p["tost"]
        return INCONCLUSIVE, f"{ci}, p(delta < 0)={ps:.3g}: not decided", ps, p["gt0"]
    if kind == "helps":
        ps, pa = p["gt0"], p["lt0"]
        if lo > 0 and _sig(ps, a):
            return SUPPORTED, f"{ci} > 0: A above B, p={ps:.3g}", ps, pa
        if hi < 0 and _sig(pa, a):
            return NOT_SUPPORTED, f"{ci} < 0: A below B, p={pa:.3g}", ps, pa
        return INCONCLUSIVE, f"{ci}, p(delta > 0)={ps:.3g}: an improvement neither shown nor refuted", ps, pa
    if kind == "not_better":
        ps, pa = p["lt_margin"], p["gt_margin"]
        if hi < d and _sig(ps, a):
            note = ""
            if lo > 0 and _sig(p["gt0"], a):
                note = f" (note: the small gain is itself significant, p(delta > 0)={p['gt0']:.3g}, but below the margin)"
            return SUPPORTED, f"{ci} below +{d}: any gain smaller than the margin, p={ps:.3g}{note}", ps, pa
        if lo > d and _sig(pa, a):
            return NOT_SUPPORTED, f"{ci} above +{d}: A better than B by more than the margin, p={pa:.3g}", ps, pa
        return INCONCLUSIVE, f"{ci}, p(delta < {d})={ps:.3g}: non-superiority at margin {d} neither shown nor refuted", ps, pa
    raise ValueError(f"unknown claim kind {kind!r}")


def deciding_boundary(kind: str, cfg: AnalysisConfig) -> float:
    """The shift of the one-sided test that decides ``kind`` (the margin the effect must clear)."""
    d, t, m = cfg.equivalence_margin, cfg.improvement_target, cfg.improvement_margin
    if _decides_by_non_inferiority(kind, cfg):
        return -d
    return {"match": d, "improvement": t - m, "below": 0.0, "not_better": d, "helps": 0.0}[kind]


def fewest_seeds(cfg: AnalysisConfig, limit: int = 50) -> int:
    """Smallest n (seeds per arm, equal arms) at which a one-sided two-sample permutation test can
    give p <= alpha at all: 1 / C(2n, n) <= alpha (exact test), 1 / (n_resamples + 1) once the
    partitions outnumber ``n_resamples`` (:func:`taco.stats.aggregate.min_attainable_pvalue`).
    Applies to every rule here (one-sided tests, TOST and intersection-union all test at alpha)."""
    for n in range(2, limit + 1):
        if min_attainable_pvalue(n, n, cfg.n_resamples) <= cfg.alpha + 1e-15:
            return n
    return limit


def seeds_for_power(a: Sequence[float], b: Sequence[float], boundary: float, cfg: AnalysisConfig,
                    power: float = TARGET_POWER) -> float:
    """Seeds per arm for ``power`` of a one-sided test of delta against ``boundary`` at alpha, at the
    observed delta and pooled SD (normal approximation: n = 2 (z_{1-alpha} + z_power)^2 s^2 /
    (delta - boundary)^2, rounded up, at least :func:`fewest_seeds`), in the direction the observed delta
    lies from the boundary (to support the claim, or to refute it when the data point the other way).
    nan when an arm has < 2 values, the SD is 0 or delta equals the boundary."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    if a.size < 2 or b.size < 2:
        return math.nan
    sp2 = ((a.size - 1) * a.var(ddof=1) + (b.size - 1) * b.var(ddof=1)) / (a.size + b.size - 2)
    gap = float(a.mean() - b.mean()) - boundary
    if sp2 <= 0 or gap == 0:
        return math.nan
    z = sst.norm.ppf(1 - cfg.alpha) + sst.norm.ppf(power)
    return float(max(fewest_seeds(cfg), math.ceil(2 * z * z * sp2 / (gap * gap))))
