"""taco.report.tables: the paper's Table 1 fed in as data reproduces its printed averages; n/a handling."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fixtures_stats import build_aggregate, paper_table1_runs, smoke_spec, write_spec
from taco.commands.aggregate import main as aggregate_main
from taco.stats.analysis_config import validate_analysis
from taco.commands.tables import main
from taco.report.tables import NOT_AVAILABLE, write_tables
from taco.stats.table_data import approach_label, build_tables, load_paper_values
from taco.stats.analysis_config import budget_steps_from_name

PAPER_SPEC = {
    "roles": {"small": "small", "base": None},
    "budget_names": {"small": {"50k": 50000, "250k": 250000}},
    "runs": [{"size": "small", "objective": "mlm", "fraction": 1.0, "budgets": ["250k"]},
                 {"size": "small", "objective": "taco", "fraction": 1.0}],
    "n_resamples": 99,
}


@pytest.fixture(scope="module")
def paper_tables(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("paper")
    paths = paper_table1_runs(tmp / "runs")
    spec = write_spec(tmp / "analysis.json", PAPER_SPEC)
    assert aggregate_main(["--inputs", *map(str, paths), "--analysis", str(spec),
                           "--output-dir", str(tmp / "agg")]) == 0
    assert main(["--aggregate-dir", str(tmp / "agg"), "--analysis", str(spec), "--output-dir", str(tmp / "res")]) == 0
    return tmp / "res"


def test_table1_reproduces_printed_averages(paper_tables):
    t1 = pd.read_csv(paper_tables / "table1.csv")
    avg = t1[(t1.section == "dev") & (t1.column == "avg")].set_index("approach")
    assert [round(avg.loc[a, "mean"], 1) for a in ("MLM-250k", "TACO-50k", "TACO-250k")] == [75.0, 74.9, 76.2]
    assert (avg["paper"] == [75.0, 74.9, 76.2]).all()
    assert (avg["diff"].abs() < 0.05).all()
    # every per-task number equals the published one
    dev = t1[(t1.section == "dev") & (t1.column != "avg")]
    assert (dev["mean"] - dev["paper"]).abs().max() < 1e-9
    md = (paper_tables / "table1.md").read_text()
    assert "| dev | TACO-250k (ours, n=1) |" in md and "| 76.2 |" in md
    tex = (paper_tables / "table1.tex").read_text()
    assert r"\toprule" in tex and "76.2" in tex


def test_table1_test_set_is_na_beside_published(paper_tables):
    t1 = pd.read_csv(paper_tables / "table1.csv")
    test = t1[t1.section == "test"]
    assert test["mean"].isna().all() and test.n_seeds.eq(0).all()
    assert test.note.str.contains("GLUE server").all() and test.note.str.contains("glue_submission/").all()
    # every table's notes say where the submission zips are and that the numbers are dev numbers
    for name in ("table1", "table2", "table3", "table4"):
        md = (paper_tables / f"{name}.md").read_text()
        assert "Test scores: these are dev-set numbers" in md and "seed-<seed>.zip" in md, name
        assert "gluebenchmark.com/submit" in md, name
    assert test[test.column == "avg"].set_index("approach").loc["TACO-250k", "paper"] == 72.2


def test_unknown_published_values_are_na(paper_tables):
    for name in ("table2", "table3", "table4"):
        df = pd.read_csv(paper_tables / f"{name}.csv")
        assert df["paper"].isna().all(), name
        assert (df["paper_source"] == "UNKNOWN (not published)").all()
    t4 = pd.read_csv(paper_tables / "table4.csv")
    cited = t4[t4.kind == "cited"]
    assert set(cited.approach) == {"BERT-NCE (cited from Kong et al., ICLR 2020)",
                                   "INFOWORD (cited from Kong et al., ICLR 2020)"}
    assert cited["mean"].isna().all() and cited.note.str.contains("Kong et al., ICLR 2020").all()
    md = (paper_tables / "table4.md").read_text()
    assert f"| dev | BERT-NCE (cited from Kong et al., ICLR 2020) | {NOT_AVAILABLE} |" in md
    # Tables 2-4: the "(paper)" rows say the values are not available, never a row of n/a, and no
    # difference row stands under them
    for name in ("table2", "table3", "table4"):
        md = (paper_tables / f"{name}.md").read_text()
        rows = [line for line in md.splitlines() if line.startswith("| dev |")]
        paper_rows = [r for r in rows if "(paper)" in r or "cited from" in r]
        assert paper_rows and all(NOT_AVAILABLE in r for r in paper_rows), name
        assert not any("difference (ours - paper)" in r for r in rows), name
        assert "docs/paper-facts.md" in md
    t3 = pd.read_csv(paper_tables / "table3.csv")  # base role null
    assert t3["mean"].isna().all() and t3.note.str.contains("roles.base is null").all()


def test_missing_budget_shows_na(tmp_path):
    spec = smoke_spec(budget_names={"tiny": {"10k": 10, "250k": 60}, "tinybase": {"100k": 20, "250k": 40}},
                      tasks=["mnli", "sst2", "rte"])
    agg, spec_path = build_aggregate(tmp_path, spec, seeds=[1, 2])
    assert main(["--aggregate-dir", str(agg), "--analysis", str(spec_path), "--output-dir", str(tmp_path / "r")]) == 0
    t1 = pd.read_csv(tmp_path / "r" / "table1.csv")
    t50 = t1[(t1.section == "dev") & (t1.budget == "50k")]
    assert len(t50) == 10 and t50["mean"].isna().all()
    assert t50.note.str.contains("budget 50k not run").all()
    md = (tmp_path / "r" / "table1.md").read_text()
    row = next(line for line in md.splitlines() if line.startswith("| dev | TACO-50k (ours"))
    assert row.count("n/a") == 10
    # run budgets show the step they played, and the partial average is labelled
    assert "TACO-250k [step 60]" in md and "Avg. (partial: MNLI-m, MNLI-mm, SST-2, RTE)" in md
    avg = t1[(t1.section == "dev") & (t1.column == "avg") & (t1.budget == "250k")]
    assert avg["diff"].isna().all() and avg.note.str.contains("not comparable").all()
    # not fine-tuned tasks are n/a, not dropped
    assert t1[(t1.column == "qqp") & (t1.section == "dev")]["mean"].isna().all()
    t3 = pd.read_csv(tmp_path / "r" / "table3.csv")
    assert t3[t3.budget == "500k"]["mean"].isna().all()
    assert t3[t3.budget == "250k"]["mean"].notna().any()
    abl = pd.read_csv(tmp_path / "r" / "ablation.csv")
    pub = abl[(abl.column == "avg") & (abl.objective == "taco")].set_index("budget")["paper"]
    assert pub["10k"] == pytest.approx(70.8) and pub["250k"] == pytest.approx(76.25)
    assert math.isnan(abl[(abl.column == "avg") & (abl.objective == "mlm_tp")]["paper"].iloc[0])


def test_helpers():
    assert budget_steps_from_name("250k") == 250000 and budget_steps_from_name("1M") == 1_000_000
    assert budget_steps_from_name("final") is None
    assert approach_label("taco", "250k", 0.25, 60) == "TACO-250k (25% data) [step 60]"
    assert approach_label("mlm", "250k", 1.0, 250000) == "MLM-250k"
    pv = load_paper_values()
    assert pv["table1_bert_small"]["dev"]["TACO-250k"]["avg"] == 76.2 and pv["table3_base"] is None


def test_average_agrees_with_taco_metrics(paper_tables):
    metrics = pytest.importorskip("taco.data.glue_metrics")
    from fixtures_stats import PAPER_TABLE1_DEV
    from taco.registry import AVERAGE_KEYS

    assert tuple(metrics.AVERAGE_KEYS) == AVERAGE_KEYS
    t1 = pd.read_csv(paper_tables / "table1.csv")
    avg = t1[(t1.section == "dev") & (t1.column == "avg")].set_index("approach")["mean"]
    for name, row in PAPER_TABLE1_DEV.items():
        ref = metrics.glue_average({k: v / 100 for k, v in row.items()})
        assert not ref.is_partial and avg[name] == pytest.approx(100 * ref.value)


def test_markdown_names_each_columns_metric_and_the_caps(tmp_path):
    spec = smoke_spec(tasks=["mrpc", "stsb", "cola", "sst2"], n_resamples=99,
                      max_train_samples=384, max_eval_samples=500)
    agg, spec_path = build_aggregate(tmp_path, spec, seeds=[1, 2])
    out = tmp_path / "res"
    assert main(["--aggregate-dir", str(agg), "--analysis", str(spec_path), "--output-dir", str(out)]) == 0
    md = (out / "table1.md").read_text()
    for part in ("MRPC = F1", "STS-B = Spearman corr.", "CoLA = Matthews corr.", "SST-2 = accuracy",
                 "QQP = F1", "Avg. = plain mean"):
        assert part in md, part
    assert "training sets capped at 384 examples per task" in md
    assert "dev sets capped at 500 examples per task" in md
    assert "a seeded random sample (stratified by label" in md and "not the first rows" in md
    assert "95% CI in the CSV: t interval (Student t for a mean, Welch t for a difference of means)" in md
    assert "bootstrap" not in md
    # the LaTeX caption names each column's metric too
    tex = (out / "table1.tex").read_text()
    caption = [ln for ln in tex.splitlines() if ln.startswith(r"\caption{")][0]
    for part in ("MRPC = F1", "STS-B = Spearman corr.", "CoLA = Matthews corr.", "SST-2 = accuracy"):
        assert part in caption, part
    plain = tmp_path / "plain"
    spec2 = write_spec(tmp_path / "plain.json", smoke_spec(tasks=["sst2"], n_resamples=99))
    agg2 = tmp_path / "agg2"
    assert aggregate_main(["--inputs-from", str(tmp_path / "inputs.txt"), "--analysis", str(spec2),
                           "--output-dir", str(agg2)]) == 0
    assert main(["--aggregate-dir", str(agg2), "--analysis", str(spec2), "--output-dir", str(plain)]) == 0
    assert "capped" not in (plain / "table1.md").read_text()


def test_published_values_added_in_paper_values_json_fill_tables_2_to_4(tmp_path):
    """Values for Tables 2-4 go in one place (the paper_values mapping): added there, they print as
    the "(paper)" row with a difference row, and the not-available sentence goes."""
    spec = {**PAPER_SPEC, "roles": {"small": "small", "base": "base"}, "tasks": ["mnli", "qqp", "qnli", "sst2", "cola", "stsb", "mrpc", "rte"],
            "budget_names": {**PAPER_SPEC["budget_names"], "base": {"250k": 250000}},
            "runs": PAPER_SPEC["runs"] + [
                {"size": "small", "objective": "mlm", "fraction": 0.25, "budgets": ["250k"]},
                {"size": "base", "objective": "mlm", "fraction": 1.0},
                {"size": "base", "objective": "taco", "fraction": 1.0}]}
    agg_dir, spec_path = build_aggregate(tmp_path, spec, seeds=[1, 2])
    from taco.stats.aggregate import read_aggregate

    agg, cfg = read_aggregate(agg_dir), validate_analysis(spec)
    pv = load_paper_values()
    pv["table3_base"] = {"TACO-250k": {"avg": 80.0}}
    pv["table2_data_efficiency"] = {"MLM-250k (25% data)": {"sst2": 88.0}}
    pv["table4_bert_nce_infoword"] = {"INFOWORD": {"avg": 79.0}}
    tables = build_tables(agg, cfg, pv)
    t3 = tables["table3"]
    row = t3[(t3.approach == "TACO-250k") & (t3.column == "avg")].iloc[0]
    assert row["paper"] == 80.0 and row["diff"] == pytest.approx(row["mean"] - 80.0)
    write_tables(tables, tmp_path / "out", cfg)
    md3 = (tmp_path / "out" / "table3.md").read_text()
    assert "| dev | TACO-250k (paper) | n/a |" in md3 and "80.0" in md3 and "difference (ours - paper)" in md3
    assert f"| dev | MLM-250k (paper) | {NOT_AVAILABLE} |" in md3  # still unknown
    md2 = (tmp_path / "out" / "table2.md").read_text()
    assert "88.0" in md2
    md4 = (tmp_path / "out" / "table4.md").read_text()
    assert "| dev | INFOWORD (cited from Kong et al., ICLR 2020) | n/a |" in md4 and "79.0" in md4


def _rendered(tmp_path, **spec_over):
    """Tables rendered by ``taco tables`` from fixture runs of :func:`smoke_spec` with ``spec_over``."""
    spec = smoke_spec(n_resamples=99, **spec_over)
    agg, spec_path = build_aggregate(tmp_path, spec, seeds=[1, 2])
    out = tmp_path / "res"
    assert main(["--aggregate-dir", str(agg), "--analysis", str(spec_path), "--output-dir", str(out)]) == 0
    return out


def test_synthetic_tasks_are_labelled_and_never_compared_with_the_paper(tmp_path):
    out = _rendered(tmp_path, glue_source="synthetic", corpus_source="synthetic",
                    presets={"tiny": "tiny", "tinybase": "tiny"})
    for name in ("table1", "table2", "table3", "table4", "ablation"):
        md = (out / f"{name}.md").read_text()
        title = md.splitlines()[0]
        assert "SYNTHETIC GLUE-format tasks and synthetic corpus" in title, name
        assert " on GLUE" not in title, name
        assert "difference (ours - paper)" not in md and "(paper) |" not in md, name
        assert "gluebenchmark.com/submit" not in md and "cannot be submitted" in md, name
        assert "SYNTHETIC" in (out / f"{name}.tex").read_text(), name
        df = pd.read_csv(out / f"{name}.csv")
        assert df["diff"].isna().all(), name
    t1 = pd.read_csv(out / "table1.csv")
    assert set(t1.section) == {"dev"}  # no test section beside the paper's test rows
    assert "Table 1: BERT-small on synthetic GLUE-format tasks" in (out / "table1.md").read_text()
    assert "test published only" not in (out / "table1.md").read_text()  # no test rows on synthetic tasks


def test_tiny_model_on_real_glue_prints_no_difference_against_bert_small(tmp_path):
    out = _rendered(tmp_path, glue_source="local", corpus_source="local",
                    presets={"tiny": "tiny", "tinybase": "tiny"})
    md = (out / "table1.md").read_text()
    assert "SYNTHETIC" not in md and "synthetic" not in md.splitlines()[0]
    assert "| dev | MLM-250k [step 60] (paper) | 76.9 |" in md  # the published row stays, for reference
    assert "difference (ours - paper)" not in md
    assert "model preset 'tiny' is not BERT-small" in md
    t1 = pd.read_csv(out / "table1.csv")
    assert t1["diff"].isna().all() and t1[t1.section == "dev"]["paper"].notna().any()
    # the same fixture with the paper's preset recorded prints the difference rows
    out2 = _rendered(tmp_path / "paper_size", glue_source="local", presets={"tiny": "small", "tinybase": "base"})
    assert "difference (ours - paper)" in (out2 / "table1.md").read_text()


CAPTIONS = Path(__file__).resolve().parent.parent / "workflow" / "report"


@pytest.mark.parametrize("name", ["table1", "table2", "table3", "table4", "ablation", "figure5",
                                  "data_efficiency", "claims", "deviations", "figure2", "figure6", "pretrain_curves"])
def test_report_captions_say_synthetic_for_the_smoke_config_only(name):
    """The ``snakemake --report`` captions, rendered as Snakemake renders them (Jinja2 with
    ``snakemake.config``, then reStructuredText), name the synthetic tasks / corpus of the smoke
    configuration and stay silent about them for the paper's configuration."""
    import types

    import jinja2
    import yaml
    from docutils.core import publish_parts

    repo = CAPTIONS.parent.parent
    text = (CAPTIONS / f"{name}.rst").read_text()
    corpus_only = name in ("figure2", "figure6", "pretrain_curves")  # no fine-tuning in these
    for config_file, synthetic in (("configs/smoke.yaml", True), ("config.yaml", False)):
        config = yaml.safe_load((repo / config_file).read_text())
        rendered = jinja2.Environment().from_string(text).render(snakemake=types.SimpleNamespace(config=config))
        publish_parts(rendered, writer_name="html", settings_overrides={"halt_level": 2})  # valid RST
        said = "Synthetic corpus" in rendered if corpus_only else "SYNTHETIC GLUE-format tasks" in rendered
        assert said is synthetic, (name, config_file)
        if not synthetic:
            assert "synthetic" not in rendered.lower(), (name, config_file)
    if name == "table1":
        real = jinja2.Environment().from_string(text).render(
            snakemake=types.SimpleNamespace(config=yaml.safe_load((repo / "config.yaml").read_text())))
        assert "beside the published values" in real


