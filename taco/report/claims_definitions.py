"""``docs/claims.md``: what every claim compares, its kind, its margin and the paper's source, generated from the
declarations so that the page cannot drift from the code.

The GLUE claims C1-C7, C4b and S1 are :data:`taco.stats.claims.CLAIMS`, their rules the kinds of
:data:`taco.stats.claim_rules.CLAIM_KINDS` (stated here with the analysis spec's default margins,
:class:`taco.stats.analysis_config.AnalysisConfig`); the steps-to-target claims E1-E3 are declared in
:mod:`taco.stats.efficiency` (``CLAIM_TEXT``, ``PROBE_TEXT``, ``PAPER_SPEEDUP``) and
:mod:`taco.stats.efficiency_claims` (``SOURCES``), their rule :func:`taco.stats.speedup_decision.speedup_rule_text`.

Regenerate after changing a declaration (``tests/test_claims_definitions.py`` fails while the page is stale)::

    taco claims-definitions docs/claims.md      # the command: taco.commands.claims_definitions

Torch-free.
"""

from __future__ import annotations

import math

from taco.registry import CONTROL, OBJECTIVE_LABELS, SCORE_KEY_LABELS
from taco.report.markdown_text import md_cell
from taco.stats.analysis_config import AnalysisConfig
from taco.stats.claim_rules import CLAIM_KINDS, margins_for, rule_text
from taco.stats.claims import CLAIMS, LAST_BUDGET, Arm, Claim
from taco.stats.efficiency import CLAIM_TEXT, PAPER_SPEEDUP, PROBE_TEXT, paper_claim_text
from taco.stats.efficiency_claims import SOURCES
from taco.stats.speedup_decision import speedup_rule_text

#: the command that writes the page (its first lines say it)
REGENERATE = "taco claims-definitions docs/claims.md"


def _defaults() -> AnalysisConfig:
    """The analysis spec's defaults (margins, levels), without a run."""
    return AnalysisConfig(roles={}, budget_names={}, runs=(), tasks=(), primary_metric={})


def arm_text(arm: Arm, cfg: AnalysisConfig) -> str:
    """An arm in words: ``TACO-50k``, ``TACO-250k (25% of the data)``, ``MLM (its last fine-tuned budget)``,
    ``no pre-training (the control)``."""
    if arm.objective == CONTROL:
        return "no pre-training (the control)"
    label = OBJECTIVE_LABELS.get(arm.objective, arm.objective)
    text = f"{label} (its last fine-tuned budget)" if arm.budget == LAST_BUDGET else f"{label}-{arm.budget}"
    fraction = cfg.reduced_fraction if arm.fraction is None else arm.fraction
    if not math.isclose(fraction, 1.0):
        text += f" ({fraction:.0%} of the data, analysis.reduced_fraction)"
    return text


def margin_text(claim: Claim, cfg: AnalysisConfig) -> str:
    """The number the claim's rule is stated in, in GLUE points (the claim's own or the spec's default)."""
    M = margins_for(cfg, claim.target, claim.margin, claim.kind)
    if claim.kind == "improvement":
        return f"target {M.t:g}, shortfall {M.m:g} (supported above {M.t - M.m:g})"
    if claim.kind in ("below", "helps"):
        return "0" + (f" (equivalence +-{M.d:g} refutes)" if claim.kind == "below" else "")
    return f"{M.d:g}"


