"""Whether a steps-to-target row's crossings are set by its data or by noise at a flat target.

A steps-to-target verdict reads, for every unit of A, the step where its curve reaches B's mean value at T
(:func:`taco.stats.speedup.unit_crossings`). Where both curves are flat at that level (B on a plateau at
T, A as flat where it crosses) the crossing step is decided by the last digits of the target: half a
standard error moves it by tens of percent or to "never", and the calibrated test's level fails there
(``taco.stats.speedup_simulation.EDGES``; false "supported" 0.068-0.083 at 5 runs per arm). Such a row is
*not decidable (flat curves at the target)*: a verdict would be a function of noise, not of the data.

**The check** (:func:`target_fragility`). Move B's target by +-``shift`` = :data:`SHIFT_SE` (0.5) times the
standard error with which a unit's curve meets it, sqrt(SE_B^2 + sd_point^2): SE_B = B's SD at T / sqrt(n_B)
(the target's own error), sd_point = the point noise of A's unit curves (the median absolute second
difference, scaled to an SD: every point a unit is read at carries it; only on grids of at least
:data:`MIN_NOISE_STEPS` steps, where a bend of the curve cannot pass for noise). Recompute every unit's crossing at
both shifted targets, censored units extrapolated as the estimate does (at most a factor 2 past their points,
so a unit that turns to "never" on a flat end segment moves by the factor 2). The row is fragile when any
unit's crossing step moves by more than :data:`MAX_MOVE` (5%) in either direction.

Why the point noise: with 3 runs B's sample SD is below a quarter of its true value one time in twenty, and
half of such a tiny SE moves nothing even on flat curves; every unit's value where it crosses carries the
evaluation's own noise, which is estimated from all of A's points and is stable at 3 runs.

**Checked** (``tests/test_crossing_fragility.py``; ``taco efficiency --calibrate`` prints the rate for every
scenario): "B and A flat where A crosses" is not decidable in >= 95% of simulated experiments at 3 and 5 runs
per arm; "B flat beyond T/m, A steep" (a plateau that A leaves steeply) and cpu-real's spreads almost never
(power kept within Monte Carlo error). Measured at 4,000 experiments (2026-12-07): flat/flat 0.978 (3 runs)
and 0.998 (5); the other loss scenarios 0 but the mildly skewed B's with sd_b 0.1 nats (0.10-0.11 at 3 runs,
0.01 at 5); the simulated GLUE curves (B's SD 0.5 points on 1.5-2 points per ln-step) 0.71-0.81 (five budgets,
runs as units) and 0.92-0.97 (two budgets, seeds as units): at such spreads half a standard error of the target
moves a crossing by 7-10%, so E2/E3 on fine-tuned budgets are rarely decidable, and each row says so.
Torch-free.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats as st

from taco.stats.speedup import unit_crossings

#: the target is moved by +- this many standard errors (of a unit's curve against B's target)
SHIFT_SE = 0.5
#: a crossing step moving by more than this fraction (either way) makes the row not decidable
MAX_MOVE = 0.05
#: the point noise enters the shift only on a grid of at least this many steps: on fewer (GLUE budgets, a
#: three-point curve) second differences measure the curve's bend, not its noise
MIN_NOISE_STEPS = 6


def point_noise_sd(a_units: np.ndarray) -> np.ndarray:
    """The SD of independent point noise on A's unit curves: the median absolute second difference along the
    steps over all units and steps, / (Phi^-1(0.75) sqrt(6)) (var of a second difference of independent
    noise = 6 sd^2; the median keeps a curved stretch of the curve from counting as noise).

    ``a_units``: (..., n_A, S), same unit as the values. Returns (...); zeros with fewer than 3 steps."""
    a_units = np.asarray(a_units, dtype=float)
    if a_units.shape[-1] < 3:
        return np.zeros(a_units.shape[:-2])
    d2 = np.diff(a_units, n=2, axis=-1)
    flat = d2.reshape(d2.shape[:-2] + (-1,))
    return np.median(np.abs(flat), axis=-1) / (st.norm.ppf(0.75) * math.sqrt(6.0))


@dataclass(frozen=True)
class Fragility:
    """The check of :func:`target_fragility` (leading dims (...) = independent comparisons)."""

    fragile: np.ndarray     # (...) bool: some unit's crossing moves by more than MAX_MOVE
    shift: np.ndarray       # (...) the target's move, value units (nats or points)
    max_move: np.ndarray    # (...) the largest |ln k(shifted) - ln k| over units and both directions
    log_k: np.ndarray       # (..., n_A) ln k at the observed target
    log_k_down: np.ndarray  # (..., n_A) ln k at target - shift
    log_k_up: np.ndarray    # (..., n_A) ln k at target + shift


def target_fragility(steps, b_at_t, a_units, better: str, *, shift_se: float = SHIFT_SE,
                     max_move: float = MAX_MOVE) -> Fragility:
    """The flat-target check of one or many comparisons (module docstring).

    ``steps``: A's grid (S,), ascending, > 0. ``b_at_t``: B's unit values at T (..., n_B). ``a_units``: A's
    unit curves (..., n_A, S), finite. ``better``: ``lower`` (a loss) or ``higher`` (a score). With one unit
    of B its SD is taken as 0 (the point noise alone sets the shift). ValueError for another ``better``."""
    steps = np.asarray(steps, dtype=float)
    b = np.asarray(b_at_t, dtype=float)
    a = np.asarray(a_units, dtype=float)
    n_b = b.shape[-1]
    target = b.mean(axis=-1)
    se_b = b.std(axis=-1, ddof=1) / math.sqrt(n_b) if n_b >= 2 else np.zeros(target.shape)
    noise = point_noise_sd(a) if steps.size >= MIN_NOISE_STEPS else np.zeros(target.shape)
    shift = shift_se * np.sqrt(se_b ** 2 + noise ** 2)
    log_k, _, _ = unit_crossings(steps, a, target, better)
    down, _, _ = unit_crossings(steps, a, target - shift, better)
    up, _, _ = unit_crossings(steps, a, target + shift, better)
    move = np.maximum(np.abs(down - log_k), np.abs(up - log_k)).max(axis=-1)
    return Fragility(move > math.log1p(max_move), shift, move, log_k, down, up)


def fragility_reason(fr: Fragility, unit: str) -> str:
    """The page's words for one fragile comparison (no leading dims): the shift, the largest move and every
    unit's crossing steps at target - shift / observed / + shift. ``unit``: the values' unit (``nats``)."""
    ks = "; ".join(f"{math.exp(d):.0f}/{math.exp(k):.0f}/{math.exp(u):.0f}"
                   for d, k, u in zip(fr.log_k_down, fr.log_k, fr.log_k_up))
    return (f"not decidable (flat curves at the target): moving B's target by +-{float(fr.shift):.3g} {unit} "
            f"({SHIFT_SE:g} SE) moves a crossing by {math.expm1(float(fr.max_move)) * 100:.0f}% (> "
            f"{MAX_MOVE * 100:g}%); A's crossing steps at target -/0/+ the shift: {ks}")
