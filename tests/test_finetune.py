"""`taco finetune`: metrics.json / predictions.tsv format, same seed -> same metrics, MNLI two dev
splits, regression, errors before work. Tiny checkpoint on CPU, real GLUE subsets from shared/."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from taco.errors import UsageError  # noqa: E402
from taco.evaluation import finetune  # noqa: E402
from taco.evaluation.finetune_trainer import choose_epoch  # noqa: E402
from taco.manifest import build_manifest, sha256_file, write_manifest  # noqa: E402

from shared_data import GLUE_DIR  # noqa: E402
from shared_data import bert_tokenizer as _bert_tokenizer  # noqa: E402


def _checkpoint(path: Path, tok, vocab_size: int | None = None) -> Path:
    from taco.model.modeling import PreTrainingModel
    from taco.model.configs import bert_config

    torch.manual_seed(0)
    model = PreTrainingModel(bert_config("tiny", vocab_size or len(tok)), objective="taco")
    model.save_pretrained(str(path))
    tok.save_pretrained(str(path))
    write_manifest(path, build_manifest("pretrain", {}, step=10, tokens_seen=1280, objective="taco", size="tiny",
                                        size_preset="tiny", fraction=1.0, config_hash="x", parent_checkpoint=None,
                                        wall_time_s=1.0))
    return path


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory):
    return _checkpoint(tmp_path_factory.mktemp("ft") / "step-10", _bert_tokenizer())


def _ft(ckpt, out, task="rte", *extra, source="local"):
    args = ["--checkpoint", str(ckpt), "--task", task, "--seed", "3", "--glue-source", source,
            "--output", str(out), "--max-train-samples", "32", "--max-eval-samples", "32", "--epochs", "2",
            "--max-length", "64", "--batch-size", "16", "--warmup-steps", "2", "--device", "cpu", "--no-progress", *extra]
    if source == "local":
        args += ["--glue-dir", str(GLUE_DIR)]
    return finetune.main(args)


def test_rte_metrics_format_and_same_seed_same_metrics(ckpt, tmp_path):
    if not (GLUE_DIR / "RTE" / "train.tsv").is_file():
        pytest.skip("shared GLUE RTE absent")
    a, b = tmp_path / "a", tmp_path / "b"
    assert _ft(ckpt, a) == 0 and _ft(ckpt, b) == 0
    ma, mb = (json.loads((d / "metrics.json").read_text()) for d in (a, b))
    for key in ("task", "seed", "size", "objective", "fraction", "step", "checkpoint",
                "checkpoint_manifest_sha256", "report_rule", "reported_epoch", "epochs", "scores",
                "degenerate", "n_dev", "wall_time_s", "hyperparameters"):
        assert key in ma, key
    assert ma["task"] == "rte" and ma["seed"] == 3 and ma["step"] == 10 and ma["objective"] == "taco"
    assert ma["checkpoint_manifest_sha256"] == sha256_file(ckpt / "manifest.json")
    assert ma["report_rule"] == "last" and ma["reported_epoch"] == 2 and len(ma["epochs"]) == 2
    assert set(ma["scores"]) == {"rte"} and "accuracy" in ma["scores"]["rte"]
    assert ma["n_dev"] == {"rte": 32} and isinstance(ma["degenerate"]["rte"], bool)
    hp = ma["hyperparameters"]
    assert hp["learning_rate"] == 5e-5 and hp["epochs"] == 2 and hp["batch_size"] == 16 and hp["max_length"] == 64
    # same seed, same machine: same metrics and predictions
    assert ma["epochs"] == mb["epochs"] and ma["scores"] == mb["scores"]
    assert (a / "predictions.tsv").read_text() == (b / "predictions.tsv").read_text()
    rows = list(csv.DictReader(open(a / "predictions.tsv"), delimiter="\t"))
    assert len(rows) == 32 and set(rows[0]) == {"split", "idx", "prediction", "label"}
    assert rows[0]["split"] == "validation"
    # the dev cap is a seeded, label-stratified random sample of the file, not its first 32 rows
    idx = [int(r["idx"]) for r in rows]
    assert idx == sorted(idx) and idx != list(range(32)) and max(idx) >= 64
    dev_labels = [ln.split("\t")[-1] for ln in (GLUE_DIR / "RTE" / "dev.tsv").read_text().splitlines()[1:]]
    share = sum(lab == "entailment" for lab in dev_labels) / len(dev_labels)
    assert abs(sum(dev_labels[i] == "entailment" for i in idx) - 32 * share) < 1
    assert hp["data_seed"] == 0 and ma["n_train"] == 32
    other = tmp_path / "seed9"  # another data seed draws another sample (its 3,000 test rows: not needed)
    assert _ft(ckpt, other, "rte", "--data-seed", "9", "--epochs", "1", "--no-test-predictions") == 0
    assert [int(r["idx"]) for r in csv.DictReader(open(other / "predictions.tsv"), delimiter="\t")] != idx
    # test predictions: every row of RTE/test.tsv (never capped), server label strings
    test = list(csv.reader(open(a / "test_predictions.tsv"), delimiter="\t"))
    n_test = len((GLUE_DIR / "RTE" / "test.tsv").read_text().rstrip("\n").split("\n")) - 1
    assert test[0] == ["file", "index", "prediction"] and len(test) - 1 == n_test == 3000
    assert {r[0] for r in test[1:]} == {"RTE.tsv"} and [int(r[1]) for r in test[1:]] == list(range(n_test))
    assert {r[2] for r in test[1:]} <= {"entailment", "not_entailment"}
    assert ma["test_predictions"] == {"epoch": 2, "files": {"RTE.tsv": n_test}, "absent": {}}
    assert (a / "test_predictions.tsv").read_text() == (b / "test_predictions.tsv").read_text()
    # the zip of this one run: RTE.tsv is the run's, the other ten files are placeholders
    from taco.evaluation.submission import main as submission_main

    assert submission_main(["--runs", str(a), "--output", str(tmp_path / "sub.zip")]) == 0
    import zipfile

    with zipfile.ZipFile(tmp_path / "sub.zip") as zf:
        assert zf.read("RTE.tsv").decode().split("\n")[1:] == [f"{r[1]}\t{r[2]}" for r in test[1:]] + [""]
        assert zf.read("README.md").decode().count("| PLACEHOLDER") == 10
    # never overwrite a result
    assert _ft(ckpt, a) == 2


def test_mnli_both_dev_splits_and_best_rule(ckpt, tmp_path):
    out = tmp_path / "mnli"
    assert _ft(ckpt, out, "mnli", "--report-rule", "best", source="synthetic") == 0
    m = json.loads((out / "metrics.json").read_text())
    assert set(m["scores"]) == {"mnli_m", "mnli_mm"} and set(m["n_dev"]) == {"mnli_m", "mnli_mm"}
    assert all(set(e["scores"]) == {"mnli_m", "mnli_mm"} for e in m["epochs"])
    assert m["report_rule"] == "best" and m["reported_epoch"] in (1, 2)
    best = max(m["epochs"], key=lambda e: (sum(s["accuracy"] for s in e["scores"].values()), -e["epoch"]))
    assert m["reported_epoch"] == best["epoch"]
    splits = {r["split"] for r in csv.DictReader(open(out / "predictions.tsv"), delimiter="\t")}
    assert splits == {"validation_matched", "validation_mismatched"}
    # MNLI predicts its two test sets and the diagnostic AX, with the reported (best) epoch's model
    test = list(csv.DictReader(open(out / "test_predictions.tsv"), delimiter="\t"))
    assert m["test_predictions"]["epoch"] == m["reported_epoch"]
    # (the synthetic test sets are as large as the capped dev sets: 32)
    assert m["test_predictions"]["files"] == {"MNLI-m.tsv": 32, "MNLI-mm.tsv": 32, "AX.tsv": 32}
    assert [r["file"] for r in test] == ["MNLI-m.tsv"] * 32 + ["MNLI-mm.tsv"] * 32 + ["AX.tsv"] * 32
    assert {r["prediction"] for r in test} <= {"entailment", "neutral", "contradiction"}


def test_stsb_regression(ckpt, tmp_path):
    out = tmp_path / "stsb"
    assert _ft(ckpt, out, "stsb", "--epochs", "1", source="synthetic") == 0
    m = json.loads((out / "metrics.json").read_text())
    assert set(m["scores"]["stsb"]) == {"pearson", "spearmanr"}
    rows = list(csv.DictReader(open(out / "predictions.tsv"), delimiter="\t"))
    float(rows[0]["prediction"]), float(rows[0]["label"])
    test = list(csv.DictReader(open(out / "test_predictions.tsv"), delimiter="\t"))
    assert len(test) == 32 and {r["file"] for r in test} == {"STS-B.tsv"}
    assert all(0.0 <= float(r["prediction"]) <= 5.0 and len(r["prediction"].split(".")[1]) == 3 for r in test)


def test_test_predictions_leave_the_run_unchanged(ckpt, tmp_path):
    """Predicting the test split after an epoch (rule best) changes neither training nor scores."""
    a, b = tmp_path / "a", tmp_path / "b"
    assert _ft(ckpt, a, "stsb", "--report-rule", "best", source="synthetic") == 0
    assert _ft(ckpt, b, "stsb", "--report-rule", "best", "--no-test-predictions", source="synthetic") == 0
    ma, mb = (json.loads((d / "metrics.json").read_text()) for d in (a, b))
    assert ma["epochs"] == mb["epochs"] and ma["reported_epoch"] == mb["reported_epoch"]
    assert (a / "predictions.tsv").read_text() == (b / "predictions.tsv").read_text()
    assert mb["test_predictions"] is None and not (b / "test_predictions.tsv").exists()
    assert ma["test_predictions"]["epoch"] == ma["reported_epoch"]


def test_errors_before_work(ckpt, tmp_path, capsys):
    out = tmp_path / "o"
    assert _ft(tmp_path / "missing", out) == 2
    (tmp_path / "nomanifest").mkdir()
    assert _ft(tmp_path / "nomanifest", out) == 2
    assert "manifest" in capsys.readouterr().err
    assert _ft(ckpt, out, "squad") == 2
    assert "unknown GLUE task" in capsys.readouterr().err
    assert finetune.main(["--checkpoint", str(ckpt), "--task", "rte", "--glue-source", "local",
                          "--output", str(out)]) == 2  # local without --glue-dir
    # tokenizer (30522 tokens) and checkpoint vocabulary (256) disagree
    bad = _checkpoint(tmp_path / "bad", _bert_tokenizer(), vocab_size=256)
    assert _ft(bad, out) == 2
    assert "disagree" in capsys.readouterr().err
    assert not out.exists()


def test_several_seeds_in_one_process_equal_separate_runs(ckpt, tmp_path):
    base = ["--checkpoint", str(ckpt), "--task", "stsb", "--glue-source", "synthetic",
            "--max-train-samples", "32", "--max-eval-samples", "32", "--epochs", "1", "--max-length", "64",
            "--batch-size", "16", "--warmup-steps", "2", "--device", "cpu", "--no-progress"]
    assert finetune.main(base + ["--seed", "3", "4", "--output", str(tmp_path / "multi" / "seed-{seed}")]) == 0
    assert finetune.main(base + ["--seed", "4", "--output", str(tmp_path / "single")]) == 0
    multi = json.loads((tmp_path / "multi" / "seed-4" / "metrics.json").read_text())
    single = json.loads((tmp_path / "single" / "metrics.json").read_text())
    assert multi["seed"] == 4 and multi["scores"] == single["scores"] and multi["epochs"] == single["epochs"]
    assert json.loads((tmp_path / "multi" / "seed-3" / "metrics.json").read_text())["seed"] == 3
    # several seeds need {seed} in --output; checked before any work
    assert finetune.main(base + ["--seed", "5", "6", "--output", str(tmp_path / "same")]) == 2
    assert not (tmp_path / "same").exists()


def test_best_rule_chooses_by_the_configured_primary_metric():
    """--report-rule best picks the epoch by the primary metric the analysis reports:
    MRPC's default is F1; with --primary-metric mrpc=accuracy the accuracy-best epoch is reported."""
    epochs = [{"epoch": 1, "scores": {"mrpc": {"accuracy": 0.70, "f1": 0.82}}},
              {"epoch": 2, "scores": {"mrpc": {"accuracy": 0.75, "f1": 0.80}}},
              {"epoch": 3, "scores": {"mrpc": {"accuracy": 0.75, "f1": 0.79}}}]
    ns = finetune.build_parser().parse_args(["--checkpoint", "c", "--task", "mrpc", "--output", "o"])
    assert choose_epoch(epochs, "best", finetune.primary_metrics(ns)) == 0  # default F1: epoch 1
    ns = finetune.build_parser().parse_args(["--checkpoint", "c", "--task", "mrpc", "--output", "o",
                                             "--primary-metric", "mrpc=accuracy", "stsb=pearson"])
    prim = finetune.primary_metrics(ns)
    assert prim["mrpc"] == "accuracy" and prim["stsb"] == "pearson" and prim["qqp"] == "f1"
    assert choose_epoch(epochs, "best", prim) == 1  # accuracy: the earliest of the tied best
    assert choose_epoch(epochs, "last", prim) == 2
    for bad in ("mrpc", "mrpc=pearson", "nope=accuracy"):
        ns.primary_metric = [bad]
        with pytest.raises(UsageError, match="--primary-metric"):
            finetune.primary_metrics(ns)


