"""The paper's claims, checked on the reproduced numbers.

``taco claims --aggregate-dir results/aggregate --analysis FILE --output-dir results`` writes
``claims.csv`` (one ``level = claim`` row per claim, plus ``level = task`` rows per score key) and
``claims.md`` (a summary table with verdicts, then per claim its rule, test, reason and details), and
``claims.html``, the same page rendered for ``snakemake --report`` (:mod:`taco.report.html`).

The claims are the declarations ``CLAIMS`` below (what each compares, its kind, its own target or margin, the
paper's source); ``docs/claims.md`` is generated from them and the kinds' rules
(:mod:`taco.report.claims_definitions`), so the page and the code cannot drift.

Not checked as a claim: the learning-dynamics pattern of Figure 6 ("TACO keeps intra-context
similarity high and the intra/inter gap large late in training, MLM does not"). The paper gives
neither the values (docs/paper-facts.md: UNKNOWN) nor what "high" and "large" mean, and ``dynamics.json`` holds
one pre-training run per objective with CIs over validation blocks, not over replicate runs, so no
test of the statement at a stated margin is possible; ``figure6`` shows the curves instead.
"TACO is competitive with BERT-NCE and INFOWORD" is not checked either: the paper's numbers for them
are cited from Kong et al. (2020) and not available here, and "competitive" has no stated margin;
Table 4 prints this suite's reimplementations (``taco/objectives/bert_nce.py``, ``infoword.py``)
measured beside TACO and MLM at equal steps and data where the configuration trains them.

Effect: delta = mean(A) - mean(B) of per-seed values in GLUE points (x100): the per-seed GLUE
average (over the keys the spec's tasks cover, labelled partial if fewer than nine) or, per key,
the primary metric. Tests: ``scipy.stats.permutation_test`` (two independent samples, difference
of means, exact when the partitions fit in ``n_resamples``), one-sided against shifted nulls, each
at level alpha = 1 - confidence_level. Each one-sided test at alpha is paired with the matching
**decision interval**: the two-sided CI at level 1 - 2 alpha (90% for alpha = 0.05; by default
Welch's t interval of the difference of means, ``ci_method = "t"``, whose coverage holds at 3-5
seeds), whose one end is the one-sided 1 - alpha bound; TOST at alpha likewise
uses the 1 - 2 alpha interval (Schuirmann 1987). The ``confidence_level`` CI (95%) is reported
beside it. With d = equivalence_margin, t = improvement_target, m = improvement_margin, [lo, hi]
the decision interval and p(H1) the one-sided permutation p-value:

- match (default ``match_rule: non_inferiority``; the paper's "TACO reaches MLM's level with fewer
  steps", so A being better never counts against it): supported if lo > -d and p(delta > -d) <=
  alpha; not supported if hi < -d and p(delta < -d) <= alpha. Equivalence (TOST within +-d) is
  reported as a detail. ``match_rule: equivalence`` decides by TOST instead (not supported when
  the interval lies beyond either margin).
- competitive (C3; "on all four largest tasks"): supported by an intersection-union test (Berger
  1982): the non-inferiority rule on every score key at level alpha, no multiplicity correction
  (the claim needs every key, so the family is not inflated); supported if every key is. Refuted
  ("not supported") when any key is shown worse by more than the margin *after Holm's correction
  over the keys*: the refutation is a union of per-key rejections, so without a correction five
  keys at the margin refute a true claim about 22% of the time instead of alpha. A key is refuted
  when its decision interval lies below -d and its Holm-adjusted p(delta < -d) <= alpha (column
  ``p_holm`` of the key rows); inconclusive otherwise. Refuting needs 1 / C(2n, n) <= alpha / k
  for k keys (5 seeds per arm for 5 keys at alpha 0.05).
- improvement ("beats by about t"): non-inferiority to the claimed size: supported if lo > t - m
  and p(delta > t - m) <= alpha (a larger improvement supports it); not supported if hi < t - m and
  p(delta < t - m) <= alpha. Whether A beats B at all (p(delta > 0)) is a detail.
- below ("A is worse than B"): supported if hi < 0 and p(delta < 0) <= alpha; not supported if
  lo > 0 and p(delta > 0) <= alpha, or TOST shows equivalence within +-d.
- helps (S1; one-sided improvement, margin 0): supported if lo > 0 and p(delta > 0) <= alpha; not
  supported if hi < 0 and p(delta < 0) <= alpha (the pre-trained model is worse).
- not better (C6; "not significantly better"): non-superiority at margin d: supported if hi < d
  and p(delta < d) <= alpha (when also lo > 0 with p(delta > 0) <= alpha, the note says a small
  gain is significant); not supported if lo > d and p(delta > d) <= alpha.
- a claim whose arms were not run gets the verdict ``not run``; fewer than ``min_seeds`` seeds in
  a cell gives ``inconclusive``; anything else undecided is ``inconclusive``.

Fewest seeds (``fewest_seeds`` column): the smallest number of seeds per arm with which the claim's
test can reach p <= alpha at all: the smallest n with 1 / C(2n, n) <= alpha (the exact two-sample
permutation test's smallest one-sided p-value, attained when the two arms separate completely;
1 / (n_resamples + 1) once the test is randomised). It is the same for every one-sided rule, the
TOST and the support side of the intersection-union test (each component runs at alpha; refuting
C3 after Holm over k keys needs 1 / C(2n, n) <= alpha / k). ``seeds_for_power`` adds an
estimate for the data at hand: the seeds per arm for 80% power of the deciding one-sided test at the
observed effect and pooled SD (the exact permutation test simulated up to 12 seeds per arm, the t formula
beyond: :func:`taco.stats.power.seeds_for_gap`; at least ``fewest_seeds``); n/a without an SD. ``detectable_gap`` turns it
round: the smallest true distance of the effect from the claim's boundary that the test, at the seeds the
claim has and the observed pooled SD, detects with 80% power (simulated with the exact permutation test
itself, :mod:`taco.stats.power`; inf where those seeds cannot reach p <= alpha at all); for a claim about
every score key, the largest over its keys.

A claim row counts the degenerate runs (constant predictions, undefined metrics counted as 0) in
its cells (``n_degenerate``) and says so in its reason and in the summary table.

This module holds the claims (``CLAIMS``) and their evaluation on the aggregate tables
(``evaluate_claims``: the claim rows as data); the rules above are :mod:`taco.stats.claim_rules`, the page
:mod:`taco.report.claims_page` and the command :mod:`taco.commands.claims`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from taco.paper import TABLE2_KEYS
from taco.registry import CONTROL, OBJECTIVE_LABELS, SCORE_KEY_LABELS
from taco.stats.aggregate import (UNIT_FINETUNE, average_keys, average_label, fmt_fraction, seed_averages,
                                  statistical_units, unit_note)
from taco.stats.analysis_config import AnalysisConfig, budget_steps_from_name
from taco.stats.claim_rules import (
    INCONCLUSIVE, NOT_RUN, NOT_SUPPORTED, ONE_CHECKPOINT, SUPPORTED, Margins, _sig, claim_kind, decide, deciding_boundary,
    decision_level, equivalence_detail, fewest_seeds, margins_for, pvalue_set, rule_text, seeds_for_power, tests_for)
from taco.stats.inference import ci_method_name, compare, holm, interval, pooled_sd, rng_for
from taco.stats.power import detectable_gap

#: why a cell may show zero variance (the claim row's reason and the page's warning)
ZERO_VARIANCE_CAUSES = ("seeds that do not reach the runs, one result copied, or constant predictions; "
                        "its interval is a single point")

#: an arm's budget meaning "the run's last fine-tuned checkpoint" (the final one)
LAST_BUDGET = "last"


@dataclass(frozen=True)
class Arm:
    """One side of a comparison: objective, data fraction (None = the spec's reduced fraction), budget name."""

    objective: str
    fraction: float | None
    budget: str


@dataclass(frozen=True)
class Claim:
    """A claim of the paper: compare arm ``a`` with arm ``b`` in ``role``, by ``kind``, over the GLUE
    average (``per_task`` False) or on every score key of ``keys`` (intersection-union)."""

    id: str
    text: str
    source: str
    kind: str  # a key of taco.stats.claim_rules.CLAIM_KINDS
    role: str  # small | base
    a: Arm
    b: Arm
    per_task: bool = False
    keys: tuple[str, ...] | None = None
    note: str = ""
    #: the claim's own numbers, in GLUE points, where the analysis spec's do not fit it: ``target`` the
    #: improvement it states (an ``improvement`` claim; default ``analysis.improvement_target``), ``margin``
    #: its margin (``m`` of an improvement, else ``d``; default the spec's): :func:`claim_margins`
    target: float | None = None
    margin: float | None = None


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
    Claim("C7", "MLM+TP drops after 150k steps (MLM+TP-250k below MLM+TP-150k)",
          "Sec. 5 ablation", "below", "small", Arm("mlm_tp", 1.0, "250k"), Arm("mlm_tp", 1.0, "150k"),
          note="both arms are checkpoints of the same pre-training run: the test covers fine-tuning "
               "variance only"),
    Claim("S1", "pre-training helps: the final MLM checkpoint beats the no-pre-training control",
          "sanity check of this suite (not a claim of the paper)", "helps", "small",
          Arm("mlm", 1.0, LAST_BUDGET), Arm(CONTROL, 1.0, ""),
          note="without it, no comparison between objectives shows that the suite measures pre-training"),
)


