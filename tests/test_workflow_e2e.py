"""End-to-end workflow runs: Snakemake as a subprocess in a temporary directory.

`configs/smoke.yaml` (offline, synthetic) always runs; `configs/cpu-real.yaml` runs on the real data in
`../shared/data` where that folder exists (tests/test_workflow_e2e_local.py, which uses the helpers here). Each is shrunk by its CI overlay in `tests/configs/` (fewer
steps, smaller sets: the same DAG and code paths). Both check the produced tables, figures and claims, and
that a second invocation has nothing left to do (no endless reruns); the smoke run also builds
`snakemake --report` and checks its HTML items (tests/report_pages.py).
"""

from __future__ import annotations

import csv
import json
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
VERDICTS = {"supported", "not supported", "inconclusive", "not decidable", "not run"}
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
    # and the steps-to-target claims of efficiency.csv: one claim system, one table (taco.stats.efficiency_claims)
    steps = {r["claim_id"] for r in read_csv(results / "efficiency.csv") if r["kind"] == "primary"}
    assert steps and steps <= {"E1", "E2", "E3"}
    assert {r["claim_id"] for r in claims} == {"C1", "C2", "C3", "C4", "C4b", "C5", "C6", "C7", "S1"} | steps
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
    steps = {r["claim_id"] for r in read_csv(results / "efficiency.csv") if r["kind"] == "primary"}
    assert {r[0].split(":")[0] for r in rows} == {"C1", "C2", "C3", "C4", "C4b", "C5", "C6", "C7", "S1"} | steps
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

