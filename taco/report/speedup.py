"""The steps-to-target speedup of one comparison: the crossing, the arms' curves, the interval, the tests.

The computation under ``taco efficiency`` (``taco.report.efficiency``, which reads the checkpoints
and the aggregate, builds the :class:`Pair` of every claim and writes the table, the page and the
figure; it describes the method). Here: :func:`crossing_step` (where B's mean curve reaches A's
value at T, log-step interpolation, a :class:`Crossing`), :class:`ArmCurves` / :func:`arm_curves`
(an arm's values per unit and step, pre-training runs with their fine-tuning seeds nested),
:func:`bootstrap_speedups` (two-stage bootstrap of T / k*, percentile interval by order statistics),
:func:`variance_components` (run and seed SD), :func:`one_sided_p` (the permutation test at T),
:func:`decide` (the verdict) and :func:`evaluate_pair` (one table row, ``CSV_COLUMNS``). Every
name here is also importable from ``taco.report.efficiency``. Torch-free.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from taco.report.inference import min_attainable_pvalue, permutation_pvalue, rng_for

LOWER, HIGHER = "lower", "higher"
REACHED, NEVER, ALREADY, NO_CURVE = "reached", "never reaches", "already beats at first point", "no curve"
SUPPORTED, NOT_SUPPORTED, INCONCLUSIVE, NOT_RUN = "supported", "not supported", "inconclusive", "not run"
LOSS_FORM, GLUE_FORM = "validation_mlm_loss", "glue_average"
#: reference and compared objective of every efficiency claim
REFERENCE, COMPARED = "mlm", "taco"

CSV_COLUMNS = [
    "claim_id", "form", "unit_of_value", "better", "size", "fraction", "a", "b", "target_step", "target_budget",
    "target_value", "status", "k_star", "speedup", "ci_level", "speedup_ci_low", "speedup_ci_high",
    "interval_note", "flops_per_step_a", "flops_per_step_b", "compute_speedup", "compute_ci_low",
    "compute_ci_high", "paper_speedup", "unit", "n_units_a", "n_units_b", "n_runs_a", "n_runs_b",
    "mean_a_at_t", "mean_b_at_t", "p_b_better", "p_a_better", "min_attainable_p", "sd_run_a", "sd_run_b",
    "sd_seed_a", "sd_seed_b", "verdict", "reason", "curve_steps",
]


# ---------------------------------------------------------------------------------------------
# the crossing
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Crossing:
    """Where a curve reaches a target: ``step`` k* (None unless ``status == REACHED``), ``status``,
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


def _reaches(value: float, target: float, better: str) -> bool:
    return value <= target if better == LOWER else value >= target


def crossing_step(steps: Sequence[float], values: Sequence[float], target: float, better: str = LOWER) -> Crossing:
    """The step k* at which the curve ``(steps, values)`` first reaches ``target``.

    Between the bracketing points (s0, v0), (s1, v1), ln k* = ln s0 + (v0 - target) / (v0 - v1) *
    (ln s1 - ln s0): linear in log-step. ``better``: ``lower`` (a loss: reached when value <= target)
    or ``higher`` (a score: value >= target). Points with step <= 0 or a non-finite value are left
    out; the rest are sorted by step. Returns :class:`Crossing` (``ALREADY`` if the first point
    reaches it, ``NEVER`` if none does, ``NO_CURVE`` without points).
    """
    if better not in (LOWER, HIGHER):
        raise ValueError(f"better must be {LOWER!r} or {HIGHER!r}, got {better!r}")
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


