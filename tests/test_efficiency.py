"""Steps-to-target speedups (taco.stats.efficiency, the command taco.commands.efficiency) on fixture curves whose answers are computed by hand.

Fixture E1 (validation loss, nats, lower is better; three pre-training runs per arm, offsets -0.1, 0, +0.1):
MLM at T = 4000: 5.9, 6.0, 6.1 (mean 6.0); TACO's mean curve 6.5 (step 1000), 5.5 (2000), 5.0 (4000).
Run o of TACO (offset o) reaches the target 6.0 at a fraction 0.5 + o (in value) of the way from its
point at 1000 to the one at 2000, so in log-step k_o = 1000 * 2^(0.5 + o) and its speedup
4000 / k_o; the geometric mean over o = -0.1, 0, 0.1 is 4 / sqrt(2) = 2 sqrt(2). The interval is
computed here by hand: var(ln s_o) / 3 = (ln 2)^2 0.01 / 3 for A, and B's target variance 0.01 / 3
propagated through d ln k / d target = ln 2 / (1.0 nat): the same, so Welch-Satterthwaite gives
4 degrees of freedom.
"""

from __future__ import annotations

import errno
import json
import os
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from taco.commands import efficiency as eff_command
from taco.stats import efficiency as eff
from taco.report import efficiency_figure
from taco.stats import speedup as sp
from taco.stats import claim_rules as cr
from taco.stats.speedup_decision import decide
from taco.report.efficiency_page import render_markdown
from taco.stats.validation_points import EvalFileError
from taco.stats.analysis_config import validate_analysis
from taco.flops import pretrain_flops_per_token, shape

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


def _e1_checkpoints(root: Path, a_curve=(6.5, 5.5, 5.0), b_at_t=6.0, runs=OFFSETS) -> list[Path]:
    """MLM budgets 2000, 4000 (in-segment point at 1000 in the ``points`` list); TACO the same."""
    out = []
    for run, off in enumerate(runs):
        out.append(_ckpt(root, "mlm", run, 2000, 6.4 + off, points=[(1000, 6.8 + off)]))
        out.append(_ckpt(root, "mlm", run, 4000, b_at_t + off))
        out.append(_ckpt(root, "taco", run, 2000, a_curve[1] + off, points=[(1000, a_curve[0] + off)]))
        out.append(_ckpt(root, "taco", run, 4000, a_curve[2] + off))
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
    c = sp.crossing_step([100, 1000], [6.0, 5.0], 5.5)
    assert c.status == sp.REACHED and c.step == pytest.approx(math.sqrt(1e5))
    assert c.speedup(1000) == pytest.approx(math.sqrt(10))
    # a score (higher is better) the same way
    assert sp.crossing_step([100, 1000], [0.5, 0.7], 0.6, sp.HIGHER).step == pytest.approx(math.sqrt(1e5))
    # the first crossing of a non-monotone curve: between 100 and 200, at 5/6 of the way in value
    c = sp.crossing_step([800, 100, 400, 200], [5.0, 6.0, 5.6, 5.4], 5.5)
    assert c.step == pytest.approx(100 * 2 ** (5 / 6))
    # reaching the target exactly at a point
    assert sp.crossing_step([100, 1000], [6.0, 5.0], 5.0).step == pytest.approx(1000)


def test_crossing_says_never_and_already_and_ignores_step_zero():
    c = sp.crossing_step([0, 100, 1000], [1.0, 6.0, 5.0], 6.5)  # step 0 (the control) is not on the axis
    assert c.status == sp.ALREADY and c.bound_step == 100 and c.speedup(1000) == math.inf
    c = sp.crossing_step([100, 1000], [6.0, 5.0], 4.0)
    assert c.status == sp.NEVER and c.bound_step == 1000 and c.speedup(1000) == 0.0
    assert sp.crossing_step([], [], 4.0).status == sp.NO_CURVE
    with pytest.raises(ValueError):
        sp.crossing_step([1], [1.0], 1.0, "smaller")


def test_eval_json_points_and_damage_name_the_file(tmp_path):
    from taco.stats.validation_points import parse_eval, read_eval

    assert parse_eval({"step": 400, "mlm_loss": 5.0}, "f") == ([(400, 5.0)], [])
    ev = {"step": 400, "mlm_loss": 5.0, "points": [{"step": 300, "mlm_loss": 5.2}, {"step": 200, "mlm_loss": 5.5},
                                                   {"step": 100, "mlm_loss": None}]}
    points, notes = parse_eval(ev, "f")
    assert points == [(200, 5.5), (300, 5.2), (400, 5.0)]
    assert notes == ["f: step 100: validation MLM loss is None, left out"]  # said, not silently dropped
    assert parse_eval({"mlm_loss": 4.0}, "f", manifest_step=9) == ([(9, 4.0)], [])  # a manifest's validation entry
    # a non-finite final point: left out and named
    points, notes = parse_eval({"step": 400, "mlm_loss": float("nan")}, "f")
    assert points == [] and "step 400" in notes[0]
    bad = tmp_path / "eval.json"
    for text, msg in (("{", "not valid JSON"), ("[]", "expected a JSON object"),
                      ('{"step": 4, "mlm_loss": 1.0, "points": 7}', "'points' must be a list"),
                      ('{"step": 4, "mlm_loss": 1.0, "points": [3]}', r"points\[0\]"),
                      ('{"step": 4, "mlm_loss": "x"}', "'mlm_loss' must be a number")):
        bad.write_text(text)
        with pytest.raises(EvalFileError, match=msg) as e:
            read_eval(bad, 4)
        assert str(bad) in str(e.value)
    bad.write_text('{"step": 2, "mlm_loss": 1.0}')  # would move T from 4 to 2
    with pytest.raises(EvalFileError, match="manifest says step 4"):
        read_eval(bad, 4)


def test_efficiency_command_names_a_damaged_eval_json(tmp_path, capsys):
    ckpts = _e1_checkpoints(tmp_path / "pretrain")
    (ckpts[1] / "eval.json").write_text('{"step": 4000, "mlm_loss": 6.0,,}')
    out = tmp_path / "out"
    assert eff_command.main(["--checkpoints", *map(str, ckpts), "--output-dir", str(out)]) == 2
    err = capsys.readouterr().err
    assert str(ckpts[1] / "eval.json") in err and "not valid JSON" in err
    assert not out.exists()  # nothing written before the inputs are read


# ---------------------------------------------------------------------------------------------
# the validation-loss form, three runs per arm
# ---------------------------------------------------------------------------------------------
def _by_hand_interval(level=0.9):
    from scipy import stats

    v = math.log(2) ** 2 * 0.01 / 3  # A's and B's variance components (module docstring)
    se = math.sqrt(2 * v)
    df = (2 * v) ** 2 / (v ** 2 / 2 + v ** 2 / 2)
    q = stats.t.ppf(0.5 + level / 2, df)
    est = math.log(2 * math.sqrt(2))
    return math.exp(est - q * se), math.exp(est + q * se), df


def _rows(tmp_path, **kw):
    loss, fps, notes = eff.read_checkpoints(_e1_checkpoints(tmp_path, **kw))
    cfg = _cfg()
    pairs = eff.build_pairs(loss, None, cfg, fps)
    return pairs, eff.evaluate(pairs, cfg), cfg