def test_config_schema_describes_the_default_metrics():
    """the schema's analysis.primary_metric description names the registry's defaults
    (it used to say "stsb Pearson, others accuracy")."""
    import yaml

    from taco.registry import DEFAULT_PRIMARY_METRIC

    schema = yaml.safe_load((Path(__file__).resolve().parents[1] / "workflow/schemas/config.schema.yaml").read_text())
    text = schema["properties"]["analysis"]["properties"]["primary_metric"]["description"]
    words = {"matthews_correlation": "MCC", "spearmanr": "Spearman", "pearson": "Pearson", "f1": "F1"}
    # every score key whose default is not accuracy is named with its metric ("mrpc and qqp F1"), from the registry
    by_metric: dict[str, list[str]] = {}
    for key, metric in DEFAULT_PRIMARY_METRIC.items():
        if metric != "accuracy":
            by_metric.setdefault(metric, []).append(key)
    assert by_metric, "every default is accuracy?"
    for metric, keys in by_metric.items():
        assert f"{' and '.join(sorted(keys))} {words[metric]}" in text, (metric, keys, text)
    assert "others accuracy" in text and "Pearson" not in text
    assert "report_rule best" in text


def test_table4_measures_the_reimplemented_baselines_beside_taco_and_mlm(tmp_path):
    """Table 4's measured rows: MLM, TACO, BERT-NCE and INFOWORD at the base role's largest budget, the
    two baselines labelled as this suite's reimplementations; their means are the fixture's cells."""
    from fixtures_stats import PAPER_TABLE1_DEV, SMOKE_OFFSETS

    variants = smoke_spec()["runs"] + [{"size": "tinybase", "objective": o, "fraction": 1.0}
                                           for o in ("bert_nce", "infoword")]
    out = _rendered(tmp_path, runs=variants)
    t4 = pd.read_csv(out / "table4.csv")
    ours = t4[(t4.kind == "reproduced") & (t4.column == "avg")].set_index("objective")
    assert set(ours.index) == {"mlm", "taco", "bert_nce", "infoword"}
    assert ours.loc["bert_nce", "approach"] == "BERT-NCE-500k [step 80] (base role, reimplementation)"
    assert "reimplementation" in ours.loc["infoword", "note"] and "not the published" in ours.loc["infoword", "note"]
    assert "reimplementation" not in ours.loc["taco", "approach"]
    # fixture: the paper's MLM-250k dev row + the objective's offset (0 for objectives without one), at the
    # last budget no penalty; seeds 1 and 2 have offsets that the mean over the nine keys keeps
    for obj in ("bert_nce", "infoword", "mlm"):
        base = sum(PAPER_TABLE1_DEV["MLM-250k"].values()) / 9 + SMOKE_OFFSETS.get(obj, 0.0)
        assert abs(ours.loc[obj, "mean"] - base) < 0.6, obj
    md = (out / "table4.md").read_text()
    assert "BERT-NCE (cited from Kong et al., ICLR 2020)" in md and "INFOWORD-500k [step 80] (base role, reimplementation)" in md


