"""End-to-end workflow runs: Snakemake as a subprocess in a temporary directory.

`configs/smoke.yaml` (offline, synthetic) always runs; `configs/cpu-real.yaml` runs on the real data in
`../shared/data` where that folder exists. Each is shrunk by its CI overlay in `tests/configs/` (fewer
steps, smaller sets: the same DAG and code paths). Both check the produced tables, figures and claims, and
that a second invocation has nothing left to do (no endless reruns); the smoke run also builds
`snakemake --report` and checks its HTML items (tests/report_pages.py).
"""

from __future__ import annotations

import csv
import json
import math
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from report_pages import (blank_reason, browser_missing_reason, find_browser, report_items, screenshot, verdict_table,
                          workflow_description)

REPO = Path(__file__).resolve().parent.parent
TABLES = ("table1", "table2", "table3", "table4", "ablation")
FIGURES = ("figure5", "ablation", "data_efficiency", "figure6", "figure2")
VERDICTS = {"supported", "not supported", "inconclusive", "not run"}
#: configs/smoke.yaml shrunk by its CI overlay, and the overlay's pre-training budgets
SMOKE = ("configs/smoke.yaml", "tests/configs/smoke-ci.yaml")
SMOKE_BUDGETS = yaml.safe_load((REPO / SMOKE[1]).read_text())["pretrain"]["sizes"]["tiny"]["budgets"]

pytestmark = pytest.mark.slow


def snakemake(workdir: Path, configfiles: tuple[str, ...], *extra: str, timeout: int = 1500) -> subprocess.CompletedProcess:
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1")
    return subprocess.run(
        [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"), "--directory", str(workdir),
         "--configfile", *(str(REPO / f) for f in configfiles), "--cores", str(os.cpu_count() or 2), *extra],
        capture_output=True, text=True, timeout=timeout, env=env,
    )