def test_validation_loss_per_run_speedups_interval_and_verdict(tmp_path):
    pairs, df, cfg = _rows(tmp_path)
    assert list(df["kind"]) == ["primary", "secondary", "curve", "curve"]
    row = df.iloc[0]
    assert row["target_step"] == 4000 and row["target_budget"] == "250k"  # the largest common budget
    assert row["target_value"] == pytest.approx(6.0)
    assert row["status"] == sp.REACHED
    assert row["speedup"] == pytest.approx(2 * math.sqrt(2))
    ks = [1000 * 2 ** (0.5 + o) for o in OFFSETS]
    assert [float(k) for k in row["unit_k"].split(";")] == pytest.approx(ks, abs=0.5)
    lo, hi, dof = _by_hand_interval()
    assert row["df"] == pytest.approx(dof)
    assert row["speedup_ci_low"] == pytest.approx(lo) and row["speedup_ci_high"] == pytest.approx(hi)
    assert row["verdict"] == cr.SUPPORTED and row["margin"] == 1.2
    assert row["p_at_least_margin"] < 0.05
    assert row["sd_run_b"] == pytest.approx(0.1) and row["sd_run_a"] == pytest.approx(0.1)
    assert math.isnan(row["sd_seed_b"])  # no fine-tuning in a validation loss
    # compute: F_mlm / F_taco per step, the TC term 4 (K + 1) H per token the only difference
    h = shape("tiny")["hidden_size"]
    f_mlm = pretrain_flops_per_token("tiny", 128, "mlm", vocab_size=8192)
    f_taco = pretrain_flops_per_token("tiny", 128, "taco", vocab_size=8192)
    assert row["model_flops_per_step_b"] == pytest.approx(f_mlm * 128 * 32)
    assert row["model_flops_speedup"] == pytest.approx(2 * math.sqrt(2) * f_mlm / f_taco)
    # the mean curve's crossing is kept as a labelled secondary number
    assert row["mean_curve_speedup"] == pytest.approx(2 * math.sqrt(2))
    # T = 2000 is secondary; the curve has a row per validation point of B from its first budget to T
    assert df.iloc[1]["target_step"] == 2000 and df.iloc[1]["kind"] == "secondary"
    assert list(df[df["kind"] == "curve"]["target_step"]) == [2000, 4000]
    assert set(df[df["kind"] == "curve"]["verdict"]) == {"descriptive"}


def test_the_estimand_is_the_typical_run_not_the_mean_curve():
    """Runs leaving the plateau at 1,200, 1,200 and 2,600 steps: per-run speedups 3.3, 3.3, 1.5; the
    mean curve's crossing is dominated by the early runs, the estimate is their geometric mean."""
    steps = np.array([250 * i for i in range(1, 17)], dtype=float)

    def run(escape):  # plateau 5.85 until the escape step, then 0.5 nats per ln-step down
        return np.where(steps <= escape, 5.85 - 1e-4 * np.log(steps), 5.85 - 1e-4 * np.log(escape)
                        - 0.5 * np.log(steps / escape))
    target_step = 4000
    a = np.stack([run(1200), run(1200), run(2600)])
    target = float(run(1200 * 3.3)[np.flatnonzero(steps == 4000)[0]])  # B = a run 3.3x slower than the fast ones
    b = np.array([target - 0.001, target, target + 0.001])
    iv = sp.speedup_interval(steps, b, a, target_step, sp.LOWER, 0.9)
    per_run = np.exp(iv.log_s_units)
    assert per_run[0] == pytest.approx(per_run[1]) and per_run[2] < per_run[0] / 2
    assert float(iv.speedup) == pytest.approx(np.exp(np.mean(np.log(per_run))))
    assert float(iv.low) < per_run[2] < float(iv.high)  # the interval does not exclude the slow run
    mean = sp.crossing_step(steps, a.mean(axis=0), target).speedup(target_step)
    assert mean > float(iv.speedup) * 1.1


def test_a_tiny_difference_is_not_supported_at_the_margin():
    """A = B - 0.0015 nats at every step: about 1.01x, with a tight interval below the margin 1.2."""
    steps = np.array([250.0 * i for i in range(1, 17)])
    mu = 6.5 - 0.2 * np.log(steps / 250)
    rng = np.random.default_rng(0)
    b = mu[-1] + 1e-4 * rng.standard_normal(3)
    a = mu - 0.0015 + 1e-4 * rng.standard_normal((3, steps.size))
    iv = sp.speedup_interval(steps, b, a, 4000, sp.LOWER, 0.9)
    assert 1.0 < float(iv.speedup) < 1.02 and float(iv.high) < 1.2
    assert decide(float(iv.low), float(iv.high), 1.2)[0] == cr.NOT_SUPPORTED


def test_censored_units_are_extrapolated_not_dropped():
    steps = np.array([1000.0, 2000.0, 4000.0])
    # unit 0 reaches 5.0 at 2000 exactly; unit 1 never does (5.5 at 4000, 1 nat per ln 2 on its last segment:
    # extrapolated half a doubling past 4000); unit 2 is already below at 1000 with a flat first segment:
    # the cap, a factor 2 before 1000
    a = np.array([[6.0, 5.0, 4.0], [7.5, 6.5, 5.5], [4.0, 4.0, 3.0]])
    log_k, status, _ = sp.unit_crossings(steps, a, np.array(5.0), sp.LOWER)
    assert list(status) == [sp.CODE_REACHED, sp.CODE_RIGHT, sp.CODE_LEFT]
    assert np.exp(log_k) == pytest.approx([2000, 4000 * 2 ** 0.5, 500])
    # far from the target: at most a factor 2 beyond the measured steps
    log_k, status, _ = sp.unit_crossings(steps, a, np.array(1.0), sp.LOWER)
    assert np.exp(log_k) == pytest.approx([8000, 8000, 8000])


def test_mlm_better_at_t_is_not_supported_and_the_slowdown_is_a_number(tmp_path):
    # TACO's loss at 4000 is 6.5 > MLM's 6.0 in every run: no TACO run reaches the target
    pairs, df, cfg = _rows(tmp_path, a_curve=(7.5, 7.0, 6.5))
    row = df.iloc[0]
    assert row["status"] == sp.NEVER and row["n_right_censored"] == 3
    assert row["speedup"] < 1 and row["estimate_bound"] == "<="  # a number, marked as an upper limit
    assert row["speedup_ci_high"] < 1.2
    assert row["verdict"] == cr.NOT_SUPPORTED
    # on the curve, a target below T that A reaches after T is a slow-down printed as a number
    curve = df[df["kind"] == "curve"].set_index("target_step")
    assert 0 < curve.loc[2000, "speedup"] < 1


def test_one_run_per_arm_gives_no_interval_and_says_why(tmp_path):
    pairs, df, cfg = _rows(tmp_path, runs=(0.0,))
    row = df.iloc[0]
    assert row["speedup"] == pytest.approx(2 * math.sqrt(2))  # the point estimate is still there
    assert math.isnan(row["speedup_ci_low"]) and math.isnan(row["speedup_ci_high"])
    assert "no interval: 1/1 units" in row["interval_note"]
    assert row["verdict"] == cr.INCONCLUSIVE and math.isnan(row["calibrated_p_supported"])


def test_legacy_eval_json_without_step_uses_the_manifest_step(tmp_path):
    d = _ckpt(tmp_path, "mlm", 0, 4000, 6.0, legacy=True)
    loss, _, _ = eff.read_checkpoints([d])
    assert loss[["step", "value"]].values.tolist() == [[4000, 6.0]]