def test_median_over_seeds_stands_beside_the_mean_in_every_format(tmp_path):
    """Encoder papers quote the median of 5 fine-tuning runs: each table gives it beside the mean, labelled
    (csv column, a "(ours, median, n=..)" row in .md/.html/.tex, and the legend says what it is)."""
    from fixtures_stats import PAPER_TABLE1_DEV, seed_offset

    spec = smoke_spec(n_resamples=99, tasks=["mnli", "sst2", "rte"])
    agg, spec_path = build_aggregate(tmp_path, spec, seeds=[1, 2, 4], spread=3.0)  # offsets -1, +1, -2
    out = tmp_path / "res"
    assert main(["--aggregate-dir", str(agg), "--analysis", str(spec_path), "--output-dir", str(out)]) == 0
    offsets = sorted(seed_offset(s, 3.0) for s in (1, 2, 4))
    t1 = pd.read_csv(out / "table1.csv")
    row = t1[(t1.section == "dev") & (t1.approach == "MLM-250k [step 60]") & (t1.column == "mnli_m")].iloc[0]
    assert row["median"] == pytest.approx(PAPER_TABLE1_DEV["MLM-250k"]["mnli_m"] + offsets[1])
    assert row["mean"] == pytest.approx(PAPER_TABLE1_DEV["MLM-250k"]["mnli_m"] + sum(offsets) / 3)
    assert row["median"] != pytest.approx(row["mean"])
    avg = t1[(t1.section == "dev") & (t1.approach == "MLM-250k [step 60]") & (t1.column == "avg")].iloc[0]
    ga = pd.read_csv(agg / "glue_average.csv")
    cell = ga[(ga.level == "cell") & (ga.objective == "mlm") & (ga.step == 60) & (ga.fraction == 1.0)
              & (ga["size"] == "tiny")].iloc[0]
    assert avg["median"] == pytest.approx(cell["median"])  # the average's median: of the per-seed averages
    md = (out / "table1.md").read_text()
    med_row = next(line for line in md.splitlines() if line.startswith("| dev | MLM-250k [step 60] (ours, median, n=3) |"))
    assert f"| {row['median']:.1f} |" in med_row and "±" not in med_row
    assert "ours, median = the median over the same runs as the mean" in md
    html = (out / "table1.html").read_text()
    assert "(ours, median, n=3)" in html
    tex = (out / "table1.tex").read_text()
    assert "(ours, median, n=3)" in tex and "median over the same runs" in tex
    # a row without any run has no median row under it
    assert "TACO-50k (ours, median" not in md.replace("TACO-50k (ours, n=0)", "")
    for name in ("table2", "table3", "ablation"):
        assert "(ours, median, n=3)" in (out / f"{name}.md").read_text(), name
    # at two seeds the median is the mean: no row repeats it (issue 53.3); the csv keeps the column
    agg2, spec2 = build_aggregate(tmp_path / "two", spec, seeds=[1, 2], spread=3.0)
    out2 = tmp_path / "res2"
    assert main(["--aggregate-dir", str(agg2), "--analysis", str(spec2), "--output-dir", str(out2)]) == 0
    md2 = (out2 / "table1.md").read_text()
    assert "(ours, n=2)" in md2 and "(ours, median" not in md2
    assert "shown from 3 runs" in md2 and pd.read_csv(out2 / "table1.csv")["median"].notna().any()


