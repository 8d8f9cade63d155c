"""``taco finetune``: one pre-trained checkpoint, one GLUE task, one seed (HF ``Trainer``).

Defaults are those of the official scripts (run_glue.py of transformers 4.6 as the TACO repo
runs it): max length 128, batch 32, 100 warmup steps, lr 5e-5 and 4 epochs for small (and tiny),
3e-5 and 6 epochs for base, linear decay, AdamW (weight decay 0). The dev split(s) are evaluated
after every epoch (MNLI: matched and mismatched); the reported epoch is the last one (``--report-rule
last``, default) or the one with the best mean primary metric (``best``).

Outputs in ``--output`` (written atomically; an existing output is never overwritten):
``metrics.json`` (format in ``docs/INTERFACES.md``) and ``predictions.tsv`` (columns ``split``,
``idx``, ``prediction``, ``label``: the dev predictions of the reported epoch).
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from taco.manifest import MANIFEST_NAME, atomic_directory, read_manifest, sha256_file
from taco.registry import FINETUNE_HYPERPARAMETERS



class UsageError(ValueError):
    """Bad input found before any work starts (the CLI exits 2)."""


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="taco finetune",
                                description="Fine-tune one checkpoint on one GLUE task with one seed.")
    p.add_argument("--checkpoint", required=True, help="budget checkpoint directory (taco pretrain output)")
    p.add_argument("--task", required=True, help="cola, sst2, mrpc, stsb, qqp, mnli, qnli, rte, wnli")
    p.add_argument("--seed", type=int, nargs="+", default=[123],
                   help="fine-tuning seed(s) (official scripts: 123). Several seeds run one after the "
                        "other in this process (saves the start-up cost on CPU); --output must then "
                        "contain {seed}")
    p.add_argument("--glue-source", choices=("hub", "local", "synthetic"), default="hub")
    p.add_argument("--glue-dir", default=None, help="GLUE folder (needed for --glue-source local)")
    p.add_argument("--output", required=True,
                   help="result directory (metrics.json, predictions.tsv); may contain {seed}")
    p.add_argument("--max-length", type=int, default=128)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--eval-batch-size", type=int, default=128)
    p.add_argument("--lr", type=float, default=None, help="default 5e-5 (tiny/small), 3e-5 (base)")
    p.add_argument("--epochs", type=int, default=None, help="default 4 (tiny/small), 6 (base)")
    p.add_argument("--warmup-steps", type=int, default=100)
    p.add_argument("--weight-decay", type=float, default=0.0)
    p.add_argument("--report-rule", choices=("last", "best"), default="last")
    p.add_argument("--max-train-samples", type=int, default=None, help="first N training examples")
    p.add_argument("--max-eval-samples", type=int, default=None, help="first N examples of each dev split")
    p.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    p.add_argument("--precision", choices=("auto", "fp32", "bf16", "fp16"), default="auto",
                   help="auto: bf16 on GPUs that support it, else fp32")
    p.add_argument("--logging-steps", type=int, default=50)
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    return p


# ------------------------------------------------------------------------------------------------
# validation (before any work)
# ------------------------------------------------------------------------------------------------
def check_inputs(args: argparse.Namespace) -> dict[str, Any]:
    """Validate; returns the facts the run needs. Raises UsageError / FileNotFoundError / FileExistsError."""
    from taco.data.glue import GLUE_TASKS

    if args.task not in GLUE_TASKS:
        raise UsageError(f"--task: unknown GLUE task {args.task!r}; expected one of {', '.join(GLUE_TASKS)}")
    ckpt = Path(args.checkpoint)
    if not ckpt.is_dir():
        raise FileNotFoundError(f"--checkpoint {ckpt}: no such directory")
    manifest = read_manifest(ckpt)  # names the directory when the manifest is missing
    if not (ckpt / "config.json").is_file() or not (any(ckpt.glob("model*.safetensors"))
                                                    or any(ckpt.glob("pytorch_model*.bin"))):
        raise FileNotFoundError(f"--checkpoint {ckpt}: incomplete (config.json or model weights missing)")
    out = Path(args.output)
    if (out / "metrics.json").exists():
        raise FileExistsError(f"--output {out} already holds metrics.json; refusing to overwrite a result")
    if args.glue_source == "local":
        if not args.glue_dir:
            raise UsageError("--glue-source local needs --glue-dir")
        if not Path(args.glue_dir).is_dir():
            raise FileNotFoundError(f"--glue-dir {args.glue_dir}: no such directory")
    for name in ("max_length", "batch_size", "eval_batch_size"):
        if getattr(args, name) < 1:
            raise UsageError(f"--{name.replace('_', '-')} must be >= 1")
    if args.epochs is not None and args.epochs < 1:
        raise UsageError("--epochs must be >= 1")
    if args.device == "cuda":
        import torch

        if not torch.cuda.is_available():
            raise UsageError("--device cuda but no GPU is visible")

    from transformers import AutoConfig, AutoTokenizer

    config = AutoConfig.from_pretrained(str(ckpt))
    try:
        tokenizer = AutoTokenizer.from_pretrained(str(ckpt))
    except Exception as exc:  # noqa: BLE001
        raise FileNotFoundError(f"--checkpoint {ckpt}: no loadable tokenizer ({exc})") from None
    if len(tokenizer) > config.vocab_size:
        raise UsageError(f"--checkpoint {ckpt}: tokenizer has {len(tokenizer)} tokens but the model vocabulary "
                         f"has {config.vocab_size}; they disagree")
    if config.vocab_size - len(tokenizer) >= 128:
        raise UsageError(f"--checkpoint {ckpt}: model vocabulary {config.vocab_size} is much larger than the "
                         f"tokenizer's {len(tokenizer)}; tokenizer and checkpoint do not belong together")
    if args.max_length > getattr(config, "max_position_embeddings", 512):
        raise UsageError(f"--max-length {args.max_length} exceeds the model's max_position_embeddings "
                         f"{config.max_position_embeddings}")
    size = manifest.get("size_preset") or manifest.get("size") or "small"
    defaults = FINETUNE_HYPERPARAMETERS.get(size, FINETUNE_HYPERPARAMETERS["small"])
    return {
        "checkpoint": ckpt, "manifest": manifest, "manifest_sha256": sha256_file(ckpt / MANIFEST_NAME),
        "tokenizer": tokenizer, "config": config, "size_preset": size,
        "lr": args.lr if args.lr is not None else defaults["learning_rate"],
        "epochs": args.epochs if args.epochs is not None else int(defaults["epochs"]),
    }


def _precision(args) -> str:
    import torch

    cuda = torch.cuda.is_available() and args.device != "cpu"
    if args.precision == "auto":
        return "bf16" if cuda and torch.cuda.is_bf16_supported() else "fp32"
    if args.precision == "fp16" and not cuda:
        raise UsageError("--precision fp16 needs a GPU")
    return args.precision


# ------------------------------------------------------------------------------------------------
# run
# ------------------------------------------------------------------------------------------------
def _degenerate(predictions, is_regression: bool) -> bool:
    import numpy as np

    p = np.asarray(predictions)
    if len(p) == 0:
        return True
    return bool(np.allclose(p, p[0])) if is_regression else bool(len(np.unique(p)) == 1)


def _primary_value(scores: dict[str, dict[str, float]]) -> float:
    from taco.evaluation.metrics import DEFAULT_PRIMARY_METRIC

    vals = [scores[k].get(DEFAULT_PRIMARY_METRIC.get(k, "accuracy"), float("nan")) for k in scores]
    vals = [v for v in vals if v is not None and not math.isnan(v)]
    return sum(vals) / len(vals) if vals else float("-inf")


def run(args: argparse.Namespace, facts: dict[str, Any]) -> int:
    import numpy as np
    from transformers import (AutoModelForSequenceClassification, DataCollatorWithPadding, Trainer,
                              TrainerCallback, TrainingArguments, set_seed)

    from taco.data.glue import GLUE_TASKS, load_glue_task
    from taco.evaluation.metrics import DEFAULT_PRIMARY_METRIC, compute_glue_metrics

    t0 = time.time()
    task = GLUE_TASKS[args.task]
    tokenizer = facts["tokenizer"]
    precision = _precision(args)
    data = load_glue_task(args.task, args.glue_source, args.glue_dir)
    missing = [s for s in ("train", *task.dev_splits) if s not in data]
    if missing:
        raise UsageError(f"GLUE {args.task} ({args.glue_source}): split(s) {missing} missing")
    train = data["train"]
    if args.max_train_samples is not None:
        train = train.select(range(min(args.max_train_samples, len(train))))
    devs = {}
    for split in task.dev_splits:
        d = data[split]
        if args.max_eval_samples is not None:
            d = d.select(range(min(args.max_eval_samples, len(d))))
        devs[split] = d

    def encode(batch):
        texts = [batch[f] for f in task.text_fields]
        enc = tokenizer(*texts, truncation=True, max_length=args.max_length)
        enc["labels"] = [float(x) for x in batch["label"]] if task.is_regression else batch["label"]
        return enc

    keep = ("input_ids", "token_type_ids", "attention_mask", "labels")

    def prepare(ds):
        enc = ds.map(encode, batched=True, desc=None)
        return enc.remove_columns([c for c in enc.column_names if c not in keep])

    train_enc = prepare(train)
    dev_enc = {s: prepare(d) for s, d in devs.items()}

    set_seed(args.seed)
    model = AutoModelForSequenceClassification.from_pretrained(
        str(facts["checkpoint"]), num_labels=task.num_labels,
        problem_type="regression" if task.is_regression else "single_label_classification",
    )
    work = Path(tempfile.mkdtemp(prefix="taco-finetune-"))
    targs = TrainingArguments(
        output_dir=str(work),
        num_train_epochs=facts["epochs"],
        per_device_train_batch_size=args.batch_size,
        per_device_eval_batch_size=args.eval_batch_size,
        learning_rate=facts["lr"],
        weight_decay=args.weight_decay,
        adam_beta1=0.9, adam_beta2=0.999, adam_epsilon=1e-8,
        max_grad_norm=1.0,
        lr_scheduler_type="linear",
        warmup_steps=args.warmup_steps,
        optim="adamw_torch",
        seed=args.seed,
        data_seed=args.seed,
        bf16=precision == "bf16",
        fp16=precision == "fp16",
        logging_steps=args.logging_steps,
        eval_strategy="no",
        save_strategy="no",
        report_to="none",
        disable_tqdm=args.no_progress,
        dataloader_num_workers=0,
        use_cpu=args.device == "cpu",
    )

    epochs: list[dict[str, Any]] = []
    epoch_predictions: list[dict[str, Any]] = []

    def predict(trainer, ds):
        out = trainer.predict(ds)
        logits = out.predictions[0] if isinstance(out.predictions, tuple) else out.predictions
        preds = logits.reshape(-1) if task.is_regression else np.argmax(logits, axis=-1)
        return preds, np.asarray(out.label_ids)

    class EpochEval(TrainerCallback):
        trainer = None

        def on_epoch_end(self, a, state, control, **kw):
            scores, preds_by_split = {}, {}
            for split, key in zip(task.dev_splits, task.score_keys):
                preds, labels = predict(self.trainer, dev_enc[split])
                scores[key] = compute_glue_metrics(key, preds, labels)
                preds_by_split[split] = preds
            epoch = len(epochs) + 1
            epochs.append({"epoch": epoch, "step": state.global_step, "scores": scores})
            epoch_predictions.append(preds_by_split)
            print(f"taco finetune: epoch {epoch}: {json.dumps(scores)}", file=sys.stderr, flush=True)

    cb = EpochEval()
    trainer = Trainer(model=model, args=targs, train_dataset=train_enc, processing_class=tokenizer,
                      data_collator=DataCollatorWithPadding(tokenizer), callbacks=[cb])
    cb.trainer = trainer
    try:
        trainer.train()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if not epochs:
        raise RuntimeError("no epoch was evaluated")

    if args.report_rule == "last":
        chosen = len(epochs) - 1
    else:
        chosen = max(range(len(epochs)), key=lambda i: (_primary_value(epochs[i]["scores"]), -i))
    reported = epochs[chosen]
    preds = epoch_predictions[chosen]
    man = facts["manifest"]
    metrics = {
        "task": args.task,
        "seed": args.seed,
        "size": man.get("size"),
        "objective": man.get("objective"),
        "fraction": man.get("fraction"),
        "step": man.get("step"),
        "checkpoint": str(facts["checkpoint"]),
        "checkpoint_manifest_sha256": facts["manifest_sha256"],
        "checkpoint_config_hash": man.get("config_hash"),
        "glue_source": args.glue_source,
        "report_rule": args.report_rule,
        "reported_epoch": reported["epoch"],
        "primary_metric": {k: DEFAULT_PRIMARY_METRIC.get(k, "accuracy") for k in task.score_keys},
        "epochs": epochs,
        "scores": reported["scores"],
        "degenerate": {k: _degenerate(preds[s], task.is_regression)
                       for s, k in zip(task.dev_splits, task.score_keys)},
        "n_dev": {k: len(dev_enc[s]) for s, k in zip(task.dev_splits, task.score_keys)},
        "n_train": len(train_enc),
        "wall_time_s": round(time.time() - t0, 3),
        "hyperparameters": {
            "learning_rate": facts["lr"], "epochs": facts["epochs"], "batch_size": args.batch_size,
            "max_length": args.max_length, "warmup_steps": args.warmup_steps,
            "weight_decay": args.weight_decay, "precision": precision,
            "max_train_samples": args.max_train_samples, "max_eval_samples": args.max_eval_samples,
        },
    }
    from taco.manifest import code_version, package_versions

    metrics["code_version"] = code_version()
    metrics["packages"] = package_versions()
    out = Path(args.output)
    with atomic_directory(out, overwrite=out.exists()) as tmp:
        if out.exists():  # keep whatever else the directory held (e.g. a log written by the workflow)
            for f in out.iterdir():
                if f.is_file() and f.name not in ("metrics.json", "predictions.tsv"):
                    shutil.copy2(f, tmp / f.name)
        (tmp / "metrics.json").write_text(json.dumps(_finite_or_null(metrics), indent=2, default=_json_default,
                                                     allow_nan=False) + "\n")
        with open(tmp / "predictions.tsv", "w", newline="") as fh:
            w = csv.writer(fh, delimiter="\t", lineterminator="\n")
            w.writerow(["split", "idx", "prediction", "label"])
            for split in task.dev_splits:
                idx = devs[split]["idx"] if "idx" in devs[split].column_names else range(len(devs[split]))
                labels = devs[split]["label"]
                for i, p, y in zip(idx, preds[split], labels):
                    w.writerow([split, int(i), repr(float(p)) if task.is_regression else int(p),
                                repr(float(y)) if task.is_regression else int(y)])
    print(f"taco finetune: wrote {out}/metrics.json (epoch {reported['epoch']}: "
          f"{json.dumps(reported['scores'])})", file=sys.stderr)
    return 0


def _finite_or_null(obj):
    """NaN/inf -> None (strict JSON; e.g. Pearson of constant predictions is undefined)."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _finite_or_null(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite_or_null(v) for v in obj]
    if hasattr(obj, "item") and getattr(obj, "ndim", 1) == 0:
        return _finite_or_null(obj.item())
    return obj


