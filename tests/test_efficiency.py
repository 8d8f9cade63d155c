"""Steps-to-target speedups (taco.report.efficiency) on fixture curves whose answers are computed by hand.

Fixture E1 (validation loss, nats, lower is better; three pre-training runs per arm, offsets -0.1, 0, +0.1):
MLM at T = 4000: 5.9, 6.0, 6.1 (mean 6.0); TACO's mean curve 6.5 (step 1000), 5.5 (2000), 5.0 (4000).
The target 6.0 lies halfway (in value) between TACO's points at 1000 and 2000, so in log-step
k* = exp(ln 1000 + 0.5 ln 2) = 1000 sqrt(2) and the speedup 4000 / (1000 sqrt 2) = 2 sqrt(2). At T the
arms separate completely, so the exact one-sided permutation p is 1 / C(6, 3) = 1/20.
"""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from taco.report import efficiency as eff
from taco.report.analysis_config import validate_analysis
from taco.workflow.flops import pretrain_flops_per_token, shape

OFFSETS = (-0.1, 0.0, 0.1)
TINY_MANIFEST = dict(size="tiny", size_preset="tiny", seq_len=128, global_batch_size=32,
                     hash_inputs={"vocab_size": 8192}, fraction=1.0)


def _ckpt(root: Path, objective: str, run: int, step: int, loss: float, points=None, legacy=False) -> Path:
    d = root / objective / f"run-{run}" / f"step-{step}"
    d.mkdir(parents=True)
    m = dict(TINY_MANIFEST, objective=objective, pretrain_seed=run, step=step,
             objective_params={"tc_num_negatives": 50})
    (d / "manifest.json").write_text(json.dumps(m))
    ev = {"mlm_loss": loss, "mlm_accuracy": 0.1, "tc_loss": None}
    if not legacy:
        ev["step"] = step
    if points is not None:
        ev["points"] = [{"step": s, "mlm_loss": v} for s, v in points]
    (d / "eval.json").write_text(json.dumps(ev))
    return d


def _e1_checkpoints(root: Path, b_curve=(6.5, 5.5, 5.0), a_at_t=6.0, runs=OFFSETS) -> list[Path]:
    """MLM budgets 2000, 4000 (in-segment point at 1000 in the ``points`` list); TACO the same."""
    out = []
    for run, off in enumerate(runs):
        out.append(_ckpt(root, "mlm", run, 2000, 6.4 + off, points=[(1000, 6.8 + off)]))
        out.append(_ckpt(root, "mlm", run, 4000, a_at_t + off))
        out.append(_ckpt(root, "taco", run, 2000, b_curve[1] + off, points=[(1000, b_curve[0] + off)]))
        out.append(_ckpt(root, "taco", run, 4000, b_curve[2] + off))
    return out


def _cfg(**kw):
    spec = dict(roles={"small": "tiny", "base": None}, budget_names={"tiny": {"50k": 2000, "250k": 4000}},
                runs=[{"size": "tiny", "objective": o, "fraction": 1.0} for o in ("mlm", "taco")],
                tasks=["sst2"], n_resamples=1999, seed=3)
    spec.update(kw)
    return validate_analysis(spec)


# ---------------------------------------------------------------------------------------------
# the crossing
# ---------------------------------------------------------------------------------------------
def test_crossing_is_linear_in_log_step():
    c = eff.crossing_step([100, 1000], [6.0, 5.0], 5.5)
    assert c.status == eff.REACHED and c.step == pytest.approx(math.sqrt(1e5))
    assert c.speedup(1000) == pytest.approx(math.sqrt(10))
    # a score (higher is better) the same way
    assert eff.crossing_step([100, 1000], [0.5, 0.7], 0.6, eff.HIGHER).step == pytest.approx(math.sqrt(1e5))
    # the first crossing of a non-monotone curve: between 100 and 200, at 5/6 of the way in value
    c = eff.crossing_step([800, 100, 400, 200], [5.0, 6.0, 5.6, 5.4], 5.5)
    assert c.step == pytest.approx(100 * 2 ** (5 / 6))
    # reaching the target exactly at a point
    assert eff.crossing_step([100, 1000], [6.0, 5.0], 5.0).step == pytest.approx(1000)


