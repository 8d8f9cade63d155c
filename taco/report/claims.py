"""The paper's claims, checked on the reproduced numbers.

``taco claims --aggregate-dir results/aggregate --analysis FILE --output-dir results`` writes
``claims.csv`` (one ``level = claim`` row per claim, plus ``level = task`` rows: per score key,
Holm-corrected across keys) and ``claims.md`` (verdicts, rules, reasons, settings).

Claims (text of Sec. 5 / Table 1 / Table 2 / Table 3 / the ablation; see FACTS.md):

====  ==========================================================================  ============
C1    TACO-50k matches MLM-250k (BERT-small; 5x fewer steps)                      match
C2    TACO-250k beats MLM-250k by about 1.2 average points (BERT-small)           improvement
C3    TACO on 25% of the data is competitive with MLM on all of it (MNLI, QQP,    competitive,
      QNLI, SST-2; at 250k)                                                       per task
C4    base: TACO-250k matches MLM-500k                                            match
C4b   base: TACO-100k matches MLM-250k                                            match
C5    concentrated TACO (TC on masked positions only) is below TACO (250k)        below
C6    MLM+TP is not better than MLM (250k)                                        not better
====  ==========================================================================  ============

Effect: delta = mean(A) - mean(B) of per-seed values in GLUE points (x100): the per-seed GLUE
average (over the keys the spec's tasks cover, labelled partial if fewer than nine) or, per task,
the primary metric. CI: ``scipy.stats.bootstrap`` of delta (two independent samples) at
``confidence_level``. Tests: ``scipy.stats.permutation_test`` (independent samples, exact when the
partitions fit in ``n_resamples``), one-sided against shifted nulls (delta = +-margin: TOST for
equivalence); alpha = 1 - confidence_level; per-task families Holm-corrected. Rules per kind
(delta_m = equivalence_margin, t = improvement_target, m = improvement_margin):

- match (equivalence): supported if the CI lies inside (-delta_m, +delta_m) and both TOST tests
  give p <= alpha; not supported if the CI lies entirely beyond one margin and the one-sided test
  beyond that margin gives p <= alpha. With ``match_rule: non_inferiority``: supported if CI low
  > -delta_m and p(delta > -delta_m) <= alpha; not supported if CI high < -delta_m likewise.
- competitive: the non-inferiority rule above, whatever ``match_rule`` says ("competitive" means
  not worse by more than the margin; being better does not contradict it).
- improvement: supported if CI low > 0 with p(delta > 0) <= alpha and the CI overlaps
  [t - m, t + m]; not supported if the CI lies entirely below t - m (or above t + m) with the
  matching one-sided test p <= alpha.
- below: supported if CI high < 0 with p(delta < 0) <= alpha; not supported if CI low > 0 with
  p(delta > 0) <= alpha, or equivalence within +-delta_m is shown (TOST).
- not better: supported if CI high < +delta_m with p(delta < delta_m) <= alpha (any gain is
  below the margin); not supported if CI low > 0 with p(delta > 0) <= alpha.
- anything else is inconclusive, and so is any claim with fewer than ``min_seeds`` seeds in a cell
  or a budget / variant / role that was not run (the reason names it).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from taco.report.cli import atomic_write_text, report_main
from taco.report.analysis_config import AnalysisConfig
from taco.report.stats import (
    average_keys,
    average_label,
    compare,
    fmt_fraction,
    holm,
    seed_averages,
)
from taco.report.tables import KEY_LABELS, OBJ_LABELS, TABLE2_KEYS

SUPPORTED, NOT_SUPPORTED, INCONCLUSIVE = "supported", "not supported", "inconclusive"
VERDICTS = (SUPPORTED, NOT_SUPPORTED, INCONCLUSIVE)


@dataclass(frozen=True)
class Arm:
    """One side of a comparison: objective, data fraction (None = the spec's reduced fraction), budget name."""

    objective: str
    fraction: float | None
    budget: str


@dataclass(frozen=True)
class Claim:
    """A claim of the paper: compare arm ``a`` with arm ``b`` in ``role``, by ``kind``, over the GLUE
    average (``per_task`` False) or per score key of ``keys`` (Holm across keys)."""

    id: str
    text: str
    source: str
    kind: str  # match | competitive | improvement | below | not_better
    role: str  # small | base
    a: Arm
    b: Arm
    per_task: bool = False
    keys: tuple[str, ...] | None = None


CLAIMS: tuple[Claim, ...] = (
    Claim("C1", "TACO-50k matches MLM-250k (5x fewer pre-training steps)",
          "Sec. 5 and Table 1 (74.9 vs 75.0)", "match", "small",
          Arm("taco", 1.0, "50k"), Arm("mlm", 1.0, "250k")),
    Claim("C2", "TACO-250k beats MLM-250k by about 1.2 average GLUE points",
          "Sec. 5 and Table 1 (76.2 vs 75.0)", "improvement", "small",
          Arm("taco", 1.0, "250k"), Arm("mlm", 1.0, "250k")),
    Claim("C3", "TACO on 25% of the data is competitive with MLM on all of it (4 largest tasks)",
          "Sec. 5 and Table 2", "competitive", "small",
          Arm("taco", None, "250k"), Arm("mlm", 1.0, "250k"), per_task=True, keys=TABLE2_KEYS),
    Claim("C4", "base size: TACO-250k matches MLM-500k (2x fewer steps)",
          "Sec. 5 and Table 3", "match", "base", Arm("taco", 1.0, "250k"), Arm("mlm", 1.0, "500k")),
    Claim("C4b", "base size: TACO-100k matches MLM-250k",
          "Sec. 5 and Table 3", "match", "base", Arm("taco", 1.0, "100k"), Arm("mlm", 1.0, "250k")),
    Claim("C5", "concentrated TACO (TC on masked positions only) is below TACO",
          "Sec. 5 ablation", "below", "small",
          Arm("taco_concentrated", 1.0, "250k"), Arm("taco", 1.0, "250k")),
    Claim("C6", "MLM+TP (also predicting unmasked tokens) is not better than MLM",
          "Sec. 5 ablation", "not_better", "small", Arm("mlm_tp", 1.0, "250k"), Arm("mlm", 1.0, "250k")),
)


# ---------------------------------------------------------------------------------------------
# rules
# ---------------------------------------------------------------------------------------------
def rule_text(kind: str, cfg: AnalysisConfig) -> str:
    """The decision rule of a claim kind with this spec's margins, in words."""
    d, cl, a = cfg.equivalence_margin, int(round(cfg.confidence_level * 100)), cfg.alpha
    t, m = cfg.improvement_target, cfg.improvement_margin
    if kind == "competitive" or (kind == "match" and cfg.match_rule == "non_inferiority"):
        return (f"non-inferiority, margin {d} points: supported if {cl}% CI low > -{d} and "
                f"p(delta > -{d}) <= {a}; not supported if CI high < -{d} and p(delta < -{d}) <= {a}")
    if kind == "match":
        return (f"equivalence, margin +-{d} points: supported if the {cl}% CI lies inside (-{d}, {d}) and "
                f"both TOST permutation tests give p <= {a}; not supported if the CI lies beyond a margin "
                f"and the one-sided test beyond it gives p <= {a}")
    if kind == "improvement":
        return (f"improvement of about {t} +- {m} points: supported if {cl}% CI low > 0, p(delta > 0) <= {a} "
                f"and the CI overlaps [{t - m:g}, {t + m:g}]; not supported if the CI lies below {t - m:g} "
                f"(or above {t + m:g}) and the one-sided test gives p <= {a}")
    if kind == "below":
        return (f"A below B: supported if {cl}% CI high < 0 and p(delta < 0) <= {a}; not supported if CI low > 0 "
                f"and p(delta > 0) <= {a}, or equivalence within +-{d} is shown (TOST)")
    if kind == "not_better":
        return (f"A not better than B, margin {d} points: supported if {cl}% CI high < {d} and "
                f"p(delta < {d}) <= {a}; not supported if CI low > 0 and p(delta > 0) <= {a}")
    raise ValueError(f"unknown claim kind {kind!r}")


def pvalue_set(cmp, cfg: AnalysisConfig) -> dict[str, float]:
    """Named one-sided p-values of a :class:`taco.report.stats.Comparison` used by the rules."""
    d, t, m = cfg.equivalence_margin, cfg.improvement_target, cfg.improvement_margin
    pg, pl = cmp.p_greater, cmp.p_less
    nan = math.nan
    return {
        "gt_neg_margin": pg.get(-d, nan), "lt_margin": pl.get(d, nan), "gt_margin": pg.get(d, nan),
        "lt_neg_margin": pl.get(-d, nan), "tost": _max(pg.get(-d, nan), pl.get(d, nan)),
        "gt0": pg.get(0.0, nan), "lt0": pl.get(0.0, nan),
        "lt_target_low": pl.get(t - m, nan), "gt_target_high": pg.get(t + m, nan),
    }


def _max(*xs: float) -> float:
    """Largest value; nan if any is nan (a TOST p needs both tests)."""
    return math.nan if any(not math.isfinite(x) for x in xs) else max(xs)


def _min(*xs: float) -> float:
    """Smallest finite value (nan if none)."""
    f = [x for x in xs if math.isfinite(x)]
    return min(f) if f else math.nan


def tests_for(kind: str, cfg: AnalysisConfig) -> list[tuple[float, str]]:
    """The one-sided permutation tests (shift, alternative) the rule of ``kind`` needs."""
    d, t, m = cfg.equivalence_margin, cfg.improvement_target, cfg.improvement_margin
    if kind == "competitive" or (kind == "match" and cfg.match_rule == "non_inferiority"):
        return [(-d, "greater"), (-d, "less")]
    return {
        "match": [(-d, "greater"), (d, "less"), (d, "greater"), (-d, "less")],
        "improvement": [(0.0, "greater"), (t - m, "less"), (t + m, "greater")],
        "below": [(0.0, "less"), (0.0, "greater"), (-d, "greater"), (d, "less")],
        "not_better": [(d, "less"), (0.0, "greater")],
    }[kind]


def decide(kind: str, ci_low: float, ci_high: float, p: Mapping[str, float],
           cfg: AnalysisConfig) -> tuple[str, str, float, float]:
    """Apply the rule of ``kind`` -> (verdict, reason, p supporting, p against)."""
    a, d = cfg.alpha, cfg.equivalence_margin
    t, m = cfg.improvement_target, cfg.improvement_margin
    lo, hi = ci_low, ci_high
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return INCONCLUSIVE, "no confidence interval (fewer than 2 seeds in a cell)", math.nan, math.nan
    ci = f"CI [{lo:.2f}, {hi:.2f}]"
    if kind == "competitive" or (kind == "match" and cfg.match_rule == "non_inferiority"):
        ps, pa = p["gt_neg_margin"], p["lt_neg_margin"]
        if lo > -d and ps <= a:
            return SUPPORTED, f"{ci} above -{d}, p={ps:.3g}", ps, pa
        if hi < -d and pa <= a:
            return NOT_SUPPORTED, f"{ci} below -{d}, p={pa:.3g}", ps, pa
        return INCONCLUSIVE, f"{ci} and p={ps:.3g} do not decide non-inferiority at margin {d}", ps, pa
    if kind == "match":
        ps = p["tost"]
        pa = _min(p["gt_margin"], p["lt_neg_margin"])
        if -d < lo and hi < d and ps <= a:
            return SUPPORTED, f"{ci} inside +-{d}, TOST p={ps:.3g}", ps, pa
        if lo > d and p["gt_margin"] <= a:
            return NOT_SUPPORTED, f"{ci} above +{d}: A better than B by more than the margin, p={p['gt_margin']:.3g}", ps, pa
        if hi < -d and p["lt_neg_margin"] <= a:
            return NOT_SUPPORTED, f"{ci} below -{d}: A worse than B by more than the margin, p={p['lt_neg_margin']:.3g}", ps, pa
        return INCONCLUSIVE, f"{ci}, TOST p={ps:.3g}: neither equivalence within +-{d} nor a difference beyond it shown", ps, pa
    if kind == "improvement":
        ps = p["gt0"]
        pa = _min(p["lt_target_low"], p["gt_target_high"])
        if lo > 0 and ps <= a and hi >= t - m and lo <= t + m:
            return SUPPORTED, f"{ci} > 0 (p={ps:.3g}) and consistent with {t} +- {m}", ps, pa
        if hi < t - m and p["lt_target_low"] <= a:
            return NOT_SUPPORTED, f"{ci} below {t - m:g}: improvement smaller than claimed, p={p['lt_target_low']:.3g}", ps, pa
        if lo > t + m and p["gt_target_high"] <= a:
            return NOT_SUPPORTED, f"{ci} above {t + m:g}: improvement larger than claimed, p={p['gt_target_high']:.3g}", ps, pa
        return INCONCLUSIVE, f"{ci}, p(delta > 0)={ps:.3g}: neither an improvement of about {t} nor its absence shown", ps, pa
    if kind == "below":
        ps = p["lt0"]
        pa = _min(p["gt0"], p["tost"])
        if hi < 0 and ps <= a:
            return SUPPORTED, f"{ci} < 0, p={ps:.3g}", ps, pa
        if lo > 0 and p["gt0"] <= a:
            return NOT_SUPPORTED, f"{ci} > 0: A above B, p={p['gt0']:.3g}", ps, pa
        if -d < lo and hi < d and p["tost"] <= a:
            return NOT_SUPPORTED, f"{ci} inside +-{d}: no meaningful difference, TOST p={p['tost']:.3g}", ps, pa
        return INCONCLUSIVE, f"{ci}, p(delta < 0)={ps:.3g}: not decided", ps, pa
    if kind == "not_better":
        ps, pa = p["lt_margin"], p["gt0"]
        if hi < d and ps <= a:
            return SUPPORTED, f"{ci} below +{d}, p={ps:.3g}", ps, pa
        if lo > 0 and pa <= a:
            return NOT_SUPPORTED, f"{ci} > 0: A better than B, p={pa:.3g}", ps, pa
        return INCONCLUSIVE, f"{ci}, p(delta < {d})={ps:.3g}: not decided", ps, pa
    raise ValueError(f"unknown claim kind {kind!r}")


# ---------------------------------------------------------------------------------------------
# evaluation
# ---------------------------------------------------------------------------------------------
def _arm_cell(cfg: AnalysisConfig, claim: Claim, arm: Arm) -> tuple[tuple | None, str, str]:
    """(cell key or None, label, reason when not run)."""
    size = cfg.roles.get(claim.role)
    frac = cfg.reduced_fraction if arm.fraction is None else arm.fraction
    lab = f"{OBJ_LABELS.get(arm.objective, arm.objective)}-{arm.budget}"
    if not math.isclose(frac, 1.0):
        lab += f" ({fmt_fraction(frac)} data)"
    if size is None:
        return None, lab, f"roles.{claim.role} is null: no size plays BERT-{claim.role}"
    step = cfg.budget_step(size, arm.budget)
    if step is None:
        return None, lab, f"budget {arm.budget} not run for size {size!r} (not in budget_names.{size})"
    if step != _paper_step(arm.budget):
        lab += f" [step {step}]"
    return (size, arm.objective, round(frac, 6), int(step)), lab, ""


def _paper_step(budget: str) -> int | None:
    from taco.report.tables import budget_steps_from_name

    return budget_steps_from_name(budget)


def _samples(per_seed: pd.DataFrame, cell: tuple, keys: Sequence[str]) -> tuple[list[float], list[int], int]:
    """Per-seed values of a cell: the mean over ``keys`` (one key: its primary value); returns
    (values, seeds, number of incomplete seeds excluded)."""
    size, obj, frac, step = cell
    sub = per_seed[(per_seed["size"] == size) & (per_seed["objective"] == obj)
                   & np.isclose(per_seed["fraction"].astype(float), frac) & (per_seed["step"] == step)]
    s = seed_averages(sub, keys)
    ok = s[np.isfinite(s["average"].astype(float))]
    return ok["average"].astype(float).tolist(), ok["seed"].astype(int).tolist(), len(s) - len(ok)


def _row(claim: Claim, level: str, scope: str, la: str, lb: str, ca, cb, cfg: AnalysisConfig) -> dict[str, Any]:
    return {"claim_id": claim.id, "level": level, "claim": claim.text, "source": claim.source,
            "kind": claim.kind, "role": claim.role, "size": cfg.roles.get(claim.role) or "",
            "a": la, "b": lb, "step_a": ca[3] if ca else "", "step_b": cb[3] if cb else "", "scope": scope,
            "unit": "GLUE points (x100)", "margin": cfg.equivalence_margin,
            "rule": rule_text(claim.kind, cfg), "confidence_level": cfg.confidence_level,
            "n_a": 0, "n_b": 0, "seeds_a": "", "seeds_b": "", "mean_a": math.nan, "mean_b": math.nan,
            "effect": math.nan, "ci_low": math.nan, "ci_high": math.nan, "ci_method": "", "hedges_g": math.nan,
            "test": "", "p_value": math.nan, "p_against": math.nan, "p_two_sided": math.nan,
            "p_holm": math.nan, "min_attainable_p": math.nan, "verdict": INCONCLUSIVE, "reason": ""}


def _fill(row: dict[str, Any], cmp, va, vb, sa, sb) -> None:
    row.update(n_a=cmp.n_a, n_b=cmp.n_b, seeds_a=";".join(map(str, sa)), seeds_b=";".join(map(str, sb)),
               mean_a=cmp.mean_a, mean_b=cmp.mean_b, effect=cmp.delta, ci_low=cmp.ci_low, ci_high=cmp.ci_high,
               ci_method=cmp.ci_method, hedges_g=cmp.hedges_g, p_two_sided=cmp.p_two_sided,
               min_attainable_p=cmp.min_p_one_sided)


def _few_seeds(n_a: int, n_b: int, cfg: AnalysisConfig) -> str:
    if min(n_a, n_b) < cfg.min_seeds:
        return f"too few seeds: A has {n_a}, B has {n_b} (min_seeds = {cfg.min_seeds})"
    return ""


def _test_name(kind: str, cfg: AnalysisConfig, holm_note: str = "") -> str:
    base = {"match": "TOST, two one-sided permutation tests" if cfg.match_rule == "equivalence"
            else "one-sided permutation test (non-inferiority)",
            "competitive": "one-sided permutation test (non-inferiority)",
            "improvement": "one-sided permutation test of delta > 0",
            "below": "one-sided permutation test of delta < 0",
            "not_better": f"one-sided permutation test of delta < {cfg.equivalence_margin}"}[kind]
    return base + " (scipy.stats.permutation_test, difference of means)" + holm_note


def evaluate_claim(claim: Claim, per_seed: pd.DataFrame, cfg: AnalysisConfig) -> list[dict[str, Any]]:
    """Rows for one claim: the claim row first, then per-task rows (Holm across keys)."""
    ca, la, ra = _arm_cell(cfg, claim, claim.a)
    cb, lb, rb = _arm_cell(cfg, claim, claim.b)
    avg_keys = average_keys(cfg)
    task_keys = [k for k in (claim.keys or avg_keys) if k in cfg.score_keys]
    summary_keys = tuple(task_keys) if claim.per_task else avg_keys
    row = _row(claim, "claim", average_label(summary_keys), la, lb, ca, cb, cfg)
    row["test"] = _test_name(claim.kind, cfg, ", Holm across score keys" if claim.per_task else "")
    missing = [r for r in (ra, rb) if r]
    for cell, lab in ((ca, la), (cb, lb)):
        if cell is not None and not cfg.has_variant(cell[0], cell[1], cell[2]):
            missing.append(f"variant {lab} not in the analysis spec")
    if claim.per_task and not task_keys:
        missing.append("none of " + ", ".join(claim.keys or ()) + " fine-tuned (tasks)")
    if missing:
        row["reason"] = "not run: " + "; ".join(dict.fromkeys(missing))
        return [row]

    # summary (claim row): the average
    va, sa, ia = _samples(per_seed, ca, summary_keys)
    vb, sb, ib = _samples(per_seed, cb, summary_keys)
    notes = []
    if ia or ib:
        notes.append(f"incomplete seeds excluded: A {ia}, B {ib}")
    rows = [row]
    if va and vb:
        cmp = compare(va, vb, one_sided=tests_for(claim.kind, cfg), confidence_level=cfg.confidence_level,
                      n_resamples=cfg.n_resamples, method=cfg.ci_method, seed=cfg.seed,
                      label=f"{claim.id}|avg|{';'.join(summary_keys)}")
        _fill(row, cmp, va, vb, sa, sb)
        if not claim.per_task:
            verdict, reason, ps, pa = decide(claim.kind, cmp.ci_low, cmp.ci_high, pvalue_set(cmp, cfg), cfg)
            row.update(verdict=verdict, p_value=ps, p_against=pa)
            notes.insert(0, reason)
    few = _few_seeds(len(va), len(vb), cfg)

    # per-task rows
    task_rows, comps = [], []
    for key in task_keys:
        tr = _row(claim, "task", key, la, lb, ca, cb, cfg)
        tr["test"] = _test_name(claim.kind, cfg, ", Holm across score keys") if claim.per_task else \
            "two-sided permutation test (detail), Holm across score keys"
        xa, ssa, _ = _samples(per_seed, ca, (key,))
        xb, ssb, _ = _samples(per_seed, cb, (key,))
        cmp = None
        if xa and xb:
            cmp = compare(xa, xb, one_sided=tests_for(claim.kind, cfg) if claim.per_task else [],
                          confidence_level=cfg.confidence_level,
                          n_resamples=cfg.n_resamples, method=cfg.ci_method, seed=cfg.seed,
                          label=f"{claim.id}|{key}")
            _fill(tr, cmp, xa, xb, ssa, ssb)
        task_rows.append(tr)
        comps.append(cmp)
    # Holm: every p-value family across the keys that have data
    psets = [pvalue_set(c, cfg) if c is not None else None for c in comps]
    names = list(next((p for p in psets if p is not None), {}).keys())
    adj = {n: holm([p[n] if p is not None else math.nan for p in psets]) for n in names}
    p2 = holm([c.p_two_sided if c is not None else math.nan for c in comps])
    for i, (tr, cmp) in enumerate(zip(task_rows, comps)):
        if cmp is None:
            tr["reason"] = "no runs for this score key in one of the cells"
            tr["verdict"] = INCONCLUSIVE if claim.per_task else ""
            continue
        if claim.per_task:
            padj = {n: adj[n][i] for n in names}
            v, reason, ps, pa = decide(claim.kind, cmp.ci_low, cmp.ci_high, padj, cfg)
            fs = _few_seeds(cmp.n_a, cmp.n_b, cfg)
            if fs:
                v, reason = INCONCLUSIVE, fs + "; " + reason
            raw_ps = decide(claim.kind, cmp.ci_low, cmp.ci_high, pvalue_set(cmp, cfg), cfg)[2]
            tr.update(verdict=v, reason=reason + " (Holm-adjusted p)", p_value=raw_ps, p_against=pa, p_holm=ps)
        else:
            tr.update(verdict="", p_value=cmp.p_two_sided, p_holm=p2[i],
                      reason="detail only: the claim is about the average")
    if claim.per_task:
        verdicts = [tr["verdict"] for tr in task_rows]
        if any(v == NOT_SUPPORTED for v in verdicts):
            row["verdict"] = NOT_SUPPORTED
            notes.insert(0, "not supported on " + ", ".join(KEY_LABELS[tr["scope"]] for tr in task_rows
                                                             if tr["verdict"] == NOT_SUPPORTED))
        elif verdicts and all(v == SUPPORTED for v in verdicts):
            row["verdict"] = SUPPORTED
            notes.insert(0, "supported on every score key (Holm-adjusted)")
        else:
            row["verdict"] = INCONCLUSIVE
            notes.insert(0, "undecided on " + ", ".join(KEY_LABELS[tr["scope"]] for tr in task_rows
                                                        if tr["verdict"] != SUPPORTED))
        row["p_value"] = max((tr["p_holm"] for tr in task_rows if math.isfinite(tr["p_holm"])), default=math.nan)
        row["p_holm"] = row["p_value"]
        row["p_against"] = min((tr["p_against"] for tr in task_rows if math.isfinite(tr["p_against"])),
                               default=math.nan)
    if few:
        row["verdict"] = INCONCLUSIVE
        notes.insert(0, few)
    if not (va and vb) and not few:
        row["verdict"] = INCONCLUSIVE
        notes.insert(0, "no complete seeds")
    mp = row["min_attainable_p"]
    if row["verdict"] == INCONCLUSIVE and isinstance(mp, float) and math.isfinite(mp) and mp > cfg.alpha:
        notes.append(f"with these seeds the smallest attainable one-sided permutation p is {mp:.3g} > alpha {cfg.alpha}")
    row["reason"] = "; ".join(notes)
    return rows + task_rows


def evaluate_claims(agg: Mapping[str, pd.DataFrame], cfg: AnalysisConfig,
                    claims: Sequence[Claim] = CLAIMS) -> pd.DataFrame:
    """All claims as one DataFrame (claim rows and their per-task rows, in claim order)."""
    rows = []
    for c in claims:
        rows += evaluate_claim(c, agg["per_seed"], cfg)
    return pd.DataFrame(rows)


def _f(x: Any, nd: int = 2) -> str:
    return "n/a" if not isinstance(x, (int, float)) or not math.isfinite(x) else f"{x:.{nd}f}"


def _p(x: Any) -> str:
    return "n/a" if not isinstance(x, (int, float)) or not math.isfinite(x) else f"{x:.3g}"


def render_markdown(df: pd.DataFrame, cfg: AnalysisConfig) -> str:
    """claims.md: a summary table, then per claim its rule, reason and per-task details."""
    cl = int(round(cfg.confidence_level * 100))
    lines = ["# The paper's claims on the reproduced numbers", "",
             f"Effects are mean(A) - mean(B) in GLUE points (x100) over fine-tuning seeds; {cl}% bootstrap CIs "
             f"(scipy.stats.bootstrap, {cfg.n_resamples} resamples, {cfg.ci_method}); permutation tests "
             f"(scipy.stats.permutation_test); alpha = {cfg.alpha}; equivalence margin {cfg.equivalence_margin} "
             f"points ({cfg.match_rule}); min_seeds = {cfg.min_seeds}; seed = {cfg.seed}.", "",
             "| Claim | A vs B | scope | n (A/B) | effect | CI | p for / against | verdict |",
             "|---|---|---|---|---|---|---|---|"]
    claims = df[df["level"] == "claim"]
    for r in claims.itertuples():
        lines.append(f"| {r.claim_id}: {r.claim} | {r.a} vs {r.b} | {r.scope} | {r.n_a}/{r.n_b} | "
                     f"{_f(r.effect)} | [{_f(r.ci_low)}, {_f(r.ci_high)}] | {_p(r.p_value)} / {_p(r.p_against)} | "
                     f"**{r.verdict}** |")
    for r in claims.itertuples():
        lines += ["", f"## {r.claim_id}: {r.claim}", "",
                  f"- Source: {r.source}; size role: {r.role} ({r.size or 'not run'})",
                  f"- A = {r.a}, B = {r.b}; scope: {r.scope}",
                  f"- Rule: {r.rule}",
                  f"- Test: {r.test}",
                  f"- Verdict: **{r.verdict}** - {r.reason}"]
        t = df[(df["level"] == "task") & (df["claim_id"] == r.claim_id)]
        if not t.empty:
            lines += ["", "| score key | n (A/B) | mean A | mean B | effect | CI | Hedges' g | p | p (Holm) | verdict |",
                      "|---|---|---|---|---|---|---|---|---|---|"]
            for x in t.itertuples():
                lines.append(f"| {KEY_LABELS.get(x.scope, x.scope)} | {x.n_a}/{x.n_b} | {_f(x.mean_a)} | "
                             f"{_f(x.mean_b)} | {_f(x.effect)} | [{_f(x.ci_low)}, {_f(x.ci_high)}] | "
                             f"{_f(x.hedges_g)} | {_p(x.p_value)} | {_p(x.p_holm)} | {x.verdict or 'detail'} |")
    return "\n".join(lines) + "\n"


def _write_claims(agg, cfg, args) -> list[Path]:
    df = evaluate_claims(agg, cfg)
    out = Path(args.output_dir)
    atomic_write_text(out / "claims.csv", df.to_csv(index=False, float_format="%.6g"))
    atomic_write_text(out / "claims.md", render_markdown(df, cfg))
    for r in df[df["level"] == "claim"].itertuples():
        print(f"{r.claim_id}: {r.verdict}")
    return [out / "claims.csv", out / "claims.md"]


def main(argv: list[str] | None = None) -> int:
    """``taco claims``: aggregate CSVs + analysis spec -> claims.csv and claims.md."""
    return report_main("claims", __doc__.split("\n")[0], _write_claims, argv)

if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