def test_default_hyperparameters_follow_the_preset_not_the_size_key(tmp_path, capsys):
    """A size key "base" holding the tiny preset (paper-shrunk) takes tiny's defaults; a manifest without
    size_preset is refused unless --lr and --epochs are given (it used to fall back to the size key)."""
    from taco.manifest import read_manifest
    from taco.registry import FINETUNE_HYPERPARAMETERS

    tok = _bert_tokenizer()
    ck = _checkpoint(tmp_path / "step-10", tok)
    man = read_manifest(ck)
    man["size"] = "base"
    (ck / "manifest.json").write_text(json.dumps(man))
    base = ["--checkpoint", str(ck), "--task", "rte", "--glue-source", "local", "--glue-dir", str(GLUE_DIR),
            "--output", str(tmp_path / "o")]
    settings = finetune.check_inputs(finetune.build_parser().parse_args(base))
    want = FINETUNE_HYPERPARAMETERS["tiny"]
    assert (settings.lr, settings.epochs) == (want["learning_rate"], want["epochs"])
    assert FINETUNE_HYPERPARAMETERS["base"]["learning_rate"] != want["learning_rate"]
    del man["size_preset"]
    (ck / "manifest.json").write_text(json.dumps(man))
    assert finetune.main(base) == 2
    assert "pass --lr and --epochs" in capsys.readouterr().err
    settings = finetune.check_inputs(finetune.build_parser().parse_args(base + ["--lr", "1e-4", "--epochs", "2"]))
    assert (settings.lr, settings.epochs) == (1e-4, 2)