# ---------------------------------------------------------------------------------------------
# evaluation, step by step
# ---------------------------------------------------------------------------------------------
@dataclass
class ArmCell:
    """An arm resolved against the spec: its cell (size, objective, fraction, step) or why not run."""

    cell: tuple | None
    label: str
    not_run: str = ""


@dataclass
class Sample:
    """Per-seed values of one cell over some keys."""

    values: list[float] = field(default_factory=list)
    seeds: list[int] = field(default_factory=list)
    n_incomplete: int = 0
    n_degenerate: int = 0


def resolve_arm(cfg: AnalysisConfig, claim: Claim, arm: Arm) -> ArmCell:
    """The cell an arm names in this spec, or the reason it was not run (role, budget, run)."""
    size = cfg.roles.get(claim.role)
    frac = cfg.reduced_fraction if arm.fraction is None else arm.fraction
    label = f"{OBJECTIVE_LABELS.get(arm.objective, arm.objective)}-{arm.budget}"
    if not math.isclose(frac, 1.0):
        label += f" ({fmt_fraction(frac)} data)"
    if size is None:
        return ArmCell(None, label, f"roles.{claim.role} is null: no size plays BERT-{claim.role}")
    if arm.objective == CONTROL:  # the no-pre-training control: step 0 of its size
        label = f"{OBJECTIVE_LABELS[CONTROL]} (control)"
        if not cfg.has_control(size):
            return ArmCell(None, label, f"no no-pre-training control of size {size!r} (controls; "
                                        "config pretrain.control: true)")
        return ArmCell((size, CONTROL, 1.0, 0), label)
    if arm.budget == LAST_BUDGET:  # the run's final fine-tuned checkpoint
        steps = [s for v in cfg.runs if v.size == size and v.objective == arm.objective
                 and math.isclose(v.fraction, frac) for s in cfg.run_steps(v)]
        if not steps:
            return ArmCell(None, f"{OBJECTIVE_LABELS.get(arm.objective, arm.objective)} (final)",
                           f"run {arm.objective} ({fmt_fraction(frac)} data) not in the analysis spec")
        step = max(steps)
        label = f"{OBJECTIVE_LABELS.get(arm.objective, arm.objective)} (final) [step {step}]"
        return ArmCell((size, arm.objective, round(frac, 6), int(step)), label)
    step = cfg.budget_step(size, arm.budget)
    if step is None:
        return ArmCell(None, label, f"budget {arm.budget} not run for size {size!r} (not in budget_names.{size})")
    if step != _paper_step(arm.budget):
        label += f" [step {step}]"
    cell = (size, arm.objective, round(frac, 6), int(step))
    if not cfg.has_run(size, arm.objective, frac):
        return ArmCell(cell, label, f"run {label} not in the analysis spec")
    tuned = (cfg.finetuned_budgets or {}).get(size)
    if tuned is not None and int(step) not in tuned:
        return ArmCell(cell, label, f"{label} of size {size!r} not fine-tuned (finetuned_budgets.{size}: "
                                    f"{list(tuned)}; config finetune.budgets)")
    return ArmCell(cell, label)