def test_the_verdict_is_the_calibrated_tests_and_the_diagnostic_never_vetoes(tmp_path):
    pairs, df, cfg = _rows(tmp_path)
    row = df.iloc[0]
    # 3 runs per arm: Berger-Boos over B's SD; p = (1 + #{t* >= t}) / (R + 1) + 0.01
    assert row["berger_boos"] == 1 and row["calibration_reps"] == eff.CALIBRATION_REPS
    assert 0.01 < row["calibrated_p_supported"] <= 0.05 and row["verdict"] == cr.SUPPORTED
    assert row["calibrated_p_not_supported"] > 0.5 and row["t_rule_verdict"] == cr.SUPPORTED
    assert row["t_statistic"] > row["critical_value"]
    assert 1.2 < row["calibrated_ci_low"] < row["speedup"] < row["calibrated_ci_high"]
    assert "calibrated test" in row["reason"] and "Berger-Boos" in row["reason"]
    calib = eff.calibration_rows(pairs, df, cfg, reps=1000)
    assert [c["row"] for c in calib] == [0]
    bad = [dict(calib[0], supported=0.2, coverage=0.5)]
    kept = eff.record_diagnostic(df, bad)
    assert kept.loc[0, "verdict"] == cr.SUPPORTED and kept.loc[0, "calibrated_level"] == 0.2


def test_the_calibrated_bounds_invert_the_test(tmp_path):
    """A margin just inside the calibrated bounds is inconclusive, just outside them decided."""
    loss, fps, _ = eff.read_checkpoints(_e1_checkpoints(tmp_path))
    reps = 2000  # the bounds invert the same seeded simulation at any size; 2,000 keeps the test short
    row = eff.evaluate(eff.build_pairs(loss, None, _cfg(), fps), _cfg(), calibration_reps=reps).iloc[0]
    low, high = row["calibrated_ci_low"], row["calibrated_ci_high"]
    for margin, verdict in ((low * 0.97, cr.SUPPORTED), (low * 1.03, cr.INCONCLUSIVE),
                            (high * 0.97, cr.INCONCLUSIVE), (high * 1.03, cr.NOT_SUPPORTED)):
        cfg = _cfg(efficiency_margin=margin)
        got = eff.evaluate(eff.build_pairs(loss, None, cfg, fps), cfg, calibration_reps=reps).iloc[0]
        assert got["verdict"] == verdict, (margin, got["reason"])


def test_one_bad_run_changes_nothing_else(tmp_path):
    """A TACO run with a NaN point and an MLM run that stopped at 2,000 are listed and left out; the other
    runs' numbers are those of a run without them."""
    clean = eff.read_checkpoints(_e1_checkpoints(tmp_path / "clean", runs=OFFSETS))[0]
    ckpts = _e1_checkpoints(tmp_path / "bad", runs=OFFSETS)
    ckpts.append(_ckpt(tmp_path / "bad", "taco", 7, 2000, 5.4, points=[(1000, float("nan"))]))
    ckpts.append(_ckpt(tmp_path / "bad", "taco", 7, 4000, 4.9))
    ckpts.append(_ckpt(tmp_path / "bad", "mlm", 8, 2000, 6.3, points=[(1000, 6.7)]))  # never reached 4000
    bad, fps, notes = eff.read_checkpoints(ckpts)
    assert any("nan" in n.lower() for n in notes)
    cfg = _cfg()
    ref = eff.evaluate(eff.build_pairs(clean, None, cfg, fps), cfg, calibration_reps=2000).iloc[0]
    row = eff.evaluate(eff.build_pairs(bad, None, cfg, fps), cfg, calibration_reps=2000).iloc[0]
    assert row["target_step"] == 4000 and row["n_units_b"] == 3 and row["n_units_a"] == 3
    for col in ("speedup", "speedup_ci_low", "calibrated_p_supported", "calibrated_ci_low", "target_value"):
        assert row[col] == pytest.approx(ref[col]), col
    assert row["verdict"] == ref["verdict"] == cr.SUPPORTED
    assert "run 8 without a value at T = 4000" in row["left_out"] and "run 7" in row["left_out"]
    assert "rests on 3/3 units" in row["reason"]


def test_a_short_mlm_arm_does_not_move_t(tmp_path):
    """A short MLM arm no longer moves the primary row's T (fault sweep V.5): it stays at 4000, not decidable,
    naming MLM's budgets; 2000 is a secondary row."""
    ckpts = [c for c in _e1_checkpoints(tmp_path) if not (c.parent.parent.name == "mlm" and c.name == "step-4000")]
    loss, fps, _ = eff.read_checkpoints(ckpts)
    df = eff.evaluate(eff.build_pairs(loss, None, _cfg(), fps), _cfg())
    row = df.iloc[0]
    assert row["kind"] == "primary" and row["target_step"] == 4000 and row["verdict"] == cr.NOT_DECIDABLE
    assert "MLM has no budget point at T = 4000 (its budgets: 2000)" in row["reason"]
    assert list(df[df["kind"] == "secondary"]["target_step"]) == [2000]


def test_the_curves_file_reruns_the_check_from_a_results_folder(tmp_path):
    ckpts = _e1_checkpoints(tmp_path / "pretrain")
    out1, out2 = tmp_path / "a", tmp_path / "b"
    assert eff_command.main(["--checkpoints", *map(str, ckpts), "--output-dir", str(out1), "--calibration-reps", "2000"]) == 0
    assert eff_command.main(["--curves", str(out1 / "efficiency_curves.csv"), "--output-dir", str(out2),
                     "--calibration-reps", "2000"]) == 0
    b, a = eff.read_table(out1 / "efficiency.csv"), eff.read_table(out2 / "efficiency.csv")
    pd.testing.assert_frame_equal(b, a)
    (tmp_path / "broken.csv").write_text("size,step\ntiny,4000\n")
    assert eff_command.main(["--curves", str(tmp_path / "broken.csv"), "--output-dir", str(out2)]) == 2


def test_plateau_exits_and_the_regime_come_from_the_probe(tmp_path):
    """Probe points: MLM's order gap stays 0.01 (on the plateau), TACO's passes 0.1 at step 1,000."""
    ckpts = _e1_checkpoints(tmp_path)
    for c in ckpts:
        ev = json.loads((c / "eval.json").read_text())
        taco = "taco" in str(c)
        gap = {1000: 0.5 if taco else 0.01, 2000: 1.0 if taco else 0.02, 4000: 1.5 if taco else 0.05}
        probe = lambda s: {"probe_intact_loss": 6.0, "probe_shuffled_loss": 6.0 + gap[s],  # noqa: E731
                           "probe_no_context_loss": 7.0, "probe_unigram_loss": 6.5, "probe_order_gap": gap[s]}
        ev.update(probe(ev["step"]))
        for p in ev.get("points", []):
            p.update(probe(p["step"]))
        (c / "eval.json").write_text(json.dumps(ev))
    loss, fps, _ = eff.read_checkpoints(ckpts)
    assert loss["probe_order_gap"].notna().all()
    row = eff.evaluate(eff.build_pairs(loss, None, _cfg(), fps), _cfg(), calibration_reps=0).iloc[0]
    assert row["plateau_exit_b"] == "0:never;1:never;2:never"
    assert row["plateau_exit_a"] == "0:1000;1:1000;2:1000"
    assert "B at T: on the plateau (0 of 3 runs past it)" in row["regime"]
    assert "A at its crossing: past the plateau (3 of 3 runs past it)" in row["regime"]
    md = render_markdown(eff.evaluate(eff.build_pairs(loss, None, _cfg(), fps), _cfg(), calibration_reps=0), _cfg())
    assert "on the plateau" in md and "plateau-exit step" in md


