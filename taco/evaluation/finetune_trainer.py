"""The GLUE fine-tuning run of ``taco finetune``: task data, the HF ``Trainer`` and per-epoch evaluation.

Steps 1 to 3 of one run: :func:`load_task_data` loads and tokenizes the task's train, dev and test
splits (:class:`TaskData`), :func:`build_trainer` builds the sequence-classification model from the
checkpoint and its ``Trainer`` with the official run_glue.sh optimiser settings (precision from
:func:`_precision`), and the callback of :func:`_make_epoch_evaluator` scores every dev split after
each epoch and keeps the test predictions of the best epoch so far; :func:`choose_epoch` picks the
reported epoch and :func:`predict_tests` predicts the test splits. The command, its input checks and
the ``metrics.json`` record it writes are in :mod:`taco.evaluation.finetune`.
"""

from __future__ import annotations

import json
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from taco.errors import UsageError
from taco.evaluation.finetune_settings import FinetuneRun


def _precision(run: FinetuneRun) -> str:
    """The precision a run trains in: ``auto`` is bf16 on a GPU that has it, else fp32; fp16 needs a GPU."""
    import torch

    cuda = torch.cuda.is_available() and run.device != "cpu"
    if run.precision == "auto":
        return "bf16" if cuda and torch.cuda.is_bf16_supported() else "fp32"
    if run.precision == "fp16" and not cuda:
        raise UsageError("--precision fp16 needs a GPU")
    return run.precision


def _primary_value(scores: dict[str, dict[str, float]], primary: dict[str, str] | None = None) -> float:
    """Mean over the score keys of each key's primary metric (``primary``, default the registry's);
    -inf when none is defined."""
    from taco.registry import DEFAULT_PRIMARY_METRIC

    primary = primary or DEFAULT_PRIMARY_METRIC
    vals = [scores[k].get(primary.get(k, "accuracy"), float("nan")) for k in scores]
    vals = [v for v in vals if v is not None and not math.isnan(v)]
    return sum(vals) / len(vals) if vals else float("-inf")


# ---- step 1: data ----------------------------------------------------------------------------------
@dataclass
class TaskData:
    """One task's splits for one run: raw (capped) and tokenized.

    ``devs``/``dev_enc``: dev split name -> dataset; ``tests``/``test_enc``: ``GlueTestSplit`` ->
    the unlabelled test set (never capped: the server scores every row); ``test_absent``:
    ``GlueTestSplit`` -> why the source lacks it.
    """

    task: Any
    train_enc: Any
    devs: dict[str, Any]
    dev_enc: dict[str, Any]
    tests: dict[Any, Any] = field(default_factory=dict)
    test_enc: dict[Any, Any] = field(default_factory=dict)
    test_absent: dict[Any, str] = field(default_factory=dict)


def load_task_data(run: FinetuneRun, tokenizer) -> TaskData:
    """Load the task's train and dev splits (capped by ``--max-*-samples`` to a seeded random sample,
    :func:`taco.data.glue.cap_split`, with ``--data-seed``) and, unless
    ``--no-test-predictions``, its test split(s) (GLUE: every row; synthetic: as many rows as the
    capped dev set); tokenize all of them (pairs truncated to ``--max-length``; labels as float for
    STS-B). Raises UsageError when a train/dev split is missing."""
    from taco.registry import GLUE_TASK_SPECS
    from taco.data.glue import cap_split, load_glue_task, load_glue_test

    task = GLUE_TASK_SPECS[run.task]
    data = load_glue_task(run.task, run.glue_source, run.glue_dir)
    missing = [s for s in ("train", *task.dev_splits) if s not in data]
    if missing:
        raise UsageError(f"GLUE {run.task} ({run.glue_source}): split(s) {missing} missing")
    data_seed = run.data_seed
    train = cap_split(data["train"], run.max_train_samples, data_seed, run.task, "train")
    devs = {split: cap_split(data[split], run.max_eval_samples, data_seed, run.task, split)
            for split in task.dev_splits}

    def encode(batch):
        texts = [batch[f] for f in task.text_fields]
        enc = tokenizer(*texts, truncation=True, max_length=run.max_length)
        if "label" in batch:
            enc["labels"] = [float(x) for x in batch["label"]] if task.is_regression else batch["label"]
        return enc

    keep = ("input_ids", "token_type_ids", "attention_mask", "labels")

    def prepare(ds):
        enc = ds.map(encode, batched=True, desc=None)
        return enc.remove_columns([c for c in enc.column_names if c not in keep])

    out = TaskData(task, prepare(train), devs, {s: prepare(d) for s, d in devs.items()})
    if run.test_predictions:
        # real test sets are never capped (the server scores every row); the synthetic one, which no
        # server scores, is as large as the (capped) dev set
        num_test = run.max_eval_samples if run.glue_source == "synthetic" else None
        out.tests, out.test_absent = load_glue_test(run.task, run.glue_source, run.glue_dir, num_test=num_test)
        out.test_enc = {s: prepare(d) for s, d in out.tests.items()}
    return out