# ---------------------------------------------------------------------------------------------
# an arm's curves
# ---------------------------------------------------------------------------------------------
@dataclass
class ArmCurves:
    """The curves of one arm on a common step grid.

    ``runs``: one array per pre-training run, shape (n_finetune_seeds, n_steps) (one row for the
    validation loss); ``run_ids``: the pre-training seeds; ``steps``: the grid (steps every run and
    seed has, ascending). The value at a step of a run is the mean over its fine-tuning seeds; the
    arm's mean curve is the mean over runs (each run weighs the same).
    """

    steps: np.ndarray
    runs: list[np.ndarray]
    run_ids: list[int] = field(default_factory=list)

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

    def mean_curve(self) -> np.ndarray:
        """Mean over runs of the runs' seed means (``nan`` where empty)."""
        if not self.runs:
            return np.full(len(self.steps), np.nan)
        return np.mean([r.mean(axis=0) for r in self.runs], axis=0)

    def at(self, step: int) -> np.ndarray:
        """Per-unit values at ``step`` (empty if the step is not on the grid)."""
        idx = np.flatnonzero(self.steps == step)
        return self.units()[:, idx[0]] if idx.size else np.empty(0)

    def resample(self, rng: np.random.Generator) -> np.ndarray:
        """One bootstrap mean curve: runs with replacement, then seeds within each drawn run (a single
        run: its seeds with replacement)."""
        if self.nested:
            picks = rng.integers(0, self.n_runs, size=self.n_runs)
            curves = []
            for i in picks:
                r = self.runs[i]
                curves.append(r[rng.integers(0, r.shape[0], size=r.shape[0])].mean(axis=0))
            return np.mean(curves, axis=0)
        r = self.runs[0]
        return r[rng.integers(0, r.shape[0], size=r.shape[0])].mean(axis=0)

    @property
    def n_units(self) -> int:
        return self.units().shape[0]


def arm_curves(df: pd.DataFrame) -> ArmCurves:
    """:class:`ArmCurves` from rows ``run, seed, step, value`` of one arm (``seed`` = fine-tuning seed,
    :data:`NO_FINETUNE` for the validation loss). The grid is the steps (> 0) every (run, seed) has."""
    df = df[(df["step"] > 0) & np.isfinite(df["value"].astype(float))]
    if df.empty:
        return ArmCurves(np.empty(0, dtype=int), [], [])
    groups = list(df.groupby(["run", "seed"]))
    common = set.intersection(*(set(g["step"].astype(int)) for _, g in groups))
    steps = np.array(sorted(common), dtype=int)
    runs, ids = [], []
    for run, g in df[df["step"].isin(steps)].groupby("run", sort=True):
        wide = g.pivot_table(index="seed", columns="step", values="value", aggfunc="mean")
        runs.append(wide[steps].to_numpy(dtype=float))
        ids.append(int(run))
    return ArmCurves(steps, runs, ids)


# ---------------------------------------------------------------------------------------------
# speedup, interval, test, variance components
# ---------------------------------------------------------------------------------------------
def _order_stat_interval(values: np.ndarray, level: float) -> tuple[float, float]:
    """Percentile interval at ``level`` as order statistics (no interpolation between 0 / inf)."""
    a = (1.0 - level) / 2.0
    lo = float(np.quantile(values, a, method="lower"))
    hi = float(np.quantile(values, 1.0 - a, method="higher"))
    return lo, hi


def bootstrap_speedups(a: ArmCurves, b: ArmCurves, target_step: int, better: str, *, n_resamples: int,
                       rng: np.random.Generator) -> np.ndarray:
    """``n_resamples`` bootstrap replicates of T / k* (0 for never, inf for already; see the module docstring)."""
    ia = np.flatnonzero(a.steps == target_step)[0]
    out = np.empty(n_resamples)
    for i in range(n_resamples):
        target = a.resample(rng)[ia]
        out[i] = crossing_step(b.steps, b.resample(rng), target, better).speedup(target_step)
    return out


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
    groups = [r[:, idx[0]] for r in arm.runs]
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


def one_sided_p(better_side: np.ndarray, other: np.ndarray, better: str, *, n_resamples: int,
                rng: np.random.Generator) -> float:
    """p of the one-sided permutation test that ``better_side`` is better than ``other`` (difference of
    means; exact when every partition fits in ``n_resamples``); nan with fewer than 2 values in a side."""
    if better == LOWER:
        return permutation_pvalue(other, better_side, alternative="greater", n_resamples=n_resamples, rng=rng)
    return permutation_pvalue(better_side, other, alternative="greater", n_resamples=n_resamples, rng=rng)


