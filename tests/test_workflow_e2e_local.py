"""The end-to-end run of `configs/cpu-real.yaml` on real data, shrunk by its CI overlays (with the encoder-families
and long-pair overlays in the same DAG): Snakemake as a subprocess in a temporary directory, on a scratch
`data_root` that links `../shared/data` (skipped, with the reason, where that folder is absent). Its own file so
that `pytest -n 2 --dist loadfile` runs it beside the smoke run (tests/test_workflow_e2e.py), not after it.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from test_workflow_e2e import check_outputs, read_csv, snakemake

pytestmark = pytest.mark.slow

#: the Gutenberg books of the CI corpus: one pure ASCII, one with Latin-1 bytes (the corpus's
#: utf-8-or-latin-1 encoding); the full set of 18 (12 MB) only makes the data jobs longer
CI_BOOKS = ("carroll-alice.txt", "shakespeare-caesar.txt")
#: the GLUE tasks of tests/configs/cpu-real-ci.yaml (configs/cpu-real.yaml runs four)
CI_TASKS = ["cola", "stsb"]
#: the subprocess guard: this run takes ~9 min on 2 idle cores, about twice that beside the other slow files
#: on a slow CI machine; the guard only stops a hung run (CI's own limit is 90 min)
TIMEOUT_S = 2700


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
        # the last budget only (tests/configs/cpu-real-long-ci.yaml): tasks x seeds
        assert len(list((results / "finetune" / size / "taco").rglob("metrics.json"))) == len(CI_TASKS) * 2
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
    # the GLUE claims per family, beside BERT-tiny's: those whose arms the overlay runs and fine-tunes (C2, S1;
    # C1's TACO-50k, step 8, is not fine-tuned for the families in this CI overlay)
    claims = [r for r in read_csv(results / "claims.csv") if r["level"] == "claim" and r["kind"] != "steps_to_target"]
    for size in ("modernbert_tiny", "roberta_tiny"):
        assert sorted(r["claim_id"] for r in claims if r["size"] == size) == ["C2", "S1"], size
    assert "[encoder family modernbert: size modernbert_tiny]" in (results / "claims.md").read_text()


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
        assert len(list((results / "finetune" / "tiny_long" / objective).rglob("metrics.json"))) == len(CI_TASKS) * 2  # tasks x seeds
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
                    "--config", f"data_root={data_root}", timeout=TIMEOUT_S)
    assert out.returncode == 0, out.stderr[-5000:]
    results = tmp_path / "results" / "cpu-real-ci"
    check_outputs(results)
    spec = json.loads((results / "analysis.json").read_text())
    assert spec["controls"] == ["tiny", "modernbert_tiny", "roberta_tiny", "tiny_long"] and spec["tasks"] == CI_TASKS
    # the corpus mixes encyclopedia and books
    corpus = json.loads((results / "data" / "corpus" / "manifest.json").read_text())
    assert "valid.txt" in corpus["parameters"]["input_order"]
    assert all(book in corpus["parameters"]["input_order"] for book in CI_BOOKS), corpus["parameters"]["input_order"]
    # the control: step 0, fine-tuned like the others, in Table 1 and in claim S1
    control = results / "pretrain" / "tiny" / "control" / "data-1.0" / "step-0"
    assert json.loads((control / "manifest.json").read_text())["objective"] == "control"
    assert len(list((results / "finetune" / "tiny" / "control").rglob("metrics.json"))) == len(CI_TASKS) * len(spec["seeds"])
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