# ---- step 2: model and trainer -----------------------------------------------------------------------
def build_trainer(run: FinetuneRun, data: TaskData, precision: str, work: Path, callbacks: list):
    """The classification model from the checkpoint (seeded) and its HF ``Trainer``, with the
    official run_glue.sh optimiser settings (AdamW, linear decay, no evaluation or saving by the
    Trainer: the callbacks evaluate)."""
    from transformers import (AutoModelForSequenceClassification, DataCollatorWithPadding, Trainer,
                              TrainingArguments, set_seed)

    from taco.families import family_of_model_type

    task = data.task
    set_seed(run.seed)
    # --dropout replaces the checkpoint's own (pre-training) dropout: every arm fine-tunes alike (issue 51)
    family = family_of_model_type(run.checkpoint.config.model_type, f"--checkpoint {run.checkpoint.path}")
    model = AutoModelForSequenceClassification.from_pretrained(
        str(run.checkpoint.path), num_labels=task.num_labels,
        problem_type="regression" if task.is_regression else "single_label_classification",
        **{f: float(run.dropout) for f in family.dropout_fields},
    )
    if run.init_from:  # --init-from: the saved model's encoder, this run's new (seeded) head
        from taco.evaluation.finetune_init import load_encoder

        load_encoder(model, run.init_from.path)
    targs = TrainingArguments(
        output_dir=str(work),
        num_train_epochs=run.epochs,
        per_device_train_batch_size=run.batch_size,
        per_device_eval_batch_size=run.eval_batch_size,
        learning_rate=run.lr,
        weight_decay=run.weight_decay,
        adam_beta1=0.9, adam_beta2=0.999, adam_epsilon=1e-8,
        max_grad_norm=1.0,
        lr_scheduler_type="linear",
        warmup_steps=run.warmup_steps,
        optim="adamw_torch",
        seed=run.seed,
        data_seed=run.seed,
        bf16=precision == "bf16",
        fp16=precision == "fp16",
        logging_steps=run.logging_steps,
        eval_strategy="no",
        save_strategy="no",
        report_to="none",
        disable_tqdm=run.no_progress,
        dataloader_num_workers=0,
        use_cpu=run.device == "cpu",
    )
    tokenizer = run.checkpoint.tokenizer
    return Trainer(model=model, args=targs, train_dataset=data.train_enc, processing_class=tokenizer,
                   data_collator=DataCollatorWithPadding(tokenizer), callbacks=callbacks)


# ---- step 3: evaluation while training ----------------------------------------------------------------
def predict(trainer, ds, is_regression: bool):
    """Predictions of the trainer's current model on ``ds``: (predictions (N,), label ids (N,) or None).
    Classification: argmax of the logits; regression: the single output."""
    import numpy as np

    out = trainer.predict(ds)
    logits = out.predictions[0] if isinstance(out.predictions, tuple) else out.predictions
    preds = logits.reshape(-1) if is_regression else np.argmax(logits, axis=-1)
    return preds, (None if out.label_ids is None else np.asarray(out.label_ids))