def test_crossing_says_never_and_already_and_ignores_step_zero():
    c = eff.crossing_step([0, 100, 1000], [1.0, 6.0, 5.0], 6.5)  # step 0 (the control) is not on the axis
    assert c.status == eff.ALREADY and c.bound_step == 100 and c.speedup(1000) == math.inf
    c = eff.crossing_step([100, 1000], [6.0, 5.0], 4.0)
    assert c.status == eff.NEVER and c.bound_step == 1000 and c.speedup(1000) == 0.0
    assert eff.crossing_step([], [], 4.0).status == eff.NO_CURVE
    with pytest.raises(ValueError):
        eff.crossing_step([1], [1.0], 1.0, "smaller")


def test_eval_points_reads_todays_eval_json_and_the_points_list():
    assert eff.eval_points({"step": 400, "mlm_loss": 5.0}) == [(400, 5.0)]
    ev = {"step": 400, "mlm_loss": 5.0, "points": [{"step": 300, "mlm_loss": 5.2}, {"step": 200, "mlm_loss": 5.5},
                                                   {"step": 100, "mlm_loss": None}]}
    assert eff.eval_points(ev) == [(200, 5.5), (300, 5.2), (400, 5.0)]
    assert eff.eval_points({"mlm_loss": 4.0}, step=9) == [(9, 4.0)]  # a manifest's validation entry


# ---------------------------------------------------------------------------------------------
# the validation-loss form, three runs per arm
# ---------------------------------------------------------------------------------------------
def test_validation_loss_speedup_test_and_verdict(tmp_path):
    loss, fps = eff.read_checkpoints(_e1_checkpoints(tmp_path))
    assert sorted(set(loss["step"])) == [1000, 2000, 4000]
    cfg = _cfg()
    (pair,) = eff.build_pairs(loss, None, cfg, fps)
    row = eff.evaluate_pair(pair, alpha=cfg.alpha, n_resamples=cfg.n_resamples, seed=cfg.seed)
    assert row["target_step"] == 4000 and row["target_budget"] == "250k"
    assert row["target_value"] == pytest.approx(6.0)
    assert row["status"] == eff.REACHED
    assert row["k_star"] == pytest.approx(1000 * math.sqrt(2))
    assert row["speedup"] == pytest.approx(2 * math.sqrt(2))
    # exact one-sided permutation test, 3 vs 3, complete separation: 1 / C(6, 3)
    assert row["p_b_better"] == pytest.approx(1 / 20)
    assert row["p_a_better"] == pytest.approx(1.0)
    assert row["min_attainable_p"] == pytest.approx(1 / 20)
    # every resample's k* lies where the extreme target (5.9 or 6.1) meets the extreme curve
    # (6.4/5.4 or 6.6/5.6 at 1000/2000): fraction of the way 0.3 ... 0.7 of ln 2
    lo_bound, hi_bound = 4.0 / 2 ** 0.7, 4.0 / 2 ** 0.3
    assert lo_bound - 1e-9 <= row["speedup_ci_low"] <= row["speedup"] <= row["speedup_ci_high"] <= hi_bound + 1e-9
    assert row["speedup_ci_low"] < row["speedup_ci_high"]
    assert row["sd_run_a"] == pytest.approx(0.1) and row["sd_run_b"] == pytest.approx(0.1)
    assert math.isnan(row["sd_seed_a"])  # no fine-tuning in a validation loss
    assert row["verdict"] == eff.SUPPORTED
    # compute: F_mlm / F_taco per step, the TC term 4 (K + 1) H per token the only difference
    h = shape("tiny")["hidden_size"]
    f_mlm = pretrain_flops_per_token("tiny", 128, "mlm", vocab_size=8192)
    assert row["flops_per_step_a"] == pytest.approx(f_mlm * 128 * 32)
    assert row["flops_per_step_b"] == pytest.approx((f_mlm + 4 * 51 * h) * 128 * 32)
    assert row["compute_speedup"] == pytest.approx(2 * math.sqrt(2) * f_mlm / (f_mlm + 4 * 51 * h))
    assert row["compute_ci_low"] == pytest.approx(row["speedup_ci_low"] * f_mlm / (f_mlm + 4 * 51 * h))


