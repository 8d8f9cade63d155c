"""The decision rules of the claims: verdicts, the tests each claim kind needs, and how they decide.

One declaration per claim kind (:data:`CLAIM_KINDS`, a :class:`ClaimKind` each: its rule in words, its tests,
its deciding boundary, its test in words and its decision), and the functions that apply a kind with a
claim's :class:`Margins` (the analysis spec's, or the claim's own target and margin: :func:`margins_for`):
:func:`rule_text`, :func:`tests_for` (the one-sided permutation tests a kind needs), :func:`pvalue_set` (their
p-values by name), :func:`decide` (interval and p-values -> verdict and reason), :func:`equivalence_detail`
(TOST as a detail), :func:`deciding_boundary`, :func:`decision_level` (1 - 2 alpha), and the seed counts
:func:`fewest_seeds` / :func:`seeds_for_power`. ``taco.stats.claims`` evaluates the claims with them.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats as sst

from taco.stats.analysis_config import AnalysisConfig
from taco.stats.inference import min_attainable_pvalue, pooled_sd
from taco.stats.power import seeds_for_gap

SUPPORTED, NOT_SUPPORTED, INCONCLUSIVE, NOT_RUN = "supported", "not supported", "inconclusive", "not run"
#: a steps-to-target row whose crossings move with half a standard error of its target
#: (:mod:`taco.stats.crossing_fragility`): neither decided nor undecided by the data, but outside the method
NOT_DECIDABLE = "not decidable"
VERDICTS = (SUPPORTED, NOT_SUPPORTED, INCONCLUSIVE, NOT_DECIDABLE, NOT_RUN)
#: the scope of a verdict whose arms have one pre-training run each (claims.csv ``verdict_scope``): its unit is
#: the fine-tuning seed, so it decides about those checkpoints, not about the objective (MultiBERTs)
ONE_CHECKPOINT = "one checkpoint per arm: pre-training variance not sampled"


def verdict_label(verdict: str, scope: str) -> str:
    """A verdict with its scope in brackets, as every page prints it (``not supported (one checkpoint per arm:
    pre-training variance not sampled)``); the verdict alone without a scope or for ``not run``."""
    return f"{verdict} ({scope})" if scope and verdict and verdict != NOT_RUN else verdict
#: power used by the ``seeds_for_power`` estimate
TARGET_POWER = 0.8


def decision_level(cfg: AnalysisConfig) -> float:
    """Level of the decision interval: 1 - 2 alpha (the two-sided interval whose ends are the
    one-sided 1 - alpha bounds that one-sided tests and TOST at alpha correspond to)."""
    return round(1.0 - 2.0 * cfg.alpha, 12)


@dataclass(frozen=True)
class Margins:
    """The numbers a rule is stated in (GLUE points): ``d`` the equivalence / non-inferiority /
    non-superiority margin, ``t`` the improvement target and ``m`` its allowed shortfall (supported above
    t - m), ``alpha``, ``match_rule`` (``equivalence`` or ``non_inferiority``) and ``dl`` the decision
    interval's level in words ("90%"). From the analysis spec, or a claim's own ``target``/``margin``
    (:func:`margins_for`)."""

    d: float
    t: float
    m: float
    alpha: float
    match_rule: str
    dl: str


def margins_for(cfg: AnalysisConfig, target: float | None = None, margin: float | None = None,
                kind: str = "") -> Margins:
    """The :class:`Margins` of a claim: the spec's (``equivalence_margin``, ``improvement_target``,
    ``improvement_margin``), with a claim's own ``target`` (the improvement it states) and ``margin`` (``m``
    for an improvement, ``d`` for every other kind) in their place where given."""
    d, t, m = cfg.equivalence_margin, cfg.improvement_target, cfg.improvement_margin
    if target is not None:
        t = float(target)
    if margin is not None:
        if kind == "improvement":
            m = float(margin)
        else:
            d = float(margin)
    return Margins(d=d, t=t, m=m, alpha=cfg.alpha, match_rule=cfg.match_rule, dl=f"{decision_level(cfg) * 100:g}%")


def _margins(cfg: AnalysisConfig | Margins, kind: str = "") -> Margins:
    return cfg if isinstance(cfg, Margins) else margins_for(cfg, kind=kind)


def _sig(p: float, a: float) -> bool:
    return math.isfinite(p) and p <= a


def _max(*xs: float) -> float:
    """Largest value; nan if any is nan (a TOST p needs both tests)."""
    return math.nan if any(not math.isfinite(x) for x in xs) else max(xs)


# ---- the rules, one declaration per kind ---------------------------------------------------------------------
# Each kind states: its rule in words, the one-sided permutation tests (shift, alternative) it and its details
# need, the shift of the test that decides it, the test in words, and the decision from the decision interval
# [lo, hi] (level 1 - 2 alpha) of delta = mean(A) - mean(B) and the p-values of :func:`pvalue_set`.

Decision = tuple[str, str, float, float]  # verdict, reason, p supporting, p against


def _noninf_rule(M: Margins, every: bool) -> str:
    d, a, dl = M.d, M.alpha, M.dl
    intro = "on every score key (intersection-union test, no multiplicity correction): " if every else ""
    against = (f"not supported if on some key the {dl} CI high < -{d} and the Holm-adjusted (over the keys) "
               f"p(delta < -{d}) <= {a}" if every
               else f"not supported if the {dl} CI high < -{d} and p(delta < -{d}) <= {a}")
    return f"non-inferiority, margin {d} points, {intro}supported if the {dl} CI low > -{d} and p(delta > -{d}) <= {a}; {against}"


def _noninf_decide(lo: float, hi: float, p: Mapping[str, float], M: Margins, ci: str) -> Decision:
    d, a = M.d, M.alpha
    ps, pa = p["gt_neg_margin"], p["lt_neg_margin"]
    if lo > -d and _sig(ps, a):
        return SUPPORTED, f"{ci} above -{d}: not worse by more than the margin, p={ps:.3g}", ps, pa
    if hi < -d and _sig(pa, a):
        return NOT_SUPPORTED, f"{ci} below -{d}: A worse than B by more than the margin, p={pa:.3g}", ps, pa
    return INCONCLUSIVE, f"{ci}, p={ps:.3g}: non-inferiority at margin {d} neither shown nor refuted", ps, pa


def _match_rule(M: Margins) -> str:
    d, a, dl = M.d, M.alpha, M.dl
    if M.match_rule == "non_inferiority":
        return _noninf_rule(M, every=False) + f"; equivalence within +-{d} (TOST) reported as a detail"
    return (f"equivalence (TOST), margin +-{d} points: supported if the {dl} CI lies inside (-{d}, {d}) and "
            f"both one-sided permutation tests give p <= {a}; not supported if the {dl} CI lies beyond a "
            f"margin and the one-sided test beyond it gives p <= {a}")


def _match_decide(lo: float, hi: float, p: Mapping[str, float], M: Margins, ci: str) -> Decision:
    if M.match_rule == "non_inferiority":
        return _noninf_decide(lo, hi, p, M, ci)
    d, a = M.d, M.alpha
    ps = p["tost"]
    if -d < lo and hi < d and _sig(ps, a):
        return SUPPORTED, f"{ci} inside +-{d}, TOST p={ps:.3g}", ps, math.nan
    if lo > d and _sig(p["gt_margin"], a):
        return NOT_SUPPORTED, f"{ci} above +{d}: A better than B by more than the margin, p={p['gt_margin']:.3g}", ps, p["gt_margin"]
    if hi < -d and _sig(p["lt_neg_margin"], a):
        return NOT_SUPPORTED, f"{ci} below -{d}: A worse than B by more than the margin, p={p['lt_neg_margin']:.3g}", ps, p["lt_neg_margin"]
    return INCONCLUSIVE, f"{ci}, TOST p={ps:.3g}: neither equivalence within +-{d} nor a difference beyond it shown", ps, math.nan


def _improvement_decide(lo: float, hi: float, p: Mapping[str, float], M: Margins, ci: str) -> Decision:
    floor, a, t = M.t - M.m, M.alpha, M.t
    ps, pa = p["gt_target_low"], p["lt_target_low"]
    if lo > floor and _sig(ps, a):
        return SUPPORTED, f"{ci} above {floor:g}: an improvement of at least about {t}, p={ps:.3g}", ps, pa
    if hi < floor and _sig(pa, a):
        return NOT_SUPPORTED, f"{ci} below {floor:g}: improvement smaller than claimed, p={pa:.3g}", ps, pa
    return INCONCLUSIVE, f"{ci}, p(delta > {floor:g})={ps:.3g}: an improvement of about {t} neither shown nor refuted", ps, pa


def _below_decide(lo: float, hi: float, p: Mapping[str, float], M: Margins, ci: str) -> Decision:
    d, a = M.d, M.alpha
    ps = p["lt0"]
    if hi < 0 and _sig(ps, a):
        return SUPPORTED, f"{ci} < 0, p={ps:.3g}", ps, p["gt0"]
    if lo > 0 and _sig(p["gt0"], a):
        return NOT_SUPPORTED, f"{ci} > 0: A above B, p={p['gt0']:.3g}", ps, p["gt0"]
    if -d < lo and hi < d and _sig(p["tost"], a):
        return NOT_SUPPORTED, f"{ci} inside +-{d}: no meaningful difference, TOST p={p['tost']:.3g}", ps, p["tost"]
    return INCONCLUSIVE, f"{ci}, p(delta < 0)={ps:.3g}: not decided", ps, p["gt0"]


def _helps_decide(lo: float, hi: float, p: Mapping[str, float], M: Margins, ci: str) -> Decision:
    a = M.alpha
    ps, pa = p["gt0"], p["lt0"]
    if lo > 0 and _sig(ps, a):
        return SUPPORTED, f"{ci} > 0: A above B, p={ps:.3g}", ps, pa
    if hi < 0 and _sig(pa, a):
        return NOT_SUPPORTED, f"{ci} < 0: A below B, p={pa:.3g}", ps, pa
    return INCONCLUSIVE, f"{ci}, p(delta > 0)={ps:.3g}: an improvement neither shown nor refuted", ps, pa


def _not_better_decide(lo: float, hi: float, p: Mapping[str, float], M: Margins, ci: str) -> Decision:
    d, a = M.d, M.alpha
    ps, pa = p["lt_margin"], p["gt_margin"]
    if hi < d and _sig(ps, a):
        note = ""
        if lo > 0 and _sig(p["gt0"], a):
            note = f" (note: the small gain is itself significant, p(delta > 0)={p['gt0']:.3g}, but below the margin)"
        return SUPPORTED, f"{ci} below +{d}: any gain smaller than the margin, p={ps:.3g}{note}", ps, pa
    if lo > d and _sig(pa, a):
        return NOT_SUPPORTED, f"{ci} above +{d}: A better than B by more than the margin, p={pa:.3g}", ps, pa
    return INCONCLUSIVE, f"{ci}, p(delta < {d})={ps:.3g}: non-superiority at margin {d} neither shown nor refuted", ps, pa


@dataclass(frozen=True)
class ClaimKind:
    """One kind of claim, declared once: ``rule`` (its decision rule in words), ``tests`` (the one-sided
    permutation tests, (shift, alternative), it and its details need), ``boundary`` (the shift of the test that
    decides it: the margin the effect must clear), ``test`` (that test in words, before the common tail of
    :func:`taco.stats.claims.describe_test`) and ``decide`` ((lo, hi, p-values, margins, the interval in words) -> verdict,
    reason, p supporting, p against). Every function takes the claim's :class:`Margins`."""

    name: str
    rule: Callable[[Margins], str]
    tests: Callable[[Margins], list[tuple[float, str]]]
    boundary: Callable[[Margins], float]
    test: Callable[[Margins], str]
    decide: Callable[[float, float, Mapping[str, float], Margins, str], Decision]


