"""claims.md: the claims page rendered from the claim rows of :mod:`taco.stats.claims`.

:func:`render_markdown` turns the rows of ``evaluate_claims`` (a DataFrame, ``level`` claim/task)
into the page: title and synthetic-data banner, :func:`page_warnings` (too few pre-training runs
to decide, zero variance), the summary table, the method, then per claim its rule, test, reason
and per-key table. The command that writes it: :mod:`taco.commands.claims`.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from taco.stats.analysis_config import AnalysisConfig
from taco.stats.claim_rules import VERDICTS, decision_level, fewest_seeds, verdict_label
from taco.stats.inference import min_attainable_pvalue
from taco.report.markdown_text import md_text
from taco.stats.claims import ZERO_VARIANCE_CAUSES
from taco.stats.efficiency_claims import STEPS_TO_TARGET
from taco.stats.aggregate import UNIT_FINETUNE, UNIT_PRETRAIN
from taco.registry import SCORE_KEY_LABELS


def unit_phrase(df: pd.DataFrame) -> str:
    """What the effects on the claims page are computed over, from the claim rows' ``sample_unit``:
    fine-tuning seeds, pre-training runs, or (mixed) each claim's own unit."""
    units = {u for x in df.get("sample_unit", pd.Series(dtype=str)) if isinstance(x, str) and x
             for u in x.split(" / ")}
    if units == {UNIT_FINETUNE}:
        return "over fine-tuning seeds (one pre-training run per arm)"
    if units == {UNIT_PRETRAIN}:
        return "over pre-training runs (each the mean of its fine-tuning seeds)"
    if units:
        return ("over each claim's statistical unit (fine-tuning seeds where a cell has one pre-training run, "
                "pre-training runs where it has several; each claim's reason says which)")
    return "over seeds"


def page_warnings(df: pd.DataFrame, cfg: AnalysisConfig) -> list[str]:
    """Warnings at the top of claims.md: replicated pre-training with too few runs to decide any claim
    (``pretrain.seeds`` of length 2: the smallest attainable p is 1/6), and identical scores across
    all seeds (zero variance) in a claim or one of its keys."""
    out = []
    claims = df[df["level"] == "claim"]
    few = {}
    for r in claims.itertuples():
        if r.kind == STEPS_TO_TARGET:  # decided by the calibrated test, not a permutation test
            continue
        unit = getattr(r, "sample_unit", "")
        n = min(int(r.n_a or 0), int(r.n_b or 0))
        if isinstance(unit, str) and UNIT_PRETRAIN in unit and 0 < n < fewest_seeds(cfg):
            few.setdefault(n, []).append(row_name(r, cfg))
    for n, ids in sorted(few.items()):
        out.append(f"{', '.join(ids)}: {n} pre-training runs per arm (pretrain.seeds of length {n}) can never "
                   f"decide a claim: the smallest attainable one-sided permutation p is 1 / C({2 * n}, {n}) = "
                   f"{min_attainable_pvalue(n, n, cfg.n_resamples):.3g} > alpha {cfg.alpha}; give pretrain.seeds at "
                   f"least {fewest_seeds(cfg)} entries (or none, to use fine-tuning seeds as the unit).")
    zv = [row_name(r, cfg) + ("" if r.level == "claim" else f" {SCORE_KEY_LABELS.get(r.scope, r.scope)}")
          + f" ({r.zero_variance})" for r in df.itertuples()
          if isinstance(getattr(r, "zero_variance", ""), str) and r.zero_variance]
    if zv:
        out.append(f"identical scores across all seeds (zero variance) in {', '.join(zv)}: suspicious "
                   f"({ZERO_VARIANCE_CAUSES}); check these runs before trusting their verdicts.")
    return out


def row_name(r: Any, cfg: AnalysisConfig) -> str:
    """A claim row's name in a list: its ``claim_id``, with the size where the row is another encoder family's
    (``C1 [modernbert_tiny]``; taco.stats.claims.evaluate_claims), so two rows of one claim read apart."""
    size = getattr(r, "size", "")
    family = isinstance(size, str) and size and size != cfg.roles.get(r.role)
    return f"{r.claim_id} [{size}]" if family else str(r.claim_id)


def _f(x: Any, nd: int = 2) -> str:
    return "n/a" if not isinstance(x, (int, float)) or not math.isfinite(x) else f"{x:.{nd}f}"


def _p(x: Any) -> str:
    return "n/a" if not isinstance(x, (int, float)) or not math.isfinite(x) else f"{x:.3g}"


def _n(x: Any) -> str:
    return "n/a" if not isinstance(x, (int, float)) or not math.isfinite(x) else f"{int(x)}"


def _speedup_cell(x: Any) -> str:
    """A steps-to-target claim's effect or interval end: ``3.96x``, ``unbounded`` (an infinite end), ``n/a``."""
    if isinstance(x, float) and math.isinf(x):
        return "unbounded"
    text = _f(x)
    return text if text == "n/a" else text + "x"