def test_the_interval_is_reproducible(tmp_path):
    # with 3 units per arm the bootstrap distribution is discrete: order statistics of two seeds may
    # coincide, so only equality for the same seed is asserted
    loss, fps = eff.read_checkpoints(_e1_checkpoints(tmp_path))
    rows = [eff.evaluate_pair(eff.build_pairs(loss, None, _cfg(), fps)[0], alpha=0.05, n_resamples=499, seed=1)
            for _ in range(2)]
    assert (rows[0]["speedup_ci_low"], rows[0]["speedup_ci_high"]) == (rows[1]["speedup_ci_low"], rows[1]["speedup_ci_high"])


def test_a_better_at_t_is_not_supported(tmp_path):
    # TACO's loss at 4000 is 6.5 > MLM's 6.0 in every run: A lower by the exact test (p = 1/20)
    loss, fps = eff.read_checkpoints(_e1_checkpoints(tmp_path, b_curve=(7.5, 7.0, 6.5)))
    pair = eff.build_pairs(loss, None, _cfg(), fps)[0]
    row = eff.evaluate_pair(pair, alpha=0.05, n_resamples=999, seed=0)
    assert row["status"] == eff.NEVER and math.isnan(row["speedup"])
    assert row["p_a_better"] == pytest.approx(1 / 20)
    assert row["speedup_ci_high"] == 0.0  # every resample: never reaches
    assert row["verdict"] == eff.NOT_SUPPORTED
    assert "speedup < 1" in row["interval_note"]


def test_one_run_per_arm_gives_no_interval_and_says_why(tmp_path):
    loss, fps = eff.read_checkpoints(_e1_checkpoints(tmp_path, runs=(0.0,)))
    row = eff.evaluate_pair(eff.build_pairs(loss, None, _cfg(), fps)[0], alpha=0.05, n_resamples=999, seed=0)
    assert row["speedup"] == pytest.approx(2 * math.sqrt(2))  # the point estimate is still there
    assert math.isnan(row["speedup_ci_low"]) and math.isnan(row["speedup_ci_high"])
    assert "one pre-training run per arm" in row["interval_note"]
    assert math.isnan(row["p_b_better"])
    assert row["verdict"] == eff.INCONCLUSIVE


def test_legacy_eval_json_without_step_uses_the_manifest_step(tmp_path):
    d = _ckpt(tmp_path, "mlm", 0, 4000, 6.0, legacy=True)
    loss, _ = eff.read_checkpoints([d])
    assert loss[["step", "value"]].values.tolist() == [[4000, 6.0]]


# ---------------------------------------------------------------------------------------------
# the GLUE form: pre-training runs with fine-tuning seeds nested
# ---------------------------------------------------------------------------------------------
RUN_OFFSETS = {0: -1.0, 1: 0.0, 2: 1.0}
SEED_OFFSETS = {1: -0.5, 2: 0.5}


def _per_seed(values: dict[tuple[str, int], float], run_offsets=RUN_OFFSETS) -> pd.DataFrame:
    """sst2 rows (points) of runs x seeds: value = cell value + run offset + seed offset."""
    rows = []
    for (obj, step), v in values.items():
        for run, ro in run_offsets.items():
            for seed, so in SEED_OFFSETS.items():
                rows.append(dict(size="tiny", objective=obj, fraction=1.0, step=step, pretrain_seed=run, seed=seed,
                                 score_key="sst2", value=v + ro + so))
    return pd.DataFrame(rows)