def test_columns_not_fine_tuned_are_noted_once_per_table(tmp_path):
    """A task the configuration does not fine-tune is n/a in every row: the notes say so once, not once
    per column and row."""
    spec = smoke_spec(n_resamples=99, tasks=["mnli", "sst2", "rte"])
    agg, spec_path = build_aggregate(tmp_path, spec, seeds=[1, 2])
    out = tmp_path / "res"
    assert main(["--aggregate-dir", str(agg), "--analysis", str(spec_path), "--output-dir", str(out)]) == 0
    md = (out / "table1.md").read_text()
    notes = md.split("Notes:")[1]
    assert notes.count("not fine-tuned") == 1, notes
    assert "- QQP, QNLI, CoLA, STS-B, MRPC not fine-tuned (not in tasks): n/a in every row" in notes
    # the other notes of a row stay with it
    assert "- MLM-250k [step 60]: one pre-training run" in notes
    # the long-form CSV keeps the reason on each of its cells
    t1 = pd.read_csv(out / "table1.csv", keep_default_na=False)
    qqp = t1[(t1.section == "dev") & (t1.column == "qqp") & (t1.approach == "MLM-250k [step 60]")].iloc[0]
    assert qqp["not_fine_tuned"] == "not in tasks" and "QQP not fine-tuned" in qqp["note"]
    assert (t1[t1.column == "mnli_m"]["not_fine_tuned"] == "").all()