def definitions_page(cfg: AnalysisConfig | None = None) -> str:
    """The Markdown of ``docs/claims.md``: one table of the GLUE claims, the rule of each kind, one table of the
    steps-to-target claims and their rule; margins from ``cfg`` (default: the analysis spec's defaults)."""
    cfg = cfg or _defaults()
    lvl = f"{(1 - 2 * cfg.alpha) * 100:g}%"
    out = [
        "# The claims: what each compares, its kind, its margin, its source",
        "",
        f"Generated from the declarations (`{REGENERATE}`; `tests/test_claims_definitions.py` fails while it is",
        "stale): the GLUE claims are `CLAIMS` in `taco/stats/claims.py`, their kinds `CLAIM_KINDS` in",
        "`taco/stats/claim_rules.py`, the steps-to-target claims `taco/stats/efficiency.py` (`CLAIM_TEXT`,",
        "`PAPER_SPEEDUP`) and `taco/stats/efficiency_claims.py` (`SOURCES`). Margins here are the analysis spec's",
        f"defaults (`analysis.*`: equivalence margin {cfg.equivalence_margin:g}, improvement target "
        f"{cfg.improvement_target:g} with shortfall {cfg.improvement_margin:g}, efficiency margin "
        f"{cfg.efficiency_margin:g}x, alpha {cfg.alpha:g} one-sided, decision interval {lvl});",
        "a run's own numbers and verdicts are on its `claims.md` and `efficiency.md` (`docs/results.md`).",
        "A is the claim's subject, B its baseline; the effect is mean(A) - mean(B) in GLUE points (x100) over",
        "fine-tuning seeds, or A's speedup in steps over B. A verdict's unit and regime are printed beside it",
        "(`verdict_scope`: e.g. one checkpoint per arm, where pre-training variance is not sampled).",
        "",
        "## GLUE claims (`taco claims`, on fine-tuned GLUE scores)",
        "",
        "| id | claim | A | B | size | kind | margin (GLUE points) | scores | source |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for c in CLAIMS:
        scores = (", ".join(SCORE_KEY_LABELS.get(k, k) for k in c.keys) + " (every key)" if c.per_task and c.keys
                  else "GLUE average")
        text = c.text + (f" ({c.note})" if c.note else "")
        out.append(f"| {c.id} | {md_cell(text)} | {md_cell(arm_text(c.a, cfg))} | {md_cell(arm_text(c.b, cfg))} "
                   f"| BERT-{c.role} | {c.kind.replace('_', ' ')} | {md_cell(margin_text(c, cfg))} | "
                   f"{md_cell(scores)} | {md_cell(c.source)} |")
    out += ["", "### The rule of each kind (at the default margins)", ""]
    for name in CLAIM_KINDS:
        used = ", ".join(c.id for c in CLAIMS if c.kind == name) or "no claim yet"
        out.append(f"- **{name.replace('_', ' ')}** ({used}): {rule_text(name, margins_for(cfg, kind=name))}.")
    out += [
        "",
        "Anything else is `inconclusive`; a claim whose arms were not run is `not run`; fewer than `analysis.min_seeds`",
        "seeds in a cell is `inconclusive`. The tests and intervals: `taco/stats/claims.py`'s module text; the",
        "power of the whole rule (`detectable_gap`, `seeds_for_power`): `taco/stats/power.py`.",
        "",
        "## Steps-to-target claims (`taco efficiency`, rows of the same claims table)",
        "",
        "| id | claim | curve | size | T (B's target step) | source |",
        "|---|---|---|---|---|---|",
        f"| E1 | {md_cell(CLAIM_TEXT['E1'])} | validation MLM loss (nats; the suite's proxy, not the paper's GLUE "
        f"claim) | every size with both arms | the last budget both arms reached; the others are secondary rows "
        f"| {md_cell(SOURCES['E1'])} |",
        f"| E1 (probe row) | {md_cell(PROBE_TEXT)} | frozen-feature GLUE probe average (x100; a proxy) | every size "
        f"with the probe | as E1 | Sec. 5 (efficiency), the suite's frozen-probe form |",
    ]
    for role, (cid, t_name, _a_name, _paper) in PAPER_SPEEDUP.items():
        out.append(f"| {cid} | {md_cell(paper_claim_text(role))} | fine-tuned GLUE average (x100) | the size "
                   f"playing BERT-{role} (`analysis.roles`) | its step for {t_name} (`analysis.budget_names`) | "
                   f"{md_cell(SOURCES[cid])} |")
    out += ["", f"The rule (margin {cfg.efficiency_margin:g}x): {speedup_rule_text(cfg.alpha, cfg.efficiency_margin)}.",
            "A steps-to-target row can also be `not decidable`; verdicts: `supported`, `not supported`, `inconclusive`,",
            "`not decidable`, `not run` (`taco/stats/claim_rules.py` `VERDICTS`).",
            "", "The method, its checks and its limits: `docs/efficiency.md`.", ""]
    return "\n".join(out)