def test_glue_form_speedup_variance_components_and_exact_test():
    # MLM-250k (step 4000) mean 75; TACO 74 at 2000 and 76 at 4000 (its runs at 4000: 75.5, 76, 76.5)
    ps = _per_seed({("mlm", 4000): 75.0, ("taco", 2000): 74.0})
    taco_t = _per_seed({("taco", 4000): 76.0}, run_offsets={0: -0.5, 1: 0.0, 2: 0.5})
    ps = pd.concat([ps, taco_t], ignore_index=True)
    cfg = _cfg()
    glue = eff.glue_rows(ps, ("sst2",))
    pairs = eff.build_pairs(pd.DataFrame(columns=glue.columns), glue, cfg, {})
    (pair,) = pairs
    assert pair.form == eff.GLUE_FORM and pair.target_step == 4000 and pair.paper_speedup == 5.0
    row = eff.evaluate_pair(pair, alpha=cfg.alpha, n_resamples=cfg.n_resamples, seed=0)
    assert row["k_star"] == pytest.approx(2000 * math.sqrt(2))  # halfway between 74 and 76
    assert row["speedup"] == pytest.approx(math.sqrt(2))
    assert row["unit"] == "pre-training run" and row["n_units_a"] == 3
    # one-way random-effects ANOVA by hand: run means 74, 75, 76, two seeds each at +-0.5:
    # MS_within = 0.5, MS_between = 2 * 1 = 2, sigma^2_run = (2 - 0.5) / 2 = 0.75
    assert row["sd_seed_a"] == pytest.approx(math.sqrt(0.5))
    assert row["sd_run_a"] == pytest.approx(math.sqrt(0.75))
    # the exact one-sided p, enumerated here: run means A = 74, 75, 76; B = 75.5, 76, 76.5
    a, b = [74.0, 75.0, 76.0], [75.5, 76.0, 76.5]
    pooled, obs = a + b, np.mean(b) - np.mean(a)
    splits = list(itertools.combinations(range(6), 3))
    hits = sum(np.mean([pooled[i] for i in s]) - np.mean([pooled[i] for i in range(6) if i not in s]) >= obs - 1e-12
               for s in splits)
    assert row["p_b_better"] == pytest.approx(hits / len(splits))
    assert row["p_b_better"] > 0.05 and row["verdict"] == eff.INCONCLUSIVE


def test_glue_form_with_one_pretraining_run_resamples_fine_tuning_seeds():
    ps = _per_seed({("mlm", 4000): 75.0, ("taco", 2000): 74.0, ("taco", 4000): 76.0}, run_offsets={0: 0.0})
    cfg = _cfg()
    pair = eff.build_pairs(pd.DataFrame(columns=["size"]), eff.glue_rows(ps, ("sst2",)), cfg, {})[0]
    row = eff.evaluate_pair(pair, alpha=0.05, n_resamples=999, seed=0)
    assert row["unit"] == "fine-tuning seed" and row["n_units_a"] == 2
    assert math.isfinite(row["speedup_ci_low"])
    assert "covers fine-tuning seeds only" in row["interval_note"]
    assert math.isnan(row["sd_run_a"]) and row["sd_seed_a"] == pytest.approx(math.sqrt(0.5))


def test_decide_rule():
    assert eff.decide(0.05, 1.0, 1.2, 3.0, 0.05)[0] == eff.SUPPORTED
    assert eff.decide(0.05, 1.0, math.inf, math.inf, 0.05)[0] == eff.SUPPORTED
    assert eff.decide(0.05, 1.0, 0.9, 3.0, 0.05)[0] == eff.INCONCLUSIVE
    assert eff.decide(0.10, 0.9, 1.2, 3.0, 0.05)[0] == eff.INCONCLUSIVE
    assert eff.decide(1.0, 0.05, 0.5, 2.0, 0.05)[0] == eff.NOT_SUPPORTED
    assert eff.decide(0.5, 0.5, 0.2, 0.9, 0.05)[0] == eff.NOT_SUPPORTED
    assert eff.decide(math.nan, math.nan, math.nan, math.nan, 0.05)[0] == eff.INCONCLUSIVE


