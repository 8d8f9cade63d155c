"""taco.stats.aggregate and taco.stats.analysis_config: statistics checked against numpy / scipy computed here."""

from __future__ import annotations

import json
import math
import zlib

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sst

from fixtures_stats import (
    PAPER_TABLE1_DEV,
    build_aggregate,
    seed_offset,
    write_cell,
    write_run,
    write_spec,
)
from taco.stats.analysis_config import AnalysisConfigError, load_analysis, validate_analysis
from taco.registry import AVERAGE_KEYS
from taco.commands.aggregate import main
from taco.stats.aggregate import InputError, load_metrics, per_seed_table
from taco.stats.inference import compare, hedges_g, holm, min_attainable_pvalue, rng_for, summarize, t_interval

SMALL_SPEC = dict(
    roles={"small": "tiny", "base": None},
    budget_names={"tiny": {"50k": 20, "250k": 60}},
    runs=[{"size": "tiny", "objective": "mlm", "fraction": 1.0},
              {"size": "tiny", "objective": "taco", "fraction": 1.0}],
    tasks=["mnli", "qqp", "qnli", "sst2", "cola", "stsb", "mrpc", "rte"],
    n_resamples=199, seed=3,
)


# ---- analysis spec -----------------------------------------------------------------------------
def test_defaults_are_the_paper_grid():
    cfg = validate_analysis({})
    assert cfg.budget_names["small"]["250k"] == 250000
    assert cfg.equivalence_margin == 0.5 and cfg.min_seeds == 3 and cfg.n_resamples == 9999
    assert cfg.confidence_level == 0.95 and cfg.alpha == 0.05
    assert cfg.score_keys[:2] == ("mnli_m", "mnli_mm")
    assert cfg.primary_metric["cola"] == "matthews_correlation"


@pytest.mark.parametrize("spec, key", [
    ({"budget_names": {"tiny": {"250k": "sixty"}}}, "budget_names.tiny.250k"),
    ({"tasks": ["mnli", "glue9"]}, "tasks[1]"),
    ({"colour": 1}, "colour"),
    ({"roles": {"small": "huge"}}, "roles.small"),
    ({"runs": [{"size": "small", "objective": "bert"}]}, "runs[0].objective"),
    ({"primary_metric": {"cola": "auc"}}, "primary_metric.cola"),
    ({"equivalence_margin": -1}, "equivalence_margin"),
    ({"confidence_level": 1.0}, "confidence_level"),
    ({"n_resamples": 2.5}, "n_resamples"),
])
def test_spec_errors_name_the_key(spec, key):
    with pytest.raises(AnalysisConfigError, match=key.replace("[", r"\[").replace("]", r"\]")):
        validate_analysis(spec)


def test_spec_yaml_and_json(tmp_path):
    y = tmp_path / "a.yaml"
    y.write_text("roles: {small: tiny, base: null}\nbudget_names: {tiny: {'250k': 60}}\n"
                 "runs: [{size: tiny, objective: taco, fraction: 1.0}]\nn_resamples: 99\n")
    cfg = load_analysis(y)
    assert cfg.roles == {"small": "tiny", "base": None} and cfg.budget_step("tiny", "250k") == 60
    assert cfg.budget_name("tiny", 60) == "250k" and cfg.budget_step(None, "250k") is None
    bad = write_spec(tmp_path / "b.json", {"min_seeds": 1})
    with pytest.raises(AnalysisConfigError, match=r"b\.json.*min_seeds"):
        load_analysis(bad)


# ---- statistics against numpy / scipy -----------------------------------------------------------
def test_summarize_matches_numpy_and_scipy():
    v = [71.2, 74.9, 73.3, 72.8, 75.5]
    s = summarize(v, confidence_level=0.9, n_resamples=499, method="BCa", seed=5, label="x")
    assert s["n"] == 5
    assert s["mean"] == pytest.approx(np.mean(v))
    assert s["std"] == pytest.approx(np.std(v, ddof=1))
    assert s["median"] == pytest.approx(np.median(v))
    assert (s["min"], s["max"]) == (min(v), max(v))
    ref = sst.bootstrap((np.array(v),), np.mean, n_resamples=499, confidence_level=0.9, method="BCa",
                        rng=np.random.default_rng([5, zlib.crc32(b"x")]))
    assert (s["ci_low"], s["ci_high"]) == pytest.approx((ref.confidence_interval.low, ref.confidence_interval.high))
    assert s["ci_low"] < s["mean"] < s["ci_high"]