def _with_glue_probe(ckpts):
    """The GLUE probe average (0-1) linear in log2(step): MLM 0.40 + 0.05 log2(s / 1000), TACO the same curve
    at half the steps (+ 0.01 per run offset), so TACO reaches MLM's 0.50 at T = 4,000 at step 2,000: 2x."""
    for c in ckpts:
        ev = json.loads((c / "eval.json").read_text())
        run = int(c.parent.name.split("-")[1])
        half = 500 if "taco" in str(c) else 1000
        value = lambda s: 0.40 + 0.05 * math.log2(s / half) + 0.01 * (run - 1)  # noqa: E731
        for p in [ev, *ev.get("points", [])]:
            p.update(glue_probe_mean=value(p["step"]), glue_probe_cls=0.3)
        (c / "eval.json").write_text(json.dumps(ev))
    return ckpts


def test_the_glue_probe_gets_its_own_steps_to_target_row(tmp_path):
    """Issue 51.3: a secondary E1 row on the frozen-feature probe average (higher is better, points x100), T the
    largest common budget, decided by the same test; the curves file carries the probe and reruns the row; a
    curves file written before the probe (no such columns) still reads, without the row."""
    ckpts = _with_glue_probe(_e1_checkpoints(tmp_path / "pretrain"))
    loss, fps, _ = eff.read_checkpoints(ckpts)
    df = eff.evaluate(eff.build_pairs(loss, None, _cfg(), fps), _cfg(), calibration_reps=0)
    probe_rows = df[df["form"] == sp.PROBE_FORM]
    assert len(probe_rows) == 1
    row = probe_rows.iloc[0]
    assert row["kind"] == "secondary" and row["better"] == sp.HIGHER and row["target_step"] == 4000
    assert row["target_value"] == pytest.approx(50.0)  # MLM's mean at T, x100
    assert row["speedup"] == pytest.approx(2.0, rel=0.02)
    ks = [2000 * 2 ** (0.2 * (1 - run)) for run in range(3)]  # each TACO run's own crossing of 0.50
    assert [float(k) for k in row["unit_k"].split(";")] == pytest.approx(ks, abs=0.5)  # written rounded
    md = render_markdown(df, _cfg())
    assert "| E1 | secondary (GLUE probe) | tiny | 4000 |" in md
    assert "A **unit** is one pre-training run" in md and "**Berger-Boos**" in md  # the page's terms (53.3)
    # the loss rows are those of the same checkpoints without the probe
    plain, fps2, _ = eff.read_checkpoints(_e1_checkpoints(tmp_path / "plain"))
    without = eff.evaluate(eff.build_pairs(plain, None, _cfg(), fps2), _cfg(), calibration_reps=0)
    assert len(without) == len(df) - 1
    out = tmp_path / "out"
    assert eff_command.main(["--checkpoints", *map(str, ckpts), "--output-dir", str(out), "--calibration-reps", "0"]) == 0
    curves = pd.read_csv(out / "efficiency_curves.csv")
    assert curves["glue_probe_mean"].notna().all()
    again, _, _ = eff.read_curves(out / "efficiency_curves.csv")
    assert eff.build_pairs(again, None, _cfg(), fps)[-1].form == sp.PROBE_FORM
    curves.drop(columns=["glue_probe_mean", "glue_probe_cls"]).to_csv(tmp_path / "old.csv", index=False)
    old, _, _ = eff.read_curves(tmp_path / "old.csv")
    assert all(p.form != sp.PROBE_FORM for p in eff.build_pairs(old, None, _cfg(), fps))


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


def test_glue_form_per_run_speedups_and_variance_components():
    # MLM-250k (step 4000) mean 75; TACO's runs 73/74/75 at 2000 and 75.5/76/76.5 at 4000 (seeds +-0.5)
    ps = _per_seed({("mlm", 4000): 75.0, ("taco", 2000): 74.0})
    taco_t = _per_seed({("taco", 4000): 76.0}, run_offsets={0: -0.5, 1: 0.0, 2: 0.5})
    ps = pd.concat([ps, taco_t], ignore_index=True)
    cfg = _cfg()
    glue = eff.glue_rows(ps, ("sst2",))
    pairs = eff.build_pairs(pd.DataFrame(columns=glue.columns), glue, cfg, {})
    (pair,) = pairs
    assert pair.form == sp.GLUE_FORM and pair.claim_id == "E2" and pair.target_step == 4000
    assert pair.paper_speedup == 5.0
    df = eff.evaluate(pairs, cfg)
    row = df.iloc[0]
    # run r of TACO: 73 + r at 2000 (r = 0, 1, 2), 75.5 + r/2 at 4000; target 75: fraction (75 - v0) / (v1 - v0)
    fr = [(75 - (73 + r)) / ((75.5 + r / 2) - (73 + r)) for r in range(3)]
    per_run = [4000 / (2000 * 2 ** f) for f in fr]
    assert row["speedup"] == pytest.approx(np.exp(np.mean(np.log(per_run))))
    assert [float(x) for x in row["unit_speedups"].split(";")] == pytest.approx(per_run, rel=5e-3)
    assert row["unit"] == "pre-training run" and row["n_units_b"] == 3
    # one-way random-effects ANOVA by hand: run means 74, 75, 76, two seeds each at +-0.5:
    # MS_within = 0.5, MS_between = 2 * 1 = 2, sigma^2_run = (2 - 0.5) / 2 = 0.75
    assert row["sd_seed_b"] == pytest.approx(math.sqrt(0.5))
    assert row["sd_run_b"] == pytest.approx(math.sqrt(0.75))
    # B's run SD 0.87 points (SE 0.5) on A's 2.5 points per doubling: half an SE moves a crossing by > 5%
    assert row["verdict"] == cr.NOT_DECIDABLE and "flat curves at the target" in row["reason"]


def test_glue_form_with_one_pretraining_run_uses_fine_tuning_seeds_and_says_so():
    ps = _per_seed({("mlm", 4000): 75.0, ("taco", 2000): 74.0, ("taco", 4000): 76.0}, run_offsets={0: 0.0})
    cfg = _cfg()
    pair = eff.build_pairs(pd.DataFrame(columns=["size"]), eff.glue_rows(ps, ("sst2",)), cfg, {})[0]
    row = eff.evaluate([pair], cfg).iloc[0]
    assert row["unit"] == "fine-tuning seed" and row["n_units_b"] == 2
    assert math.isfinite(row["speedup_ci_low"])
    assert "interval covers fine-tuning variance only, not the pre-training variance" in row["interval_note"]
    assert math.isnan(row["sd_run_b"]) and row["sd_seed_b"] == pytest.approx(math.sqrt(0.5))


def test_e2_and_e3_are_separate_claims_and_a_missing_role_says_not_run_once():
    ps = _per_seed({("mlm", 4000): 75.0, ("taco", 2000): 74.0, ("taco", 4000): 76.0})
    cfg = _cfg(roles={"small": "tiny", "base": "tiny"})  # base's 500k is not a budget name of tiny
    pairs = eff.build_pairs(pd.DataFrame(columns=["size"]), eff.glue_rows(ps, ("sst2",)), cfg, {})
    assert [p.claim_id for p in pairs] == ["E2", "E3"]
    assert "5x" in pairs[0].title and "2x" in pairs[1].title
    df = eff.evaluate(pairs, cfg)
    assert df.iloc[1]["verdict"] == cr.NOT_RUN
    assert df.iloc[1]["reason"].count("not run") == 1 and "500k" in df.iloc[1]["reason"]
    md = render_markdown(df, cfg)
    assert md.count("## E2 ") == 1 and md.count("## E3 ") == 1