def decide(p_b_better: float, p_a_better: float, ci_low: float, ci_high: float, alpha: float) -> tuple[str, str]:
    """The verdict of "B reaches A's value at T in fewer steps" and why (rule: module docstring)."""
    sig = lambda p: math.isfinite(p) and p <= alpha  # noqa: E731
    if sig(p_a_better):
        return NOT_SUPPORTED, f"A better at T (one-sided permutation p = {p_a_better:.3g} <= {alpha})"
    if math.isfinite(ci_high) and ci_high < 1.0:
        return NOT_SUPPORTED, f"speedup interval below 1 (upper bound {ci_high:.3g})"
    if sig(p_b_better) and not math.isnan(ci_low) and ci_low > 1.0:
        return SUPPORTED, (f"B better at T (p = {p_b_better:.3g} <= {alpha}) and the speedup's lower bound "
                           f"{_fmt_bound(ci_low)} > 1")
    why = []
    if not math.isfinite(p_b_better):
        why.append("no permutation test (fewer than 2 units in an arm)")
    elif not sig(p_b_better):
        why.append(f"B not better at T by the test (p = {p_b_better:.3g} > {alpha})")
    if math.isnan(ci_low):
        why.append("no speedup interval")
    elif ci_low <= 1.0:
        why.append(f"speedup's lower bound {_fmt_bound(ci_low)} <= 1")
    return INCONCLUSIVE, "; ".join(why) or "undecided"


def _fmt_bound(x: float) -> str:
    if x == math.inf:
        return "inf (B already better at its first point)"
    return f"{x:.3g}"


@dataclass
class Pair:
    """One comparison: curves of A and B, the target step, the direction, labels."""

    claim_id: str
    form: str
    size: str
    fraction: float
    a: ArmCurves
    b: ArmCurves
    target_step: int | None
    better: str
    unit_of_value: str
    target_budget: str = ""
    paper_speedup: float = math.nan
    flops_per_step: tuple[float, float] = (math.nan, math.nan)
    note: str = ""


def _unit_label(a: ArmCurves, b: ArmCurves, form: str) -> str:
    def one(arm: ArmCurves) -> str:
        if form == LOSS_FORM or arm.nested:
            return "pre-training run"
        return "fine-tuning seed"
    ua, ub = one(a), one(b)
    return ua if ua == ub else f"A: {ua}, B: {ub}"