def predict_tests(trainer, data: TaskData) -> dict[str, tuple[list[int], list[str]]]:
    """Submission file -> (GLUE indices, server label strings) of every test split in ``data``.

    Runs under ``torch.random.fork_rng``: each DataLoader iterator draws its base seed from the
    global torch RNG, so predicting between epochs (``--report-rule best``) would otherwise shift
    the later epochs' dropout masks and change the run (tests/test_finetune.py checks it does not).
    """
    import torch

    from taco.evaluation.submission import format_predictions

    out = {}
    with torch.random.fork_rng(devices=range(torch.cuda.device_count()) if torch.cuda.is_available() else []):
        for split, enc in data.test_enc.items():
            preds, _ = predict(trainer, enc, data.task.is_regression)
            out[split.submission_file] = ([int(i) for i in data.tests[split]["idx"]],
                                          format_predictions(data.task.name, preds))
    return out


def _make_epoch_evaluator(data: TaskData, report_rule: str, primary: dict[str, str] | None = None,
                          monitor: Any = None, keep_best_state: bool = False):
    """A ``TrainerCallback`` that scores every dev split after each epoch (``epochs``,
    ``predictions`` per epoch) and, for ``--report-rule best``, predicts the test splits whenever
    an epoch becomes the best so far by the ``primary`` metrics (``test``: (epoch index, rows)) and,
    with ``keep_best_state`` (``--save-model``), keeps a CPU copy of that epoch's model state
    (``best_state``: (epoch index, state dict)); the earliest best epoch wins ties, as
    ``choose_epoch``. Each epoch's scores also go to ``monitor``
    (:class:`taco.training.monitoring.Monitor`, tags ``dev/<score key>/<metric>``) when given."""
    from transformers import TrainerCallback

    from taco.data.glue_metrics import compute_glue_metrics

    task = data.task

    class EpochEvaluator(TrainerCallback):
        def __init__(self):
            self.trainer = None
            self.epochs: list[dict[str, Any]] = []
            self.predictions: list[dict[str, Any]] = []
            self.test: tuple[int, dict] | None = None
            self.best_state: tuple[int, dict] | None = None
            self._best = None

        def on_epoch_end(self, a, state, control, **kw):
            scores, preds_by_split = {}, {}
            for split, key in zip(task.dev_splits, task.score_keys):
                preds, labels = predict(self.trainer, data.dev_enc[split], task.is_regression)
                scores[key] = compute_glue_metrics(key, preds, labels)
                preds_by_split[split] = preds
            epoch = len(self.epochs) + 1
            self.epochs.append({"epoch": epoch, "step": state.global_step, "scores": scores})
            self.predictions.append(preds_by_split)
            print(f"taco finetune: epoch {epoch}: {json.dumps(scores)}", file=sys.stderr, flush=True)
            if monitor is not None:
                monitor.log({f"dev/{key}/{m}": v for key, ms in scores.items() for m, v in ms.items()},
                            state.global_step)
            value = _primary_value(scores, primary)
            if report_rule == "best" and (data.test_enc or keep_best_state) and (self._best is None or value > self._best):
                self._best = value
                if data.test_enc:
                    self.test = (epoch - 1, predict_tests(self.trainer, data))
                if keep_best_state:  # copying the weights draws no random number: the run is unchanged
                    self.best_state = (epoch - 1, {k: v.detach().to("cpu", copy=True)
                                                   for k, v in self.trainer.model.state_dict().items()})

    return EpochEvaluator()


def choose_epoch(epochs: list[dict[str, Any]], report_rule: str, primary: dict[str, str] | None = None) -> int:
    """Index of the reported epoch: the last, or (``best``) the earliest with the highest mean
    primary metric (``primary``: score key -> metric, :func:`taco.evaluation.finetune.primary_metrics`; default the
    registry's)."""
    if report_rule == "last":
        return len(epochs) - 1
    return max(range(len(epochs)), key=lambda i: (_primary_value(epochs[i]["scores"], primary), -i))
