"""The efficiency page in words: the table of speedups with their intervals and verdicts (``efficiency.md``), the
rule, the speedup curve's trend and the steps-to-target section of the claims page, from the rows of
``efficiency.csv`` (:mod:`taco.stats.efficiency`; the command :mod:`taco.commands.efficiency`). Torch-free."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from taco.families import DEFAULT_FAMILY, FAMILIES
from taco.stats.analysis_config import AnalysisConfig
from taco.stats.claim_rules import verdict_label
from taco.stats.efficiency_claims import steps_scope
from taco.stats.validation_points import PLATEAU_EXIT_GAP
from taco.stats.speedup import PROBE_FORM
from taco.stats.speedup_decision import speedup_rule_text
from taco.report.style import objective_label


# ---------------------------------------------------------------------------------------------
# outputs
# ---------------------------------------------------------------------------------------------
def _f(x: Any, nd: int = 3) -> str:
    if isinstance(x, (int, float)) and x == math.inf:
        return "inf"
    return "n/a" if not isinstance(x, (int, float)) or not math.isfinite(x) else f"{x:.{nd}g}"



def _n(x: Any) -> str:
    """A count (numpy or Python, possibly NaN) as ``3`` or ``n/a``."""
    try:
        return str(int(x))
    except (TypeError, ValueError):
        return "n/a"


def _finite(x: Any) -> bool:
    return isinstance(x, (int, float)) and math.isfinite(x)


def estimate_text(r: Any) -> str:
    """The estimate with the interval the verdict uses, in words a reader can check: ``2.56 [2.1, 3.0]``
    (the calibrated test's bounds; the t interval where no calibrated test ran), ``no TACO run reached the
    target within its steps (extrapolated 0.84x)`` when every unit of A is right-censored, ``1.37 (no
    interval: 1/1 units)`` without an interval."""
    est = _f(r.speedup)
    n_a = int(r.n_units_a) if _finite(r.n_units_a) else 0
    if getattr(r, "status", "") == "never reaches" and n_a:
        return f"no {objective_label(r.a)} run reached the target within its steps (extrapolated {est}x)"
    if not _finite(r.speedup):
        return "n/a"
    cens = ""
    if _finite(r.n_right_censored) and _finite(r.n_left_censored) and (r.n_right_censored or r.n_left_censored):
        cens = f", {int(r.n_right_censored) + int(r.n_left_censored)} of {n_a} units extrapolated"
    low, high = getattr(r, "calibrated_ci_low", math.nan), getattr(r, "calibrated_ci_high", math.nan)
    if not (_finite(low) or low == math.inf) or not (_finite(high) or high == math.inf):
        low, high = r.speedup_ci_low, r.speedup_ci_high
    if not (_finite(low) and (_finite(high) or high == math.inf)):
        return f"{est} (no interval: {n_a}/{int(r.n_units_b)} units{cens})"
    return f"{est} [{_f(low)}, {_f(high)}]" + (f" ({cens[2:]})" if cens else "")


#: a t interval whose ends lie further apart than this factor says nothing: the page prints the unit count
UNINFORMATIVE_RATIO = 1000.0


def t_interval_text(r: Any) -> str:
    """The plain t interval (descriptive), ``[2.38, 2.75]``; ``none`` without one; ``no interval: 2/2 units
    (df 1.02)`` when its ends lie more than :data:`UNINFORMATIVE_RATIO` apart (too few units to bound the
    speedup: a number such as ``[1.78e-09, 2.72e+08]`` would only look like one)."""
    if not (_finite(r.speedup_ci_low) and (_finite(r.speedup_ci_high) or r.speedup_ci_high == math.inf)):
        return "none"
    if r.speedup_ci_low <= 0 or r.speedup_ci_high / r.speedup_ci_low > UNINFORMATIVE_RATIO:
        df = f", df {_f(r.df)}" if _finite(getattr(r, "df", math.nan)) else ""
        return f"no interval: {_n(r.n_units_a)}/{_n(r.n_units_b)} units{df}"
    return f"[{_f(r.speedup_ci_low)}, {_f(r.speedup_ci_high)}]"


CLAIM_TEXT = {
    "E1": "A (TACO) reaches B's (MLM's) validation MLM loss at T in fewer steps",
}



def rows_of_kind(df: pd.DataFrame, *kinds: str) -> pd.DataFrame:
    """The rows of ``efficiency.csv`` of the given ``kind`` values (primary, secondary, curve, other)."""
    return df[df["kind"].isin(kinds)]



def trend_sentence(curve: pd.DataFrame) -> str:
    """Whether the speedup grows, holds or shrinks with the target (descriptive): the curve's first
    and last speedups and their ratio (> 1.1 grows, < 1/1.1 shrinks, else holds)."""
    c = curve[np.isfinite(curve["speedup"].astype(float))].sort_values("target_step")
    if len(c) < 2:
        return "The speedup curve has fewer than two targets."
    s0, s1 = float(c["speedup"].iloc[0]), float(c["speedup"].iloc[-1])
    t0, t1 = int(c["target_step"].iloc[0]), int(c["target_step"].iloc[-1])
    ratio = s1 / s0
    word = "grows" if ratio > 1.1 else "shrinks" if ratio < 1 / 1.1 else "holds"
    return (f"The speedup {word} with the target: {s0:.3g}x at T = {t0} and {s1:.3g}x at T = {t1} "
            f"(descriptive; each point's interval is in efficiency.csv, kind 'curve').")



def family_section(df: pd.DataFrame, families: Mapping[str, str]) -> list[str]:
    """Lines of "Does TACO's speedup carry over to other encoders?": E1's primary row of every size, with its
    encoder family (``families``: size -> architecture), when the run has more than one family; else none."""
    from taco.report.markdown_text import md_text

    prim = rows_of_kind(df, "primary")
    prim = prim[prim["claim_id"] == "E1"]
    if len({families.get(s, DEFAULT_FAMILY) for s in prim["size"]}) < 2:
        return []
    lines = ["## Does TACO's speedup carry over to other encoders? (E1 per encoder family)", "",
             "The same preset, corpus, tokenizer, steps, batch and recipe; only the encoder family differs "
             "(docs/families.md). One verdict per family, by the same rule.", "",
             "| family | size | T | speedup | n runs (TACO/MLM) | mean TACO / MLM loss at T | verdict |",
             "|---|---|---|---|---|---|---|"]
    order = {name: i for i, name in enumerate(FAMILIES)}
    for r in sorted(prim.itertuples(), key=lambda r: order.get(families.get(r.size, DEFAULT_FAMILY), 99)):
        fam = families.get(r.size, DEFAULT_FAMILY)
        t = int(r.target_step) if isinstance(r.target_step, (int, float)) and math.isfinite(r.target_step) else "n/a"
        lines.append(f"| {FAMILIES[fam].label if fam in FAMILIES else fam} | {md_text(r.size)} | {t} | {estimate_text(r)} | "
                     f"{r.n_units_a}/{r.n_units_b} | {_f(r.mean_a_at_t, 4)} / {_f(r.mean_b_at_t, 4)} | **{r.verdict}** |")
    return lines + [""]


def _kind_label(r: Any) -> str:
    """A row's kind as the page names it: ``other: <objective>``; the GLUE-probe row ``secondary (GLUE probe)``."""
    from taco.report.markdown_text import md_text

    if r.kind == "other":
        return f"other: {md_text(objective_label(r.a))}"
    return f"{r.kind} (GLUE probe)" if r.form == PROBE_FORM else r.kind


def _claims_tables(df: pd.DataFrame, cfg: AnalysisConfig, lvl: str, label: str | None) -> list[str]:
    """The page's head: title, terms, the claims' verdict table, the rule and the descriptive details."""
    from taco.report.markdown_text import md_text

    lines = ["# Steps-to-target speedups (TACO against MLM)", "",
             *([f"**{label}**: these numbers only show that the pipeline works.", ""] if label else []),
             "Terms: A is TACO (the claim's subject), B is MLM (its baseline), as on the claims page. A **unit** is one pre-training run (a fine-tuning seed where each arm has "
             "one fine-tuned run); **k** is the step at which a unit of A reaches B's mean value at the target step "
             "**T**, so its speedup is T / k. The **critical value** is the simulated quantile the t statistic must "
             "pass; **Berger-Boos**: each p is the largest over plausible SDs of B, plus 0.01. A step **plays** a paper "
             "budget (50k, 250k) when `analysis.budget_names` maps that name to it. More: docs/efficiency.md and "
             "docs/glossary.md in the repository.", "",
             f"| verdict | claim | kind | size | T | speedup [{lvl} calibrated bounds] | calibrated p (<= / >= "
             f"{cfg.efficiency_margin:g}x) | n units (A/B) | paper |",
             "|---|---|---|---|---|---|---|---|---|"]
    shown = rows_of_kind(df, "primary", "secondary", "other")
    for r in shown.itertuples():
        t = int(r.target_step) if _finite(r.target_step) else "n/a"
        budget = f" ({md_text(r.target_budget)})" if r.target_budget else ""
        kind = _kind_label(r)
        p = (f"{_f(r.calibrated_p_supported, 2)} / {_f(r.calibrated_p_not_supported, 2)}"
             if _finite(r.calibrated_p_supported) else "not run")
        verdict = r.verdict if r.kind == "primary" else f"{_kind_label(r)}: {r.verdict}"
        verdict = f"**{verdict}**" + _scope_words(r)
        lines.append(f"| {verdict} | {r.claim_id} | {kind} | {md_text(r.size)} | {t}{budget} | {estimate_text(r)} | "
                     f"{p} | {_f(r.n_units_a)}/{_f(r.n_units_b)} | {_f(r.paper_speedup)} |")
    lines += ["", f"Rule (alpha = {cfg.alpha}, margin {cfg.efficiency_margin:g}x): "
              + speedup_rule_text(cfg.alpha, cfg.efficiency_margin) + ".", "",
              "Details (descriptive):", "",
              f"| claim | kind | size | T | target (B's mean at T) | t interval [{lvl}] | k per unit of A | "
              "model-FLOPs / wall-clock speedup | mean A / B at T | regime (context probe) |",
              "|---|---|---|---|---|---|---|---|---|---|"]
    for r in shown.itertuples():
        t = int(r.target_step) if _finite(r.target_step) else "n/a"
        kind = _kind_label(r)
        lines.append(f"| {r.claim_id} | {kind} | {md_text(r.size)} | {t} | {_f(r.target_value, 4)} | "
                     f"{t_interval_text(r)} | {r.unit_k or 'n/a'} | {_f(r.model_flops_speedup)} / "
                     f"{_f(r.wall_speedup)} | {_f(r.mean_a_at_t, 4)} / {_f(r.mean_b_at_t, 4)} | "
                     f"{md_text(r.regime) or 'no context probe'} |")
    return lines + [""]


def _scope_words(r: Any) -> str:
    """`` (scope)`` after a row's verdict (:func:`taco.stats.efficiency_claims.steps_scope`); nothing for a row
    that was not run."""
    scope = steps_scope(r.form, r.regime, _finite(r.n_runs_b) and float(r.n_runs_b) >= 2)
    return verdict_label(r.verdict, scope)[len(r.verdict):]


def _claim_section(df: pd.DataFrame, r: Any, lvl: str) -> list[str]:
    """One primary claim's section: verdict, calibrated test, the paper's numbers by the same test, regime,
    per-unit speedups, FLOPs and wall-clock ratios, and the speedup curve's trend."""
    from taco.report.markdown_text import md_text

    lines = [f"## {r.claim_id} ({md_text(r.size)}): {md_text(r.title)}", "",
             f"- Verdict: **{r.verdict}**" + _scope_words(r) + f" - {r.reason}",
             (f"- Calibrated test: t = {_f(r.t_statistic)}, critical value {_f(r.critical_value)} (supported "
              f"needs t above it), p(speedup <= m) = {_f(r.calibrated_p_supported, 2)}, p(speedup >= m) = "
              f"{_f(r.calibrated_p_not_supported, 2)}, Monte Carlo error {_f(r.calibration_mc_error, 2)} over "
              f"{_f(r.calibration_reps)} simulated experiments; its {lvl} bounds [{_f(r.calibrated_ci_low)}, "
              f"{_f(r.calibrated_ci_high)}]; the plain t interval: {t_interval_text(r)} (descriptive; the t rule "
              f"alone: {r.t_rule_verdict or 'n/a'})" if _finite(r.calibrated_p_supported) else
              "- Calibrated test: not run (fewer than 2 units in an arm)"),
             *([f"- The paper's numbers, by the same test: p(speedup <= 1) = {_f(r.calibrated_p_faster, 3)} "
                f"(faster at all); " + (f"p(speedup <= {_f(r.paper_factor)}) = {_f(r.calibrated_p_paper_factor, 3)} "
                                       "(the paper's factor); " if _finite(r.paper_factor) else
                                       "the paper's factor: no role (analysis.roles) for this size; ")
                + f"p(speedup <= {_f(r.margin)}) = {_f(r.calibrated_p_supported, 3)} (the margin)"
                + (". With B at 5 runs or fewer each p includes the +0.01 of the Berger-Boos bound, so no p falls "
                   "below 0.01; a p within 0.005 of it is almost all that term (B's SD taken at its 99% upper "
                   "bound), not evidence of a precisely estimated speedup" if str(r.berger_boos).lower() in ("true", "1", "1.0")
                   else "")]
               if _finite(getattr(r, "calibrated_p_faster", float("nan"))) else []),
             f"- Regime: {md_text(r.regime) or 'no context probe in these checkpoints'}; plateau-exit step "
             f"per run (order gap > {PLATEAU_EXIT_GAP:g} nats; 'never': not within its points): A "
             f"{r.plateau_exit_a or 'n/a'}, B {r.plateau_exit_b or 'n/a'}",
             *([f"- Left out: {md_text(r.left_out)}"] if r.left_out else []),
             f"- Per-unit speedups of A: {r.unit_speedups or 'n/a'} (crossing steps {r.unit_k or 'n/a'}; "
             "'>' never reaches the target, extrapolated; '<' beats it at the first point, extrapolated)",
             "- Where A's mean curve reaches the target (secondary, not the estimate): "
             + (f"{_f(r.mean_curve_speedup)}x (k = {_f(r.mean_curve_k, 4)})" if _finite(r.mean_curve_k)
                else "not within its points"),
             f"- Unit: {r.unit}; interval: {r.interval_note or 'n/a'}",
             f"- Model FLOPs per step A / B: {_f(r.model_flops_per_step_a)} / {_f(r.model_flops_per_step_b)}; "
             f"wall-clock step time B / A: {_f(r.wall_time_ratio)} "
             + ("(benchmarks/step_time.py, side by side in one run)" if math.isfinite(r.wall_time_ratio)
                else "(not measured: run benchmarks/step_time.py and pass --step-times)"),
             ""]
    curve = df[(df["kind"] == "curve") & (df["claim_id"] == r.claim_id) & (df["size"] == r.size)]
    if not curve.empty:
        lines += ["- " + trend_sentence(curve), ""]
    return lines


def _calibration_section(calibration: Sequence[Mapping[str, Any]], cfg: AnalysisConfig, lvl: str) -> list[str]:
    """The diagnostic: the plain t interval simulated at this run's counts and spreads."""
    from taco.report.markdown_text import md_text

    lines = ["## Diagnostic: the plain t interval simulated at this run's counts and spreads", "",
             "Not a veto: the verdict above is the calibrated test's. Curves with a known speedup equal to the "
             "margin, drawn with this run's numbers of units and spreads (B's SD at T, the SD of A's log "
             "speedups) from the documented curve model (taco.stats.speedup_simulation); the rates are the "
             f"t interval's over the simulated experiments. Nominal: coverage {lvl}, false 'supported' "
             f"{cfg.alpha:g}.", "",
             "| claim | size | n units (A/B) | SD of B at T | SD of A's log speedups | coverage | false supported | experiments |",
             "|---|---|---|---|---|---|---|---|"]
    for c in calibration:
        lines.append(f"| {c['claim_id']} | {md_text(c['size'])} | {c['n_a']}/{c['n_b']} | {_f(c['sd_b'])} | "
                     f"{_f(c['sd_log_a'])} | {c['coverage']:.3f} | {c['supported']:.3f} | {c['reps']} |")
    lines += ["", "`taco efficiency --calibrate` prints the suite's checked scenarios and its known limits "
              "(strongly skewed B runs; B and A both flat where A crosses).", ""]
    return lines


def render_markdown(df: pd.DataFrame, cfg: AnalysisConfig, calibration: Sequence[Mapping[str, Any]] = (),
                    notes: Sequence[str] = (), families: Mapping[str, str] | None = None) -> str:
    """efficiency.md: the claims' table, the rule, per claim the verdict, units and notes, the
    speedup curve's trend, E1 per encoder family (``families``: size -> architecture, when the run has
    several), and the simulated coverage and level of the method for this run."""
    from taco.report.markdown_text import md_text
    from taco.report.synthetic_label import synthetic_label

    lvl = f"{(1 - 2 * cfg.alpha) * 100:g}%"
    lines = _claims_tables(df, cfg, lvl, synthetic_label(cfg))
    lines += family_section(df, families or {})
    for r in rows_of_kind(df, "primary").itertuples():
        lines += _claim_section(df, r, lvl)
    if calibration:
        lines += _calibration_section(calibration, cfg, lvl)
    if notes:
        lines += ["## Notes on the inputs", ""] + [f"- {md_text(n)}" for n in notes] + [""]
    return "\n".join(lines)



def tuning_section(choices: Sequence[tuple[str, Mapping[str, Any]]], edges: Mapping[str, Sequence[str]] | None = None) -> str:
    """The page's "Equal tuning budgets" section: per arm every trial (setting, validation MLM loss at the
    horizon) and the chosen one, then each arm's choice that lies at the edge of its search space
    (``edges``: arm -> notes of :func:`taco.training.tuning.edge_notes`, or a choice.json's ``at_edge``);
    "" without choices."""
    if not choices:
        return ""
    from taco.report.markdown_text import md_text

    lines = ["", "## Equal tuning budgets (pretrain.tuning)", "",
             "Every arm ran the same trials (the same settings, quasi-random search, taco.training.tuning); the "
             "trial with the lowest validation MLM loss at the horizon set the arm's learning rate, warmup and "
             "dropout for its replicates. E1 above compares tuned against tuned.", "",
             "| arm (size/objective) | trial | learning rate | warmup | dropout | validation MLM loss at the horizon |",
             "|---|---|---|---|---|---|"]
    for arm, rec in choices:
        chosen = rec["chosen"]["path"]
        for t in rec["trials"]:
            s = t["setting"]
            mark = " **(chosen)**" if t["path"] == chosen else ""
            loss = t["mlm_loss"]
            lines.append(f"| {md_text(arm)} | {md_text(t['trial'])}{mark} | {s.get('learning_rate')} | "
                         f"{s.get('warmup_steps')} | {s.get('dropout') if s.get('dropout') is not None else 'family default'} | "
                         f"{loss:.4f} |" if isinstance(loss, (int, float)) and math.isfinite(loss) else
                         f"| {md_text(arm)} | {md_text(t['trial'])} | {s.get('learning_rate')} | {s.get('warmup_steps')} | "
                         f"{s.get('dropout')} | not finite (never chosen) |")
    notes = [(arm, n) for arm, rec in choices for n in ((edges or {}).get(arm) or rec.get("at_edge") or [])]
    if notes:
        lines += ["", "**A choice at the edge of its search space** (the optimum may lie outside it: widen the space "
                  "and raise the trial count, the same for every arm):", ""]
        lines += [f"- {md_text(arm)}: {md_text(n)}" for arm, n in notes]
    return "\n".join(lines) + "\n"