def test_several_tasks_and_seeds_in_one_process_equal_separate_runs(ckpt, tmp_path):
    """``--task sst2 stsb --seed 3 4`` (the workflow's finetune.tasks_per_job: all) writes every (task,
    seed) with the numbers each gets alone; {task} is required in --output with several tasks."""
    base = ["--checkpoint", str(ckpt), "--glue-source", "synthetic", "--max-train-samples", "32",
            "--max-eval-samples", "32", "--epochs", "1", "--max-length", "32", "--batch-size", "16",
            "--warmup-steps", "2", "--device", "cpu", "--no-progress", "--report-to", "none", "--no-test-predictions"]
    together = tmp_path / "together"
    assert finetune.main([*base, "--task", "sst2", "stsb", "--seed", "3", "4",
                          "--output", str(together / "{task}" / "seed-{seed}")]) == 0
    for task in ("sst2", "stsb"):
        for seed in ("3", "4"):
            alone = tmp_path / "alone" / task / seed
            assert finetune.main([*base, "--task", task, "--seed", seed, "--output", str(alone)]) == 0
            a = json.loads((alone / "metrics.json").read_text())
            b = json.loads((together / task / f"seed-{seed}" / "metrics.json").read_text())
            assert a["task"] == b["task"] == task and a["seed"] == b["seed"] == int(seed)
            assert a["scores"] == b["scores"] and a["epochs"][-1]["scores"] == b["epochs"][-1]["scores"]
            assert (alone / "predictions.tsv").read_text() == (together / task / f"seed-{seed}" / "predictions.tsv").read_text()
    assert finetune.main([*base, "--task", "sst2", "stsb", "--seed", "3", "--output", str(tmp_path / "x")]) == 2