def test_decide_rule():
    assert decide(1.3, 3.0, 1.2)[0] == cr.SUPPORTED
    assert decide(1.1, 3.0, 1.2)[0] == cr.INCONCLUSIVE
    assert decide(0.5, 1.1, 1.2)[0] == cr.NOT_SUPPORTED
    assert decide(math.nan, math.nan, 1.2)[0] == cr.INCONCLUSIVE
    assert "2 unit(s) of A never reach" in decide(0.5, 1.1, 1.2, n_right=2)[1]


def test_the_margin_comes_from_the_analysis_spec(tmp_path):
    loss, fps, _ = eff.read_checkpoints(_e1_checkpoints(tmp_path))
    cfg = _cfg(efficiency_margin=5.0)  # far above the calibrated bounds [2.33, 3.54]
    row = eff.evaluate(eff.build_pairs(loss, None, cfg, fps), cfg).iloc[0]
    assert row["margin"] == 5.0 and row["verdict"] == cr.NOT_SUPPORTED
    from taco.stats.analysis_config import AnalysisConfigError
    with pytest.raises(AnalysisConfigError, match="efficiency_margin"):
        _cfg(efficiency_margin=0.9)


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
    times = tmp_path / "step_time.json"
    times.write_text(json.dumps({"objectives": {"mlm": {"step_s_median": 0.44}, "taco": {"step_s_median": 0.52}}}))
    out = tmp_path / "out"
    argv = ["--checkpoints", *map(str, ckpts), "--aggregate-dir", str(agg), "--analysis", str(spec),
            "--step-times", str(times), "--output-dir", str(out)]
    assert eff_command.main(argv) == 0
    df = eff.read_table(out / "efficiency.csv")
    prim = df[df["kind"] == "primary"]
    assert list(prim["claim_id"]) == ["E1", "E2"]
    assert prim.iloc[0]["speedup"] == pytest.approx(2 * math.sqrt(2), rel=1e-5)
    assert prim.iloc[0]["wall_speedup"] == pytest.approx(2 * math.sqrt(2) * 0.44 / 0.52, rel=1e-5)
    md = (out / "efficiency.md").read_text()
    assert "supported" in md and "## E2 " in md and "Diagnostic: the plain t interval simulated" in md
    assert (out / "efficiency_curves.csv").is_file()
    assert "The speedup grows with the target" in md
    assert "<table>" in (out / "efficiency.html").read_text()  # the report's page (taco.report.html)
    assert (out / "efficiency.png").stat().st_size > 0
    assert eff_command.main(["--checkpoints", str(tmp_path / "nope"), "--output-dir", str(out)]) == 2


def test_an_old_efficiency_table_gets_a_clear_message(tmp_path):
    old = tmp_path / "efficiency.csv"
    old.write_text("claim_id,form,speedup,verdict\nE1,validation_mlm_loss,2.49,supported\n")
    with pytest.raises(eff.EfficiencyTableError, match="format 1.*rerun `taco efficiency`"):
        eff.read_table(old)
    # fault sweep V, item 8: a format written as a word names the file, line and column (was int()'s ValueError)
    old.write_text("format_version,claim_id\n4,E1\nfour,E1\n")
    with pytest.raises(eff.EfficiencyTableError, match=r"efficiency.csv: line 3, column format_version: 'four'"):
        eff.read_table(old)


def test_calibrate_prints_the_checked_scenarios_and_the_limits(capsys):
    assert eff_command.main(["--calibrate", "--runs", "3", "--reps", "300", "--sd-b", "0.002", "--sd-log-a", "0.4"]) == 0
    out = capsys.readouterr().out
    assert "loss: cpu-real T=4000 spreads" in out and "known limit" in out and "yours:" in out
    assert eff_command.main(["--calibrate", "--runs", "1"]) == 2


def test_claims_page_carries_the_efficiency_claims(tmp_path):
    """``taco claims --efficiency efficiency.csv``: E1 is a row of claims.csv and of the one summary table of
    claims.md, beside C1-C7, with taco efficiency's speedup, calibrated bounds, p values and verdict (not decided
    again), A = TACO and B = MLM as for C1; the run's verdict counts include it."""
    import pandas as pd

    from taco.commands.claims import main as claims_main
    from taco.stats.efficiency_claims import STEPS_TO_TARGET
    from taco.workflow.summary import verdict_counts
    from tests.fixtures_stats import build_aggregate, smoke_spec

    ckpts = _e1_checkpoints(tmp_path / "pretrain")
    loss, fps, _ = eff.read_checkpoints(ckpts)
    cfg = _cfg(n_resamples=199)
    table = eff.evaluate(eff.build_pairs(loss, None, cfg, fps), cfg)
    (tmp_path / "efficiency.csv").write_text(table.to_csv(index=False))
    back = eff.read_table(tmp_path / "efficiency.csv")
    assert back.loc[0, "verdict"] == cr.SUPPORTED and back.loc[0, "target_budget"] == "250k"
    agg, spec = build_aggregate(tmp_path / "agg", smoke_spec(n_resamples=99), seeds=[1, 2])
    out = tmp_path / "out"
    assert claims_main(["--aggregate-dir", str(agg), "--analysis", str(spec), "--output-dir", str(out)]) == 0
    without = pd.read_csv(out / "claims.csv")
    counts_without = verdict_counts(out / "claims.csv")
    assert claims_main(["--aggregate-dir", str(agg), "--analysis", str(spec), "--output-dir", str(out),
                        "--efficiency", str(tmp_path / "efficiency.csv")]) == 0
    claims = pd.read_csv(out / "claims.csv")
    (e1,) = claims[claims["claim_id"] == "E1"].itertuples()  # the primary target only
    prim = back[back["kind"] == "primary"].iloc[0]
    assert e1.level == "claim" and e1.kind == STEPS_TO_TARGET and (e1.a, e1.b) == ("TACO", "MLM")
    assert e1.effect == pytest.approx(prim["speedup"], rel=1e-5) and e1.verdict == prim["verdict"] == cr.SUPPORTED
    assert (e1.decision_ci_low, e1.decision_ci_high) == (pytest.approx(prim["calibrated_ci_low"], rel=1e-5),
                                                         pytest.approx(prim["calibrated_ci_high"], rel=1e-5))
    assert e1.p_value == pytest.approx(prim["calibrated_p_supported"], rel=1e-5)
    assert (e1.n_a, e1.n_b) == (prim["n_units_a"], prim["n_units_b"]) == (3, 3)
    # the GLUE claims' rows (claims and their score keys) are unchanged, E1 follows them
    glue = claims[claims["kind"] != STEPS_TO_TARGET].reset_index(drop=True)
    pd.testing.assert_frame_equal(glue, without, check_dtype=False)
    md = (out / "claims.md").read_text()
    assert "## Steps-to-target claims" not in md  # no second system appended
    table_rows = [ln for ln in md.split("\n\n")[[i for i, b in enumerate(md.split("\n\n")) if "| Claim | A vs B" in b][0]].splitlines()]
    (row,) = [ln for ln in table_rows if ln.startswith("| E1:")]  # in the one summary table, beside C1
    assert any(ln.startswith("| C1:") for ln in table_rows)
    assert "| TACO vs MLM | tiny: validation MLM loss at T = 4000 | 3/3 | 2.83x | [2.33x, 3.54x] |" in row
    assert "**supported**" in row
    assert "## E1:" in md and "calibrated test" in md and "p(speedup <= 1.2)" in md and "efficiency.md" in md
    counts = verdict_counts(out / "claims.csv")
    assert counts[cr.SUPPORTED] == counts_without[cr.SUPPORTED] + 1


