"""The steps-to-target speedup of one comparison: per-unit crossings, the estimate, its interval, the verdict.

The computation under ``taco efficiency`` (:mod:`taco.stats.efficiency` reads the checkpoints and the
aggregate, builds the :class:`Pair` of every claim and writes the table, page and figure). Torch-free.

**Estimand.** The baseline arm B (MLM), the arm A (TACO), a target step T. The target level is B's mean
value at T over its units (pre-training runs, or fine-tuning seeds where an arm has one fine-tuned run).
For every unit u of A, k_u is the step at which *its own* curve first reaches the target, linear in
log-step between its two bracketing points (:func:`unit_crossings`); its speedup is s_u = T / k_u. The
speedup of A over B is the geometric mean of the s_u: exp(mean ln s_u), the speedup of a typical run.

**Censoring.** A unit whose curve never reaches the target up to its last point L is right-censored,
one whose first point F already reaches it left-censored. No unit is dropped: a censored unit enters
the estimate, the interval and the test at its crossing extrapolated along its end segment (linear in
log-step, as the interpolation), at most a factor :data:`EXTRAPOLATION_FACTOR` = 2 beyond the measured
steps (k <= 2 L, k >= F / 2); an end segment that does not improve enters at that factor. The table
counts the censored units of each kind and lists every unit's k (``>`` right-, ``<`` left-censored).
The simulations (:mod:`taco.stats.speedup_simulation`) include censored units (a third of A's runs
at a true speedup of 1.2 with cpu-real's spreads) and measure coverage with them.

**Interval** (:func:`speedup_interval`). A t interval on ln s: the estimate's variance is
var(ln s_u) / n_A (A's units) plus c^2 var(y_B(T)) / n_B (B's target level, propagated through
c = the mean over A's units of d ln k_u / d target, the inverse slope of each unit's curve in log-step
at its crossing segment; delta method), with Welch-Satterthwaite degrees of freedom. Its level is
``1 - 2 alpha`` (90% at alpha = 0.05). With fewer than 2 units in an arm there is no interval.

**Decision** (:func:`taco.stats.speedup_decision.decide`) at the margin m (``analysis.efficiency_margin``, default 1.2: a fifth fewer
steps): *supported* when the interval's lower bound exceeds m (the one-sided t test of H0: speedup <= m
at level alpha, whose p is printed), *not supported* when its upper bound is below m, *inconclusive*
otherwise. Interval and test are one method, so the level of "supported" at a true speedup of m is the
interval's one-sided miss rate; :mod:`taco.stats.speedup_simulation` measures both on curves with
known speedups (``taco efficiency --calibrate``; ``tests/test_speedup_calibration.py``).

Also reported, descriptive: where A's *mean* curve reaches the target (``mean_curve_speedup``), a
Welch t test of the values at T, and the variance components at T (:func:`variance_components`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import stats as st

from taco.paper import COMPARISON

LOWER, HIGHER = "lower", "higher"
REACHED, NEVER, ALREADY, NO_CURVE = "reached", "never reaches", "already beats at first point", "no curve"
LOSS_FORM, GLUE_FORM = "validation_mlm_loss", "glue_average"
#: E1's probe row: the frozen-feature GLUE probe average (points x100) along pre-training (issue 51.3)
PROBE_FORM = "glue_probe_average"
#: reference and compared objective of every efficiency claim
REFERENCE, COMPARED = COMPARISON
#: per-unit status codes of :func:`unit_crossings`
CODE_REACHED, CODE_LEFT, CODE_RIGHT = 0, 1, 2
#: how far beyond its measured steps a censored unit's crossing is extrapolated, at most (a factor in steps)
EXTRAPOLATION_FACTOR = 2.0
#: the minimum speedup "supported" must exceed when the analysis spec does not say (a fifth fewer steps)
DEFAULT_MARGIN = 1.2


# ---------------------------------------------------------------------------------------------
# the crossing
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Crossing:
    """Where one curve reaches a target: ``step`` k* (None unless ``status == REACHED``), ``status``,
    and ``bound_step``: the first point's step (``ALREADY``) or the last one's (``NEVER``)."""

    step: float | None
    status: str
    bound_step: float | None = None

    def speedup(self, target_step: float) -> float:
        """T / k* (dimensionless); 0 for ``NEVER``, +inf for ``ALREADY`` (their ordering), nan for no curve."""
        if self.status == REACHED:
            return float(target_step) / float(self.step)
        if self.status == NEVER:
            return 0.0
        if self.status == ALREADY:
            return math.inf
        return math.nan


def _reaches(value, target, better: str):
    return value <= target if better == LOWER else value >= target


def _check_better(better: str) -> None:
    if better not in (LOWER, HIGHER):
        raise ValueError(f"better must be {LOWER!r} or {HIGHER!r}, got {better!r}")


def crossing_step(steps: Sequence[float], values: Sequence[float], target: float, better: str = LOWER) -> Crossing:
    """The step k* at which the curve ``(steps, values)`` first reaches ``target``.

    Between the bracketing points (s0, v0), (s1, v1), ln k* = ln s0 + (v0 - target) / (v0 - v1) *
    (ln s1 - ln s0): linear in log-step. ``better``: ``lower`` (a loss: reached when value <= target)
    or ``higher`` (a score: value >= target). Points with step <= 0 or a non-finite value are left
    out; the rest are sorted by step. Returns :class:`Crossing` (``ALREADY`` if the first point
    reaches it, ``NEVER`` if none does, ``NO_CURVE`` without points). ValueError for another ``better``.
    """
    _check_better(better)
    pts = sorted((float(s), float(v)) for s, v in zip(steps, values) if s > 0 and math.isfinite(v))
    if not pts or not math.isfinite(target):
        return Crossing(None, NO_CURVE)
    if _reaches(pts[0][1], target, better):
        return Crossing(None, ALREADY, pts[0][0])
    for (s0, v0), (s1, v1) in zip(pts, pts[1:]):
        if _reaches(v1, target, better):
            frac = (v0 - target) / (v0 - v1)  # v0 does not reach it, v1 does: v0 != v1
            return Crossing(math.exp(math.log(s0) + frac * (math.log(s1) - math.log(s0))), REACHED)
    return Crossing(None, NEVER, pts[-1][0])


def unit_crossings(steps: np.ndarray, values: np.ndarray, target: np.ndarray,
                   better: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Vectorised first crossings of many unit curves with their arm's target.

    ``steps``: shape (S,), ascending, > 0. ``values``: shape (..., U, S), finite (U units). ``target``:
    shape (...) (one target per leading index, shared by its U units). Returns, each of shape (..., U):

    - ``log_k``: ln k_u, linear in log-step between the bracketing points as :func:`crossing_step`.
      A censored unit is extrapolated along its end segment, linear in log-step, at most a factor
      :data:`EXTRAPOLATION_FACTOR` beyond the measured steps (right-censored, no point reaches the
      target: from its last point, ln k <= ln(last) + ln 2; left-censored, its first point already
      does: back from its first point, ln k >= ln(first) - ln 2); an end segment that does not improve
      enters at that factor;
    - ``status``: :data:`CODE_REACHED`, :data:`CODE_LEFT` or :data:`CODE_RIGHT`;
    - ``dlogk``: |d ln k_u / d target| on the unit's crossing segment (censored units: their first or
      last segment), ``inf`` on a flat segment, ``nan`` with a single step (delta method, module docstring).
    """
    _check_better(better)
    steps = np.asarray(steps, dtype=float)
    values = np.asarray(values, dtype=float)
    target = np.asarray(target, dtype=float)[..., None]  # (..., 1): broadcasts over units
    ls = np.log(steps)
    reached = _reaches(values, target[..., None], better)  # (..., U, S)
    any_r = reached.any(axis=-1)
    first = np.argmax(reached, axis=-1)
    status = np.where(~any_r, CODE_RIGHT, np.where(first == 0, CODE_LEFT, CODE_REACHED))
    n = steps.size
    cap = math.log(EXTRAPOLATION_FACTOR)
    if n < 2:
        log_k = np.where(status == CODE_LEFT, ls[0] - cap, ls[-1] + cap) + np.zeros(status.shape)
        return log_k, status, np.full(status.shape, np.nan)
    j1 = np.where(status == CODE_RIGHT, n - 1, np.clip(first, 1, n - 1))
    j0 = j1 - 1
    v0 = np.take_along_axis(values, j0[..., None], axis=-1)[..., 0]
    v1 = np.take_along_axis(values, j1[..., None], axis=-1)[..., 0]
    dls = ls[j1] - ls[j0]
    sign = 1.0 if better == LOWER else -1.0
    with np.errstate(divide="ignore", invalid="ignore"):
        frac = (v0 - target) / (v0 - v1)
        dlogk = np.abs(dls / (v1 - v0))
        gain = sign * (v0 - v1) / dls  # improvement per unit ln-step on the segment (> 0: improving)
        # right-censored: from the last point (v1) on to the target; left: back from the first (v0)
        ext_right = np.where(gain > 0, sign * (v1 - target) / gain, np.inf)
        ext_left = np.where(gain > 0, sign * (target - v0) / gain, np.inf)
    log_k = np.where(status == CODE_REACHED, ls[j0] + frac * dls,
                     np.where(status == CODE_LEFT, ls[0] - np.minimum(ext_left, cap),
                              ls[-1] + np.minimum(ext_right, cap)))
    return log_k, status, dlogk