def read_csv(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def check_outputs(results: Path) -> None:
    for t in TABLES:
        for ext in ("csv", "md", "tex"):
            assert (results / f"{t}.{ext}").stat().st_size > 0, f"{t}.{ext}"
        rows = read_csv(results / f"{t}.csv")
        assert rows, f"{t}.csv has no rows"
    for f in FIGURES:
        png = (results / f"{f}.png").read_bytes()
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5000, f
        assert (results / f"{f}.pdf").read_bytes()[:4] == b"%PDF", f
    rows = read_csv(results / "claims.csv")
    claims = [r for r in rows if r["level"] == "claim"]
    # the paper's claims (C4 has two parts: TACO-250k vs MLM-500k and TACO-100k vs MLM-250k; C7: MLM+TP
    # drops after 150k steps)
    # plus S1, this suite's sanity check (final MLM vs the no-pre-training control; "not run" without one)
    assert {r["claim_id"] for r in claims} == {"C1", "C2", "C3", "C4", "C4b", "C5", "C6", "C7", "S1"}
    assert {r["verdict"] for r in claims} <= VERDICTS
    # every fine-tuning run left metrics and predictions
    metrics = sorted((results / "finetune").rglob("metrics.json"))
    assert metrics
    for m in metrics:
        assert (m.parent / "predictions.tsv").stat().st_size > 0
        data = json.loads(m.read_text())
        assert data["scores"] and data["epochs"]


def test_smoke_config_end_to_end(tmp_path):
    start = time.monotonic()
    out = snakemake(tmp_path, SMOKE)
    wall = time.monotonic() - start
    assert out.returncode == 0, out.stderr[-5000:]
    results = tmp_path / "results" / "smoke"
    check_outputs(results)
    # the end-of-run summary: the results folder, verdict counts, degenerate runs, the report
    text = out.stdout + out.stderr
    assert "TACO run finished. Results: results/smoke/" in text and "Claims (" in text, text[-3000:]
    assert "Degenerate runs: " in text and "Report: snakemake --report report.html --configfile " in text
    # the time left after "N of M steps done" lines (taco.workflow.progress, added by the Snakefile's onstart)
    assert re.search(r"taco: \d+ of \d+ jobs done, about .+ left \(estimated\)", text), text[-3000:]
    # every objective of the grid was pre-trained at each of the three budgets
    assert len(SMOKE_BUDGETS) == 3
    for objective in ("mlm", "taco", "mlm_tp", "taco_concentrated"):
        for step in SMOKE_BUDGETS:
            ckpt = results / "pretrain" / "tiny" / objective / "data-1.0" / f"step-{step}"
            assert json.loads((ckpt / "manifest.json").read_text())["step"] == step
    table1 = (results / "table1.md").read_text()
    assert "TACO" in table1 and "MLM" in table1
    # nothing left to do: no params that change every run, no rerun loops
    again = snakemake(tmp_path, SMOKE, "-n")
    assert again.returncode == 0
    assert "Nothing to be done" in again.stdout + again.stderr, again.stdout[-3000:]
    print(f"smoke workflow wall time: {wall:.0f} s")
    check_report(tmp_path, results)


#: the HTML pages of the report and the category each is shown in
REPORT_PAGES = {"claims.html": "Claims", "efficiency.html": "Claims", "deviations.html": "Deviations",
                "plan.html": "Compute plan", **{f"{t}.html": "Tables" for t in TABLES}}


def check_report(workdir: Path, results: Path) -> None:
    """``snakemake --report report.html`` of the finished run: every table, the claims, the
    efficiency claims, the deviations and the plan are embedded HTML items with a caption; the claims
    item holds the verdict table; the CSVs stay downloads; a headless Chromium screenshot of the
    claims item is not blank (where Chromium is installed)."""
    report = workdir / "report.html"
    out = snakemake(workdir, SMOKE, "--report", str(report), timeout=600)
    assert out.returncode == 0, out.stderr[-5000:]
    items, categories = report_items(report)
    by_name = {Path(path).name: item for path, item in items.items()}
    for name, category in REPORT_PAGES.items():
        item = by_name.get(name)
        assert item is not None, f"{name} is not in the report: {sorted(by_name)}"
        assert item["mime_type"] == "text/html" and item["caption"].strip() and item["labels"]["page"], name
        assert item["content"] == (results / name).read_bytes(), name
        assert any(Path(p).name == name for paths in categories[category].values() for p in paths), name
    for name in ("figure5.png", "ablation.png", "data_efficiency.png", "pretrain_curves.png", "efficiency.png"):
        item = by_name.get(name)  # listed by a name, as the tables are, not by its path
        assert item is not None and item["labels"]["figure"] and item["caption"].strip(), name
    header, rows = verdict_table(by_name["claims.html"]["content"])
    assert {r[0].split(":")[0] for r in rows} == {"C1", "C2", "C3", "C4", "C4b", "C5", "C6", "C7", "S1"}
    assert "SYNTHETIC GLUE-format tasks" in by_name["claims.html"]["caption"]
    assert "SYNTHETIC DATA" in workflow_description(report)  # the report's front page says so first
    csvs = {Path(p).name for paths in categories["Data (CSV)"].values() for p in paths}
    assert csvs == {f"{t}.csv" for t in TABLES} | {"claims.csv", "efficiency.csv"}
    assert not any(n.endswith(".md") for n in by_name), "Markdown pages are shown as HTML, not as downloads"
    if find_browser() is None:
        import warnings

        warnings.warn(f"report screenshot not checked: {browser_missing_reason()}")
        return
    page = workdir / "claims_item.html"
    page.write_bytes(by_name["claims.html"]["content"])
    png = screenshot(page, workdir / "claims_item.png")
    assert blank_reason(png) is None


#: the Gutenberg books of the CI corpus: one pure ASCII, one with Latin-1 bytes (the corpus's
#: utf-8-or-latin-1 encoding); the full set of 18 (12 MB) only makes the data jobs longer
CI_BOOKS = ("carroll-alice.txt", "shakespeare-caesar.txt")


def ci_data_root(shared_data: Path, root: Path) -> Path:
    """A data_root with configs/cpu-real.yaml's layout: links to the shared WikiText-2 files and GLUE
    folder, and a gutenberg/ folder (read as a folder, as in the real run) with :data:`CI_BOOKS`."""
    (root / "corpus" / "gutenberg").mkdir(parents=True)
    (root / "corpus" / "wikitext-2").symlink_to(shared_data / "corpus" / "wikitext-2", target_is_directory=True)
    (root / "glue").symlink_to(shared_data / "glue", target_is_directory=True)
    for book in CI_BOOKS:
        (root / "corpus" / "gutenberg" / book).symlink_to(shared_data / "corpus" / "gutenberg" / book)
    return root


def check_families(results: Path) -> None:
    """The encoder families of configs/cpu-real-families.yaml through the whole DAG: native-class
    checkpoints, every task fine-tuned, learning dynamics measured, one E1 row per family on the
    efficiency page, the family in the deviations; BERT's paths are those of a run without families."""
    for size, family, cls, seeds in (("modernbert_tiny", "modernbert", "ModernBertForMaskedLM", 2),
                                     ("roberta_tiny", "roberta", "RobertaForMaskedLM", 1)):
        run = results / "pretrain" / size / "taco" / "data-1.0" / "step-16"
        assert json.loads((run / "config.json").read_text())["architectures"] == [cls]
        assert json.loads((run / "manifest.json").read_text())["architecture"] == family
        assert len(list((results / "pretrain" / size / "mlm").rglob("step-16"))) == seeds
        assert len(list((results / "finetune" / size / "taco").rglob("metrics.json"))) == 2 * 4 * 2  # budgets x tasks x seeds
        assert (results / "dynamics" / size / "taco" / "data-1.0" / "step-16").is_dir()
        assert (results / "glue_submission" / size / "taco" / "data-1.0" / "step-16" / "seed-1.zip").is_file()
    bert = results / "pretrain" / "tiny" / "taco" / "data-1.0" / "step-16"
    assert json.loads((bert / "manifest.json").read_text())["architecture"] == "bert"
    assert "architecture" not in json.loads((bert / "manifest.json").read_text())["hash_inputs"]
    rows = [r for r in read_csv(results / "efficiency.csv") if r["kind"] == "primary" and r["claim_id"] == "E1"]
    assert sorted(r["size"] for r in rows) == ["modernbert_tiny", "roberta_tiny", "tiny", "tiny_long"]
    page = (results / "efficiency.md").read_text()
    assert "carry over to other encoders" in page and "| ModernBERT | modernbert\\_tiny |" in page
    assert "modernbert\\_tiny: encoder family" in (results / "deviations.md").read_text()


def check_long_pair(results: Path) -> None:
    """configs/cpu-real-long.yaml: the long size runs no trials, each objective's run reads BERT-tiny's choice
    for that objective (tuned_as: tiny), its last budget is fine-tuned, and E1 has a row for it."""
    assert not (results / "tuning" / "tiny_long").exists()
    for objective in ("mlm", "taco"):
        chosen = json.loads((results / "tuning" / "tiny" / objective / "choice.json").read_text())["chosen"]["setting"]
        params = json.loads((results / "pretrain" / "tiny_long" / objective / "data-1.0" / "step-16" / "manifest.json")
                            .read_text())["hash_inputs"]
        assert (params["warmup_steps"], params["max_steps"]) == (chosen["warmup_steps"], 16), params
        assert math.isclose(params["lr"], chosen["learning_rate"]), params
    for objective in ("mlm", "taco", "control"):  # its own control too (a size with a full-data run)
        assert len(list((results / "finetune" / "tiny_long" / objective).rglob("metrics.json"))) == 4 * 2  # tasks x seeds
    assert not list((results / "finetune" / "tiny_long").rglob("step-8"))
    rows = [r for r in read_csv(results / "efficiency.csv") if r["kind"] == "primary" and r["size"] == "tiny_long"]
    assert len(rows) == 1 and rows[0]["n_runs_a"] == "1" and rows[0]["target_step"] == "16", rows


def test_local_config_end_to_end(tmp_path, shared_data):
    """configs/cpu-real.yaml (WikiText-2 + Gutenberg books, control, pre-training replicates) shortened
    by the CI overlay tests/configs/cpu-real-ci.yaml: same code paths, a few steps, small subsets; with the
    encoder-families overlay configs/cpu-real-families.yaml (shrunk by tests/configs/cpu-real-families-ci.yaml)
    in the same run: ModernBERT and RoBERTa pre-trained, fine-tuned, measured and analysed beside BERT; and
    the long pair of configs/cpu-real-long.yaml (shrunk by tests/configs/cpu-real-long-ci.yaml)."""
    data_root = ci_data_root(shared_data, tmp_path / "data")
    out = snakemake(tmp_path, ("configs/cpu-real.yaml", "tests/configs/cpu-real-ci.yaml",
                               "configs/cpu-real-families.yaml", "tests/configs/cpu-real-families-ci.yaml",
                               "configs/cpu-real-long.yaml", "tests/configs/cpu-real-long-ci.yaml"),
                    "--config", f"data_root={data_root}")
    assert out.returncode == 0, out.stderr[-5000:]
    results = tmp_path / "results" / "cpu-real-ci"
    check_outputs(results)
    spec = json.loads((results / "analysis.json").read_text())
    assert spec["controls"] == ["tiny", "modernbert_tiny", "roberta_tiny", "tiny_long"] and spec["tasks"] == ["cola", "sst2", "mrpc", "stsb"]
    # the corpus mixes encyclopedia and books
    corpus = json.loads((results / "data" / "corpus" / "manifest.json").read_text())
    assert "valid.txt" in corpus["parameters"]["input_order"]
    assert all(book in corpus["parameters"]["input_order"] for book in CI_BOOKS), corpus["parameters"]["input_order"]
    # the control: step 0, fine-tuned like the others, in Table 1 and in claim S1
    control = results / "pretrain" / "tiny" / "control" / "data-1.0" / "step-0"
    assert json.loads((control / "manifest.json").read_text())["objective"] == "control"
    assert len(list((results / "finetune" / "tiny" / "control").rglob("metrics.json"))) == 4 * len(spec["seeds"])
    assert "No pre-training" in (results / "table1.md").read_text()
    s1 = [r for r in read_csv(results / "claims.csv") if r["level"] == "claim" and r["claim_id"] == "S1"]
    assert s1 and s1[0]["verdict"] != "not run"
    # every budget checkpoint records its validation losses; the curves figure shows them
    for objective in ("mlm", "taco"):
        for step in (8, 16):
            ev = json.loads((results / "pretrain" / "tiny" / objective / "data-1.0" / f"step-{step}" / "eval.json")
                            .read_text())
            assert ev["step"] == step and ev["mlm_loss"] > 0 and (ev["tc_loss"] is None) == (objective == "mlm")
    # the frozen-feature GLUE probe (pretrain.glue_probe) at each budget, and its steps-to-target row
    ev = json.loads((results / "pretrain" / "tiny" / "taco" / "data-1.0" / "step-16" / "eval.json").read_text())
    assert -1 <= ev["glue_probe_mean"] <= 1 and set(ev) >= {"glue_probe_sst2", "glue_probe_stsb", "glue_probe_cls"}
    rows = [r for r in read_csv(results / "efficiency.csv") if r["form"] == "glue_probe_average" and r["size"] == "tiny"]
    assert len(rows) == 1 and rows[0]["target_step"] == "16" and rows[0]["kind"] == "secondary", rows
    # ... and its column in the tables: TACO-250k (step 16) over its two pre-training runs, the probe's average x100
    t1 = [r for r in read_csv(results / "table1.csv") if r["column"] == "probe" and r["objective"] == "taco"
          and r["step"] == "16" and r["size"] == "tiny"]
    assert len(t1) == 1 and t1[0]["n_seeds"] == "2" and -100 <= float(t1[0]["mean"]) <= 100, t1
    assert "Probe avg. (frozen)" in (results / "table1.md").read_text()
    curves = read_csv(results / "pretrain_curves.csv")
    for size in ("tiny", "modernbert_tiny", "roberta_tiny"):
        assert {(r["objective"], r["step"]) for r in curves if r["size"] == size} == {
            ("control", "0"), ("mlm", "8"), ("mlm", "16"), ("taco", "8"), ("taco", "16")}, size
    check_families(results)
    check_long_pair(results)
    assert (results / "pretrain_curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # job logs carry readable progress lines
    log = (results / "logs" / "pretrain" / "tiny" / "taco" / "data-1.0" / "step-16.log").read_text()
    assert "pretrain taco: step 16/16 (100%)" in log and "examples/s" in log