def test_the_efficiency_figure_text_fits(tmp_path):
    """At the saved dpi no text of the figure (curve panels, a not-run panel, the speedup curve) overlaps
    another or runs past the canvas (tests/figure_text.py)."""
    import matplotlib.pyplot as plt

    from figure_text import assert_text_fits

    loss, fps, _ = eff.read_checkpoints(_e1_checkpoints(tmp_path))
    ps = _per_seed({("mlm", 4000): 75.0, ("taco", 2000): 74.0, ("taco", 4000): 76.0})
    cfg = _cfg(roles={"small": "tiny", "base": "tiny"})
    pairs = eff.build_pairs(loss, eff.glue_rows(ps, ("sst2",)), cfg, fps)
    df = eff.evaluate(pairs, cfg)
    assert "not run" in set(df["verdict"])
    fig = efficiency_figure.figure(pairs, df)
    try:
        assert_text_fits(fig, 150)
        # a comparison that was not run is a line under the figure, not an empty panel (issue 53.3); steps are
        # integers ("T = 4000", never "T = 4000.0")
        titles = [ax.get_title() for ax in fig.axes]
        assert not any("not run" in t for t in titles), titles
        assert any("E3 (tiny): not run" in t.get_text() for t in fig.texts)
        labels = [t.get_text() for ax in fig.axes if ax.get_legend() for t in ax.get_legend().get_texts()]
        assert any("at T = 4000" in x for x in labels) and not any(".0" in x for x in labels if "T = " in x), labels
    finally:
        plt.close(fig)


def test_an_objective_no_paper_table_names_is_compared_with_mlm_as_other(tmp_path):
    """``taco_unmasked`` (the official code's third TC position, in no table of the paper) gets an E1
    ``other`` row against MLM: the same per-run speedups and rule, listed on the page and drawn, and
    never the claim's verdict (E1's primary row stays TACO's)."""
    ckpts = _e1_checkpoints(tmp_path)
    for run in range(len(OFFSETS)):  # every run reaches MLM's 4000-step mean (6.0) at step 2000: 2x
        ckpts.append(_ckpt(tmp_path, "taco_unmasked", run, 2000, 6.0, points=[(1000, 6.5)]))
        ckpts.append(_ckpt(tmp_path, "taco_unmasked", run, 4000, 5.6))
    loss, fps, _ = eff.read_checkpoints(ckpts)
    cfg = _cfg()
    pairs = eff.build_pairs(loss, None, cfg, fps)
    df = eff.evaluate(pairs, cfg)
    other = df[df["kind"] == "other"]
    assert list(other["a"]) == ["taco_unmasked"] and int(other.iloc[0]["target_step"]) == 4000
    assert other.iloc[0]["speedup"] == pytest.approx(2.0, rel=1e-6)
    assert list(df[df["kind"] == "primary"]["a"]) == ["taco"]
    md = render_markdown(df, cfg)
    assert "| E1 | other: TACO (unmasked) |" in md
    fig = efficiency_figure.figure(pairs, df)
    assert any("other: TACO (unmasked)" in ax.get_title() for ax in fig.axes)


@pytest.mark.parametrize("content", ["claim_id,form,speedup,verdict\nE1,validation_mlm_loss,2.49,supported\n",
                                     "format_version,claim_id\n2,E1\n3,E1\n", "format_version,claim_id\n3,E1\n"])
def test_claims_on_an_old_or_mixed_efficiency_table_says_so_and_writes_nothing(tmp_path, capsys, content):
    """taco claims --efficiency on a format-1, mixed-format or incomplete table: its own message naming the file,
    exit 2, no claims.csv written (no traceback)."""
    from taco.commands.claims import main as claims_main
    from tests.fixtures_stats import build_aggregate, smoke_spec

    agg, spec = build_aggregate(tmp_path / "agg", smoke_spec(n_resamples=99), seeds=[1, 2])
    bad = tmp_path / "efficiency.csv"
    bad.write_text(content)
    out = tmp_path / "out"
    assert claims_main(["--aggregate-dir", str(agg), "--analysis", str(spec), "--output-dir", str(out),
                        "--efficiency", str(bad)]) == 2
    err = capsys.readouterr().err
    assert str(bad) in err and "Traceback" not in err
    assert not (out / "claims.csv").exists()


