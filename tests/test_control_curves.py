"""The no-pre-training control in the workflow (pretrain.control) and the pre-training curves report.

Pure Python (no torch): config -> control checkpoints, fine-tuning targets, `taco init` options and
the analysis spec; JSON checkpoint records -> pretrain_curves.{png,pdf,csv}.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pandas as pd
import pytest
import yaml

from taco.stats.analysis_config import validate_analysis
from taco.workflow import config as wc
from taco.workflow import control as wctl

REPO = Path(__file__).resolve().parent.parent


def _load(name: str) -> dict:
    from snakemake.utils import validate

    from taco.workflow.schema import schema_file

    cfg = yaml.safe_load((REPO / name).read_text())
    validate(cfg, str(schema_file(REPO / "workflow/schemas/config.schema.yaml")))
    return cfg


def test_control_is_off_by_default_and_one_per_full_data_size_when_asked():
    smoke = _load("configs/smoke.yaml")
    assert smoke["pretrain"]["control"] is False
    assert wctl.checkpoints(smoke) == [] and wctl.finetune_targets(smoke, ["sst2"]) == []
    assert wc.analysis_spec(smoke, ["sst2"])["controls"] == []
    cfg = copy.deepcopy(smoke)
    cfg["pretrain"]["control"] = True
    # smoke runs: tiny at fractions 1.0 and 0.25 -> one control (full data only)
    assert wc.control_sizes(cfg) == ["tiny"]
    assert wctl.checkpoints(cfg) == ["results/smoke/pretrain/tiny/control/data-1.0/step-0"]
    targets = wctl.finetune_targets(cfg, ["sst2", "mnli"])
    assert len(targets) == 2 * len(cfg["finetune"]["seeds"])
    assert targets[0] == "results/smoke/finetune/tiny/control/data-1.0/step-0/sst2/seed-1/metrics.json"
    spec = wc.analysis_spec(cfg, ["sst2"])
    assert spec["controls"] == ["tiny"] and validate_analysis(spec).has_control("tiny")
    assert wctl.init_args(cfg, "tiny") == ["-m", "taco", "init", "--size", "tiny", "--size-name", "tiny",
                                          "--seed", "0", "--mlm-probability", "0.15"]
    cfg["pretrain"]["seeds"] = [0, 4]  # several pre-training seeds: one control each
    assert wctl.checkpoints(cfg) == ["results/smoke/pretrain/tiny/control/data-1.0/step-0",
                                     "results/smoke/pretrain/tiny/control/data-1.0/pretrain-seed-4/step-0"]


def test_cpu_real_config_asks_for_the_control_and_three_seeds():
    cfg = _load("configs/cpu-real.yaml")
    assert cfg["pretrain"]["control"] is True and len(cfg["finetune"]["seeds"]) >= 3
    assert {"sst2", "mrpc", "stsb", "cola"} <= set(cfg["glue"]["tasks"])
    assert any("gutenberg" in p for p in cfg["corpus"]["paths"])


def _checkpoint(root: Path, objective: str, step: int, logs: list[dict], val: dict | None,
                seed: int | None = None) -> Path:
    d = root / objective / (f"pretrain-seed-{seed}" if seed is not None else "") / f"step-{step}"
    d.mkdir(parents=True)
    man = {"kind": "pretrain", "size": "tiny", "objective": objective, "fraction": 1.0, "step": step,
           **({"pretrain_seed": seed} if seed is not None else {})}
    (d / "manifest.json").write_text(json.dumps(man))
    (d / "train_log.jsonl").write_text("".join(json.dumps(r) + "\n" for r in logs) + '{"event": "lo')
    if val is not None:
        (d / "eval.json").write_text(json.dumps({"step": step, **val}))
    return d


def test_pretrain_curves_collects_logs_and_validation(tmp_path):
    from taco.commands.pretrain_curves import main

    log = lambda s, **c: {"event": "log", "step": s, "loss": sum(c.values()), **c}  # noqa: E731
    ck = [
        _checkpoint(tmp_path, "control", 0, [], {"mlm_loss": 10.3, "mlm_accuracy": 0.0, "tc_loss": None,
                                                  "n_masked_tokens": 100}),
        _checkpoint(tmp_path, "mlm", 2, [{"event": "train_begin", "step": 0}, log(1, mlm_loss=9.0),
                                         log(2, mlm_loss=8.0)],
                    {"mlm_loss": 7.5, "mlm_accuracy": 0.1, "tc_loss": None, "n_masked_tokens": 100}),
        _checkpoint(tmp_path, "mlm", 4, [log(3, mlm_loss=7.0), log(4, mlm_loss=6.5)],
                    {"mlm_loss": 6.4, "mlm_accuracy": 0.2, "tc_loss": None, "n_masked_tokens": 100}),
        _checkpoint(tmp_path, "taco", 4, [log(4, mlm_loss=6.6, tc_loss=0.5)],
                    {"mlm_loss": 6.5, "mlm_accuracy": 0.19, "tc_loss": 0.4, "n_masked_tokens": 100}),
    ]
    out = tmp_path / "out"
    assert main(["--checkpoints", *map(str, ck), "--output-dir", str(out)]) == 0
    assert (out / "pretrain_curves.png").stat().st_size > 0 and (out / "pretrain_curves.pdf").is_file()
    csv = pd.read_csv(out / "pretrain_curves.csv")
    assert list(zip(csv.objective, csv.step, csv.val_mlm_loss)) == [("control", 0, 10.3), ("mlm", 2, 7.5),
                                                                   ("mlm", 4, 6.4), ("taco", 4, 6.5)]
    from taco.report.pretrain_curves import collect

    train, _ = collect(ck)
    mlm = train[train.objective == "mlm"]
    assert mlm.step.tolist() == [1, 2, 3, 4] and mlm.mlm_loss.tolist() == [9.0, 8.0, 7.0, 6.5]
    assert train[train.objective == "taco"].tc_loss.tolist() == [0.5]
    assert main(["--checkpoints", str(tmp_path / "missing"), "--output-dir", str(out)]) == 2


def test_every_objectives_loss_terms_are_drawn(tmp_path):
    """BERT-NCE's ``nce`` and INFOWORD's ``nce`` and ``dim`` terms are collected and drawn in panel (b), each
    INFOWORD line named by its term, and the panel's title names the terms of the objectives shown."""
    from taco.report.pretrain_curves import collect, figure

    log = lambda s, **c: {"event": "log", "step": s, "loss": sum(c.values()), **c}  # noqa: E731
    val = {"mlm_loss": 6.5, "mlm_accuracy": 0.1, "tc_loss": None, "n_masked_tokens": 100}
    ck = [_checkpoint(tmp_path, "bert_nce", 2, [log(1, mlm_loss=9.0, nce_loss=3.0), log(2, mlm_loss=8.0, nce_loss=2.5)],
                      {**val, "nce_loss": 2.4}),
          _checkpoint(tmp_path, "infoword", 2, [log(1, mlm_loss=9.1, nce_loss=3.1, dim_loss=1.5),
                                                log(2, mlm_loss=8.1, nce_loss=2.6, dim_loss=1.2)],
                      {**val, "nce_loss": 2.5, "dim_loss": 1.1})]
    train, vals = collect(ck)
    iw = train[train.objective == "infoword"]
    assert iw.nce_loss.tolist() == [3.1, 2.6] and iw.dim_loss.tolist() == [1.5, 1.2]
    assert train[train.objective == "bert_nce"].nce_loss.tolist() == [3.0, 2.5]
    fig = figure(train, vals)
    panel_b = fig.axes[1]
    ys = sorted(tuple(line.get_ydata()) for line in panel_b.get_lines())
    assert ys == [(1.5, 1.2), (3.0, 2.5), (3.1, 2.6)]
    labels = sorted(line.get_label() for line in panel_b.get_lines())
    assert any(lab.endswith(" DIM") for lab in labels) and any(lab.endswith(" NCE") for lab in labels)
    title = panel_b.get_title().replace("\n", " ")
    assert "NCE (BERT-NCE, INFOWORD)" in title and "DIM (INFOWORD)" in title and "TC" not in title
    # validation (panel d) draws each recorded term too
    assert vals.set_index("objective").loc["infoword", ["val_nce_loss", "val_dim_loss"]].tolist() == [2.5, 1.1]
    assert sorted(tuple(line.get_ydata()) for line in fig.axes[3].get_lines()) == [(1.1,), (2.4,), (2.5,)]


