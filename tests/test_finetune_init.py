"""`taco finetune --save-model` / `--init-from`: RTE, MRPC and STS-B started from the MNLI fine-tuned model
(the MosaicBERT / ModernBERT convention). Tiny checkpoint on CPU, synthetic GLUE-format tasks."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from taco.evaluation import finetune  # noqa: E402
from taco.evaluation.finetune_init import FINETUNED_RECORD, MODEL_DIR  # noqa: E402
from taco.manifest import sha256_file  # noqa: E402

from shared_data import bert_tokenizer  # noqa: E402
from test_finetune import _checkpoint  # noqa: E402


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory):
    return _checkpoint(tmp_path_factory.mktemp("init") / "step-10", bert_tokenizer())


def _ft(ckpt, out, task, seed="3", *extra):
    return finetune.main(["--checkpoint", str(ckpt), "--task", task, "--seed", seed, "--glue-source", "synthetic",
                          "--output", str(out), "--max-train-samples", "32", "--max-eval-samples", "32",
                          "--epochs", "2", "--max-length", "64", "--batch-size", "16", "--warmup-steps", "2",
                          "--device", "cpu", "--no-progress", "--no-test-predictions", "--report-to", "none",
                          *extra])


@pytest.fixture(scope="module")
def mnli(ckpt, tmp_path_factory):
    """An MNLI run of seed 3 with --save-model (rule best: the evaluator keeps the best epoch's weights)."""
    out = tmp_path_factory.mktemp("mnli") / "seed-3"
    assert _ft(ckpt, out, "mnli", "3", "--save-model", "--report-rule", "best") == 0
    return out


def _state(path: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    return load_file(str(path / "model.safetensors"))


def _dev_predictions(model_dir: Path, task: str) -> list[str]:
    """The saved model's class predictions on the task's capped dev split(s), in predictions.tsv's order."""
    import argparse

    from transformers import AutoModelForSequenceClassification, AutoTokenizer, DataCollatorWithPadding

    from taco.evaluation.finetune_trainer import load_task_data

    tok = AutoTokenizer.from_pretrained(str(model_dir))
    ns = argparse.Namespace(task=task, glue_source="synthetic", glue_dir=None, max_train_samples=32,
                            max_eval_samples=32, data_seed=0, max_length=64, test_predictions=False)
    data = load_task_data(ns, tok)
    model = AutoModelForSequenceClassification.from_pretrained(str(model_dir)).eval()
    collate, out = DataCollatorWithPadding(tok), []
    for split in data.task.dev_splits:
        enc = data.dev_enc[split]
        batch = collate([{k: enc[i][k] for k in enc.column_names if k != "labels"} for i in range(len(enc))])
        with torch.no_grad():
            out += [str(int(x)) for x in model(**batch).logits.argmax(-1)]
    return out


def test_save_model_writes_the_reported_epochs_model_and_off_writes_nothing(ckpt, mnli, tmp_path):
    m = json.loads((mnli / "metrics.json").read_text())
    rec = json.loads((mnli / MODEL_DIR / FINETUNED_RECORD).read_text())
    assert rec["task"] == "mnli" and rec["seed"] == 3 and rec["epoch"] == m["reported_epoch"]
    assert rec["report_rule"] == "best" and rec["scores"] == m["scores"]
    assert rec["checkpoint_manifest_sha256"] == sha256_file(ckpt / "manifest.json")
    # the saved weights are the reported epoch's: they predict what predictions.tsv holds
    rows = list(csv.DictReader(open(mnli / "predictions.tsv"), delimiter="\t"))
    assert _dev_predictions(mnli / MODEL_DIR, "mnli") == [r["prediction"] for r in rows]
    assert "init_from" not in m
    # without the option: no model folder, and the record has the same keys as before
    plain = tmp_path / "plain"
    assert _ft(ckpt, plain, "stsb", "3", "--epochs", "1") == 0
    assert not (plain / MODEL_DIR).exists()
    assert "init_from" not in json.loads((plain / "metrics.json").read_text())


def test_save_model_with_rule_best_saves_the_kept_best_epoch_not_the_last(ckpt, mnli, tmp_path):
    """With --report-rule best the evaluator keeps the best epoch's weights; those are saved, not the
    trainer's last ones, and a kept epoch that is not the reported one is an error, not a silent save."""
    from types import SimpleNamespace

    from transformers import AutoModelForSequenceClassification

    best = _state(mnli / MODEL_DIR)
    last = AutoModelForSequenceClassification.from_pretrained(str(ckpt), num_labels=3)  # other weights
    args, = finetune.per_seed_args(finetune.build_parser().parse_args(
        ["--checkpoint", str(ckpt), "--task", "mnli", "--seed", "3", "--output", "unused", "--report-rule", "best"]))
    settings = finetune.check_inputs(args)
    epochs = [{"epoch": 1, "scores": {}}, {"epoch": 2, "scores": {}}]
    evaluator = SimpleNamespace(best_state=(0, best))
    finetune._model_saver(settings, SimpleNamespace(model=last), evaluator, epochs, 0)(tmp_path / "m")
    saved = _state(tmp_path / "m")
    assert saved.keys() == best.keys() and all(torch.equal(saved[k], best[k]) for k in best)
    assert json.loads((tmp_path / "m" / FINETUNED_RECORD).read_text())["epoch"] == 1
    with pytest.raises(RuntimeError, match="reported epoch is 2"):
        finetune._model_saver(settings, SimpleNamespace(model=last), evaluator, epochs, 1)


@pytest.mark.parametrize("task,num_labels", [("rte", 2), ("stsb", 1)])
def test_init_from_takes_mnlis_encoder_and_a_new_head(ckpt, mnli, task, num_labels, tmp_path):
    """The encoder (embeddings, layers, pooler) is MNLI's; the head is the one this seed builds from the
    pre-trained checkpoint, sized for the new task, not MNLI's."""
    from taco.registry import GLUE_TASK_SPECS
    from taco.evaluation.finetune_trainer import TaskData, build_trainer

    work = tmp_path / "work"

    def model(init: bool):
        args, = finetune.per_seed_args(finetune.build_parser().parse_args(
            ["--checkpoint", str(ckpt), "--task", task, "--seed", "3", "--output", "unused", "--device", "cpu",
             "--epochs", "1", *(["--init-from", str(mnli / MODEL_DIR)] if init else [])]))
        settings = finetune.check_inputs(args)
        data = TaskData(GLUE_TASK_SPECS[task], train_enc=None, devs={}, dev_enc={})
        return build_trainer(settings, data, "fp32", work, []).model

    started, fresh = model(True), model(False)
    saved = _state(mnli / MODEL_DIR)
    enc = {k: v for k, v in started.state_dict().items() if k.startswith("bert.")}
    assert enc and set(enc) == {k for k in saved if k.startswith("bert.")}
    for k, v in enc.items():
        assert torch.equal(v, saved[k]), k
    # MNLI's encoder differs from the pre-trained one (it was fine-tuned), so the copy is visible
    assert not torch.equal(enc["bert.encoder.layer.0.attention.self.query.weight"],
                           fresh.state_dict()["bert.encoder.layer.0.attention.self.query.weight"])
    head = {k: v for k, v in started.state_dict().items() if not k.startswith("bert.")}
    assert set(head) == {"classifier.weight", "classifier.bias"}
    assert head["classifier.weight"].shape == (num_labels, started.config.hidden_size)
    assert saved["classifier.weight"].shape[0] == 3  # MNLI's own head: three classes
    for k, v in head.items():
        assert torch.equal(v, fresh.state_dict()[k]), k  # re-initialised from this run's seed


def test_init_from_run_records_its_start_and_checks_its_origin(ckpt, mnli, tmp_path, capsys):
    out = tmp_path / "rte"
    assert _ft(ckpt, out, "rte", "3", "--init-from", str(mnli / MODEL_DIR), "--epochs", "1") == 0
    m = json.loads((out / "metrics.json").read_text())
    start = json.loads((mnli / "metrics.json").read_text())["reported_epoch"]
    assert m["init_from"] == {"path": str(mnli / MODEL_DIR), "task": "mnli", "seed": 3, "epoch": start}
    # another seed's run may not start from seed 3's model; nor a run of another pre-trained checkpoint
    assert _ft(ckpt, tmp_path / "seed4", "rte", "4", "--init-from", str(mnli / MODEL_DIR)) == 2
    assert "seed 3" in capsys.readouterr().err
    other = _checkpoint(tmp_path / "other", bert_tokenizer())
    (other / "manifest.json").write_text((other / "manifest.json").read_text().replace('"step": 10', '"step": 20'))
    assert _ft(other, tmp_path / "other-run", "rte", "3", "--init-from", str(mnli / MODEL_DIR)) == 2
    assert "another pre-trained checkpoint" in capsys.readouterr().err
    assert _ft(ckpt, tmp_path / "nomodel", "rte", "3", "--init-from", str(tmp_path)) == 2
    assert "finetuned.json" in capsys.readouterr().err
    # several seeds: each starts from its own seed's model ({seed} in --init-from), checked before work
    assert finetune.main(["--checkpoint", str(ckpt), "--task", "rte", "--seed", "3", "4", "--output",
                          str(tmp_path / "m" / "seed-{seed}"), "--init-from", str(mnli / MODEL_DIR)]) == 2
    assert "{seed}" in capsys.readouterr().err
    for d in ("seed4", "other-run", "nomodel", "m"):
        assert not (tmp_path / d).exists()
