"""The verdict of one steps-to-target comparison and its row: :class:`Pair` (what is compared),
:func:`evaluate_pair` (crossings, estimate, interval, calibrated test, regime) and :func:`decide`.

**Decision** (:func:`decide`) at the margin m (``analysis.efficiency_margin``, default 1.2: a fifth fewer
steps): *supported* when the interval's lower bound exceeds m, *not supported* when its upper bound is below
m, *inconclusive* otherwise. The row's verdict is the calibrated test's (:mod:`taco.stats.speedup_calibration`:
the studentised log speedup simulated at the margin from the row's own data; :func:`calibrated_verdict`),
the plain t interval (:func:`taco.stats.speedup.speedup_interval`) descriptive beside it;
:mod:`taco.stats.speedup_simulation` measures both on curves with known speedups (``taco efficiency
--calibrate``; ``tests/test_speedup_calibration.py``). The estimand, censoring and interval are
:mod:`taco.stats.speedup`'s. Torch-free.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from taco.stats.claim_rules import INCONCLUSIVE, NOT_DECIDABLE, NOT_RUN, NOT_SUPPORTED, SUPPORTED
from taco.stats.crossing_fragility import MAX_MOVE, SHIFT_SE, fragility_reason, target_fragility
from taco.stats.speedup import (
    ALREADY,
    ArmCurves,
    CODE_LEFT,
    CODE_RIGHT,
    COMPARED,
    GLUE_FORM,
    LOSS_FORM,
    PROBE_FORM,
    NEVER,
    NO_CURVE,
    REACHED,
    REFERENCE,
    crossing_step,
    speedup_interval,
    variance_components,
    welch_p_a_better,
)


# ---------------------------------------------------------------------------------------------
# the verdict and one comparison's row
# ---------------------------------------------------------------------------------------------
def decide(low: float, high: float, margin: float, *, n_right: int = 0, n_left: int = 0) -> tuple[str, str]:
    """The verdict of "A reaches B's level at T in at least ``margin`` times fewer steps" and why.

    ``low``/``high``: the speedup interval (nan: none). Supported when ``low > margin``, not supported
    when ``high < margin``, inconclusive otherwise (module docstring). ``n_right``/``n_left``: censored
    units, named in the reason.
    """
    cens = []
    if n_right:
        cens.append(f"{n_right} unit(s) of A never reach the target (extrapolated past their last point)")
    if n_left:
        cens.append(f"{n_left} unit(s) of A beat it at their first point (extrapolated before it)")
    tail = ("; " + "; ".join(cens)) if cens else ""
    if math.isnan(low) or math.isnan(high):
        return INCONCLUSIVE, "no interval (fewer than 2 units in an arm)" + tail
    if low > margin:
        return SUPPORTED, f"lower bound {_fmt_bound(low)} > margin {margin:g}" + tail
    if high < margin:
        return NOT_SUPPORTED, f"upper bound {_fmt_bound(high)} < margin {margin:g}" + tail
    return INCONCLUSIVE, f"interval [{_fmt_bound(low)}, {_fmt_bound(high)}] contains the margin {margin:g}" + tail


def _fmt_bound(x: float) -> str:
    return "inf" if x == math.inf else f"{x:.3g}"


@dataclass
class Pair:
    """One comparison: curves of B and A, the target step, the direction, labels.

    ``kind``: ``primary`` (the claim's verdict), ``secondary`` (another budget, verdict reported beside),
    ``curve`` (a validation point of B as the target: descriptive, no verdict) or ``other`` (an objective
    that no paper table names, ``a_objective``, against MLM: the rule's outcome, no claim of the paper).
    """

    claim_id: str
    form: str
    size: str
    fraction: float
    b: ArmCurves
    a: ArmCurves
    target_step: int | None
    better: str
    unit_of_value: str
    target_budget: str = ""
    paper_speedup: float = math.nan
    flops_per_step: tuple[float, float] = (math.nan, math.nan)
    note: str = ""
    kind: str = "primary"
    title: str = ""
    a_objective: str = COMPARED
    #: each run's plateau-exit step (pre-training seed -> step; inf: never within its points; absent: no
    #: context probe) of B and of A (``taco.stats.validation_points.PLATEAU_EXIT_GAP``)
    exit_b: dict[int, float] = field(default_factory=dict)
    exit_a: dict[int, float] = field(default_factory=dict)
    #: why the row cannot be decided at its T (an arm has no point there); the row is then not decidable
    missing: str = ""


def _unit_label(b: ArmCurves, a: ArmCurves, form: str) -> str:
    def one(arm: ArmCurves) -> str:
        if form in (LOSS_FORM, PROBE_FORM) or arm.nested:
            return "pre-training run"
        return "fine-tuning seed"
    ua, ub = one(b), one(a)
    return ua if ua == ub else f"B: {ua}, A: {ub}"


def _exits_text(exits: dict[int, float], ids: Sequence[int]) -> str:
    if not exits:
        return ""
    return ";".join(f"{i}:" + ("never" if exits[i] == math.inf else f"{exits[i]:.0f}") for i in ids if i in exits)


def _regime(pair: Pair, t: int, a_ids: Sequence[int], a_k: np.ndarray) -> str:
    """Per arm, whether its runs are on the bag-of-words plateau or past it where the comparison reads them:
    B at T, each A run at its crossing step (plateau exit from the context probe)."""
    parts = []
    for arm, exits, ids, at in (("B", pair.exit_b, pair.b.run_ids, [t] * len(pair.b.run_ids)),
                                ("A", pair.exit_a, a_ids, list(a_k))):
        known = [(i, x) for i, x in zip(ids, at) if i in exits]
        if not known:
            parts.append(f"{arm}: no context probe")
            continue
        past = sum(exits[i] <= x for i, x in known)
        where = "at T" if arm == "B" else "at its crossing"
        word = "past the plateau" if past == len(known) else "on the plateau" if past == 0 else "mixed"
        parts.append(f"{arm} {where}: {word} ({past} of {len(known)} runs past it)")
    return "; ".join(parts)


def evaluate_pair(pair: Pair, *, alpha: float, margin: float, columns: Sequence[str],
                  calibration_reps: int = 0, seed: int = 0) -> dict[str, Any]:
    """The table row of one comparison (``columns``): per-unit speedups, estimate, interval, verdict.

    ``alpha``: one-sided level (the t interval is 1 - 2 alpha); ``margin``: the minimum speedup of a
    supported claim. A unit of B without a finite value at T, or of A without a finite value at every step
    of its arm's grid, is left out and named in ``left_out``; the row rests on the rest (``n_units_*``).
    With ``calibration_reps`` > 0 the verdict of a primary, secondary or other row is the calibrated test's
    (:func:`taco.stats.speedup_calibration.calibrated_test`, ``seed`` its generator; the t rule's outcome
    stays in ``t_rule_verdict``); without it (or with fewer than 2 units in an arm) the t rule's. B
    ``curve`` pair gets no verdict (``descriptive``).
    """
    b, a, t = pair.b, pair.a, pair.target_step
    level = round(1.0 - 2.0 * alpha, 12)
    fa, fb = pair.flops_per_step
    row: dict[str, Any] = {c: math.nan for c in columns}
    row.update(claim_id=pair.claim_id, kind=pair.kind, form=pair.form, unit_of_value=pair.unit_of_value,
               better=pair.better, size=pair.size, fraction=pair.fraction, b=REFERENCE, a=pair.a_objective, target_step=t,
               target_budget=pair.target_budget, paper_speedup=pair.paper_speedup, ci_level=level, margin=margin,
               model_flops_per_step_b=fa, model_flops_per_step_a=fb, n_units_b=b.n_units, n_units_a=a.n_units,
               n_runs_b=b.n_runs, n_runs_a=a.n_runs, unit=_unit_label(b, a, pair.form),
               curve_steps=";".join(str(int(s)) for s in a.steps), interval_note="", reason="", unit_k="",
               unit_speedups="", estimate_bound="", title=pair.title, n_right_censored=0, n_left_censored=0,
               t_rule_verdict="", left_out="", plateau_exit_b=_exits_text(pair.exit_b, b.run_ids),
               plateau_exit_a=_exits_text(pair.exit_a, a.run_ids), regime="")
    if pair.missing:
        row.update(status=NO_CURVE, verdict=NOT_DECIDABLE, reason="not decidable: " + pair.missing)
        return row
    if t is None or not b.runs or not a.runs or t not in set(b.steps.tolist()) or a.steps.size == 0:
        why = pair.note or ("no target step" if t is None else
                            f"B has no value at T = {t}" if b.runs else "B has no curve")
        if not a.runs:
            why = pair.note or "A has no curve"
        row.update(status=NO_CURVE, verdict=NOT_RUN, reason="not run: " + why)
        return row
    va_all, units_all = b.at(t), a.units()
    ok_b, ok_a = np.isfinite(va_all), a.complete()
    left = []
    if not ok_b.all():
        left.append(f"B: {', '.join(n for n, ok in zip(b.unit_names(), ok_b) if not ok)} without a value at T = {t}")
    if not ok_a.all():
        left.append(f"A: {', '.join(n for n, ok in zip(a.unit_names(), ok_a) if not ok)} without a finite value at "
                    f"every step of the grid ({a.steps.size} points)")
    va, units_a = va_all[ok_b], units_all[ok_a]
    a_ids = [i for i, ok in zip(a.run_ids if a.nested or len(a.run_ids) == len(ok_a) else [], ok_a) if ok]
    row.update(n_units_b=int(va.size), n_units_a=int(units_a.shape[0]), left_out="; ".join(left))
    if not va.size or not units_a.shape[0]:
        row.update(status=NO_CURVE, verdict=NOT_RUN, reason="not run: no unit left in " +
                   ("B" if not va.size else "A") + " (" + "; ".join(left) + ")")
        return row
    iv = speedup_interval(a.steps, va, units_a, t, pair.better, level)
    status = iv.status
    n_right, n_left = int((status == CODE_RIGHT).sum()), int((status == CODE_LEFT).sum())
    log_k = math.log(t) - iv.log_s_units
    row.update(target_value=float(iv.target), speedup=float(iv.speedup), log_speedup_se=float(iv.se),
               df=float(iv.df), speedup_ci_low=float(iv.low), speedup_ci_high=float(iv.high),
               n_right_censored=n_right, n_left_censored=n_left,
               unit_k=";".join(("<" if s == CODE_LEFT else ">" if s == CODE_RIGHT else "") + f"{math.exp(k):.0f}"
                               for k, s in zip(log_k, status)),
               unit_speedups=";".join(f"{math.exp(x):.3g}" for x in iv.log_s_units),
               estimate_bound="<=" if n_right and not n_left else ">=" if n_left and not n_right else
               ("censored both ways" if n_left and n_right else ""))
    row["status"] = REACHED if not (n_left or n_right) else (NEVER if n_right == len(status) else
                                                             ALREADY if n_left == len(status) else "partly censored")
    mc = crossing_step(a.steps, units_a.mean(axis=0), float(iv.target), pair.better)
    row["mean_curve_k"] = mc.step if mc.step is not None else math.nan
    row["mean_curve_speedup"] = mc.speedup(t) if mc.status == REACHED else math.nan
    ratio = fa / fb if math.isfinite(fa) and math.isfinite(fb) and fb > 0 else math.nan
    row["model_flops_speedup"] = row["speedup"] * ratio
    row["model_flops_ci_low"] = row["speedup_ci_low"] * ratio
    row["model_flops_ci_high"] = row["speedup_ci_high"] * ratio
    vb_all = a.at(t)
    vb = vb_all[ok_a & np.isfinite(vb_all)] if vb_all.size else vb_all
    row.update(mean_b_at_t=float(va.mean()), mean_a_at_t=float(vb.mean()) if vb.size else math.nan,
               welch_p_a_better=welch_p_a_better(va, vb, pair.better) if vb.size else math.nan)
    if math.isfinite(row["log_speedup_se"]):
        row["p_at_least_margin"] = float(iv.p_at_least(margin))
    row["sd_run_b"], row["sd_seed_b"] = variance_components(b, t)
    row["sd_run_a"], row["sd_seed_a"] = variance_components(a, t) if vb.size else (math.nan, math.nan)
    if pair.exit_b or pair.exit_a:
        row["regime"] = _regime(pair, t, a_ids, np.exp(log_k))
    n_b, n_a = int(va.size), int(units_a.shape[0])
    row["interval_note"] = _interval_note(pair, level, row["df"], n_b, n_a, left)
    if pair.kind == "curve":
        row.update(verdict="descriptive", reason="a point of the speedup curve (no verdict)")
        return row
    verdict, reason = _verdict(row, pair, (a.steps, va, units_a), margin, alpha, calibration_reps, seed,
                               n_right, n_left)
    extra = [reason]
    if not vb.size:
        extra.append(f"A has no value at T = {t}")
    if pair.note:
        extra.append(pair.note)
    if left:
        extra.append(f"rests on {n_a}/{n_b} units (A/B)")
    row.update(verdict=verdict, reason="; ".join(extra))
    return row


def _verdict(row: dict[str, Any], pair: Pair, data: tuple, margin: float, alpha: float, calibration_reps: int,
             seed: int, n_right: int, n_left: int) -> tuple[str, str]:
    """A row's verdict and reason, its columns written into ``row``: the t rule, then (with ``calibration_reps``
    and 2+ units per arm) the calibrated test, then the flat-target check, which withholds either
    (:mod:`taco.stats.crossing_fragility`). ``data``: A's grid, B's values at T, A's unit curves."""
    steps, va, units_a = data
    t_verdict, t_reason = decide(row["speedup_ci_low"], row["speedup_ci_high"], margin, n_right=n_right, n_left=n_left)
    row["t_rule_verdict"] = t_verdict
    verdict, reason = t_verdict, t_reason
    if calibration_reps > 0 and va.size >= 2 and units_a.shape[0] >= 2:
        verdict, reason = _calibrated(row, (steps, va, units_a, pair.target_step, pair.better), margin, alpha,
                                      calibration_reps, seed, t_verdict, t_reason)
    fr = target_fragility(steps, va, units_a, pair.better)
    row.update(fragile=bool(fr.fragile), target_shift=float(fr.shift),
               crossing_move=float(math.expm1(float(fr.max_move))),
               unit_k_shifted=";".join(f"{math.exp(d):.0f}/{math.exp(u):.0f}" for d, u in zip(fr.log_k_down, fr.log_k_up)))
    if fr.fragile:
        return NOT_DECIDABLE, f"{fragility_reason(fr, pair.unit_of_value)}; the test alone: {verdict} ({reason})"
    return verdict, reason


def _interval_note(pair: Pair, level: float, df: float, n_b: int, n_a: int, left: Sequence[str]) -> str:
    """What a row's t interval rests on: the units, the level and df, a GLUE row's fine-tuning-only caveat,
    and the units left out."""
    notes = []
    if n_b < 2 or n_a < 2:
        notes.append(f"no interval: {n_a}/{n_b} units (A/B)" + (" (the interval is over pre-training runs; run "
                     "pretrain.seeds >= 3)" if pair.form in (LOSS_FORM, PROBE_FORM) else ""))
    else:
        notes.append(f"{level * 100:g}% t interval on log speedups over {n_a}/{n_b} units (A/B), "
                     f"B's target level propagated, df {df:.3g} (descriptive)")
        if pair.form == GLUE_FORM and not (pair.b.nested and pair.a.nested):
            notes.append("one fine-tuned pre-training run per arm: the units are fine-tuning seeds, so the "
                         "interval covers fine-tuning variance only, not the pre-training variance")
    if left:
        notes.append(f"rests on {n_a}/{n_b} units (A/B): " + "; ".join(left) + ", left out")
    return "; ".join(notes)


def _calibrated(row: dict[str, Any], data: tuple, margin: float, alpha: float, reps: int, seed: int,
                t_verdict: str, t_reason: str) -> tuple[str, str]:
    """The calibrated test of a row (``data``: steps, B's values at T, A's unit curves, T, better): its
    columns written into ``row``; returns (verdict, reason), the reason keeping the censoring note and the t
    rule's outcome."""
    from taco.stats.speedup_calibration import calibrated_test

    ct = calibrated_test(*data, margin, alpha, reps=reps, seed=seed)
    row.update(calibrated_p_supported=ct.p_supported, calibrated_p_not_supported=ct.p_not_supported,
               critical_value=ct.critical_value, calibration_mc_error=ct.mc_error, calibration_reps=ct.reps,
               berger_boos=int(ct.berger_boos), calibrated_ci_low=ct.low, calibrated_ci_high=ct.high,
               t_statistic=ct.t_obs)
    verdict, reason = calibrated_verdict(ct, alpha, margin)
    cens = t_reason.split("; ", 1)[1] if "; " in t_reason else ""
    return verdict, reason + ("; " + cens if cens else "") + f"; the t rule alone: {t_verdict}"


def calibrated_verdict(ct: Any, alpha: float, margin: float) -> tuple[str, str]:
    """Verdict and reason from a :class:`taco.stats.speedup_calibration.CalibratedTest` at the margin:
    supported when p(speedup <= margin) <= alpha, not supported when p(speedup >= margin) <= alpha,
    inconclusive otherwise."""
    how = (f"calibrated test, {ct.reps:,} simulated experiments at the margin (MC error {ct.mc_error:.1g})"
           + ("; Berger-Boos over B's run SD (+0.01)" if ct.berger_boos else ""))
    if ct.p_supported <= alpha:
        return SUPPORTED, f"p(speedup <= {margin:g}) = {ct.p_supported:.2g} <= {alpha:g} ({how})"
    if ct.p_not_supported <= alpha:
        return NOT_SUPPORTED, f"p(speedup >= {margin:g}) = {ct.p_not_supported:.2g} <= {alpha:g} ({how})"
    return INCONCLUSIVE, (f"p(speedup <= {margin:g}) = {ct.p_supported:.2g} and p(speedup >= {margin:g}) = "
                          f"{ct.p_not_supported:.2g}, both > {alpha:g} ({how})")


def speedup_rule_text(alpha: float, margin: float) -> str:
    """The decision rule of a steps-to-target claim in words (the claims page and the efficiency page); ``alpha``
    the one-sided level, ``margin`` the speedup the claim must exceed (``analysis.efficiency_margin``)."""
    lvl = f"{(1 - 2 * alpha) * 100:g}%"
    return (f"the speedup is the geometric mean over A's pre-training runs (or fine-tuning seeds, where each arm has "
            f"one fine-tuned run) of T / k, k the step where the run's own curve reaches B's mean value at T. "
            f"The verdict is a calibrated test: the studentised log speedup is simulated {10_000:,} times at "
            f"the margin {margin:g}x (analysis.efficiency_margin) from the row's own data (A's curve shape and "
            f"spreads, B's spread at T, the unit counts, censoring), and with at most 5 runs of B its SD is taken "
            f"at its 99% upper bound (Berger-Boos, p + 0.01); supported when p(speedup <= {margin:g}) <= "
            f"{alpha}, not supported when p(speedup >= {margin:g}) <= {alpha}, inconclusive otherwise; not "
            f"decidable (flat curves at the target) whatever the test says when moving B's target by +-{SHIFT_SE:g} "
            f"of its standard error (with A's point noise) moves a run's crossing step by more than "
            f"{MAX_MOVE * 100:g}% (taco.stats.crossing_fragility). The "
            f"bounds shown are the {lvl} bounds the test inverts to; the plain t interval is descriptive. One "
            "verdict per claim, at its primary target (E1: the largest budget both arms reached; E2/E3: the "
            "paper's 250k / 500k); secondary budgets and the speedup curve are reported beside it")