@dataclass(frozen=True)
class Interval:
    """The estimate and interval of one comparison (arrays of shape (...) from :func:`speedup_interval`)."""

    log_speedup: np.ndarray  # mean ln s_u (the geometric mean's log)
    se: np.ndarray           # standard error of it (ln units)
    df: np.ndarray           # Welch-Satterthwaite degrees of freedom
    low: np.ndarray          # lower bound of the speedup (not its log)
    high: np.ndarray         # upper bound of the speedup
    log_s_units: np.ndarray  # (..., U) ln s_u of A's units
    status: np.ndarray       # (..., U) censoring codes
    target: np.ndarray       # (...) B's mean value at T

    @property
    def speedup(self) -> np.ndarray:
        """The geometric-mean speedup exp(mean ln s_u)."""
        return np.exp(self.log_speedup)

    def p_at_least(self, margin: float) -> np.ndarray:
        """One-sided p of H0: speedup <= margin (t test on ln s; <= alpha exactly when low > margin)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            t = (self.log_speedup - math.log(margin)) / self.se
        return np.where(self.se > 0, st.t.sf(t, self.df), np.where(self.log_speedup > math.log(margin), 0.0, 1.0))

def speedup_interval(steps: np.ndarray, b_at_t: np.ndarray, a_values: np.ndarray, target_step: float,
                     better: str, level: float) -> Interval:
    """The per-unit speedup estimate with its t interval (module docstring), vectorised.

    ``steps``: A's grid, shape (S,). ``b_at_t``: B's unit values at T, shape (..., n_B). ``a_values``: A's
    unit curves, shape (..., n_A, S). ``level``: two-sided level of the interval (0.9). Same units for
    B's and A's values (nats, or GLUE points). With n_B < 2 or n_A < 2 the bounds are nan (the
    estimate stays). Leading dimensions (...) are independent comparisons (the simulation's repetitions).
    """
    b_at_t = np.asarray(b_at_t, dtype=float)
    a_values = np.asarray(a_values, dtype=float)
    n_b, n_a = b_at_t.shape[-1], a_values.shape[-2]
    target = b_at_t.mean(axis=-1)
    log_k, status, dlogk = unit_crossings(steps, a_values, target, better)
    log_s = math.log(float(target_step)) - log_k
    est = log_s.mean(axis=-1)
    if n_b < 2 or n_a < 2:
        nan = np.full(est.shape, np.nan)
        return Interval(est, nan, nan, nan, nan, log_s, status, target)
    var_a = log_s.var(axis=-1, ddof=1) / n_a
    c = dlogk.mean(axis=-1)
    with np.errstate(invalid="ignore"):
        var_b = c ** 2 * b_at_t.var(axis=-1, ddof=1) / n_b
        var_b = np.where(np.isnan(var_b) & (b_at_t.var(axis=-1, ddof=1) == 0), 0.0, var_b)  # inf * 0
    se2 = var_b + var_a
    with np.errstate(divide="ignore", invalid="ignore"):
        denom = var_a ** 2 / (n_a - 1) + var_b ** 2 / (n_b - 1)
        df = np.where(denom > 0, se2 ** 2 / denom, np.inf)
    df = np.where(np.isfinite(se2), df, np.minimum(n_b, n_a) - 1.0)
    se = np.sqrt(se2)
    q = st.t.ppf(0.5 + level / 2.0, np.maximum(df, 1.0))
    with np.errstate(over="ignore", invalid="ignore"):
        low = np.where(np.isfinite(se), np.exp(est - q * se), 0.0)
        high = np.where(np.isfinite(se), np.exp(est + q * se), np.inf)
    return Interval(est, se, df, low, high, log_s, status, target)


# ---------------------------------------------------------------------------------------------
# an arm's curves
# ---------------------------------------------------------------------------------------------
@dataclass
class ArmCurves:
    """The curves of one arm on a common step grid.

    ``runs``: one array per pre-training run, shape (n_finetune_seeds, n_steps) (one row for the
    validation loss); ``run_ids``: the pre-training seeds; ``steps``: the grid (steps every run and
    seed has, ascending). A unit is a pre-training run (its fine-tuning seeds averaged) when the arm
    has two or more, else a fine-tuning seed of the one run.
    """

    steps: np.ndarray
    runs: list[np.ndarray]
    run_ids: list[int] = field(default_factory=list)
    #: the fine-tuning seeds (rows) of the runs' arrays; -1 for the validation loss
    seed_ids: list[int] = field(default_factory=list)

    @property
    def n_runs(self) -> int:
        return len(self.runs)

    @property
    def nested(self) -> bool:
        """Whether the unit is the pre-training run (two or more runs), else the fine-tuning seed."""
        return self.n_runs >= 2

    def units(self) -> np.ndarray:
        """Per-unit curves, shape (n_units, n_steps): runs (seeds averaged) when nested, else the seeds of the one run."""
        if not self.runs:
            return np.empty((0, len(self.steps)))
        if self.nested:
            return np.stack([r.mean(axis=0) for r in self.runs])
        return self.runs[0]

    def unit_names(self) -> list[str]:
        """One name per unit: ``run <pretrain seed>`` when nested, else ``seed <fine-tuning seed>`` (``run``
        for the validation loss of a single run)."""
        if self.nested or not self.runs:
            return [f"run {i}" for i in self.run_ids]
        return [f"run {self.run_ids[0]}" if s < 0 else f"seed {s}" for s in self.seed_ids]

    def complete(self) -> np.ndarray:
        """Bool (n_units,): the units with a finite value at every step of the grid."""
        return np.isfinite(self.units()).all(axis=1) if self.runs else np.zeros(0, dtype=bool)

    def mean_curve(self) -> np.ndarray:
        """Mean over the complete units (:meth:`complete`) of their curves (``nan`` where none)."""
        units = self.units()
        ok = self.complete()
        if not ok.any():
            return np.full(len(self.steps), np.nan)
        return units[ok].mean(axis=0)

    def at(self, step: int) -> np.ndarray:
        """Per-unit values at ``step`` (empty if the step is not on the grid)."""
        idx = np.flatnonzero(self.steps == step)
        return self.units()[:, idx[0]] if idx.size else np.empty(0)

    def until(self, step: int) -> "ArmCurves":
        """The same arm on the grid's steps <= ``step``."""
        keep = self.steps <= step
        return ArmCurves(self.steps[keep], [r[:, keep] for r in self.runs], list(self.run_ids), list(self.seed_ids))

    @property
    def n_units(self) -> int:
        return self.units().shape[0]


def arm_curves(df: pd.DataFrame) -> ArmCurves:
    """:class:`ArmCurves` from rows ``pretrain_seed, seed, step, value`` of one arm (``seed`` = fine-tuning
    seed, ``-1`` for the validation loss; one pre-training run per ``pretrain_seed``).

    The grid is the steps (> 0) at which more than half of the (pretrain_seed, seed) curves have a finite
    value; a curve without a finite value at a grid step carries nan there, so one damaged or short run is
    judged on its own (:func:`evaluate_pair` leaves it out and says so) instead of removing a step from
    every run."""
    df = df[df["step"] > 0]
    if df.empty:
        return ArmCurves(np.empty(0, dtype=int), [], [], [])
    df = df.assign(value=df["value"].astype(float))
    n_curves = len(df[["pretrain_seed", "seed"]].drop_duplicates())
    finite = df[np.isfinite(df["value"])].drop_duplicates(["pretrain_seed", "seed", "step"], keep="last")
    held = finite.groupby("step").size()
    steps = np.array(sorted(int(s) for s, c in held.items() if 2 * c > n_curves), dtype=int)
    runs, ids, seeds = [], [], []
    for run, g in df.groupby("pretrain_seed", sort=True):
        wide = g.pivot_table(index="seed", columns="step", values="value", aggfunc="last", dropna=False)
        wide = wide.reindex(columns=steps)
        runs.append(wide.to_numpy(dtype=float))
        ids.append(int(run))
        seeds = [int(x) for x in wide.index]
    return ArmCurves(steps, runs, ids, seeds)


# ---------------------------------------------------------------------------------------------
# descriptive statistics at T
# ---------------------------------------------------------------------------------------------
def variance_components(arm: ArmCurves, step: int) -> tuple[float, float]:
    """(SD of the pre-training run, SD of the fine-tuning seed) at ``step``, same unit as the values.

    One-way random-effects ANOVA on the nested values (runs x their seeds): sigma^2_seed = MS_within,
    sigma^2_run = max(0, (MS_between - MS_within) / n0), n0 = (N - sum n_i^2 / N) / (k - 1) (Searle,
    Casella & McCulloch 1992, Sec. 3.6). Without fine-tuning seeds (one value per run) the run SD is the
    sample SD of the runs and the seed SD nan; with one run, the run SD is nan.
    """
    idx = np.flatnonzero(arm.steps == step)
    if not idx.size or not arm.runs:
        return math.nan, math.nan
    groups = [g[np.isfinite(g)] for g in (r[:, idx[0]] for r in arm.runs)]
    groups = [g for g in groups if g.size]
    if not groups:
        return math.nan, math.nan
    k, n = len(groups), np.array([g.size for g in groups])
    if (n <= 1).all():
        vals = np.array([g.mean() for g in groups])
        return (float(np.std(vals, ddof=1)) if k >= 2 else math.nan), math.nan
    big_n = n.sum()
    ss_within = sum(((g - g.mean()) ** 2).sum() for g in groups)
    df_within = big_n - k
    ms_within = ss_within / df_within if df_within > 0 else math.nan
    if k < 2:
        return math.nan, math.sqrt(ms_within) if math.isfinite(ms_within) else math.nan
    grand = np.concatenate(groups).mean()
    ms_between = sum(g.size * (g.mean() - grand) ** 2 for g in groups) / (k - 1)
    n0 = (big_n - (n ** 2).sum() / big_n) / (k - 1)
    var_run = max(0.0, (ms_between - ms_within) / n0) if math.isfinite(ms_within) else math.nan
    return math.sqrt(var_run), math.sqrt(ms_within) if math.isfinite(ms_within) else math.nan


def welch_p_a_better(va: np.ndarray, vb: np.ndarray, better: str) -> float:
    """One-sided Welch t test (``scipy.stats.ttest_ind``, ``equal_var=False``) that A's values at T are
    better than B's; nan with fewer than 2 values in a side or no spread. Descriptive: no verdict uses it."""
    if va.size < 2 or vb.size < 2 or (np.var(va) == 0 and np.var(vb) == 0):
        return math.nan
    alt = "less" if better == LOWER else "greater"
    return float(st.ttest_ind(vb, va, equal_var=False, alternative=alt).pvalue)