def _verdict_cell(r) -> str:
    """The verdict in bold, and how many of the claim's seeds (``n_a`` + ``n_b``: both arms, the
    ``n (A/B)`` column) have a degenerate run (``n_degenerate`` counts both arms together)."""
    scope = getattr(r, "verdict_scope", "")
    label = verdict_label(r.verdict, scope if isinstance(scope, str) else "")
    v = f"**{r.verdict}**" + label[len(r.verdict):]
    nd = int(r.n_degenerate) if isinstance(r.n_degenerate, (int, float)) and math.isfinite(r.n_degenerate) else 0
    if nd:
        v += f" ({nd} of the {_n(r.n_a)} + {_n(r.n_b)} seeds of A and B have a degenerate run)"
    return v


def _interval_words(cfg: AnalysisConfig) -> str:
    """The interval method named on the claims page."""
    if cfg.ci_method == "t":
        return ("Welch's t interval of the difference of means, scipy.stats.ttest_ind(equal_var=False)"
                ".confidence_interval")
    return f"{cfg.ci_method} bootstrap, scipy.stats.bootstrap, {cfg.n_resamples} resamples"


#: appended to every claim's name on the page when the tasks are synthetic
SYNTHETIC_CLAIM_TAG = " [on SYNTHETIC GLUE-format tasks]"


def synthetic_banner(cfg: AnalysisConfig) -> list[str]:
    """The claims page's opening lines about synthetic data (none when the tasks are real)."""
    if not cfg.synthetic_tasks:
        return []
    corpus = " and a synthetic pre-training corpus" if cfg.synthetic_corpus else ""
    return [f"**Synthetic data: these runs use this suite's SYNTHETIC GLUE-format tasks{corpus} (a smoke "
            "test). \"GLUE points\" below are points on those synthetic tasks; the verdicts test the pipeline, "
            "not the paper's claims, and nothing here is compared with the paper's numbers.**", ""]