def test_summarize_edge_cases():
    one = summarize([70.0], n_resamples=99)
    assert one["n"] == 1 and one["mean"] == 70.0 and math.isnan(one["std"]) and math.isnan(one["ci_low"])
    const = summarize([70.0, 70.0, 70.0], n_resamples=99, method="BCa")  # BCa undefined -> percentile
    assert (const["ci_low"], const["ci_high"]) == (70.0, 70.0) and const["ci_method"].startswith("percentile")
    const_t = summarize([70.0, 70.0, 70.0])  # t interval of zero variance: the point, said so
    assert (const_t["ci_low"], const_t["ci_high"]) == (70.0, 70.0) and const_t["ci_method"] == "t (zero variance)"
    assert summarize([], n_resamples=99)["n"] == 0


def test_compare_against_scipy():
    a, b = [76.1, 76.8, 75.9, 76.5], [75.0, 75.4, 74.6, 75.2, 74.9]
    c = compare(a, b, shifts=[0.5], n_resamples=999, seed=11, label="t")
    assert c.delta == pytest.approx(np.mean(a) - np.mean(b))
    # the default CI is Welch's t interval: scipy's Welch test gives it
    ref_t = sst.ttest_ind(a, b, equal_var=False).confidence_interval(0.95)
    assert (c.ci_low, c.ci_high) == pytest.approx((ref_t.low, ref_t.high))
    assert c.ci_method == "t"
    cb = compare(a, b, shifts=[0.5], n_resamples=999, seed=11, label="t", method="BCa")  # bootstrap on request
    diff = lambda x, y, axis=-1: np.mean(x, axis=axis) - np.mean(y, axis=axis)  # noqa: E731
    ref = sst.bootstrap((np.array(a), np.array(b)), diff, n_resamples=999, vectorized=True,
                        rng=rng_for(11, "ci|t"))
    assert (cb.ci_low, cb.ci_high) == pytest.approx((ref.confidence_interval.low, ref.confidence_interval.high))
    # 4 vs 5 values: 126 partitions < 999 resamples, so scipy runs the exact test; count by hand
    pooled = np.array(a + b)
    import itertools
    stats_ = [pooled[list(i)].mean() - np.delete(pooled, list(i)).mean()
              for i in itertools.combinations(range(9), 4)]
    obs = np.mean(a) - np.mean(b)
    assert c.p_greater[0.0] == pytest.approx(np.mean(np.array(stats_) >= obs - 1e-12))
    shifted = np.array(a) - 0.5
    pooled_s = np.concatenate([shifted, b])
    stats_s = [pooled_s[list(i)].mean() - np.delete(pooled_s, list(i)).mean()
               for i in itertools.combinations(range(9), 4)]
    obs_s = shifted.mean() - np.mean(b)
    assert c.p_greater[0.5] == pytest.approx(np.mean(np.array(stats_s) >= obs_s - 1e-12))
    assert c.min_p_one_sided == pytest.approx(1 / 126)
    # Hedges' g from its definition
    sp = math.sqrt(((4 - 1) * np.var(a, ddof=1) + (5 - 1) * np.var(b, ddof=1)) / 7)
    assert c.hedges_g == pytest.approx((1 - 3 / (4 * 9 - 9)) * obs / sp)
    assert hedges_g([1.0], [2.0, 3.0]) != hedges_g([1.0], [2.0, 3.0])  # nan


def test_exact_permutation_three_seeds():
    c = compare([3.0, 3.1, 3.2], [1.0, 1.1, 1.2], n_resamples=9999, seed=0, label="e")
    assert c.p_greater[0.0] == pytest.approx(1 / 20)
    assert c.p_two_sided == pytest.approx(2 / 20)
    assert min_attainable_pvalue(3, 3, 9999) == pytest.approx(0.05)
    assert min_attainable_pvalue(10, 10, 999) == pytest.approx(1 / 1000)


def test_holm():
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    out = holm([0.2, float("nan"), 0.01])
    assert out[0] == pytest.approx(0.2) and math.isnan(out[1]) and out[2] == pytest.approx(0.02)
    assert holm([0.6, 0.7]) == pytest.approx([1.0, 1.0])