def test_damaged_weights_or_manifest_are_named_before_any_work(tmp_path, capsys):
    """A bit-flipped or swapped model.safetensors (its sha256 is not the manifest's model_sha256) and a
    manifest that is not a JSON object: exit 2 naming the file, no metrics.json."""
    import shutil

    from taco.manifest import read_manifest

    ck = _checkpoint(tmp_path / "ck", _bert_tokenizer())
    m = read_manifest(ck)
    m["model_sha256"] = sha256_file(ck / "model.safetensors")
    (ck / "manifest.json").write_text(json.dumps(m))
    flipped = tmp_path / "flipped"
    shutil.copytree(ck, flipped)
    data = bytearray((flipped / "model.safetensors").read_bytes())
    data[-1] ^= 0x01
    (flipped / "model.safetensors").write_bytes(bytes(data))
    out = tmp_path / "o"
    assert _ft(flipped, out) == 2
    err = capsys.readouterr().err
    assert str(flipped / "model.safetensors") in err and "model_sha256" in err
    assert not (out / "metrics.json").exists()
    listed = tmp_path / "listed"
    shutil.copytree(ck, listed)
    (listed / "manifest.json").write_text("[1, 2]")
    assert _ft(listed, out) == 2
    assert str(listed / "manifest.json") in capsys.readouterr().err
    (listed / "manifest.json").write_text("{not json")
    assert _ft(listed, out) == 2
    assert "not valid JSON" in capsys.readouterr().err