def render_markdown(df: pd.DataFrame, cfg: AnalysisConfig) -> str:
    """claims.md: a summary table (verdicts, claims not run marked ``not run``, degenerate inputs
    named), the method, then per claim its rule, test, reason and per-key details. With synthetic
    tasks the title, an opening paragraph and every claim's name say so."""
    cl = int(round(cfg.confidence_level * 100))
    dl = f"{decision_level(cfg) * 100:g}%"
    claims = df[df["level"] == "claim"]
    glue_claims = claims[claims["kind"] != STEPS_TO_TARGET]
    steps = claims[claims["kind"] == STEPS_TO_TARGET]
    tag = SYNTHETIC_CLAIM_TAG if cfg.synthetic_tasks else ""
    lines = ["# The paper's claims on the reproduced numbers"
             + (" (SYNTHETIC GLUE-format tasks: a smoke test)" if tag else ""), "", *synthetic_banner(cfg),
             "A is the claim's subject (TACO in C1 and E1-E3), B its baseline. "
             f"Effects are mean(A) - mean(B) in GLUE points (x100) {unit_phrase(glue_claims)}. Decisions: one-sided "
             f"permutation tests (scipy.stats.permutation_test) at alpha = {cfg.alpha}, each with the {dl} "
             f"interval (1 - 2 alpha; method: {_interval_words(cfg)}) that matches a one-sided test at alpha; "
             f"the {cl}% CI is in claims.csv. Margin "
             f"{cfg.equivalence_margin} points; \"matches\" decided by {cfg.match_rule.replace('_', '-')}; "
             f"min_seeds = {cfg.min_seeds}; seed = {cfg.seed}."
             + (f" The steps-to-target claims ({', '.join(dict.fromkeys(steps['claim_id']))}) are decided by "
                "taco efficiency: their effect is A's speedup over B in steps (x), their interval the calibrated "
                "bounds, their p the calibrated test's (details: efficiency.md)." if not steps.empty else ""), "",
             f"| Claim | A vs B | scope | n (A/B) | effect | {dl} CI | p for / against | seeds per arm: least (80% power) | verdict |",
             "|---|---|---|---|---|---|---|---|---|"]
    warns = page_warnings(df, cfg)
    if warns:
        lines[-2:-2] = ["**Warnings**", "", *(f"- {w}" for w in warns), ""]
    for r in claims.itertuples():
        x = _speedup_cell if r.kind == STEPS_TO_TARGET else _f
        seeds = ("n/a (calibrated test)" if r.kind == STEPS_TO_TARGET else
                 f"{_n(r.fewest_seeds)} ({_n(r.seeds_for_power)})")
        lines.append(f"| {r.claim_id}: {r.claim}{tag} | {r.a} vs {r.b} | {r.scope or 'n/a'} | {_n(r.n_a)}/{_n(r.n_b)} | "
                     f"{x(r.effect)} | [{x(r.decision_ci_low)}, {x(r.decision_ci_high)}] | "
                     f"{_p(r.p_value)} / {_p(r.p_against)} | {seeds} | {_verdict_cell(r)} |")
    counts = claims["verdict"].value_counts()
    lines += ["", "Verdicts: " + ", ".join(f"{v}: {int(counts.get(v, 0))}" for v in VERDICTS)
              + ". `not run`: an arm of the claim was not in this configuration (the detail says which).", "",
              "**Seeds per arm**, e.g. `3 (36)`: the first number is the least number of units per arm (fine-tuning "
              "seeds, or pre-training runs where those are the unit) with which the claim's test can reach "
              f"p <= {cfg.alpha} at all; with fewer, even two arms that do not overlap give a larger p. The number "
              "in brackets is how many units per arm would give the test an 80% chance to decide the claim if the "
              "true effect and spread were the ones observed here: to support it when the effect lies on the claim's "
              "side of the boundary, to refute it when it lies on the other.", "",
              "How they are computed: the least n is the smallest n with 1 / C(2n, n) <= alpha (the smallest "
              "one-sided p of the exact permutation test; refuting C3 after Holm's correction over k score keys "
              "needs alpha / k); the bracket is the fewest equal arms at which the exact permutation test, "
              "simulated with the decision interval, decides the observed distance from the boundary (in units of "
              "the pooled SD) 80% of the time (the whole rule: p <= alpha and the interval past the boundary; "
              "simulated up to 5 seeds per arm, the t test's power beyond), at least the first number. From 3 "
              "seeds per arm the pooled SD is itself uncertain by a factor of about 2, so this number is an order "
              "of magnitude, not a plan. Each claim's section also gives the reverse: the smallest distance its "
              "own seeds detect.", "",
              "**A verdict's unit.** A verdict in brackets *one checkpoint per arm: pre-training variance not "
              "sampled* rests on fine-tuning seeds of one pre-training run per arm: it decides about those "
              "checkpoints, not about the objective (a second pre-training run can move it). The paper's grid "
              "(`config.yaml`) has one pre-training run per arm by design.", "",
              "Not checked as claims: Figure 6's learning-dynamics pattern (TACO keeps intra-context similarity "
              "high and the intra/inter gap large late in training, MLM does not): the paper gives neither values "
              "nor what \"high\"/\"large\" means, and the dynamics are measured on one pre-training run per "
              "objective (CIs over validation blocks), so there is no replicate-level test at a stated margin; "
              "see figure6. TACO vs BERT-NCE / INFOWORD: the paper's numbers are cited from Kong et al. (2020) "
              "and not available here, and \"competitive\" has no stated margin; Table 4 shows this suite's "
              "reimplementations measured beside TACO and MLM at equal steps and data where they were trained."]
    for r in claims.itertuples():
        lines += ["", f"## {r.claim_id}: {r.claim}{tag}", "",
                  f"- Source: {r.source}; size role: {r.role} ({md_text(r.size) if r.size else 'not run'})",
                  f"- A = {r.a}, B = {r.b}; scope: {r.scope or 'n/a'}",
                  f"- Rule: {r.rule}",
                  f"- Test: {r.test}",
                  f"- Verdict: {_verdict_cell(r)} - {r.reason}"]
        if isinstance(r.equivalence, str) and r.equivalence:
            lines.append(f"- Detail: {r.equivalence}")
        gap = getattr(r, "detectable_gap", math.nan)
        if isinstance(gap, (int, float)) and not math.isnan(gap):
            lines.append(f"- Power: with {_n(r.n_a)}/{_n(r.n_b)} seeds (A/B) the test cannot reach p <= {cfg.alpha}"
                         if math.isinf(gap) else
                         f"- Power: with {_n(r.n_a)}/{_n(r.n_b)} units (A/B) and the observed spread, the rule decides "
                         f"a true effect {_f(gap)} points or more from the claim's boundary 80% of the time "
                         "(taco.stats.power: the exact permutation test and the decision interval simulated); a "
                         "smaller one it would mostly leave inconclusive")
        if r.kind == STEPS_TO_TARGET:
            lines.append("- Secondary budgets, the GLUE-probe row, the speedup curve, every unit's crossing and the "
                         "simulated coverage: efficiency.md / efficiency.png")
        t = df[(df["level"] == "task") & (df["claim_id"] == r.claim_id) & (df["size"] == r.size)]
        if not t.empty:
            lines += ["", f"| score key | n (A/B) | mean A | mean B | effect | {dl} CI | Hedges' g | p | p (Holm) | verdict |",
                      "|---|---|---|---|---|---|---|---|---|---|"]
            for x in t.itertuples():
                lines.append(f"| {SCORE_KEY_LABELS.get(x.scope, x.scope)} | {x.n_a}/{x.n_b} | {_f(x.mean_a)} | "
                             f"{_f(x.mean_b)} | {_f(x.effect)} | [{_f(x.decision_ci_low)}, {_f(x.decision_ci_high)}] | "
                             f"{_f(x.hedges_g)} | {_p(x.p_value)} | {_p(x.p_holm)} | {x.verdict or 'detail'} |")
    return "\n".join(lines) + "\n"