#: every claim kind: the paper's claim shapes (match, competitive, improvement, below, not_better) and the
#: suite's sanity check (helps)
CLAIM_KINDS: dict[str, ClaimKind] = {k.name: k for k in (
    ClaimKind("match", _match_rule,
              lambda M: [(-M.d, "greater"), (-M.d, "less"), (M.d, "less"), (M.d, "greater")],
              lambda M: -M.d if M.match_rule == "non_inferiority" else M.d,
              lambda M: (f"one-sided permutation test of delta > -{M.d} (non-inferiority)"
                         if M.match_rule == "non_inferiority" else "TOST, two one-sided permutation tests"),
              _match_decide),
    ClaimKind("competitive", lambda M: _noninf_rule(M, every=True),
              lambda M: [(-M.d, "greater"), (-M.d, "less")],
              lambda M: -M.d,
              lambda M: (f"intersection-union test: one-sided permutation test of delta > -{M.d} per score key, "
                         f"each at alpha, no multiplicity correction; refutation: delta < -{M.d} per key, "
                         "Holm-adjusted over the keys"),
              _noninf_decide),
    ClaimKind("improvement",
              lambda M: (f"improvement of about {M.t} (at least {M.t - M.m:g} = {M.t} - {M.m}): supported if the "
                         f"{M.dl} CI low > {M.t - M.m:g} and p(delta > {M.t - M.m:g}) <= {M.alpha} (a larger "
                         f"improvement supports it); not supported if the {M.dl} CI high < {M.t - M.m:g} and "
                         f"p(delta < {M.t - M.m:g}) <= {M.alpha}"),
              lambda M: [(M.t - M.m, "greater"), (M.t - M.m, "less"), (0.0, "greater")],
              lambda M: M.t - M.m,
              lambda M: f"one-sided permutation test of delta > {M.t - M.m:g}",
              _improvement_decide),
    ClaimKind("below",
              lambda M: (f"A below B: supported if the {M.dl} CI high < 0 and p(delta < 0) <= {M.alpha}; not "
                         f"supported if the {M.dl} CI low > 0 and p(delta > 0) <= {M.alpha}, or equivalence within "
                         f"+-{M.d} is shown (TOST)"),
              lambda M: [(0.0, "less"), (0.0, "greater"), (-M.d, "greater"), (M.d, "less")],
              lambda M: 0.0,
              lambda M: "one-sided permutation test of delta < 0",
              _below_decide),
    ClaimKind("not_better",
              lambda M: (f"non-superiority, margin {M.d} points: supported if the {M.dl} CI high < {M.d} and "
                         f"p(delta < {M.d}) <= {M.alpha}; not supported if the {M.dl} CI low > {M.d} and "
                         f"p(delta > {M.d}) <= {M.alpha}"),
              lambda M: [(M.d, "less"), (M.d, "greater"), (0.0, "greater")],
              lambda M: M.d,
              lambda M: f"one-sided permutation test of delta < {M.d} (non-superiority)",
              _not_better_decide),
    ClaimKind("helps",
              lambda M: (f"one-sided improvement, margin 0: supported if the {M.dl} CI low > 0 and p(delta > 0) "
                         f"<= {M.alpha}; not supported if the {M.dl} CI high < 0 and p(delta < 0) <= {M.alpha}"),
              lambda M: [(0.0, "greater"), (0.0, "less")],
              lambda M: 0.0,
              lambda M: "one-sided permutation test of delta > 0",
              _helps_decide),
)}
KINDS: tuple[str, ...] = tuple(CLAIM_KINDS)


