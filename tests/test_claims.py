"""taco.report.claims: verdicts from hand-built runs; too few seeds or unrun cells give inconclusive."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from fixtures_stats import build_aggregate, smoke_spec
from taco.report.analysis_config import validate_analysis
from taco.report.claims import CLAIMS, INCONCLUSIVE, NOT_SUPPORTED, SUPPORTED, decide, main, rule_text

TASKS = ["mnli", "sst2", "rte"]


def _run(tmp_path, spec, seeds, skip=frozenset(), spread=0.5):
    agg, spec_path = build_aggregate(tmp_path, spec, seeds=seeds, skip=skip, spread=spread)
    out = tmp_path / "results"
    assert main(["--aggregate-dir", str(agg), "--analysis", str(spec_path), "--output-dir", str(out)]) == 0
    df = pd.read_csv(out / "claims.csv", keep_default_na=True)
    return df, df[df.level == "claim"].set_index("claim_id"), out


@pytest.fixture(scope="module")
def five_seeds(tmp_path_factory):
    spec = smoke_spec(tasks=TASKS, n_resamples=99,
                      budget_names={"tiny": {"50k": 20, "250k": 60}, "tinybase": {"100k": 20, "250k": 40, "500k": 80}})
    return _run(tmp_path_factory.mktemp("five"), spec, seeds=[1, 2, 3, 4, 5], spread=0.2)


def test_every_claim_has_a_row(five_seeds):
    df, claims, out = five_seeds
    assert list(claims.index) == [c.id for c in CLAIMS]
    assert set(claims.verdict) <= {SUPPORTED, NOT_SUPPORTED, INCONCLUSIVE}
    for col in ("effect", "ci_low", "ci_high", "test", "rule", "p_value", "reason"):
        assert claims[col].notna().all(), col
    md = (out / "claims.md").read_text()
    assert "| C2: TACO-250k beats MLM-250k" in md and "Rule:" in md


def test_verdicts_on_constructed_effects(five_seeds):
    # fixture offsets: TACO +1.2, concentrated +0.4, MLM+TP +0.1 over MLM; a 4-point budget penalty at 50k
    _, claims, _ = five_seeds
    assert claims.loc["C2", "effect"] == pytest.approx(1.2)
    assert claims.loc["C2", "verdict"] == SUPPORTED
    assert claims.loc["C1", "effect"] == pytest.approx(1.2 - 4.0)  # TACO-50k vs MLM-250k
    assert claims.loc["C1", "verdict"] == NOT_SUPPORTED
    assert claims.loc["C5", "effect"] == pytest.approx(0.4 - 1.2)
    assert claims.loc["C5", "verdict"] == SUPPORTED
    assert claims.loc["C6", "verdict"] == SUPPORTED
    assert claims.loc["C3", "verdict"] == SUPPORTED  # 25% TACO is 0.9 above full MLM: non-inferior
    assert "partial GLUE avg" in claims.loc["C2", "scope"]  # 3 tasks -> 4 of 9 keys


def test_per_task_rows_are_holm_corrected(five_seeds):
    df, _, _ = five_seeds
    c3 = df[(df.claim_id == "C3") & (df.level == "task")]
    assert list(c3.scope) == ["mnli_m", "mnli_mm", "sst2"]  # qqp, qnli not fine-tuned here
    assert (c3.p_holm >= c3.p_value - 1e-12).all()
    assert set(c3.verdict) == {SUPPORTED}
    detail = df[(df.claim_id == "C2") & (df.level == "task")]
    assert len(detail) == 4 and (detail.p_holm >= detail.p_value - 1e-12).all()


def test_too_few_seeds_is_inconclusive(tmp_path):
    spec = smoke_spec(tasks=["sst2", "rte"], n_resamples=99, min_seeds=3,
                      budget_names={"tiny": {"50k": 20, "250k": 60}, "tinybase": {"250k": 40, "500k": 80}})
    _, claims, _ = _run(tmp_path, spec, seeds=[1, 2])
    assert (claims.verdict == INCONCLUSIVE).all()
    assert claims.loc["C2", "reason"].startswith("too few seeds: A has 2, B has 2 (min_seeds = 3)")
    assert math.isfinite(claims.loc["C2", "effect"])  # the numbers are still reported
    assert "budget 100k not run" in claims.loc["C4b", "reason"]


def test_unrun_role_and_variant_are_inconclusive(tmp_path):
    spec = smoke_spec(tasks=["sst2"], n_resamples=99, roles={"small": "tiny", "base": None},
                      budget_names={"tiny": {"250k": 60}, "tinybase": {"250k": 40}},
                      variants=[{"size": "tiny", "objective": "mlm", "fraction": 1.0},
                                {"size": "tiny", "objective": "taco", "fraction": 1.0}])
    _, claims, _ = _run(tmp_path, spec, seeds=[1, 2, 3])
    assert "roles.base is null" in claims.loc["C4", "reason"]
    assert "budget 50k not run" in claims.loc["C1", "reason"]
    assert "variant MLM+TP-250k [step 60] not in the analysis spec" in claims.loc["C6", "reason"]
    assert "variant TACO-250k (25% data) [step 60] not in the analysis spec" in claims.loc["C3", "reason"]
    assert (claims.loc[["C1", "C3", "C4", "C4b", "C5", "C6"], "verdict"] == INCONCLUSIVE).all()


def test_decide_rules():
    cfg = validate_analysis({})
    ok = dict(gt_neg_margin=0.01, lt_margin=0.01, gt_margin=0.9, lt_neg_margin=0.9, tost=0.01,
              gt0=0.01, lt0=0.9, lt_target_low=0.9, gt_target_high=0.9)
    assert decide("match", -0.2, 0.3, ok, cfg)[0] == SUPPORTED
    assert decide("match", -0.2, 0.6, ok, cfg)[0] == INCONCLUSIVE  # CI crosses the margin
    assert decide("match", -0.2, 0.3, {**ok, "tost": 0.1}, cfg)[0] == INCONCLUSIVE  # test not significant
    assert decide("match", 0.6, 1.0, {**ok, "gt_margin": 0.01}, cfg)[0] == NOT_SUPPORTED
    assert decide("competitive", 0.6, 1.0, ok, cfg)[0] == SUPPORTED
    assert decide("improvement", 0.8, 1.5, ok, cfg)[0] == SUPPORTED
    assert decide("improvement", -0.3, 0.4, {**ok, "lt_target_low": 0.01}, cfg)[0] == NOT_SUPPORTED
    assert decide("below", -1.0, -0.2, {**ok, "lt0": 0.01}, cfg)[0] == SUPPORTED
    assert decide("below", -0.2, 0.3, ok, cfg)[0] == NOT_SUPPORTED  # equivalent within the margin
    assert decide("not_better", -0.3, 0.4, ok, cfg)[0] == SUPPORTED
    assert decide("not_better", 0.3, 1.4, ok, cfg)[0] == NOT_SUPPORTED
    assert decide("match", math.nan, math.nan, ok, cfg)[0] == INCONCLUSIVE
    ni = validate_analysis({"match_rule": "non_inferiority"})
    assert decide("match", 0.6, 1.0, ok, ni)[0] == SUPPORTED
    assert "non-inferiority" in rule_text("match", ni) and "equivalence" in rule_text("match", cfg)
