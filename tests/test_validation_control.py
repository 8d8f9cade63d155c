"""Validation losses of checkpoints (eval.json), the no-pre-training control (`taco init`), progress lines.

Tiny preset on CPU, blocks built here (WordPiece vocabulary of 256, 24 train / 8 validation blocks).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
datasets = pytest.importorskip("datasets")

from taco.manifest import read_manifest  # noqa: E402
from taco.training import control, pretrain  # noqa: E402
from taco.training.runlog import ProgressCallback, format_duration  # noqa: E402
from taco.training.validation import EVAL_NAME, MASK_SEED, evaluate_validation  # noqa: E402

V = 256


def _blocks(root: Path) -> Path:
    import numpy as np
    from transformers import BertTokenizerFast

    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(V - 5)]
    tok = BertTokenizerFast(vocab={t: i for i, t in enumerate(words)}, do_lower_case=True)
    rng = np.random.default_rng(0)

    def rows(n):
        return {"input_ids": [[2] + rng.integers(5, V, size=30).tolist() + [3] for _ in range(n)]}

    blocks = root / "blocks"
    datasets.DatasetDict({"train": datasets.Dataset.from_dict(rows(24)),
                          "validation": datasets.Dataset.from_dict(rows(8))}).save_to_disk(str(blocks))
    tok.save_pretrained(str(blocks / "tokenizer"))
    (blocks / "manifest.json").write_text(json.dumps({"kind": "blocks", "fraction": 1.0}))
    return blocks


@pytest.fixture(scope="module")
def blocks(tmp_path_factory):
    return _blocks(tmp_path_factory.mktemp("val"))


def _model(objective: str, seed: int):
    from transformers import set_seed

    from taco.model.modeling import PreTrainingModel
    from taco.model.configs import bert_config

    set_seed(seed)
    return PreTrainingModel(bert_config("tiny", V), objective=objective, tc_num_negatives=4)


def test_validation_loss_matches_dense_cross_entropy_on_the_same_masks(blocks):
    """The token-weighted MLM loss and accuracy equal a direct dense computation on the masks that
    the fixed generator seeds give; two different models see exactly the same masks."""
    import torch.nn.functional as F
    from transformers import AutoTokenizer

    from taco.model.collator import PreTrainingCollator

    tok = AutoTokenizer.from_pretrained(str(blocks / "tokenizer"))
    m1, m2 = _model("mlm", 1), _model("taco", 2)
    r1 = evaluate_validation(m1, blocks, tok, batch_size=3)
    r2 = evaluate_validation(m2, blocks, tok, batch_size=3)
    assert r1["n_blocks"] == 8 and r1["n_masked_tokens"] == r2["n_masked_tokens"] > 0
    assert r1["tc_loss"] is None and r2["tc_loss"] is not None and r2["tc_loss"] > 0
    # independent: dense logits of the whole batch, cross-entropy with ignore_index
    rows = [list(r) for r in datasets.load_from_disk(str(blocks))["validation"]["input_ids"]]
    coll = PreTrainingCollator(tok)
    ce, n, correct = 0.0, 0, 0
    m1.eval()
    with torch.no_grad():
        for i, s in enumerate(range(0, 8, 3)):
            coll.generator = torch.Generator().manual_seed(MASK_SEED + i)
            b = coll([{"input_ids": r} for r in rows[s:s + 3]])
            logits = m1(input_ids=b["input_ids"], attention_mask=b["attention_mask"]).logits  # (B, L, V)
            ce += float(F.cross_entropy(logits.reshape(-1, V), b["labels"].reshape(-1), ignore_index=-100,
                                        reduction="sum"))
            sel = b["labels"] != -100
            n += int(sel.sum())
            correct += int((logits.argmax(-1)[sel] == b["labels"][sel]).sum())
    assert n == r1["n_masked_tokens"]
    assert r1["mlm_loss"] == pytest.approx(ce / n, rel=1e-5)
    assert r1["mlm_accuracy"] == pytest.approx(correct / n)
    # an untrained model is close to uniform over the vocabulary: loss near ln(V)
    assert abs(r1["mlm_loss"] - math.log(V)) < 0.5
    # deterministic: the same model gives the same numbers again
    assert evaluate_validation(m1, blocks, tok, batch_size=3) == r1


@pytest.mark.parametrize("objective", ["mlm_tp", "bert_nce", "infoword"])
def test_every_loss_term_is_recorded_on_the_shared_masks(blocks, objective):
    """Validation records each loss term of the objective (``<term>_loss``), not only MLM's and TC's; the MLM
    loss stays that of the shared masks (equal to an MLM model's with the same weights: INFOWORD's own n-gram
    masking runs in a second pass); INFOWORD's DIM term at initialisation is close to ln(B), the InfoNCE of
    B indistinguishable candidates, computed here independently."""
    from transformers import AutoTokenizer

    from taco.objectives import OBJECTIVE_SPECS

    tok = AutoTokenizer.from_pretrained(str(blocks / "tokenizer"))
    mine = _model(objective, 3)
    plain = _model("mlm", 3)
    plain.load_state_dict(mine.state_dict())
    r = evaluate_validation(mine, blocks, tok, batch_size=4, probe=False)
    base = evaluate_validation(plain, blocks, tok, batch_size=4, probe=False)
    terms = [t for t in OBJECTIVE_SPECS[objective].terms if t != "mlm"]
    assert terms and all(isinstance(r[f"{t}_loss"], float) and r[f"{t}_loss"] > 0 for t in terms), r
    assert r["tc_loss"] is None and r["mlm_loss"] == pytest.approx(base["mlm_loss"], rel=1e-6)
    if objective == "infoword":
        assert r["dim_loss"] == pytest.approx(math.log(4), abs=0.05)


def test_init_writes_the_untrained_model_as_a_step_0_control(blocks, tmp_path):
    out = tmp_path / "control" / "step-0"
    assert control.main(["--blocks", str(blocks), "--size", "tiny", "--size-name", "small_cpu", "--seed", "5",
                         "--output", str(out), "--device", "cpu"]) == 0
    m = read_manifest(out)
    assert (m["kind"], m["step"], m["objective"], m["control"], m["size"], m["size_preset"], m["fraction"]) == \
        ("pretrain", 0, "control", True, "small_cpu", "tiny", 1.0)
    ev = json.loads((out / EVAL_NAME).read_text())
    assert ev["step"] == 0 and m["validation"]["mlm_loss"] == ev["mlm_loss"]
    # the weights are those of the model built after set_seed(seed), i.e. pre-training's step 0
    from safetensors.torch import load_file

    saved = load_file(str(out / "model.safetensors"))
    ref = _model("mlm", 5).state_dict()
    assert all(torch.equal(saved[k], ref[k]) for k in saved)
    # fine-tuning loads it like any budget checkpoint
    from transformers import AutoModelForSequenceClassification

    AutoModelForSequenceClassification.from_pretrained(str(out), num_labels=2)
    # an existing checkpoint is never overwritten; a bad objective is a usage error (exit 2)
    assert control.main(["--blocks", str(blocks), "--size", "tiny", "--output", str(out)]) == 2
    assert control.main(["--blocks", str(blocks), "--size", "tiny", "--init-objective", "bogus",
                         "--output", str(tmp_path / "x")]) == 2


def test_a_failing_glue_probe_fails_init_and_is_not_taken_for_a_missing_validation_split(blocks, tmp_path,
                                                                                          monkeypatch):
    """Only a missing validation split may leave the control without eval.json ("skipped"); an error of the GLUE
    probe (here a ValueError, as a damaged task file gives) stops `taco init` and leaves no checkpoint."""
    import taco.training.validation as validation

    def broken(*args, **kwargs):
        raise ValueError("sst2: damaged file")

    monkeypatch.setattr(validation, "glue_probe", broken)
    out = tmp_path / "control" / "step-0"
    with pytest.raises(ValueError, match="damaged file"):
        control.main(["--blocks", str(blocks), "--size", "tiny", "--output", str(out), "--device", "cpu"])
    assert not out.exists()


def test_pretrain_budget_records_its_validation_losses(blocks, tmp_path, capsys):
    out = tmp_path / "taco" / "step-2"
    args = ["--blocks", str(blocks), "--objective", "taco", "--size", "tiny", "--max-steps", "2",
            "--warmup-steps", "0", "--output", str(out), "--per-device-batch-size", "4", "--save-every", "0",
            "--logging-steps", "1", "--seed", "3", "--device", "cpu", "--no-progress", "--tc-negatives", "4"]
    assert pretrain.main(args) == 0
    ev = json.loads((out / EVAL_NAME).read_text())
    m = read_manifest(out)
    assert ev["step"] == 2 and ev["objective"] == "taco" and ev["tc_loss"] is not None
    assert m["validation"] == ev
    # same masks as any other checkpoint of these blocks
    from transformers import AutoTokenizer

    other = evaluate_validation(_model("mlm", 9), blocks, AutoTokenizer.from_pretrained(str(out)))
    assert other["n_masked_tokens"] == ev["n_masked_tokens"]
    # the job log carries readable progress lines
    err = capsys.readouterr().err
    assert "pretrain taco: step 2/2 (100%)" in err and "examples/s" in err


def test_progress_line_rates_and_time_left():
    cb = ProgressCallback("pretrain mlm", target_step=800)
    cb._t0, cb._last_t, cb._last_step = 100.0, 160.0, 100
    # 20 steps in 40 s = 2 s/step; batch 32 -> 16 examples/s; 680 steps left -> 1360 s
    line = cb.line(120, 800, {"loss": 7.12345, "mlm_loss": 6.5, "tc_loss": 0.62}, 32, now=200.0)
    assert line == ("pretrain mlm: step 120/800 (15%) | loss 7.1235 (mlm 6.5, tc 0.62) | 16.0 examples/s | "
                    "elapsed 1m40s, left ~22m40s")
    assert format_duration(3725) == "1h02m" and format_duration(9.4) == "9s" and format_duration(math.nan) == "?"


def test_the_glue_probe_inside_pretraining_records_every_point_and_changes_no_weight(blocks, tmp_path, capsys):
    """``--glue-probe-tasks`` (issue 51.3): the frozen-feature probe at each validation point and at the budget,
    in eval.json; the budget's value equals ``taco probe`` of the written checkpoint (an independent path:
    AutoModel from disk), and the weights equal those of the same run without the probe."""
    from safetensors.torch import load_file

    from taco.training import glue_probe as probe

    base = ["--blocks", str(blocks), "--objective", "mlm", "--size", "tiny", "--max-steps", "4", "--warmup-steps",
            "0", "--per-device-batch-size", "4", "--save-every", "0", "--logging-steps", "1", "--seed", "3",
            "--device", "cpu", "--no-progress", "--eval-every", "2"]
    opts = ["--glue-probe-tasks", "sst2,stsb", "--glue-source", "synthetic", "--glue-probe-max-train-samples", "60",
            "--glue-probe-max-eval-samples", "40"]
    with_probe, without = tmp_path / "p" / "step-4", tmp_path / "n" / "step-4"
    assert pretrain.main([*base, *opts, "--output", str(with_probe)]) == 0
    assert pretrain.main([*base, "--output", str(without)]) == 0
    a, b = load_file(str(with_probe / "model.safetensors")), load_file(str(without / "model.safetensors"))
    assert all(torch.equal(a[k], b[k]) for k in a)
    ev = json.loads((with_probe / EVAL_NAME).read_text())
    assert [p["step"] for p in ev["points"]] == [2]
    for point in (ev, ev["points"][0]):
        assert -1.0 <= point["glue_probe_mean"] <= 1.0  # accuracy and Spearman, averaged
        assert point["glue_probe_mean"] == pytest.approx((point["glue_probe_sst2"] + point["glue_probe_stsb"]) / 2)
    assert "glue_probe_mean" not in json.loads((without / EVAL_NAME).read_text())
    rec = probe.probe_checkpoint(with_probe, ["sst2", "stsb"], glue_source="synthetic", glue_dir=None,
                                 max_train_samples=60, max_eval_samples=40)
    assert ev["glue_probe_mean"] == pytest.approx(rec["average"]["mean"], abs=1e-6)
    assert ev["glue_probe_cls"] == pytest.approx(rec["average"]["cls"], abs=1e-6)
    # the control (taco init) gets the same probe at step 0, equal to taco probe of its checkpoint
    ctl = tmp_path / "control"
    assert control.main(["--blocks", str(blocks), "--size", "tiny", "--device", "cpu", "--output", str(ctl), *opts]) == 0
    ctl_ev = json.loads((ctl / EVAL_NAME).read_text())
    ctl_rec = probe.probe_checkpoint(ctl, ["sst2", "stsb"], glue_source="synthetic", glue_dir=None,
                                     max_train_samples=60, max_eval_samples=40)
    assert ctl_ev["glue_probe_mean"] == pytest.approx(ctl_rec["average"]["mean"], abs=1e-6)
    # bad probe options are named before any work
    assert control.main(["--blocks", str(blocks), "--size", "tiny", "--output", str(tmp_path / "z"),
                         "--glue-probe-tasks", "nope"]) == 2
    assert "unknown GLUE task" in capsys.readouterr().err
    assert pretrain.main([*base, *opts, "--glue-probe-every", "3", "--output", str(tmp_path / "x")]) == 2
    assert "--glue-probe-every 3" in capsys.readouterr().err
    assert pretrain.main([*base, "--glue-probe-tasks", "nope", "--output", str(tmp_path / "y")]) == 2
    assert "unknown GLUE task" in capsys.readouterr().err
    assert not (tmp_path / "x").exists() and not (tmp_path / "y").exists()