def claim_kind(kind: str) -> ClaimKind:
    """The declaration of ``kind``; ValueError naming the known kinds otherwise."""
    try:
        return CLAIM_KINDS[kind]
    except KeyError:
        raise ValueError(f"unknown claim kind {kind!r}; expected one of {', '.join(CLAIM_KINDS)}") from None


def rule_text(kind: str, cfg: AnalysisConfig | Margins) -> str:
    """The decision rule of a claim kind with these margins (the spec's, or a claim's :class:`Margins`), in words."""
    return claim_kind(kind).rule(_margins(cfg, kind))


def pvalue_set(cmp, cfg: AnalysisConfig | Margins) -> dict[str, float]:
    """Named one-sided p-values of a :class:`taco.stats.aggregate.Comparison` used by the rules
    (nan where the test was not run)."""
    M = _margins(cfg)
    d, t, m = M.d, M.t, M.m
    pg, pl = cmp.p_greater, cmp.p_less
    nan = math.nan
    return {
        "gt_neg_margin": pg.get(-d, nan), "lt_margin": pl.get(d, nan), "gt_margin": pg.get(d, nan),
        "lt_neg_margin": pl.get(-d, nan), "tost": _max(pg.get(-d, nan), pl.get(d, nan)),
        "gt0": pg.get(0.0, nan), "lt0": pl.get(0.0, nan),
        "gt_target_low": pg.get(t - m, nan), "lt_target_low": pl.get(t - m, nan),
    }