def test_command_writes_table_markdown_and_figure(tmp_path):
    ckpts = _e1_checkpoints(tmp_path / "pretrain")
    spec = tmp_path / "analysis.json"
    spec.write_text(json.dumps(dict(roles={"small": "tiny", "base": None},
                                    budget_names={"tiny": {"50k": 2000, "250k": 4000}},
                                    runs=[{"size": "tiny", "objective": o, "fraction": 1.0} for o in ("mlm", "taco")],
                                    tasks=["sst2"], n_resamples=199)))
    agg = tmp_path / "agg"
    agg.mkdir()
    _per_seed({("mlm", 4000): 75.0, ("taco", 2000): 74.0, ("taco", 4000): 76.0}).to_csv(agg / "per_seed.csv", index=False)
    out = tmp_path / "out"
    argv = ["--checkpoints", *map(str, ckpts), "--aggregate-dir", str(agg), "--analysis", str(spec), "--output-dir", str(out)]
    assert eff.main(argv) == 0
    df = pd.read_csv(out / "efficiency.csv")
    assert list(df["claim_id"]) == ["E1", "E2"]
    assert df.loc[0, "speedup"] == pytest.approx(2 * math.sqrt(2), rel=1e-5)
    assert df.loc[1, "speedup"] == pytest.approx(math.sqrt(2), rel=1e-5)
    md = (out / "efficiency.md").read_text()
    assert "supported" in md and "E2" in md and "5" in md
    assert "<table>" in (out / "efficiency.html").read_text()  # the report's page (taco.report.html)
    assert (out / "efficiency.png").stat().st_size > 0
    assert eff.main(["--checkpoints", str(tmp_path / "nope"), "--output-dir", str(out)]) == 2


def test_claims_page_carries_the_efficiency_claims(tmp_path):
    """``taco claims --efficiency efficiency.csv`` adds E1 / E2 with their verdicts and the rule to claims.md."""
    from taco.report.claims import main as claims_main
    from tests.fixtures_stats import build_aggregate, smoke_spec

    ckpts = _e1_checkpoints(tmp_path / "pretrain")
    loss, fps = eff.read_checkpoints(ckpts)
    cfg = _cfg(n_resamples=199)
    table = eff.evaluate(eff.build_pairs(loss, None, cfg, fps), cfg)
    (tmp_path / "efficiency.csv").write_text(table.to_csv(index=False))
    back = eff.read_table(tmp_path / "efficiency.csv")
    assert back.loc[0, "verdict"] == eff.SUPPORTED and back.loc[0, "target_budget"] == "250k"
    agg, spec = build_aggregate(tmp_path / "agg", smoke_spec(n_resamples=99), seeds=[1, 2])
    out = tmp_path / "out"
    assert claims_main(["--aggregate-dir", str(agg), "--analysis", str(spec), "--output-dir", str(out),
                        "--efficiency", str(tmp_path / "efficiency.csv")]) == 0
    md = (out / "claims.md").read_text()
    assert "## Steps-to-target claims (taco efficiency)" in md
    row = next(ln for ln in md.splitlines() if ln.startswith("| E1:"))
    assert "2.83" in row and "**supported**" in row and "0.05 / 1" in row
    assert "one-sided exact permutation test" in md
    assert claims_main(["--aggregate-dir", str(agg), "--analysis", str(spec), "--output-dir", str(out)]) == 0
    assert "Steps-to-target" not in (out / "claims.md").read_text()  # without the option: as before