def test_runs_started_from_mnli_are_marked_and_explained(tmp_path):
    """finetune.mnli_start: the values of RTE (and the note) say that they started from MNLI's model; a
    table without such runs has no mark (the default)."""
    import json

    spec = smoke_spec(n_resamples=99, tasks=["mnli", "sst2", "rte"])
    from fixtures_stats import write_smoke_runs
    paths = write_smoke_runs(tmp_path / "runs", [1, 2], spec)
    for p in paths:
        rec = json.loads(p.read_text())
        if rec["task"] == "rte":
            rec["init_from"] = {"path": "x/mnli/seed-1/model", "task": "mnli", "seed": rec["seed"], "epoch": 4}
            p.write_text(json.dumps(rec))
    spec_path = write_spec(tmp_path / "analysis.json", spec)
    assert aggregate_main(["--inputs", *map(str, paths), "--analysis", str(spec_path),
                           "--output-dir", str(tmp_path / "agg")]) == 0
    per_seed = pd.read_csv(tmp_path / "agg" / "per_seed.csv", keep_default_na=False)
    assert set(per_seed[per_seed.task == "rte"]["init_from"]) == {"mnli"}
    assert set(per_seed[per_seed.task != "rte"]["init_from"]) == {""}
    out = tmp_path / "res"
    assert main(["--aggregate-dir", str(tmp_path / "agg"), "--analysis", str(spec_path), "--output-dir", str(out)]) == 0
    md = (out / "table1.md").read_text()
    head = next(line for line in md.splitlines() if line.startswith("| Set |")).split(" | ")
    row = next(line for line in md.splitlines() if line.startswith("| dev | MLM-250k [step 60] (ours, n=2)")).split(" | ")
    assert row[head.index("RTE")].endswith("†") and not row[head.index("SST-2")].endswith("†")
    assert "† = started from the MNLI fine-tuned model of the same checkpoint and seed" in md and ": RTE." in md
    assert r"$^\dagger$" in (out / "table1.tex").read_text()
    t1 = pd.read_csv(out / "table1.csv", keep_default_na=False)
    assert set(t1[(t1.column == "rte") & (t1.n_seeds > 0)]["init_from"]) == {"mnli"}
    # the same runs without the record: no mark anywhere
    plain = _rendered(tmp_path / "plain", tasks=["mnli", "sst2", "rte"])
    assert "†" not in (plain / "table1.md").read_text()