@pytest.mark.parametrize("text", ["[1, 2]", "{bad json"])
def test_a_damaged_manifest_is_named_by_efficiency_and_pretrain_curves(tmp_path, capsys, text):
    from taco.commands import pretrain_curves

    ckpts = _e1_checkpoints(tmp_path / "pretrain")
    (ckpts[1] / "manifest.json").write_text(text)
    assert eff_command.main(["--checkpoints", *map(str, ckpts), "--output-dir", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert str(ckpts[1] / "manifest.json") in err and "Traceback" not in err
    assert pretrain_curves.main(["--checkpoints", *map(str, ckpts), "--output-dir", str(tmp_path / "o2")]) == 2
    assert str(ckpts[1] / "manifest.json") in capsys.readouterr().err


def test_the_probe_panel_is_drawn_and_its_text_fits(tmp_path):
    """With probe points the figure has a context-probe panel (intact, shuffled, no context, unigram line)."""
    import matplotlib.pyplot as plt

    from figure_text import assert_text_fits

    ckpts = _e1_checkpoints(tmp_path)
    for c in ckpts:
        ev = json.loads((c / "eval.json").read_text())
        for p in [ev, *ev.get("points", [])]:
            p.update({"probe_intact_loss": 5.9, "probe_shuffled_loss": 6.0, "probe_no_context_loss": 7.0,
                      "probe_unigram_loss": 6.5, "probe_order_gap": 0.1 + 0.01 * ("taco" in str(c))})
        (c / "eval.json").write_text(json.dumps(ev))
    loss, fps, _ = eff.read_checkpoints(ckpts)
    pairs = eff.build_pairs(loss, None, _cfg(), fps)
    df = eff.evaluate(pairs, _cfg(), calibration_reps=0)
    fig = efficiency_figure.figure(pairs, df, loss)
    try:
        titles = [ax.get_title() for ax in fig.axes]
        assert any("context probe" in t for t in titles)
        probe_ax = [ax for ax in fig.axes if "context probe" in ax.get_title()][0]
        assert any("unigram" in t.get_text() for t in probe_ax.get_legend().get_texts())
        assert_text_fits(fig, 150)
    finally:
        plt.close(fig)


def test_an_interval_that_bounds_nothing_is_printed_as_none():
    """The page's t interval: a usable one as numbers; ends more than 1000x apart (2 units, df ~1) as the
    unit count, never as a number such as [1.78e-09, 2.72e+08]; a missing one as none."""
    from types import SimpleNamespace

    from taco.report.efficiency_page import t_interval_text

    row = dict(n_units_b=2, n_units_a=2, df=1.02)
    assert t_interval_text(SimpleNamespace(**row, speedup_ci_low=2.38, speedup_ci_high=2.75)) == "[2.38, 2.75]"
    assert t_interval_text(SimpleNamespace(**row, speedup_ci_low=1.78e-9, speedup_ci_high=2.72e8)) == \
        "no interval: 2/2 units, df 1.02"
    assert t_interval_text(SimpleNamespace(**row, speedup_ci_low=float("nan"), speedup_ci_high=3.0)) == "none"


@pytest.mark.parametrize("fault, code", [(errno.ENOSPC, 4), (errno.EACCES, 2)], ids=["disk full", "read-only"])
def test_a_failed_write_leaves_the_earlier_set_whole(tmp_path, monkeypatch, capsys, fault, code):
    """Fault sweep IV, item 3: the disk filling up while the PNG was saved left new csv/md/html/curves beside
    the old png/pdf/manifest. Now every file is written first and renamed after: a failure at the PNG leaves
    the earlier set byte for byte, no temporary file, and one line naming the folder (no traceback)."""
    from taco.report import plotting

    ckpts = _e1_checkpoints(tmp_path / "pretrain")
    out = tmp_path / "out"
    assert eff_command.main(["--checkpoints", *map(str, ckpts), "--output-dir", str(out), "--calibration-reps", "0"]) == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    assert {"efficiency.csv", "efficiency.png", "efficiency.manifest.json", "efficiency.html"} <= set(before)
    real = plotting.write_figure

    def failing(fig, path, ext, dpi=150):
        if ext == "png":
            raise OSError(fault, os.strerror(fault), str(path))
        return real(fig, path, ext, dpi)

    monkeypatch.setattr(plotting, "write_figure", failing)
    other = _e1_checkpoints(tmp_path / "other", a_curve=(6.6, 5.7, 5.2))
    capsys.readouterr()
    assert eff_command.main(["--checkpoints", *map(str, other), "--output-dir", str(out), "--calibration-reps", "0"]) == code
    err = capsys.readouterr().err
    assert f"cannot write into the output folder {out}" in err and "Traceback" not in err, err
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


RECORD_CURVES = Path(__file__).resolve().parent.parent / "docs" / "records" / "2026-12-05-cpu-real-e1-tuned" / "efficiency_curves.csv"


def _damaged(tmp_path, edit) -> Path:
    lines = RECORD_CURVES.read_text().splitlines()
    out = tmp_path / "curves.csv"
    out.write_text("\n".join(edit(lines)) + "\n")
    return out


def _replace_field(line: str, index: int, value: str) -> str:
    fields = line.split(",")
    fields[index] = value
    return ",".join(fields)


@pytest.mark.parametrize("edit, needle", [
    (lambda ls: ls + [_replace_field(ls[5], 6, "9.9")], "given twice with different losses"),
    (lambda ls: [ls[0], _replace_field(ls[1], 6, "-1.0")] + ls[2:], "line 2, column value: '-1.0' is not a loss"),
    (lambda ls: [ls[0], _replace_field(ls[1], 5, "abc")] + ls[2:], "line 2, column step: 'abc' is not a positive"),
    (lambda ls: [ls[0], _replace_field(ls[1], 6, "lots")] + ls[2:], "line 2, column value: 'lots'"),
    (lambda ls: ls[:3] + [ls[0]] + ls[3:], "line 4, column fraction: 'fraction'"),
    (lambda ls: [ls[0], _replace_field(ls[1], 1, "foo")] + ls[2:], "line 2, column objective: unknown objective 'foo'"),
    (lambda ls: ls[:-1] + [ls[-1][:20]], "fields (a truncated or damaged file)"),
], ids=["conflicting duplicate", "negative loss", "text step", "text loss", "repeated header", "unknown objective",
        "truncated"])
def test_a_damaged_curves_file_is_named_not_decided(tmp_path, capsys, edit, needle):
    """Fault sweep IV, item 5: a conflicting duplicate changed E1 from supported to inconclusive without a word;
    the other damages gave a traceback, an error naming nothing, or exit 0 with no E1 row."""
    if not RECORD_CURVES.is_file():
        pytest.skip(f"{RECORD_CURVES} absent")
    path = _damaged(tmp_path, edit)
    assert eff_command.main(["--curves", str(path), "--output-dir", str(tmp_path / "o"), "--calibration-reps", "0"]) == 2
    err = capsys.readouterr().err
    assert str(path) in err and needle in err and "Traceback" not in err, err
    assert not (tmp_path / "o" / "efficiency.csv").exists()


def test_unbounded_calibration_and_a_short_taco_arm_are_named(tmp_path, capsys):
    if not RECORD_CURVES.is_file():
        pytest.skip(f"{RECORD_CURVES} absent")
    assert eff_command.main(["--curves", str(RECORD_CURVES), "--output-dir", str(tmp_path / "o"),
                             "--calibration-reps", "1000000000"]) == 2
    assert "--calibration-reps must be in [0, 100,000]" in capsys.readouterr().err
    df = pd.read_csv(RECORD_CURVES)
    short = tmp_path / "short.csv"
    df[~((df["objective"] == "taco") & (df["step"] > 3000))].to_csv(short, index=False)
    assert eff_command.main(["--curves", str(short), "--output-dir", str(tmp_path / "o"), "--calibration-reps", "0"]) == 0
    table = eff.read_table(tmp_path / "o" / "efficiency.csv")
    row = table.query("kind == 'primary'").iloc[0]  # T stays the run's (fault sweep V.5): not decidable, named
    assert row["target_step"] == 4000 and row["verdict"] == cr.NOT_DECIDABLE
    assert "TACO has no budget point at T = 4000 (its budgets: 2000)" in row["reason"]
    assert 2000 in set(table.query("kind == 'secondary'")["target_step"])


def test_the_papers_own_numbers_are_tested_beside_the_margin(tmp_path):
    """Issue 51 item 5: every steps-to-target row also carries the calibrated p of "faster at all" (> 1x) and of
    the paper's factor (5x for the small role's size). On the fixture (A about 2x faster at T = 4000) "faster"
    is supported, 5x is not, and the p's order as the margins do (up to the Monte Carlo error)."""
    ckpts = _e1_checkpoints(tmp_path)
    loss, fps, _ = eff.read_checkpoints(ckpts)
    cfg = _cfg()
    row = eff.evaluate(eff.build_pairs(loss, None, cfg, fps), cfg, calibration_reps=2000).query(
        "kind == 'primary'").iloc[0]
    assert row["paper_factor"] == 5.0
    assert row["calibrated_p_faster"] <= 0.05
    assert row["calibrated_p_paper_factor"] > 0.5
    mc = 3 * row["calibration_mc_error"]
    assert row["calibrated_p_faster"] <= row["calibrated_p_supported"] + mc <= row["calibrated_p_paper_factor"] + 2 * mc
    out = tmp_path / "o"
    assert eff_command.main(["--checkpoints", *map(str, ckpts), "--output-dir", str(out),
                             "--calibration-reps", "500"]) == 0
    assert "The paper's numbers, by the same test: p(speedup <= 1) = " in (out / "efficiency.md").read_text()


def _choice(path: Path, lr: float) -> Path:
    """A hand-made choice.json of `taco tuning-choice` (one trial) at ``path``."""
    rec = {"trial": "trial-0", "path": str(path.parent / "trial-0" / "step-2000"), "step": 2000, "objective": "mlm",
           "max_steps": 2000, "setting": {"learning_rate": lr, "warmup_steps": 300, "dropout": 0.05},
           "mlm_loss": 4.0}
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"chosen": rec, "trials": [rec], "left_out": []}))
    return path