def tests_for(kind: str, cfg: AnalysisConfig | Margins) -> list[tuple[float, str]]:
    """The one-sided permutation tests (shift, alternative) the rule of ``kind`` and its details need."""
    return claim_kind(kind).tests(_margins(cfg, kind))


def equivalence_detail(lo: float, hi: float, p: Mapping[str, float], cfg: AnalysisConfig | Margins) -> str:
    """TOST at alpha with the 1 - 2 alpha interval, in words (a detail of the match claims)."""
    M = _margins(cfg)
    d, a = M.d, M.alpha
    if -d < lo and hi < d and _sig(p["tost"], a):
        return f"equivalent within +-{d} (TOST p={p['tost']:.3g})"
    if lo > d and _sig(p["gt_margin"], a):
        return f"A better than B by more than {d} (p={p['gt_margin']:.3g}): not equivalent, A ahead"
    if hi < -d and _sig(p["lt_neg_margin"], a):
        return f"A worse than B by more than {d} (p={p['lt_neg_margin']:.3g})"
    return f"equivalence within +-{d} not shown (TOST p={p['tost']:.3g})"


def decide(kind: str, ci_low: float, ci_high: float, p: Mapping[str, float],
           cfg: AnalysisConfig | Margins) -> Decision:
    """Apply the rule of ``kind`` -> (verdict, reason, p supporting, p against).

    ``ci_low``, ``ci_high``: the decision interval (level :func:`decision_level`, 1 - 2 alpha) of
    delta = mean(A) - mean(B) in GLUE points; ``p``: :func:`pvalue_set` (one-sided permutation
    p-values); ``cfg``: the spec, or the claim's :class:`Margins`. A non-finite interval (fewer than 2
    seeds in a cell) gives inconclusive. Raises ValueError for an unknown kind.
    """
    spec = claim_kind(kind)
    M = _margins(cfg, kind)
    lo, hi = ci_low, ci_high
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return INCONCLUSIVE, "no confidence interval (fewer than 2 seeds in a cell)", math.nan, math.nan
    return spec.decide(lo, hi, p, M, f"{M.dl} CI [{lo:.2f}, {hi:.2f}]")


def deciding_boundary(kind: str, cfg: AnalysisConfig | Margins) -> float:
    """The shift of the one-sided test that decides ``kind`` (the margin the effect must clear)."""
    return claim_kind(kind).boundary(_margins(cfg, kind))


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
    """Seeds per arm for ``power`` of the one-sided permutation test of delta against ``boundary`` at alpha, if
    the true delta and SD were the observed delta and pooled SD, in the direction the observed delta lies
    from the boundary (to support the claim, or to refute it when the data point the other way): the fewest
    equal arms, at least :func:`fewest_seeds`, at which the test detects that distance with ``power``
    (:func:`taco.stats.power.seeds_for_gap`: the exact test simulated up to 12 seeds, the t formula beyond).
    nan when an arm has < 2 values, the SD is 0 or delta equals the boundary."""
    s = pooled_sd(a, b)
    gap = float(np.mean(a) - np.mean(b)) - boundary if not math.isnan(s) else math.nan
    if not s > 0 or gap == 0 or math.isnan(gap):
        return math.nan
    return seeds_for_gap(gap / s, cfg.alpha, power, start=fewest_seeds(cfg))