def test_fine_tuning_dropout_is_the_runs_not_the_checkpoints(tmp_path, monkeypatch):
    """Issue 51: the tuned arms were pre-trained with dropout 0 and the control with 0.1, and `taco finetune`
    inherited each checkpoint's dropout (a confound). --dropout (config finetune.dropout, default 0.1) now sets
    it for every checkpoint: a checkpoint saved with dropout 0 fine-tunes with 0.1, recorded in metrics.json."""
    from taco.evaluation import finetune_trainer
    from taco.model.configs import bert_config
    from taco.model.modeling import PreTrainingModel

    tok = _bert_tokenizer()
    path = tmp_path / "step-10"
    torch.manual_seed(0)
    PreTrainingModel(bert_config("tiny", len(tok), hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0),
                     objective="mlm").save_pretrained(str(path))
    tok.save_pretrained(str(path))
    write_manifest(path, build_manifest("pretrain", {}, step=10, tokens_seen=1280, objective="mlm", size="tiny",
                                        size_preset="tiny", fraction=1.0, config_hash="x", parent_checkpoint=None,
                                        wall_time_s=1.0))
    seen = []
    real = finetune_trainer.build_trainer

    def spy(*a, **kw):
        trainer = real(*a, **kw)
        seen.append((trainer.model.config.hidden_dropout_prob, trainer.model.config.attention_probs_dropout_prob))
        return trainer

    monkeypatch.setattr(finetune, "build_trainer", spy)
    assert _ft(path, tmp_path / "a", "stsb", source="synthetic") == 0
    assert _ft(path, tmp_path / "b", "stsb", "--dropout", "0.05", source="synthetic") == 0
    assert seen == [(0.1, 0.1), (0.05, 0.05)]
    assert json.loads((tmp_path / "a" / "metrics.json").read_text())["hyperparameters"]["dropout"] == 0.1