def test_each_sizes_choice_is_checked_against_its_own_search_space(tmp_path, capsys):
    """pretrain.sizes.<size>.tuning_space: one learning rate (8e-3) lies at the top edge of BERT-tiny's space
    [3e-4, 1e-2] (log position 0.94) and inside ModernBERT-tiny's [1e-3, 3e-2] (0.61); the page notes the
    first arm only. A choice whose size has no space is refused, naming the size."""
    if not RECORD_CURVES.is_file():
        pytest.skip(f"{RECORD_CURVES} absent")
    a = _choice(tmp_path / "tuning" / "tiny" / "mlm" / "choice.json", 8e-3)
    b = _choice(tmp_path / "tuning" / "modernbert_tiny" / "mlm" / "choice.json", 8e-3)
    rest = {"warmup_steps": [200, 300, 400], "dropout": [0.0, 0.05, 0.1]}
    spaces = {"tiny": {"learning_rate": {"log_uniform": [3e-4, 1e-2]}, **rest},
              "modernbert_tiny": {"learning_rate": {"log_uniform": [1e-3, 3e-2]}, **rest}}
    out = tmp_path / "o"
    args = ["--curves", str(RECORD_CURVES), "--output-dir", str(out), "--calibration-reps", "0",
            "--tuning", str(a), str(b)]
    assert eff_command.main(args + ["--tuning-spaces", json.dumps(spaces)]) == 0
    page = (out / "efficiency.md").read_text()
    assert "tiny/mlm: learning\\_rate 0.008 lies at the highest edge" in page
    assert "modernbert\\_tiny/mlm: learning" not in page
    assert "note: tuning of tiny/mlm: learning_rate 0.008" in capsys.readouterr().out
    del spaces["modernbert_tiny"]
    assert eff_command.main(args + ["--tuning-spaces", json.dumps(spaces), "--output-dir", str(tmp_path / "p")]) == 2
    assert "--tuning-spaces: no search space for size modernbert_tiny" in capsys.readouterr().err
    assert eff_command.main(args + ["--tuning-spaces", '{"tiny": [1]}', "--output-dir", str(tmp_path / "p")]) == 2
    assert "--tuning-spaces.tiny: a search space" in capsys.readouterr().err


def test_a_steps_to_target_verdict_says_what_it_measured():
    """Issue 64.2/64.3: a loss or probe row says it is the suite's proxy, not the paper's GLUE claim; a row whose
    MLM runs sit on the bag-of-words plateau at T says the speedup is a function of T; a GLUE row with one
    fine-tuned run per arm says its unit; a healthy GLUE row with runs as units says nothing."""
    from taco.stats.efficiency_claims import PLATEAU_SCOPE, PROXY_SCOPE, steps_scope

    plateau = "B at T: on the plateau (0 of 3 runs past it); A at its crossing: past the plateau (3 of 3 runs past it)"
    healthy = "B at T: past the plateau (3 of 3 runs past it); A at its crossing: past the plateau (3 of 3 runs past it)"
    assert steps_scope(sp.LOSS_FORM, plateau) == f"{PROXY_SCOPE[sp.LOSS_FORM]}; {PLATEAU_SCOPE}"
    assert steps_scope(sp.LOSS_FORM, healthy) == PROXY_SCOPE[sp.LOSS_FORM]
    assert steps_scope(sp.PROBE_FORM, float("nan")) == PROXY_SCOPE[sp.PROBE_FORM]
    assert steps_scope(sp.GLUE_FORM, "", b_nested=False) == cr.ONE_CHECKPOINT
    assert steps_scope(sp.GLUE_FORM, "", b_nested=True) == ""


def test_a_read_only_file_system_names_the_folder_not_the_cleanup(tmp_path, monkeypatch, capsys):
    """Fault sweep V, item 7: on a read-only file system the first write fails with EROFS and so does removing
    the temporary that was never created; that second error hid the named one behind a traceback. Exit 2, the
    folder named, the earlier set whole."""
    from pathlib import Path as _P

    ckpts = _e1_checkpoints(tmp_path / "pretrain")
    out = tmp_path / "out"
    assert eff_command.main(["--checkpoints", *map(str, ckpts), "--output-dir", str(out), "--calibration-reps", "0"]) == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}

    def erofs(*a, **k):
        raise OSError(errno.EROFS, os.strerror(errno.EROFS))

    monkeypatch.setattr(_P, "write_text", erofs)
    monkeypatch.setattr(_P, "unlink", erofs)
    capsys.readouterr()
    assert eff_command.main(["--checkpoints", *map(str, ckpts), "--output-dir", str(out), "--calibration-reps", "0"]) == 2
    err = capsys.readouterr().err
    assert f"cannot write into the output folder {out}" in err and "Traceback" not in err, err
    monkeypatch.undo()
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


def test_a_primary_row_is_never_moved_to_another_target_step(tmp_path):
    """Fault sweep V, item 5: with no TACO point at MLM's last budget the primary row was computed at the last
    budget both reached, and nothing said that T had moved. Now the primary row stays at T = 4000, not
    decidable, naming the missing points; 2000 is a secondary row."""
    ckpts = [c for c in _e1_checkpoints(tmp_path) if not (c.parent.parent.name == "taco" and c.name == "step-4000")]
    loss, fps, _ = eff.read_checkpoints(ckpts)
    cfg = _cfg()
    df = eff.evaluate(eff.build_pairs(loss, None, cfg, fps), cfg)
    prim = df[df["kind"] == "primary"].iloc[0]
    assert prim["target_step"] == 4000 and prim["verdict"] == cr.NOT_DECIDABLE
    assert "TACO has no budget point at T = 4000 (its budgets: 2000)" in prim["reason"]
    sec = df[df["kind"] == "secondary"]
    assert list(sec["target_step"]) == [2000] and sec.iloc[0]["verdict"] != cr.NOT_DECIDABLE


def test_recorded_curves_and_new_checkpoints_are_combined_once(tmp_path):
    """Issue 64.4: a record's curves (runs 0-2) and new runs' checkpoints (runs 3-5) decide together: the row
    rests on 6 runs per arm; a run given in both is refused by name (exit 2)."""
    first = _e1_checkpoints(tmp_path / "rec")
    out = tmp_path / "rec-out"
    assert eff_command.main(["--checkpoints", *map(str, first), "--output-dir", str(out), "--calibration-reps", "0"]) == 0
    new = [_ckpt(tmp_path / "new", o, run, step, loss, points=pts)
           for run, off in zip((3, 4, 5), OFFSETS)
           for o, step, loss, pts in (("mlm", 2000, 6.4 + off, [(1000, 6.8 + off)]), ("mlm", 4000, 6.0 + off, None),
                                      ("taco", 2000, 5.5 + off, [(1000, 6.5 + off)]), ("taco", 4000, 5.0 + off, None))]
    both = tmp_path / "both"
    assert eff_command.main(["--curves", str(out / "efficiency_curves.csv"), "--checkpoints", *map(str, new),
                             "--output-dir", str(both), "--calibration-reps", "0"]) == 0
    prim = eff.read_table(both / "efficiency.csv").iloc[0]
    assert prim["n_units_a"] == 6 and prim["n_units_b"] == 6
    assert prim["speedup"] == pytest.approx(2 * math.sqrt(2), rel=1e-5)
    assert eff_command.main(["--curves", str(out / "efficiency_curves.csv"), "--checkpoints", *map(str, first),
                             "--output-dir", str(tmp_path / "dup"), "--calibration-reps", "0"]) == 2
    assert not (tmp_path / "dup").exists()


def test_the_command_says_what_it_is_doing(tmp_path, capsys):
    """Issue 66.5: `taco efficiency` printed nothing for minutes while it calibrated; now one line before, and one
    per decided row with an estimate of the time left."""
    ckpts = _e1_checkpoints(tmp_path / "pretrain")
    assert eff_command.main(["--checkpoints", *map(str, ckpts), "--output-dir", str(tmp_path / "o"),
                             "--calibration-reps", "200"]) == 0
    err = capsys.readouterr().err
    assert "deciding 2 rows, each by a calibrated test of 200 simulated experiments" in err
    assert "1/2 E1 tiny validation_mlm_loss T=4000 (primary) decided; about" in err and "2/2 E1" in err
