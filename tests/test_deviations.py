"""taco.report.deviations: the differences of a run configuration from the paper's setup."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from taco.report.deviations import PAPER_SETUP, find_deviations, main

REPO = Path(__file__).resolve().parent.parent


def resolved(*files: str, **overrides) -> dict:
    """A configuration as the workflow resolves it (files merged, overrides, schema defaults)."""
    from snakemake.utils import update_config, validate

    cfg: dict = {}
    for f in files:
        update_config(cfg, yaml.safe_load((REPO / f).read_text()))
    update_config(cfg, copy.deepcopy(overrides))
    validate(cfg, str(REPO / "workflow/schemas/config.schema.yaml"))
    return cfg


def _rows(devs, kind):
    return {d.topic: d for d in devs if d.kind == kind}


def test_paper_grid_changes_nothing_but_the_method_rows(tmp_path):
    cfg = resolved("config.yaml")
    devs = find_deviations(cfg)
    assert _rows(devs, "configuration") == {}
    method = _rows(devs, "method")
    for topic in ("precision", "dev beside published test numbers", "corpus versions",
                  "definition of e (global part g = h - e)", "positive window", "MLM+TP weighting",
                  "fine-tuning seeds and reported epoch", "pre-training replicates"):
        assert topic in method, topic
    assert "up to +-4" in method["positive window"].paper and "+-1..+-2" in method["positive window"].here
    assert "fp16" in method["precision"].paper and "bf16" in method["precision"].here
    assert "separate, weight 1" in method["MLM+TP weighting"].here
    assert "wikimedia/wikipedia (20231101.en" in method["corpus versions"].here
    # the official train_base.sh: 256 per GPU x 4 accumulation x 2 GPUs
    base = cfg["pretrain"]["sizes"]["base"]
    assert base["per_device_batch_size"] * base["grad_accum"] * base["num_gpus"] == 2048 == PAPER_SETUP["global_batch"]
    cfg_file = tmp_path / "run_config.json"
    cfg_file.write_text(json.dumps(cfg))
    assert main(["--config", str(cfg_file), "--output", str(tmp_path / "deviations.md")]) == 0
    md = (tmp_path / "deviations.md").read_text()
    assert "None: this configuration runs the paper's recipe." in md and "| precision |" in md


def test_each_change_of_the_configuration_is_a_row():
    cfg = resolved("config.yaml", pretrain={"sizes": {"base": {"per_device_batch_size": 128}},
                                            "tp": {"mode": "joint"}},
                   finetune={"max_eval_samples": 500, "seeds": [1, 2, 3]})
    devs = find_deviations(cfg, {"missing_tasks": {"qqp": "missing: train.tsv"}})
    conf = _rows(devs, "configuration")
    batch = conf["base: global batch (sequences per step)"]
    assert batch.here.startswith(f"{128 * 4 * 2} (128 x 4 x 2)") and batch.paper.startswith("2048")
    assert conf["capped dev sets"].here == "at most 500 dev examples per task"
    assert "qqp: missing: train.tsv" in conf["GLUE tasks skipped (data absent)"].here
    assert "joint" in _rows(devs, "method")["MLM+TP weighting"].here
    assert _rows(devs, "method")["fine-tuning seeds and reported epoch"].here.startswith("seeds 1, 2, 3")
    assert set(conf) == {"base: global batch (sequences per step)", "capped dev sets",
                         "GLUE tasks skipped (data absent)"}


def test_cpu_configuration(tmp_path):
    cfg = resolved("configs/local.yaml", data_root=str(tmp_path))
    conf = _rows(find_deviations(cfg), "configuration")
    assert conf["tiny: pre-training steps"].here == "160" and conf["tiny: pre-training steps"].paper.startswith("250000")
    assert conf["tiny: model shape (plays BERT-small)"].here == "preset 'tiny' (L2/H128/A2)"
    assert conf["capped training sets"].here == "at most 384 training examples per task"
    assert "BERT-base 100% data: mlm, taco" in conf["pre-training runs not in this configuration"].here
    assert str(tmp_path) in conf["corpus"].here and "{data_root}" not in conf["corpus"].here


def test_bad_input_exits_2(tmp_path, capsys):
    assert main(["--config", str(tmp_path / "nope.yaml"), "--output", str(tmp_path / "d.md")]) == 2
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({"pretrain": {"runs": []}}))
    assert main(["--config", str(bad), "--output", str(tmp_path / "d.md")]) == 2
    assert "pretrain.sizes" in capsys.readouterr().err
    assert not (tmp_path / "d.md").exists()


def test_statistics_environment_never_imports_torch():
    code = "import sys, taco.report.deviations, taco.report.claims; sys.exit('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], cwd=REPO).returncode == 0