def test_the_frozen_feature_probe_stands_beside_the_glue_average(tmp_path):
    """Issue 51.3: with --pretrain-curves every reproduced approach gets a 'probe' column: the GLUE probe average
    (x100) over its pre-training runs' checkpoints, summarised like every cell (here three runs at 0.50 / 0.60 /
    0.70: mean 60, SD 10, the t interval computed independently); an approach without probe values says so; a
    CSV without the probe column exits 2 naming the file."""
    from scipy import stats

    spec = smoke_spec(n_resamples=99)
    agg, spec_path = build_aggregate(tmp_path, spec, seeds=[1, 2])
    base = ["--aggregate-dir", str(agg), "--analysis", str(spec_path)]
    assert main([*base, "--output-dir", str(tmp_path / "plain")]) == 0
    plain = pd.read_csv(tmp_path / "plain" / "table1.csv")
    assert "probe" not in set(plain["column"])  # without the option the tables are as before
    mlm = plain[(plain["objective"] == "mlm") & (plain["column"] == "avg") & (plain["kind"] == "reproduced")].iloc[0]
    curves = tmp_path / "pretrain_curves.csv"
    pd.DataFrame({"size": [mlm["size"]] * 4, "objective": ["mlm"] * 4, "fraction": [mlm["fraction"]] * 4,
                  "step": [int(mlm["step"])] * 4, "glue_probe_mean": [0.5, 0.6, 0.7, None]}).to_csv(curves, index=False)
    out = tmp_path / "probe"
    assert main([*base, "--output-dir", str(out), "--pretrain-curves", str(curves)]) == 0
    t1 = pd.read_csv(out / "table1.csv")
    row = t1[(t1["objective"] == "mlm") & (t1["column"] == "probe") & (t1["step"] == mlm["step"])].iloc[0]
    half = stats.t.ppf(0.975, 2) * 10 / np.sqrt(3)
    assert (row["n_seeds"], row["mean"], row["std"]) == (3, pytest.approx(60.0), pytest.approx(10.0))
    assert (row["ci_low"], row["ci_high"]) == (pytest.approx(60 - half), pytest.approx(60 + half))
    assert row["paper_source"] == "not in the paper" and np.isnan(row["diff"])
    other = t1[(t1["objective"] == "taco") & (t1["column"] == "probe") & t1["step"].notna()]
    assert len(other) and (other["n_seeds"] == 0).all()
    assert other["note"].str.contains("no GLUE probe in these checkpoints").all()
    md = (out / "table1.md").read_text()
    assert "Probe avg. (frozen)" in md and "60.0 ±10.0" in md and "frozen-feature GLUE probe's average" in md
    pd.DataFrame({"size": ["x"], "step": [1]}).to_csv(tmp_path / "bad.csv", index=False)
    assert main([*base, "--output-dir", str(tmp_path / "bad"), "--pretrain-curves", str(tmp_path / "bad.csv")]) == 2