# ---- aggregation end to end --------------------------------------------------------------------
@pytest.fixture(scope="module")
def agg(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("agg")
    spec = dict(SMALL_SPEC)
    # one degenerate CoLA run (seed 2 of TACO-250k) and the TACO-50k cell not run at all
    deg = write_cell(tmp / "extra", size="tiny", objective="taco", fraction=1.0, step=60,
                     base={**PAPER_TABLE1_DEV["TACO-250k"], "cola": 0.0}, seeds=[2], tasks=["cola"],
                     degenerate={("cola", 2): True})
    out, spec_path = build_aggregate(tmp, spec, seeds=[1, 2, 3],
                                     skip={("tiny", "taco", 1.0, 20), ("tiny", "taco", 1.0, 60)},
                                     extra_paths=[])
    # add TACO-250k with seeds 1..3 where seed 2 CoLA is degenerate
    paths = []
    for s in (1, 3):
        paths += write_cell(tmp / "taco", size="tiny", objective="taco", fraction=1.0, step=60,
                            base=PAPER_TABLE1_DEV["TACO-250k"], seeds=[s])
    paths += write_cell(tmp / "taco", size="tiny", objective="taco", fraction=1.0, step=60,
                        base=PAPER_TABLE1_DEV["TACO-250k"], seeds=[2],
                        tasks=["mnli", "qqp", "qnli", "sst2", "stsb", "mrpc", "rte"])
    paths += deg
    lst = tmp / "inputs.txt"
    lst.write_text(lst.read_text() + "\n".join(map(str, paths)) + "\n")
    assert main(["--inputs-from", str(lst), "--analysis", str(spec_path), "--output-dir", str(out)]) == 0
    return {name: pd.read_csv(out / f"{name}.csv") for name in ("per_seed", "cells", "glue_average")} | {"dir": out}


def test_cells_match_numpy(agg):
    cells = agg["cells"]
    r = cells[(cells.objective == "mlm") & (cells.step == 60) & (cells.score_key == "qqp")].iloc[0]
    vals = [PAPER_TABLE1_DEV["MLM-250k"]["qqp"] + seed_offset(s) for s in (1, 2, 3)]
    vals = [round(v / 100, 12) * 100 for v in vals]
    assert r.n_seeds == 3 and r.seeds == "1;2;3"
    assert r["mean"] == pytest.approx(np.mean(vals))
    assert r["std"] == pytest.approx(np.std(vals, ddof=1))
    assert r["median"] == pytest.approx(np.median(vals))
    # Student t interval of the mean at the spec's confidence level (scipy's one-sample t test)
    ref_t = sst.ttest_1samp(vals, 0.0).confidence_interval(r.confidence_level)
    assert r.ci_low == pytest.approx(ref_t.low, abs=1e-6)
    assert r.ci_high == pytest.approx(ref_t.high, abs=1e-6)
    assert r.ci_method == "t"
    assert r.unit == "GLUE points (x100)"


def test_missing_cell_is_explicit(agg):
    cells = agg["cells"]
    miss = cells[(cells.objective == "taco") & (cells.step == 20)]
    assert len(miss) == 9 and (miss.n_seeds == 0).all() and miss["mean"].isna().all()
    assert miss.note.str.contains("no runs").all()
    ga = agg["glue_average"]
    g = ga[(ga.level == "cell") & (ga.objective == "taco") & (ga.step == 20)]
    assert len(g) == 1 and g.n_seeds.iloc[0] == 0 and math.isnan(g["mean"].iloc[0])


def test_degenerate_flagged_not_dropped(agg):
    ps, cells = agg["per_seed"], agg["cells"]
    d = ps[(ps.objective == "taco") & (ps.step == 60) & (ps.score_key == "cola")]
    assert len(d) == 3 and d.degenerate.sum() == 1
    c = cells[(cells.objective == "taco") & (cells.step == 60) & (cells.score_key == "cola")].iloc[0]
    assert c.n_seeds == 3 and c.n_degenerate == 1 and "degenerate" in c.note
    assert c["mean"] == pytest.approx(np.mean(d.value))


def test_glue_average_per_seed_and_cell(agg):
    ga, ps = agg["glue_average"], agg["per_seed"]
    seeds = ga[(ga.level == "seed") & (ga.objective == "mlm") & (ga.step == 60)]
    assert len(seeds) == 3 and not seeds.partial.any()
    for r in seeds.itertuples():
        v = ps[(ps.objective == "mlm") & (ps.step == 60) & (ps.seed == int(r.seed))]
        assert r.mean == pytest.approx(v.set_index("score_key").loc[list(AVERAGE_KEYS), "value"].mean())
    cell = ga[(ga.level == "cell") & (ga.objective == "mlm") & (ga.step == 60)].iloc[0]
    assert cell["mean"] == pytest.approx(seeds["mean"].mean())
    assert cell.covered_keys == ";".join(AVERAGE_KEYS)
    taco = ga[(ga.level == "cell") & (ga.objective == "taco") & (ga.step == 60)].iloc[0]
    assert taco.n_seeds == 3 and taco.n_degenerate == 1


def test_partial_average_labelled(tmp_path):
    spec = dict(SMALL_SPEC, tasks=["sst2", "rte"])
    out, _ = build_aggregate(tmp_path, spec, seeds=[1, 2])
    ga = pd.read_csv(out / "glue_average.csv")
    assert ga.partial.all() and (ga.covered_keys == "sst2;rte").all()
    assert ga.label.str.startswith("partial GLUE avg (2 of 9").all()


def test_deterministic(agg, tmp_path):
    out = agg["dir"]
    lst = out.parent / "inputs.txt"
    assert main(["--inputs-from", str(lst), "--analysis", str(out.parent / "analysis.json"),
                 "--output-dir", str(tmp_path / "again")]) == 0
    for name in ("per_seed.csv", "cells.csv", "glue_average.csv"):
        assert (out / name).read_text() == (tmp_path / "again" / name).read_text()
    assert json.loads((out / "manifest.json").read_text())["kind"] == "aggregate"


def test_input_errors(tmp_path):
    p = write_run(tmp_path, size="tiny", objective="mlm", fraction=1.0, step=60, task="rte", seed=1,
                  scores={"rte": 0.6})
    dup = tmp_path / "dup.json"
    dup.write_text(p.read_text())
    cfg = validate_analysis(SMALL_SPEC)
    with pytest.raises(InputError, match="duplicate run"):
        per_seed_table(load_metrics([p, dup]), cfg)
    bad = tmp_path / "bad.json"
    rec = json.loads(p.read_text())
    del rec["step"]
    bad.write_text(json.dumps(rec))
    with pytest.raises(InputError, match=r"bad\.json: missing key\(s\) step"):
        load_metrics([bad])
    cfg2 = validate_analysis(dict(SMALL_SPEC, primary_metric={"rte": "matthews_correlation"}))
    with pytest.raises(InputError, match="no 'matthews_correlation'"):
        per_seed_table(load_metrics([p]), cfg2)
    assert main(["--inputs", str(bad), "--output-dir", str(tmp_path / "o")]) == 2
    assert main(["--output-dir", str(tmp_path / "o")]) == 2


def test_workflow_spec_keys(tmp_path):
    """The keys the Snakemake workflow adds (budgets, finetuned_budgets, missing_tasks, seeds)."""
    spec = dict(SMALL_SPEC, tasks=["sst2"], budgets={"tiny": [20, 40, 60]},
                finetuned_budgets={"tiny": [20, 40, 60]}, missing_tasks={"rte": "not in the local data"},
                seeds=[1, 2, 3])
    cfg = validate_analysis(spec)
    assert cfg.size_steps("tiny") == [("50k", 20), ("", 40), ("250k", 60)]
    out, _ = build_aggregate(tmp_path, spec, seeds=[1, 2])
    cells = pd.read_csv(out / "cells.csv", keep_default_na=False)
    unnamed = cells[(cells.step == 40) & (cells.objective == "mlm")]
    assert len(unnamed) == 1 and unnamed.budget.iloc[0] == "" and unnamed.n_seeds.iloc[0] == 0  # expected, not run
    run = cells[(cells.step == 60) & (cells.objective == "mlm")].iloc[0]
    assert "missing seeds: 3" in run.note
    with pytest.raises(AnalysisConfigError, match="finetuned_budgets.tiny"):
        validate_analysis(dict(spec, finetuned_budgets={"tiny": ["60"]}))
    with pytest.raises(AnalysisConfigError, match="missing_tasks.glue9"):
        validate_analysis(dict(spec, missing_tasks={"glue9": "x"}))


def test_compare_with_one_seed_gives_nan_tests():
    c = compare([1.0], [0.5, 0.7], n_resamples=99, label="one")
    assert c.delta == pytest.approx(0.4)
    assert math.isnan(c.p_two_sided) and math.isnan(c.ci_low) and math.isnan(c.hedges_g)


def test_undefined_metric_counts_as_zero_and_is_flagged(tmp_path):
    """A constant STS-B prediction has no correlation (null): aggregate must not crash (it used to
    stop with 'scores.stsb.pearson is not a number: None'); the run counts as 0, flagged degenerate."""
    from taco.commands.tables import main as tables_main

    spec = dict(SMALL_SPEC, tasks=["stsb", "rte"], runs=[SMALL_SPEC["runs"][0]])
    paths = []
    for seed, rho in ((1, 0.80), (2, None), (3, 0.70)):
        p = write_run(tmp_path / "runs", size="tiny", objective="mlm", fraction=1.0, step=60, task="stsb",
                      seed=seed, scores={"stsb": 0.5})
        rec = json.loads(p.read_text())
        rec["scores"]["stsb"] = {"pearson": None if rho is None else rho + 0.01, "spearmanr": rho}
        p.write_text(json.dumps(rec))  # null, as finetune writes NaN; degenerate left False on purpose
        paths.append(p)
        paths.append(write_run(tmp_path / "runs", size="tiny", objective="mlm", fraction=1.0, step=60,
                               task="rte", seed=seed, scores={"rte": 0.6}))
    spec_path = write_spec(tmp_path / "analysis.json", spec)
    out = tmp_path / "agg"
    assert main(["--inputs", *map(str, paths), "--analysis", str(spec_path), "--output-dir", str(out)]) == 0
    ps = pd.read_csv(out / "per_seed.csv")
    st = ps[ps.score_key == "stsb"].set_index("seed")
    assert st.loc[2, "value"] == 0.0 and bool(st.loc[2, "degenerate"]) and bool(st.loc[2, "undefined_metric"])
    assert math.isnan(st.loc[2, "metric_spearmanr"])  # the CSV keeps the metric undefined
    assert not st.loc[1, "undefined_metric"] and st.loc[1, "value"] == pytest.approx(80.0)
    cells = pd.read_csv(out / "cells.csv")
    c = cells[(cells.score_key == "stsb") & (cells.step == 60)].iloc[0]
    assert c["mean"] == pytest.approx((80.0 + 0.0 + 70.0) / 3) and c.n_undefined == 1 and c.n_degenerate == 1
    assert "undefined spearmanr (constant predictions) counted as 0" in c.note
    assert tables_main(["--aggregate-dir", str(out), "--analysis", str(spec_path),
                        "--output-dir", str(tmp_path / "res")]) == 0
    md = (tmp_path / "res" / "ablation.md").read_text()
    assert "STS-B: 1 run(s) with an undefined spearmanr (constant predictions) counted as 0" in md


# ---- coverage of the printed interval ---------------------------------------------------------------
def _coverage(n: int, reps: int, rng: np.random.Generator) -> tuple[float, float]:
    """Share of ``reps`` normal samples of size ``n`` (one per arm) whose 90% t interval covers the
    true mean (one sample) and the true difference of means (two samples, unequal SDs)."""
    hit_mean = hit_diff = 0
    for _ in range(reps):
        x = rng.normal(75.0, 0.8, n)
        y = rng.normal(74.0, 1.3, n)
        lo, hi, _m = t_interval((x,), confidence_level=0.90)
        hit_mean += lo <= 75.0 <= hi
        lo, hi, _m = t_interval((x, y), confidence_level=0.90)
        hit_diff += lo <= 1.0 <= hi
    return hit_mean / reps, hit_diff / reps


@pytest.mark.parametrize("n", [3, 5])
def test_t_interval_coverage_holds_at_few_seeds(n):
    """the printed 90% CI must cover at least 0.87 at 3 seeds (normal data). 4000
    replications: the standard error of a coverage near 0.9 is 0.005, so 0.87 is 6 SE below."""
    cov_mean, cov_diff = _coverage(n, 4000, np.random.default_rng(20221))
    assert cov_mean >= 0.87 and cov_diff >= 0.87, (cov_mean, cov_diff)
    assert cov_mean <= 0.93  # a t interval of a mean is exact for normal data: not just wide


def test_t_interval_zero_and_one_values():
    assert all(math.isnan(x) for x in t_interval(([1.0],), confidence_level=0.9)[:2])
    assert t_interval(([2.0, 2.0], [1.0, 1.0]), confidence_level=0.9) == (1.0, 1.0, "t (zero variance)")