def evaluate_pair(pair: Pair, *, alpha: float, n_resamples: int, seed: int) -> dict[str, Any]:
    """The table row of one comparison (``CSV_COLUMNS``): speedup, interval, compute ratio, tests, verdict."""
    a, b, t = pair.a, pair.b, pair.target_step
    level = round(1.0 - 2.0 * alpha, 12)
    label = f"{pair.form}|{pair.size}|{pair.fraction:g}|{t}"
    fa, fb = pair.flops_per_step
    row: dict[str, Any] = {c: math.nan for c in CSV_COLUMNS}
    row.update(claim_id=pair.claim_id, form=pair.form, unit_of_value=pair.unit_of_value, better=pair.better,
               size=pair.size, fraction=pair.fraction, a=REFERENCE, b=COMPARED, target_step=t,
               target_budget=pair.target_budget, paper_speedup=pair.paper_speedup, ci_level=level,
               flops_per_step_a=fa, flops_per_step_b=fb, n_units_a=a.n_units, n_units_b=b.n_units,
               n_runs_a=a.n_runs, n_runs_b=b.n_runs, unit=_unit_label(a, b, pair.form),
               curve_steps=";".join(str(int(s)) for s in b.steps), interval_note="", reason="")
    if t is None or not a.runs or not b.runs or t not in set(a.steps.tolist()):
        why = pair.note or ("no target step" if t is None else
                            f"A has no value at T = {t}" if a.runs else "A has no curve")
        if not b.runs:
            why = pair.note or "B has no curve"
        row.update(status=NO_CURVE, verdict=NOT_RUN, reason="not run: " + why)
        return row
    ia = int(np.flatnonzero(a.steps == t)[0])
    target = float(a.mean_curve()[ia])
    cross = crossing_step(b.steps, b.mean_curve(), target, pair.better)
    sp = cross.speedup(t)
    row.update(target_value=target, status=cross.status, k_star=cross.step if cross.step is not None else math.nan,
               speedup=sp if cross.status == REACHED else math.nan)
    if cross.status == ALREADY:
        row["interval_note"] = f"speedup >= {t / cross.bound_step:.3g} (B's first point, step {cross.bound_step:g}, already beats A at T). "
    elif cross.status == NEVER:
        row["interval_note"] = f"speedup < {t / cross.bound_step:.3g} (B never reaches A's value at T up to step {cross.bound_step:g}). "
    ratio = fa / fb if math.isfinite(fa) and math.isfinite(fb) and fb > 0 else math.nan
    if math.isfinite(row["speedup"]):
        row["compute_speedup"] = row["speedup"] * ratio
    # interval
    if a.n_units < 2 or b.n_units < 2:
        if pair.form == LOSS_FORM:
            row["interval_note"] += ("no interval: one pre-training run per arm (the interval resamples "
                                     "pre-training runs; run pretrain.seeds >= 2, better >= 3)")
        else:
            row["interval_note"] += "no interval: fewer than 2 units in an arm"
        lo = hi = math.nan
    else:
        boots = bootstrap_speedups(a, b, t, pair.better, n_resamples=n_resamples, rng=rng_for(seed, "speedup|" + label))
        lo, hi = _order_stat_interval(boots, level)
        n_never, n_already = int((boots == 0).sum()), int(np.isinf(boots).sum())
        row["interval_note"] += (f"{level * 100:g}% percentile bootstrap over {a.n_units}/{b.n_units} units "
                                 f"(A/B; {n_resamples} resamples; never reaches in {n_never}, already beats "
                                 f"in {n_already}); percentile intervals under-cover at 3-5 units")
        if not any(arm.nested for arm in (a, b)) and pair.form == GLUE_FORM:
            row["interval_note"] += "; one pre-training run per arm: covers fine-tuning seeds only"
    row.update(speedup_ci_low=lo, speedup_ci_high=hi)
    if math.isfinite(ratio):
        row.update(compute_ci_low=lo * ratio if not math.isnan(lo) else math.nan,
                   compute_ci_high=hi * ratio if not math.isnan(hi) else math.nan)
    # tests at T
    va, vb = a.at(t), b.at(t)
    row.update(mean_a_at_t=float(va.mean()) if va.size else math.nan,
               mean_b_at_t=float(vb.mean()) if vb.size else math.nan)
    p_b = p_a = math.nan
    if va.size >= 2 and vb.size >= 2:
        p_b = one_sided_p(vb, va, pair.better, n_resamples=n_resamples, rng=rng_for(seed, "pb|" + label))
        p_a = one_sided_p(va, vb, pair.better, n_resamples=n_resamples, rng=rng_for(seed, "pa|" + label))
        row["min_attainable_p"] = min_attainable_pvalue(va.size, vb.size, n_resamples)
    row.update(p_b_better=p_b, p_a_better=p_a)
    row["sd_run_a"], row["sd_seed_a"] = variance_components(a, t)
    row["sd_run_b"], row["sd_seed_b"] = variance_components(b, t) if vb.size else (math.nan, math.nan)
    verdict, reason = decide(p_b, p_a, lo, hi, alpha)
    notes = [reason]
    if not vb.size:
        notes.append(f"B has no value at T = {t}: no test")
    if pair.note:
        notes.append(pair.note)
    row.update(verdict=verdict, reason="; ".join(notes))
    return row
