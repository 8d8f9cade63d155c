"""The steps-to-target claims (E1-E3, decided by ``taco efficiency``) as rows of the claims table.

One claim system: ``taco claims --efficiency efficiency.csv`` adds to the rows of
:func:`taco.stats.claims.evaluate_claims` one ``level = claim`` row per ``primary`` row of ``efficiency.csv``,
with the same columns, so ``claims.csv``, the one summary table of ``claims.md`` and the run's end summary hold
C1-C7, S1 and E1-E3 alike. The A/B convention is the claims page's: A is the claim's subject (TACO), B its
baseline (MLM). The decision is not made again here: ``verdict`` and ``reason`` are the calibrated test's
(:mod:`taco.stats.speedup_decision`), ``effect`` is A's speedup over B in steps (x), ``decision_ci_low/high``
the bounds that test inverts to, ``p_value`` / ``p_against`` its p of "supported" / "not supported";
``ci_low/high`` are the descriptive t interval. Secondary budgets, the probe row and the speedup curve stay
on the efficiency page (``efficiency.md``). Torch-free.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from taco.registry import OBJECTIVE_LABELS
from taco.stats.analysis_config import AnalysisConfig
from taco.stats.claim_rules import ONE_CHECKPOINT, decision_level
from taco.stats.speedup import GLUE_FORM, LOSS_FORM, PROBE_FORM
from taco.stats.speedup_decision import speedup_rule_text

#: ``kind`` of a steps-to-target claim row in claims.csv (the GLUE-difference kinds are
#: :data:`taco.stats.claim_rules.CLAIM_KINDS`)
STEPS_TO_TARGET = "steps_to_target"
#: where each steps-to-target claim comes from (E1 is the suite's form of the paper's efficiency claim on the
#: validation loss; E2 / E3 the paper's own, on the GLUE average)
SOURCES = {"E1": "Sec. 5 (efficiency), the suite's validation-loss form",
           "E2": "Sec. 5, Tables 1 and 3 (BERT-small: TACO-50k matches MLM-250k)",
           "E3": "Sec. 5, Tables 1 and 3 (BERT-base: TACO-250k matches MLM-500k)"}
#: the claim's size role (the analysis spec's ``roles``); E1 is tested at every size that has both arms
ROLES = {"E1": "", "E2": "small", "E3": "base"}
#: the curve of a row in words (claims.csv ``scope``)
CURVES = {LOSS_FORM: "validation MLM loss", GLUE_FORM: "GLUE average", PROBE_FORM: "GLUE probe average"}
#: how the p of a steps-to-target claim is computed (claims.csv ``test``)
TEST_TEXT = ("calibrated test of the studentised log speedup (taco efficiency: simulated at the margin from the "
             "row's own curves and spreads; Berger-Boos over B's SD at 5 runs or fewer)")


def _num(x: Any) -> float:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return math.nan
    return v


def _count(x: Any) -> int:
    v = _num(x)
    return int(v) if math.isfinite(v) else 0


def _detail(r: Any) -> str:
    """The other p values of the row (``faster at all``, the paper's factor) and the regime, in words."""
    parts = []
    if math.isfinite(_num(getattr(r, "calibrated_p_faster", math.nan))):
        parts.append(f"p(speedup <= 1) = {_num(r.calibrated_p_faster):.3g}")
    factor = _num(getattr(r, "paper_factor", math.nan))
    if math.isfinite(factor) and math.isfinite(_num(getattr(r, "calibrated_p_paper_factor", math.nan))):
        parts.append(f"p(speedup <= the paper's {factor:g}x) = {_num(r.calibrated_p_paper_factor):.3g}")
    if isinstance(getattr(r, "regime", ""), str) and r.regime:
        parts.append(f"regime: {r.regime}")
    return "; ".join(parts)


#: a proxy row's scope (claims.csv ``verdict_scope``): what the suite measured instead of the paper's GLUE claim
PROXY_SCOPE = {LOSS_FORM: "the suite's validation-loss proxy, not the paper's GLUE claim",
               PROBE_FORM: "the suite's frozen-probe proxy, not the paper's fine-tuned GLUE claim"}
#: B on the bag-of-words plateau at T: the speedup grows with T (issue 64)
PLATEAU_SCOPE = "MLM on a plateau at T: a function of T, not a rate"


def steps_scope(form: str, regime: Any, b_nested: bool = True) -> str:
    """The scope words of a steps-to-target verdict (claims.csv ``verdict_scope``; efficiency.md's verdict cells):
    a proxy row says so (:data:`PROXY_SCOPE`), a row whose B runs sit on the bag-of-words plateau at T says the
    speedup is a function of T (``regime`` from :mod:`taco.stats.speedup_decision`), a GLUE row with one
    fine-tuned run per arm says its unit (:data:`taco.stats.claim_rules.ONE_CHECKPOINT`)."""
    parts = [PROXY_SCOPE[form]] if form in PROXY_SCOPE else []
    if form == GLUE_FORM and not b_nested:
        parts.append(ONE_CHECKPOINT)
    if isinstance(regime, str) and ("B at T: on the plateau" in regime or "B at T: mixed" in regime):
        parts.append(PLATEAU_SCOPE)
    return "; ".join(parts)


def claim_rows(efficiency: pd.DataFrame, cfg: AnalysisConfig) -> pd.DataFrame:
    """One claims-table row per ``primary`` row of ``efficiency`` (a frame of
    :func:`taco.stats.efficiency.read_table`), in its order, with the columns of
    :func:`taco.stats.claims.evaluate_claims`' rows (those without a meaning here are empty / nan).

    ``effect``: A's speedup over B (x); ``n_a`` / ``n_b``: the units the row rests on; ``mean_a`` /
    ``mean_b``: the arms' means at T in the curve's unit; ``scope``: the size, the curve and its target step T."""
    rows = []
    for r in efficiency[efficiency["kind"] == "primary"].itertuples():
        t = _num(r.target_step)
        margin = _num(r.margin) if math.isfinite(_num(r.margin)) else cfg.efficiency_margin
        rows.append({
            "claim_id": r.claim_id, "level": "claim", "claim": r.title, "source": SOURCES.get(r.claim_id, "Sec. 5"),
            "kind": STEPS_TO_TARGET, "role": ROLES.get(r.claim_id, ""), "size": r.size,
            "a": OBJECTIVE_LABELS.get(r.a, r.a), "b": OBJECTIVE_LABELS.get(r.b, r.b), "step_a": "",
            "step_b": int(t) if math.isfinite(t) else "",
            "scope": f"{r.size}: {CURVES.get(r.form, r.form)}" + (f" at T = {int(t)}" if math.isfinite(t) else ""),
            "unit": "speedup in steps (x)", "margin": margin, "rule": speedup_rule_text(cfg.alpha, margin),
            "confidence_level": cfg.confidence_level, "decision_level": decision_level(cfg),
            "n_a": _count(r.n_units_a), "n_b": _count(r.n_units_b), "seeds_a": "", "seeds_b": "",
            "mean_a": _num(r.mean_a_at_t), "mean_b": _num(r.mean_b_at_t), "effect": _num(r.speedup),
            "ci_low": _num(r.speedup_ci_low), "ci_high": _num(r.speedup_ci_high),
            "ci_method": "t interval on log speedups (descriptive)",
            "decision_ci_low": _num(r.calibrated_ci_low), "decision_ci_high": _num(r.calibrated_ci_high),
            "hedges_g": math.nan, "test": TEST_TEXT, "p_value": _num(r.calibrated_p_supported),
            "p_against": _num(r.calibrated_p_not_supported), "p_two_sided": math.nan, "p_holm": math.nan,
            "min_attainable_p": math.nan, "fewest_seeds": math.nan, "seeds_for_power": math.nan,
            "n_degenerate": 0, "equivalence": _detail(r), "sample_unit": r.unit if isinstance(r.unit, str) else "",
            "zero_variance": "", "verdict": r.verdict, "reason": r.reason if isinstance(r.reason, str) else "",
            "verdict_scope": steps_scope(r.form, r.regime, _count(r.n_runs_b) >= 2)})
    return pd.DataFrame(rows)