def _json_default(obj):
    try:
        return float(obj)
    except (TypeError, ValueError):
        return str(obj)


def per_seed_args(args: argparse.Namespace) -> list[argparse.Namespace]:
    """One namespace per ``--seed``, with ``{seed}`` in ``--output`` filled in.

    Raises UsageError if several seeds share one output directory or a seed repeats.
    """
    seeds = list(args.seed)
    if len(set(seeds)) != len(seeds):
        raise UsageError(f"--seed: repeated seed in {seeds}")
    if len(seeds) > 1 and "{seed}" not in args.output:
        raise UsageError("--output must contain {seed} when several seeds are given "
                         "(e.g. results/.../rte/seed-{seed})")
    out = []
    for seed in seeds:
        one = argparse.Namespace(**vars(args))
        one.seed = seed
        one.output = args.output.replace("{seed}", str(seed))
        out.append(one)
    return out


def main(argv: list[str] | None = None) -> int:
    from taco.data.glue import GlueFormatError

    args = build_parser().parse_args(argv)
    try:
        runs = per_seed_args(args)
        facts = [check_inputs(a) for a in runs]  # every seed's input checked before any work starts
        for a, f in zip(runs, facts):
            status = run(a, f)
            if status:
                return status
        return 0
    except (UsageError, FileNotFoundError, FileExistsError, GlueFormatError) as exc:
        print(f"taco finetune: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