def _paper_step(budget: str) -> int | None:

    return budget_steps_from_name(budget)


def claim_keys(claim: Claim, cfg: AnalysisConfig) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(keys of the claim row's summary, keys of its per-key rows): the average's keys and every
    average key for a claim about the average; the claim's own keys (fine-tuned ones) otherwise."""
    avg = average_keys(cfg)
    per_key = tuple(k for k in (claim.keys or avg) if k in cfg.score_keys)
    return (per_key if claim.per_task else avg), per_key


def not_run_reasons(claim: Claim, arm_a: ArmCell, arm_b: ArmCell, per_key: Sequence[str]) -> list[str]:
    """Why the claim cannot be computed at all (empty when both arms were run)."""
    reasons = [arm.not_run for arm in (arm_a, arm_b) if arm.not_run]
    if claim.per_task and not per_key:
        reasons.append("none of " + ", ".join(claim.keys or ()) + " fine-tuned (tasks)")
    return list(dict.fromkeys(reasons))


def _cell_rows(per_seed: pd.DataFrame, cell: tuple) -> pd.DataFrame:
    size, obj, frac, step = cell
    return per_seed[(per_seed["size"] == size) & (per_seed["objective"] == obj)
                    & np.isclose(per_seed["fraction"].astype(float), frac) & (per_seed["step"] == step)]


def arms_unit_note(per_seed: pd.DataFrame, cell_a: tuple, cell_b: tuple) -> str:
    """What a claim's uncertainty covers: fine-tuning seeds only when an arm has one pre-training run
    (the paper's design), pre-training and fine-tuning when both arms have replicated pre-training."""
    subs = [statistical_units(_cell_rows(per_seed, c)) for c in (cell_a, cell_b)]
    notes = [unit_note(sub) for sub in subs]
    kinds = {str(sub["unit"].iloc[0]) for sub in subs if not sub.empty}
    if not any(notes):
        return ""
    if len(set(notes) - {""}) == 1:
        return next(n for n in notes if n)
    if len(kinds) == 1:  # the same unit, other counts (a run short of a fine-tuning seed): one note, both counts
        return "A: " + notes[0] + " / B: " + notes[1]
    return "arms differ in units: " + " / ".join(sorted(set(notes) - {""}))


def cell_sample(per_seed: pd.DataFrame, cell: tuple, keys: Sequence[str]) -> Sample:
    """Per-seed values of a cell: the mean over ``keys`` (one key: its primary value); seeds missing
    a key are excluded and counted; seeds with a degenerate run among ``keys`` are counted."""
    size, obj, frac, step = cell
    sub = per_seed[(per_seed["size"] == size) & (per_seed["objective"] == obj)
                   & np.isclose(per_seed["fraction"].astype(float), frac) & (per_seed["step"] == step)]
    s = seed_averages(sub, keys)
    ok = s[np.isfinite(s["average"].astype(float))]
    return Sample(ok["average"].astype(float).tolist(), ok["seed"].astype(int).tolist(), len(s) - len(ok),
                  int((ok["degenerate_keys"].astype(str) != "").sum()))


def compare_samples(claim: Claim, a: Sample, b: Sample, cfg: AnalysisConfig, scope: str):
    """(Comparison at ``confidence_level``, decision interval (low, high) at 1 - 2 alpha)."""
    label = f"{claim.id}|{scope}"
    cmp = compare(a.values, b.values, one_sided=tests_for(claim.kind, claim_margins(claim, cfg)),
                  confidence_level=cfg.confidence_level, n_resamples=cfg.n_resamples,
                  method=cfg.ci_method, seed=cfg.seed, label=label)
    lo, hi, _ = interval((a.values, b.values), confidence_level=decision_level(cfg), method=cfg.ci_method,
                         n_resamples=cfg.n_resamples, rng=rng_for(cfg.seed, f"dci|{label}"))
    return cmp, (lo, hi)


def claim_sentence(claim: Claim, ca: tuple | None, cb: tuple | None) -> str:
    """The claim's sentence with the steps that play the paper's budgets in this run, where they are not the
    paper's own: ``TACO-50k matches MLM-250k (...) (here: step 100 plays TACO's 50k, step 150 MLM's 250k)``."""

    played = []
    for arm, cell in ((claim.a, ca), (claim.b, cb)):
        if cell and f"{int(cell[3]) / 1000:g}k" != str(arm.budget):
            played.append(f"step {cell[3]} plays {OBJECTIVE_LABELS.get(arm.objective, arm.objective)}'s {arm.budget}")
    return claim.text + (f" (here: {', '.join(played)})" if played else "")


def _row(claim: Claim, level: str, scope: str, arm_a: ArmCell, arm_b: ArmCell, cfg: AnalysisConfig) -> dict[str, Any]:
    ca, cb = arm_a.cell, arm_b.cell
    return {"claim_id": claim.id, "level": level, "claim": claim_sentence(claim, ca, cb), "source": claim.source,
            "kind": claim.kind, "role": claim.role, "size": cfg.roles.get(claim.role) or "",
            "a": arm_a.label, "b": arm_b.label, "step_a": ca[3] if ca else "", "step_b": cb[3] if cb else "",
            "scope": scope, "unit": "GLUE points (x100)", "margin": claim_margins(claim, cfg).d,
            "rule": rule_text(claim.kind, claim_margins(claim, cfg)), "confidence_level": cfg.confidence_level,
            "decision_level": decision_level(cfg),
            "n_a": 0, "n_b": 0, "seeds_a": "", "seeds_b": "", "mean_a": math.nan, "mean_b": math.nan,
            "effect": math.nan, "ci_low": math.nan, "ci_high": math.nan, "ci_method": "",
            "decision_ci_low": math.nan, "decision_ci_high": math.nan, "hedges_g": math.nan,
            "test": "", "p_value": math.nan, "p_against": math.nan, "p_two_sided": math.nan,
            "p_holm": math.nan, "min_attainable_p": math.nan, "fewest_seeds": fewest_seeds(cfg),
            "seeds_for_power": math.nan, "detectable_gap": math.nan, "n_degenerate": 0, "equivalence": "", "sample_unit": "",
            "zero_variance": "",
            "verdict": INCONCLUSIVE, "reason": "", "verdict_scope": ""}


def _fill(row: dict[str, Any], cmp, dci, a: Sample, b: Sample, claim: Claim, cfg: AnalysisConfig) -> None:
    row.update(n_a=cmp.n_a, n_b=cmp.n_b, seeds_a=";".join(map(str, a.seeds)), seeds_b=";".join(map(str, b.seeds)),
               mean_a=cmp.mean_a, mean_b=cmp.mean_b, effect=cmp.delta, ci_low=cmp.ci_low, ci_high=cmp.ci_high,
               ci_method=cmp.ci_method, decision_ci_low=dci[0], decision_ci_high=dci[1],
               hedges_g=cmp.hedges_g, p_two_sided=cmp.p_two_sided, min_attainable_p=cmp.min_p_one_sided,
               n_degenerate=a.n_degenerate + b.n_degenerate,
               seeds_for_power=seeds_for_power(a.values, b.values, deciding_boundary(claim.kind, claim_margins(claim, cfg)), cfg),
               detectable_gap=detectable_gap(len(a.values), len(b.values), pooled_sd(a.values, b.values), cfg.alpha),
               zero_variance=", ".join(name for name, v in (("A", a.values), ("B", b.values))
                                       if len(v) >= 2 and max(v) == min(v)))


def sample_unit(per_seed: pd.DataFrame, cell_a: tuple, cell_b: tuple) -> str:
    """The statistical unit of a claim's samples (:func:`taco.stats.aggregate.statistical_units`):
    ``'fine-tuning seed'``, ``'pre-training run'``, both joined by ``' / '`` when the arms differ,
    or ``''`` when neither arm has runs."""
    units: set[str] = set()
    for c in (cell_a, cell_b):
        sub = statistical_units(_cell_rows(per_seed, c))
        if not sub.empty:
            units |= set(sub["unit"])
    return " / ".join(sorted(units))


def _few_seeds(n_a: int, n_b: int, cfg: AnalysisConfig) -> str:
    if min(n_a, n_b) < cfg.min_seeds:
        return f"too few seeds: A has {n_a}, B has {n_b} (min_seeds = {cfg.min_seeds})"
    return ""


def claim_margins(claim: Claim, cfg: AnalysisConfig) -> Margins:
    """The numbers ``claim``'s rule is stated in: the spec's margins, with the claim's own ``target`` /
    ``margin`` in their place where it has them (:func:`taco.stats.claim_rules.margins_for`)."""
    return margins_for(cfg, claim.target, claim.margin, claim.kind)


def describe_test(claim: Claim, cfg: AnalysisConfig) -> str:
    """The test ``claim``'s kind is decided by, in words, with its margins."""
    return (claim_kind(claim.kind).test(claim_margins(claim, cfg))
            + f" (scipy.stats.permutation_test, difference of means); {decision_level(cfg) * 100:g}% "
            f"decision interval: {ci_method_name(cfg.ci_method)}")


def _decide_row(row: dict[str, Any], claim: Claim, cmp, dci, cfg: AnalysisConfig) -> None:
    """Set verdict, p for/against and reason of a row from its comparison."""
    M = claim_margins(claim, cfg)
    p = pvalue_set(cmp, M)
    verdict, reason, ps, pa = decide(claim.kind, dci[0], dci[1], p, M)
    row.update(verdict=verdict, p_value=ps, p_against=pa, reason=reason)
    if claim.kind == "match" and all(math.isfinite(x) for x in dci):
        row["equivalence"] = equivalence_detail(dci[0], dci[1], p, M)
    if claim.kind == "improvement" and math.isfinite(p["gt0"]):
        row["equivalence"] = f"A better than B at all: p(delta > 0)={p['gt0']:.3g}"


def summary_row(claim: Claim, per_seed: pd.DataFrame, arm_a: ArmCell, arm_b: ArmCell,
                keys: Sequence[str], cfg: AnalysisConfig) -> tuple[dict[str, Any], list[str]]:
    """The claim row over ``keys`` (the average, or the claim's keys together) and its notes; the
    verdict is decided here for a claim about the average."""
    row = _row(claim, "claim", average_label(keys), arm_a, arm_b, cfg)
    row["test"] = describe_test(claim, cfg)
    a, b = cell_sample(per_seed, arm_a.cell, keys), cell_sample(per_seed, arm_b.cell, keys)
    notes = []
    scope = arms_unit_note(per_seed, arm_a.cell, arm_b.cell)
    if scope and (a.values or b.values):
        notes.append(scope)
    row["sample_unit"] = sample_unit(per_seed, arm_a.cell, arm_b.cell)
    row["verdict_scope"] = ONE_CHECKPOINT if UNIT_FINETUNE in row["sample_unit"].split(" / ") else ""
    if a.n_incomplete or b.n_incomplete:
        notes.append(f"incomplete seeds excluded: A {a.n_incomplete}, B {b.n_incomplete}")
    if a.values and b.values:
        cmp, dci = compare_samples(claim, a, b, cfg, "avg|" + ";".join(keys))
        _fill(row, cmp, dci, a, b, claim, cfg)
        if not claim.per_task:
            _decide_row(row, claim, cmp, dci, cfg)
            notes.insert(0, row["reason"])
            if row["equivalence"]:
                notes.append(row["equivalence"])
    else:
        notes.insert(0, "no complete seeds")
        row["verdict"] = INCONCLUSIVE
    few = _few_seeds(len(a.values), len(b.values), cfg)
    if few:
        row["verdict"] = INCONCLUSIVE
        notes.insert(0, few)
    return row, notes


def key_rows(claim: Claim, per_seed: pd.DataFrame, arm_a: ArmCell, arm_b: ArmCell,
             keys: Sequence[str], cfg: AnalysisConfig) -> list[dict[str, Any]]:
    """One row per score key: for a per-key claim each key is decided by the claim's rule at alpha
    (intersection-union: no correction on the support side; the refutation side is Holm-corrected
    over the keys by :func:`holm_refutation`); for a claim about the average the rows are details
    with a two-sided test and Holm-adjusted p-values across keys."""
    rows, comps = [], []
    for key in keys:
        row = _row(claim, "task", key, arm_a, arm_b, cfg)
        a, b = cell_sample(per_seed, arm_a.cell, (key,)), cell_sample(per_seed, arm_b.cell, (key,))
        cmp = None
        if a.values and b.values:
            cmp, dci = compare_samples(claim, a, b, cfg, key)
            _fill(row, cmp, dci, a, b, claim, cfg)
            if claim.per_task:
                row["test"] = describe_test(claim, cfg)
                _decide_row(row, claim, cmp, dci, cfg)
                few = _few_seeds(cmp.n_a, cmp.n_b, cfg)
                if few:
                    row.update(verdict=INCONCLUSIVE, reason=few + "; " + row["reason"])
            else:
                row.update(test="two-sided permutation test (detail), Holm across score keys",
                           verdict="", p_value=cmp.p_two_sided,
                           reason="detail only: the claim is about the average")
        else:
            row.update(reason="no runs for this score key in one of the cells",
                       verdict=INCONCLUSIVE if claim.per_task else "")
        rows.append(row)
        comps.append(cmp)
    if not claim.per_task:
        for row, p in zip(rows, holm([c.p_two_sided if c is not None else math.nan for c in comps])):
            row["p_holm"] = p
    else:
        holm_refutation(rows, cfg)
    return rows


def holm_refutation(rows: Sequence[dict[str, Any]], cfg: AnalysisConfig) -> None:
    """Holm's correction of the refutation side of a per-key claim, in place.

    ``rows``: the claim's key rows, each with ``p_against`` (the one-sided p-value against the claim
    on that key, nan where not computed) and a verdict from :func:`decide` at alpha. Sets
    ``p_holm`` to the Holm-adjusted ``p_against`` over the keys with a p-value; a key ``not
    supported`` at alpha whose adjusted p exceeds alpha becomes ``inconclusive`` (its reason says
    why). The family-wise error of refuting a true claim (every key at or above the margin) is then
    at most alpha, whatever the number of keys.
    """
    adjusted = holm([r["p_against"] for r in rows])
    m = sum(1 for p in adjusted if math.isfinite(p))
    for r, p in zip(rows, adjusted):
        r["p_holm"] = p
        if r["verdict"] == NOT_SUPPORTED and not _sig(p, cfg.alpha):
            r["verdict"] = INCONCLUSIVE
            r["reason"] = (f"{r['reason']}; refuted on this key alone (p={r['p_against']:.3g}) but not after "
                           f"Holm's correction over the {m} keys (p_holm={p:.3g} > {cfg.alpha})")


def intersection_union(row: dict[str, Any], rows: Sequence[Mapping[str, Any]], notes: list[str]) -> None:
    """Combine per-key verdicts into the claim's: supported only if every key is (intersection-union,
    Berger 1982), not supported if any key is after Holm's correction (:func:`holm_refutation`);
    p for = the largest per-key p, p against = the smallest Holm-adjusted one."""
    verdicts = [r["verdict"] for r in rows]
    if any(v == NOT_SUPPORTED for v in verdicts):
        row["verdict"] = NOT_SUPPORTED
        notes.insert(0, "not supported on " + ", ".join(SCORE_KEY_LABELS.get(r["scope"], r["scope"]) for r in rows
                                                         if r["verdict"] == NOT_SUPPORTED)
                     + " (Holm-corrected over the keys)")
    elif verdicts and all(v == SUPPORTED for v in verdicts):
        row["verdict"] = SUPPORTED
        notes.insert(0, "supported on every score key (intersection-union test, each at alpha)")
    else:
        row["verdict"] = INCONCLUSIVE
        notes.insert(0, "undecided on " + ", ".join(SCORE_KEY_LABELS.get(r["scope"], r["scope"]) for r in rows
                                                    if r["verdict"] != SUPPORTED))
    row["p_value"] = max((r["p_value"] for r in rows if math.isfinite(r["p_value"])), default=math.nan)
    row["p_against"] = min((r["p_holm"] for r in rows if math.isfinite(r["p_holm"])), default=math.nan)
    row["seeds_for_power"] = max((r["seeds_for_power"] for r in rows if math.isfinite(r["seeds_for_power"])),
                                 default=math.nan)
    row["detectable_gap"] = max((r["detectable_gap"] for r in rows if not math.isnan(r["detectable_gap"])),
                                default=math.nan)


def evaluate_claim(claim: Claim, per_seed: pd.DataFrame, cfg: AnalysisConfig) -> list[dict[str, Any]]:
    """Rows for one claim: the claim row first, then its per-key rows.

    Steps: resolve both arms against the spec (a missing role / budget / run gives ``not run``);
    compare the cells on the claim's summary keys (decided there for a claim about the average);
    compare per key (decided per key for a per-key claim, then combined by intersection-union);
    add the notes (too few seeds, degenerate runs, the smallest attainable p).
    """
    arm_a, arm_b = resolve_arm(cfg, claim, claim.a), resolve_arm(cfg, claim, claim.b)
    summary_keys, per_key = claim_keys(claim, cfg)
    missing = not_run_reasons(claim, arm_a, arm_b, per_key)
    if missing:
        row = _row(claim, "claim", average_label(summary_keys) if summary_keys else "", arm_a, arm_b, cfg)
        row.update(test=describe_test(claim, cfg), verdict=NOT_RUN, reason="not run: " + "; ".join(missing))
        return [row]
    row, notes = summary_row(claim, per_seed, arm_a, arm_b, summary_keys, cfg)
    rows = key_rows(claim, per_seed, arm_a, arm_b, per_key, cfg)
    if claim.per_task:
        few = notes[0] if notes and notes[0].startswith("too few seeds") else ""
        intersection_union(row, rows, notes)
        if few:
            row["verdict"] = INCONCLUSIVE
        k = sum(1 for r in rows if math.isfinite(r["p_holm"]))
        mp = row["min_attainable_p"]
        if row["verdict"] == INCONCLUSIVE and k > 1 and isinstance(mp, float) and math.isfinite(mp) \
                and mp * k > cfg.alpha:
            notes.append(f"with these seeds no key can be refuted after Holm's correction over {k} keys "
                         f"(smallest attainable p {mp:.3g} x {k} > alpha {cfg.alpha})")
    if row["n_degenerate"]:
        notes.append(f"{row['n_degenerate']} of the {row['n_a']} + {row['n_b']} seeds of A and B have a degenerate "
                     "run (constant predictions; an undefined metric counts as 0), kept in the test")
    flat = [f"{SCORE_KEY_LABELS.get(r['scope'], r['scope'])} ({r['zero_variance']})" for r in rows if r["zero_variance"]]
    if row["zero_variance"] or flat:
        where = ([f"the claim's scope ({row['zero_variance']})"] if row["zero_variance"] else []) + flat
        notes.append(f"warning: identical scores across all seeds in {', '.join(where)}: zero variance is "
                     f"suspicious ({ZERO_VARIANCE_CAUSES})")
    if claim.note:
        notes.append(claim.note)
    mp = row["min_attainable_p"]
    if row["verdict"] == INCONCLUSIVE and isinstance(mp, float) and math.isfinite(mp) and mp > cfg.alpha:
        notes.append(f"with these seeds the smallest attainable one-sided permutation p is {mp:.3g} > alpha "
                     f"{cfg.alpha}: at least {row['fewest_seeds']} seeds per arm are needed")
    row["reason"] = "; ".join(dict.fromkeys(n for n in notes if n))
    return [row] + rows


def evaluate_claims(agg: Mapping[str, pd.DataFrame], cfg: AnalysisConfig,
                    claims: Sequence[Claim] = CLAIMS) -> pd.DataFrame:
    """All claims as one DataFrame (claim rows and their per-key rows, in claim order).

    A claim is evaluated for the size that plays its role, then for each other encoder family run at that size's
    preset (:meth:`AnalysisConfig.family_sizes`: ModernBERT-tiny beside BERT-tiny), as rows of their own with
    the same ``claim_id``, that size in ``size`` and the family named in ``claim``; a family's row is left out
    where one of the claim's arms was not run for it (the families overlay runs MLM and TACO only), so the
    families add no ``not run`` rows."""
    rows = []
    for c in claims:
        rows += evaluate_claim(c, agg["per_seed"], cfg)
        for size in cfg.family_sizes(cfg.roles.get(c.role)):
            family = evaluate_claim(c, agg["per_seed"], replace(cfg, roles={**cfg.roles, c.role: size}))
            if family[0]["verdict"] == NOT_RUN:
                continue
            for row in family:
                row["claim"] += f" [encoder family {cfg.architectures.get(size, '?')}: size {size}]"
            rows += family
    return pd.DataFrame(rows)