def test_pretrain_curves_names_a_damaged_eval_json(tmp_path, capsys):
    """A truncated eval.json (a full disk, a copy cut short) stops `taco pretrain-curves` with exit 2 naming
    the file, as `taco efficiency` does, instead of a JSONDecodeError traceback; nothing is written."""
    from taco.commands.pretrain_curves import main

    ck = _checkpoint(tmp_path, "mlm", 2, [], {"mlm_loss": 7.5, "mlm_accuracy": 0.1, "tc_loss": None,
                                              "n_masked_tokens": 100})
    (ck / "eval.json").write_text('{"step": 2, "mlm_lo')
    out = tmp_path / "out"
    assert main(["--checkpoints", str(ck), "--output-dir", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"{ck / 'eval.json'}: not valid JSON" in err
    assert not (out / "pretrain_curves.csv").exists()
    (ck / "eval.json").write_text("[1, 2]")
    assert main(["--checkpoints", str(ck), "--output-dir", str(out)]) == 2
    assert "expected a JSON object, got a list" in capsys.readouterr().err


def test_stats_environment_reads_curves_without_torch():
    import subprocess
    import sys

    code = ("import sys, taco.report.pretrain_curves, taco.workflow.control; "
            "bad = [m for m in ('torch', 'transformers', 'datasets') if m in sys.modules]; "
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO)


@pytest.mark.parametrize("bad", [["nope"], "tiny", [1]])
def test_spec_controls_must_name_sizes(bad):
    from taco.stats.analysis_config import AnalysisConfigError

    with pytest.raises(AnalysisConfigError, match="controls"):
        validate_analysis({"controls": bad})


def test_nce_objectives_mlm_loss_is_marked_not_comparable(tmp_path):
    """BERT-NCE and INFOWORD train the MLM head on in-batch candidates: their full-softmax MLM loss is
    drawn dotted with the NOT_COMPARABLE label in (a) and (c), and the CSV says comparable = False."""
    import matplotlib.pyplot as plt

    from taco.commands.pretrain_curves import main
    from taco.report.pretrain_curves import NOT_COMPARABLE, collect, figure

    log = lambda s, **c: {"event": "log", "step": s, "loss": sum(c.values()), **c}  # noqa: E731
    val = {"mlm_loss": 7.0, "mlm_accuracy": 0.1, "tc_loss": None, "n_masked_tokens": 100}
    ck = [_checkpoint(tmp_path, name, 2, [log(1, mlm_loss=9.0), log(2, mlm_loss=8.0)], val)
          for name in ("mlm", "bert_nce", "infoword")]
    out = tmp_path / "out"
    assert main(["--checkpoints", *map(str, ck), "--output-dir", str(out)]) == 0
    csv = pd.read_csv(out / "pretrain_curves.csv")
    assert dict(zip(csv.objective, csv.comparable)) == {"bert_nce": False, "infoword": False, "mlm": True}
    fig = figure(*collect(ck))
    try:
        ax_tm, _, ax_vm, _ = fig.axes[:4]
        for ax in (ax_tm, ax_vm):
            styles = {ln.get_label(): ln.get_linestyle() for ln in ax.get_lines()}
            assert styles["MLM"] == "-" and "MLM " + NOT_COMPARABLE not in styles
            assert styles["BERT-NCE " + NOT_COMPARABLE] == ":" and styles["INFOWORD " + NOT_COMPARABLE] == ":"
        legend = [t.get_text() for leg in fig.legends for t in leg.get_texts()]
        assert "BERT-NCE " + NOT_COMPARABLE in legend
    finally:
        plt.close(fig)


def test_replicate_runs_stay_apart_in_the_csv_and_are_one_mean_line_with_a_band(tmp_path):
    """Three pre-training seeds of MLM: the training log keeps each seed's lines (not the last seed's only), the
    CSV one row per checkpoint with its seed, and the figure one line per objective at the seeds' mean (7.0, 8.0,
    9.0 at step 2: 8.0) with their range as a band."""
    from taco.commands.pretrain_curves import main
    from taco.report.pretrain_curves import collect, figure

    log = lambda s, v: {"event": "log", "step": s, "loss": v, "mlm_loss": v}  # noqa: E731
    ck = [_checkpoint(tmp_path, "mlm", 2, [log(1, 9.0 + seed), log(2, 8.0 + seed)],
                      {"mlm_loss": 7.0 + seed, "mlm_accuracy": 0.1, "tc_loss": None, "n_masked_tokens": 100}, seed=seed)
          for seed in (0, 1, 2)]
    train, val = collect(ck)
    assert sorted(zip(train.pretrain_seed, train.step, train.mlm_loss)) == [
        (0, 1, 9.0), (0, 2, 8.0), (1, 1, 10.0), (1, 2, 9.0), (2, 1, 11.0), (2, 2, 10.0)]
    fig = figure(train, val)
    (line,) = fig.axes[2].get_lines()
    assert list(line.get_ydata()) == [8.0] and len(fig.axes[2].collections) == 1  # the band
    (train_line,) = fig.axes[0].get_lines()
    assert list(train_line.get_ydata()) == [10.0, 9.0]
    out = tmp_path / "out"
    assert main(["--checkpoints", *map(str, ck), "--output-dir", str(out)]) == 0
    csv = pd.read_csv(out / "pretrain_curves.csv")
    assert list(zip(csv.pretrain_seed, csv.val_mlm_loss)) == [(0, 7.0), (1, 8.0), (2, 9.0)]
