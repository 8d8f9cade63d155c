"""Curves with known speedups, and the simulated coverage and level of :mod:`taco.stats.speedup`.

The suite checks its own statistics: :func:`calibrate` draws many replicate experiments from a
:class:`CurveModel` whose true speedup is known, runs the method users run
(:func:`taco.stats.speedup.speedup_interval`) on each, and reports how often the interval covers the
truth and how often "supported" is declared when the true speedup equals the margin (the level).
``tests/test_speedup_calibration.py`` asserts coverage >= 0.85 of a nominal 90% interval and false
"supported" <= 0.07 for the scenarios in :data:`SCENARIOS`; ``taco efficiency --calibrate`` prints
the same table for a user's own run counts and spreads, and ``efficiency.md`` shows it for the run's.

**The curve model.** A mean curve in log-step (nats for a loss, points for a score; ``sign`` +1 for a
loss that falls, -1 for a score that rises)::

    mu(s) = level - sign * (drift * ln(s / steps[0]) + depth * sigmoid((ln s - ln escape) / width))

a plateau that a run leaves at its ``escape`` step (``depth`` nats over ``width`` in ln-step), with a
slow ``drift`` on the plateau; ``depth = 0`` gives a log-linear curve (the GLUE form). A unit j of B is
``mu(s) + delta_j + eps`` with run offsets ``delta_j`` (SD ``sd_b``; ``skew_b`` != 0: a centred gamma
with that skewness, its sign the direction) and point noise ``eps`` (SD ``sd_point``, independent per
point: an evaluation's noise, or a fine-tuning seed's at each budget). A unit i of A is the same curve
run faster: ``mu(s * r_i) + eps`` with ``ln r_i ~ N(ln speedup, sd_log_a^2)``, so its own speedup over
B's mean curve is r_i (``sd_log_a``: when a run leaves the plateau). The target is ``mu(T)`` (B's
population mean at T).

**The truth** is ``speedup``: every unit of A is B's mean curve run ``r_i`` times faster and the
estimand is exp(E ln r_i). Point noise moves a unit's crossing on the grid; the simulations measure
what that, censoring (a unit that never reaches the target, or beats it at its first point) and B's
noisy target do to the interval.

**Known limit.** The interval is a t interval: where B's run offsets are strongly skewed toward
lower losses (an occasional MLM run leaving the plateau early) and A's runs agree, a mean of 3-5
values is too often above the true mean with a small spread, and "supported" at the margin is
declared more often than alpha (measured: skewness -1: ~10%, -2: ~16%, at 3 and 5 runs), and
skewed the other way "not supported" is (+1: ~9%, +2: ~15%; coverage 0.82-0.89; :data:`LIMITS`).
Skewness within +-0.3 keeps both (the checked scenarios). No interval for a mean is valid for every skewed distribution at 3 runs; the page
prints B's runs at T so that a reader sees an outlying run.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from taco.stats.speedup import HIGHER, LOWER, speedup_interval


@dataclass(frozen=True)
class CurveModel:
    """Parameters of simulated curves (module docstring); steps and escape in optimizer steps, values
    in the curve's unit (nats or GLUE points)."""

    steps: tuple[int, ...]
    target_step: int
    better: str = LOWER
    level: float = 5.86
    drift: float = 0.01
    depth: float = 1.5
    escape: float = 6000.0
    width: float = 0.35
    speedup: float = 1.2
    sd_log_a: float = 0.3
    sd_b: float = 0.0024
    skew_b: float = 0.0
    sd_point: float = 0.002
    #: an empirical mean curve instead of the formula: (steps, values), linear in ln-step between them and
    #: extrapolated along the end segments (:func:`model_like`: B's observed mean curve)
    curve: tuple[tuple[float, ...], tuple[float, ...]] | None = None
    #: A's own mean curve (steps, values), placed so that it crosses B's level mu(T) at T / speedup (a TACO
    #: curve steep where it crosses); None: A is B's mean curve run faster
    a_curve: tuple[tuple[float, ...], tuple[float, ...]] | None = None

    @property
    def sign(self) -> float:
        return 1.0 if self.better == LOWER else -1.0

    def mu(self, s: np.ndarray) -> np.ndarray:
        """The mean curve at steps ``s`` (any shape, > 0)."""
        ls = np.log(s)
        if self.curve is not None:
            xs, ys = np.log(np.asarray(self.curve[0], float)), np.asarray(self.curve[1], float)
            if xs.size == 1:
                return np.full(np.shape(ls), ys[0])
            out = np.interp(ls, xs, ys)
            lo_slope = (ys[1] - ys[0]) / (xs[1] - xs[0])
            hi_slope = (ys[-1] - ys[-2]) / (xs[-1] - xs[-2])
            out = np.where(ls < xs[0], ys[0] + lo_slope * (ls - xs[0]), out)
            return np.where(ls > xs[-1], ys[-1] + hi_slope * (ls - xs[-1]), out)
        sig = 1.0 / (1.0 + np.exp(-(ls - math.log(self.escape)) / self.width))
        return self.level - self.sign * (self.drift * (ls - math.log(self.steps[0])) + self.depth * sig)

    def _offsets(self, rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
        if self.sd_b == 0:
            return np.zeros(shape)
        if self.skew_b == 0:
            return self.sd_b * rng.standard_normal(shape)
        k = (2.0 / abs(self.skew_b)) ** 2  # gamma shape with skewness 2 / sqrt(k)
        g = (rng.gamma(k, 1.0, size=shape) - k) / math.sqrt(k)
        return self.sd_b * math.copysign(1.0, self.skew_b) * g

    def draw_b_at_t(self, rng: np.random.Generator, reps: int, n: int) -> np.ndarray:
        """B's unit values at T, shape (reps, n)."""
        mu_t = float(self.mu(np.array(self.target_step, dtype=float)))
        return mu_t + self._offsets(rng, (reps, n)) + self.sd_point * rng.standard_normal((reps, n))

    def draw_a(self, rng: np.random.Generator, reps: int, n: int) -> np.ndarray:
        """A's unit curves on the grid, shape (reps, n, S)."""
        r = np.exp(math.log(self.speedup) + self.sd_log_a * rng.standard_normal((reps, n, 1)))
        s = np.asarray(self.steps, dtype=float)
        if self.a_curve is None:
            mean = self.mu(s * r)
        else:
            own = replace(self, curve=self.a_curve, a_curve=None)
            mu_t = float(self.mu(np.array(self.target_step, dtype=float)))
            fine = np.exp(np.linspace(math.log(min(self.a_curve[0])) - 3, math.log(max(self.a_curve[0])) + 3, 4001))
            vals = own.mu(fine)
            hit = np.flatnonzero(self.sign * (mu_t - vals) >= 0)
            if not hit.size:
                raise ValueError("a_curve never reaches B's level at T")
            k0 = float(fine[hit[0]])  # a_curve's crossing of B's level
            mean = own.mu(s * r * k0 / self.target_step)  # r holds the speedup: unit i crosses at T / r_i
        return mean + self.sd_point * rng.standard_normal((reps, n, s.size))


def _median_log_width(low: np.ndarray, high: np.ndarray) -> float:
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        return float(np.median(np.log(high) - np.log(low)))


def simulate(model: CurveModel, n_b: int, n_a: int, *, reps: int, level: float = 0.9,
             margin: float | None = None, seed: int = 0) -> dict[str, Any]:
    """``reps`` replicate experiments of ``n_b`` and ``n_a`` units; the method's coverage of the truth
    and its rate of "supported" (lower bound > ``margin``; default: the truth itself, i.e. the level).

    Returns ``truth``, ``coverage`` (share of intervals containing the truth), ``supported`` (share with
    low > margin), ``not_supported`` (share with high < margin), ``censored`` (share of A's units
    censored), ``median_width`` (of ln high - ln low), ``reps``.
    """
    truth = model.speedup
    m = truth if margin is None else float(margin)
    rng = np.random.default_rng(seed)
    b = model.draw_b_at_t(rng, reps, n_b)
    a = model.draw_a(rng, reps, n_a)
    iv = speedup_interval(np.asarray(model.steps, float), b, a, model.target_step, model.better, level)
    return {"truth": truth, "margin": m, "coverage": float(np.mean((iv.low <= truth) & (truth <= iv.high))),
            "supported": float(np.mean(iv.low > m)), "not_supported": float(np.mean(iv.high < m)),
            "censored": float(np.mean(iv.status != 0)),
            "median_width": _median_log_width(iv.low, iv.high), "reps": reps}


LOSS_GRID = tuple(range(250, 4001, 250))
#: B's mean curve falling to 5.90 nats at T/m = 3,333 and flat beyond it (0.01 nats per ln-step)
FLAT_B = ((250.0, 3333.0, 4000.0, 8000.0), (7.0, 5.90, 5.90 - 0.01 * math.log(1.2), 5.90 - 0.01 * math.log(2.4)))
#: a TACO-like curve, steep where it crosses
STEEP_A = ((250.0, 1000.0, 2000.0, 4000.0), (7.0, 6.3, 5.3, 4.6))
#: the checked scenarios: name -> model (validation loss on cpu-real's grid; GLUE on two budgets / five)
SCENARIOS: dict[str, CurveModel] = {
    # MLM on its plateau at T (runs' SD 0.0024 nats), TACO's runs leaving it at different steps (SD ~0.3)
    "loss: cpu-real T=4000 spreads": CurveModel(LOSS_GRID, 4000, sd_b=0.0024, sd_log_a=0.45),
    # the T = 2,000 spreads: MLM 0.0005, TACO ~0.22 nats
    "loss: cpu-real T=2000 spreads": CurveModel(tuple(s for s in LOSS_GRID if s <= 2000), 2000, escape=4000,
                                                sd_b=0.0005, sd_log_a=0.35),
    # both arms spread alike at T (about 0.02 nats each)
    "loss: equal spreads": CurveModel(LOSS_GRID, 4000, escape=3000, sd_b=0.02, sd_log_a=0.03, sd_point=0.001),
    # B noisy and skewed, A constant (every A run the same speedup, no noise)
    "loss: mildly skewed B (+0.3), constant A": CurveModel(LOSS_GRID, 4000, escape=3000, sd_b=0.1, skew_b=0.3,
                                                           sd_log_a=0.0, sd_point=0.0),
    "loss: mildly skewed B (-0.3), constant A": CurveModel(LOSS_GRID, 4000, escape=3000, sd_b=0.1, skew_b=-0.3,
                                                           sd_log_a=0.0, sd_point=0.0),
    # GLUE average (points, higher is better), log-linear, units = pre-training runs on five budgets
    "glue: runs as units, 5 budgets": CurveModel((800, 1600, 2400, 3200, 4000), 4000, better=HIGHER, level=75.0,
                                                 drift=2.0, depth=0.0, sd_log_a=0.2, sd_b=0.4, sd_point=0.3),
    # GLUE average, one run per arm: units = fine-tuning seeds, two budgets (cpu-real's 2,000 and 4,000)
    "glue: seeds as units, 2 budgets": CurveModel((2000, 4000), 4000, better=HIGHER, level=43.0, drift=1.5,
                                                  depth=0.0, sd_log_a=0.0, sd_b=0.5, sd_point=0.5, speedup=1.5),
    # MLM on a plateau from T/m to T (0.01 nats per ln-step, cpu-real's drift), TACO steep where it crosses
    # (its own curve: ~1.4 nats per ln-step, as cpu-real's TACO runs between steps 1,000 and 2,000)
    "loss: B flat beyond T/m, A steep": CurveModel(LOSS_GRID, 4000, curve=FLAT_B, a_curve=STEEP_A, sd_b=0.0024,
                                                   sd_log_a=0.3, sd_point=0.002),
}


#: scenarios where the method does not keep its level (module docstring, "Known limit"); shown, not hidden
LIMITS: dict[str, CurveModel] = {
    f"loss: skewed B ({k:+g}), constant A": replace(SCENARIOS["loss: mildly skewed B (+0.3), constant A"], skew_b=k)
    for k in (-2.0, -1.0, 1.0, 2.0)
}
#: at the edge of the level: A as flat as B where it crosses (A = B's curve run faster, both on the plateau), so
#: a unit's crossing is set by 0.002-nat point noise on a 0.01 nats/ln-step slope; the calibrated test's false
#: "supported" at 5 runs per arm measured 0.068-0.083 over 400-1,500 experiments (docs/efficiency.md)
EDGES: dict[str, CurveModel] = {
    "loss: B and A flat where A crosses": CurveModel(LOSS_GRID, 4000, curve=FLAT_B, sd_b=0.0024, sd_log_a=0.3,
                                                     sd_point=0.002),
}


def calibration_table(models: dict[str, CurveModel], run_counts=((3, 3), (5, 5)), *, reps: int = 2000,
                      level: float = 0.9, seed: int = 0) -> list[dict[str, Any]]:
    """One row per (scenario, run counts): ``scenario, n_b, n_a`` and :func:`simulate`'s figures."""
    rows = []
    for i, (name, model) in enumerate(models.items()):
        for n_b, n_a in run_counts:
            rows.append({"scenario": name, "n_b": n_b, "n_a": n_a,
                         **simulate(model, n_b, n_a, reps=reps, level=level, seed=seed + 1000 * i + n_b)})
    return rows


def model_like(b_steps, b_mean, a_steps, target_step: int, better: str, sd_b: float, sd_log_a: float, *,
               speedup: float) -> CurveModel:
    """A :class:`CurveModel` of a user's own run: B's observed mean curve (``b_steps``, ``b_mean``) as the
    mean curve, A's grid, the direction and the spreads (B's SD at T in the values' unit, A's SD of log
    speedups), point noise 0; for ``efficiency.md``'s calibration and the verdict's self-check."""
    return CurveModel(tuple(int(s) for s in a_steps), int(target_step), better=better,
                      curve=(tuple(float(s) for s in b_steps), tuple(float(v) for v in b_mean)), sd_b=float(sd_b),
                      sd_log_a=float(sd_log_a), speedup=float(speedup), sd_point=0.0)
