"""``taco finetune``: one pre-trained checkpoint, one or more GLUE tasks and seeds (HF ``Trainer``).

Several ``--task`` and ``--seed`` values run one after the other in this process, every (task, seed)
exactly as it would alone (the same numbers): the workflow's ``finetune.tasks_per_job: all`` runs a
whole checkpoint in one job, which saves the start-up (imports, model and data loading) of every run
but the first. ``--output`` then holds ``{task}`` and ``{seed}``.

Defaults are those of the official scripts (run_glue.py of transformers 4.6 as the TACO repo
runs it): max length 128, batch 32, 100 warmup steps, lr 5e-5 and 4 epochs for small (and tiny),
3e-5 and 6 epochs for base, linear decay, AdamW (weight decay 0). The dev split(s) are evaluated
after every epoch (MNLI: matched and mismatched); the reported epoch is the last one (``--report-rule
last``, default) or the one with the best mean primary metric (``best``; the primary metric of each
score key is ``--primary-metric`` where given, the workflow's ``analysis.primary_metric``, else the
registry default: the number the tables report is the number the epoch is chosen by).

Outputs in ``--output`` (written atomically; an existing output is never overwritten):
``metrics.json`` (format in ``docs/INTERFACES.md``), ``predictions.tsv`` (columns ``split``,
``idx``, ``prediction``, ``label``: the dev predictions of the reported epoch) and
``test_predictions.tsv`` (columns ``file``, ``index``, ``prediction``: the reported epoch's model on
the task's unlabelled GLUE test split(s), MNLI also on the diagnostic AX, in the GLUE server's label
strings; ``taco glue-submission`` gathers them into the server's zip; ``--no-test-predictions``
skips it). ``--save-model`` also writes the reported epoch's model into ``<output>/model/`` and
``--init-from DIR`` starts from such a model's encoder with a new head (RTE, MRPC and STS-B from MNLI's,
the MosaicBERT / ModernBERT convention; :mod:`taco.evaluation.finetune_init`); ``metrics.json`` then
records ``init_from``. The run is four named steps: ``load_task_data``, ``build_trainer``, training with the
per-epoch evaluator, ``build_metrics``/``write_outputs``.

Monitoring (:mod:`taco.training.monitoring`, changes no number): TensorBoard event files with the
training loss, learning rate and gradient norm (``train/...``) and every epoch's dev scores
(``dev/<score key>/<metric>``) in ``--tensorboard-dir`` (default ``<output>/tensorboard``, kept by
the atomic write); ``--report-to wandb`` sends the same to Weights & Biases; ``--report-to none``.
The data, ``Trainer`` and per-epoch evaluation steps are in :mod:`taco.evaluation.finetune_trainer`.
"""

from __future__ import annotations

import argparse
import csv
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from taco.cli_parts import cli_error
from taco.evaluation.finetune_recipe import FINETUNE_RECIPE
from taco.evaluation.finetune_settings import Checkpoint, FinetuneRun, InitFrom
from taco.parameters import check_values
from taco.evaluation.finetune_trainer import (
    TaskData,
    _make_epoch_evaluator,
    _precision,
    build_trainer,
    choose_epoch,
    load_task_data,
    predict_tests,
)
from taco.manifest import (MANIFEST_NAME, ManifestError, atomic_directory, check_model_sha256, finite_or_null,
                           read_manifest, sha256_file)
from taco.registry import FINETUNE_HYPERPARAMETERS, GLUE_TASK_SPECS, finetune_hyperparameters



from taco.errors import UsageError  # noqa: E402


#: recipe settings that metrics.json records by name (``hyperparameters``' first keys, ``report_rule`` at the top):
#: every other declared fine-tuning option follows them under ``hyperparameters``
RECORDED_ELSEWHERE = frozenset({"max_length", "batch_size", "warmup_steps", "dropout", "report_rule"})


def declared_options(args: argparse.Namespace) -> dict[str, Any]:
    """The recipe options of :data:`FINETUNE_RECIPE` that ``metrics.json`` does not record by name
    (:data:`RECORDED_ELSEWHERE`, the learning rate and epochs as resolved), each under its config key's last word:
    a new declared option reaches the record with no edit here. Empty for today's recipe."""
    return {f.key: getattr(args, f.name) for f in FINETUNE_RECIPE
            if f.key not in RECORDED_ELSEWHERE and not f.per_preset}


def build_parser() -> argparse.ArgumentParser:
    from taco.cli_parts import HelpFormatter
    p = argparse.ArgumentParser(formatter_class=HelpFormatter, prog="taco finetune",
                                description="Fine-tune one checkpoint on GLUE tasks, each with one or more seeds.")
    p.add_argument("--checkpoint", required=True, help="budget checkpoint directory (taco pretrain output)")
    p.add_argument("--task", required=True, nargs="+",
                   help=f"{', '.join(GLUE_TASK_SPECS)}; several run one after the other in "
                        "this process (each task x seed as it would alone); --output must then contain {task}")
    p.add_argument("--seed", type=int, nargs="+", default=[123],
                   help="fine-tuning seed(s) (official scripts: 123). Several seeds run one after the "
                        "other in this process (saves the start-up cost on CPU); --output must then "
                        "contain {seed}")
    p.add_argument("--glue-source", choices=("hub", "local", "synthetic"), default="hub",
                   help="hub: nyu-mll/glue; local: GLUE TSVs in --glue-dir; synthetic: stand-in tasks in GLUE's format")
    p.add_argument("--glue-dir", default=None, help="GLUE folder (needed for --glue-source local)")
    p.add_argument("--output", required=True,
                   help="result directory (metrics.json, predictions.tsv); may contain {task} and {seed}")
    for f in FINETUNE_RECIPE:
        f.add_to(p)
    p.add_argument("--eval-batch-size", type=int, default=128, help="evaluation batch size")
    p.add_argument("--weight-decay", type=float, default=0.0, help="AdamW weight decay")
    p.add_argument("--tuned-recipe", default=None, metavar="CHOICE",
                   help="a choice.json of `taco finetune-choice` (config finetune.tuning): each task's chosen learning "
                        "rate, epochs and warm-up replace --lr, --epochs and --warmup-steps")
    p.add_argument("--primary-metric", nargs="*", default=[], metavar="KEY=METRIC",
                   help="score key -> metric that --report-rule best chooses the epoch by (e.g. mrpc=accuracy); "
                        "keys not given use the default (MRPC/QQP F1, STS-B Spearman, CoLA MCC, others accuracy)")
    p.add_argument("--max-train-samples", type=int, default=None,
                   help="cap: a seeded random sample of N training examples (stratified by label for "
                        "classification; drawn with --data-seed)")
    p.add_argument("--max-eval-samples", type=int, default=None,
                   help="cap: a seeded random sample of N examples of each dev split (as --max-train-samples)")
    p.add_argument("--data-seed", type=int, default=0,
                   help="seed of the capped samples (the workflow's top-level seed; default 0); the same for "
                        "every fine-tuning seed, so all runs of a task see the same examples")
    p.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto", help="auto: cuda if available, else cpu")
    p.add_argument("--precision", choices=("auto", "fp32", "bf16", "fp16"), default="auto",
                   help="auto: bf16 on GPUs that support it, else fp32")
    p.add_argument("--test-predictions", action=argparse.BooleanOptionalAction, default=True,
                   help="predict the task's unlabelled GLUE test split(s) with the reported epoch's model "
                        "into test_predictions.tsv (GLUE server labels; default on; never capped)")
    p.add_argument("--save-model", action="store_true",
                   help="also save the reported epoch's model into <output>/model/ (weights, tokenizer and "
                        "finetuned.json): the start of --init-from runs")
    p.add_argument("--init-from", default=None, metavar="DIR",
                   help="start from the encoder of a model saved by --save-model (e.g. MNLI's, as MosaicBERT "
                        "and ModernBERT fine-tune RTE, MRPC and STS-B) with a new classification head; it must "
                        "come from the same --checkpoint and seed; may contain {seed}")
    p.add_argument("--logging-steps", type=int, default=50, help="log the training loss every N steps")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    from taco.training import monitoring

    monitoring.add_arguments(p, "<output>/tensorboard; may contain {seed}, and with several seeds and no "
                                "{seed} each seed gets a seed-<n> subfolder")
    return p


# ------------------------------------------------------------------------------------------------
# validation (before any work)
# ------------------------------------------------------------------------------------------------
def check_inputs(args: argparse.Namespace) -> FinetuneRun:
    """Every check of one (task, seed) run before any work, then its typed settings (:class:`FinetuneRun`), in named
    steps: the task and monitoring, the checkpoint, the output, the GLUE source, the recipe's values, the
    checkpoint's model files, the learning rate, epochs and warm-up as the run uses them, ``--init-from``.

    Raises:
        UsageError / FileNotFoundError / FileExistsError / ManifestError: naming the flag, file or folder.
    """
    task = _check_task(args)
    from taco.training import monitoring

    # --report-to wandb without wandb, an unwritable TensorBoard folder: exit 2 before any work
    monitoring.check(args, tensorboard_dir_of(args))
    ckpt, manifest = _check_checkpoint(args)
    out = _check_output(args)
    _check_glue_source(args)
    _check_recipe_values(args)
    primary = primary_metrics(args)  # a bad --primary-metric fails before any work
    config, tokenizer = _load_model_files(ckpt, args)
    lr, epochs, warmup_steps, tuned = _resolve_recipe(args, ckpt, manifest, task)
    manifest_sha256 = sha256_file(ckpt / MANIFEST_NAME)
    init_from = None
    if getattr(args, "init_from", None):
        from taco.evaluation.finetune_init import check_init_from

        init_from = InitFrom(Path(args.init_from), check_init_from(args.init_from, manifest_sha256, args.seed))
    from taco.training.monitoring import DEFAULT_WANDB_PROJECT

    return FinetuneRun(
        task=task, seed=int(_one(args, "seed")), output=out,
        checkpoint=Checkpoint(ckpt, manifest, manifest_sha256, config, tokenizer, manifest.get("size_preset")),
        glue_source=args.glue_source, glue_dir=args.glue_dir, max_length=args.max_length, batch_size=args.batch_size,
        lr=lr, epochs=epochs, warmup_steps=warmup_steps, dropout=args.dropout, report_rule=args.report_rule,
        eval_batch_size=args.eval_batch_size, weight_decay=args.weight_decay, primary_metric=primary,
        max_train_samples=args.max_train_samples, max_eval_samples=args.max_eval_samples,
        data_seed=getattr(args, "data_seed", 0), device=args.device, precision=args.precision,
        test_predictions=bool(args.test_predictions), save_model=bool(getattr(args, "save_model", False)),
        logging_steps=args.logging_steps, no_progress=bool(args.no_progress),
        report_to=tuple(getattr(args, "report_to", ()) or ()), tensorboard_dir=tensorboard_dir_of(args),
        wandb_project=getattr(args, "wandb_project", DEFAULT_WANDB_PROJECT), wandb_dir=getattr(args, "wandb_dir", None),
        init_from=init_from, tuned_recipe=None if tuned is None else {"path": str(args.tuned_recipe), "setting": tuned},
        options=declared_options(args))


def _one(args: argparse.Namespace, name: str) -> Any:
    """The run's one value of ``--<name>`` (``--task``, ``--seed``), which may hold several (``per_seed_args``
    splits them into one run each)."""
    value = getattr(args, name)
    if isinstance(value, (list, tuple)):
        if len(value) != 1:
            raise UsageError(f"--{name}: one {name} per run here, got {list(value)} (per_seed_args splits them)")
        value = value[0]
    return value


def _check_task(args: argparse.Namespace) -> str:
    """The run's one GLUE task."""
    task = _one(args, "task")
    if task not in GLUE_TASK_SPECS:
        raise UsageError(f"--task: unknown GLUE task {task!r}; expected one of {', '.join(GLUE_TASK_SPECS)}")
    return task


def _check_checkpoint(args: argparse.Namespace) -> tuple[Path, dict[str, Any]]:
    """The checkpoint folder: its manifest, its config and weights, the weights' sha256 as the manifest says."""
    ckpt = Path(args.checkpoint)
    if not ckpt.is_dir():
        raise FileNotFoundError(f"--checkpoint {ckpt}: no such directory")
    manifest = read_manifest(ckpt)  # names the directory when the manifest is missing or damaged
    if not (ckpt / "config.json").is_file() or not (any(ckpt.glob("model*.safetensors"))
                                                    or any(ckpt.glob("pytorch_model*.bin"))):
        raise FileNotFoundError(f"--checkpoint {ckpt}: incomplete (config.json or model weights missing)")
    check_model_sha256(ckpt, manifest)  # the weights the manifest claims, before they are used
    return ckpt, manifest


def _check_output(args: argparse.Namespace) -> Path:
    """The output folder: never one that already holds a result."""
    out = Path(args.output)
    if (out / "metrics.json").exists():
        raise FileExistsError(f"--output {out} already holds metrics.json; refusing to overwrite a result")
    return out


def _check_glue_source(args: argparse.Namespace) -> None:
    """``--glue-source local`` needs an existing ``--glue-dir``."""
    if args.glue_source == "local":
        if not args.glue_dir:
            raise UsageError("--glue-source local needs --glue-dir")
        if not Path(args.glue_dir).is_dir():
            raise FileNotFoundError(f"--glue-dir {args.glue_dir}: no such directory")


def _check_recipe_values(args: argparse.Namespace) -> None:
    """The declared recipe's values (:data:`FINETUNE_RECIPE`), the evaluation batch size and the device."""
    errors = check_values(FINETUNE_RECIPE, {f.name: getattr(args, f.name) for f in FINETUNE_RECIPE})
    if errors:
        raise UsageError("; ".join(errors))
    if args.eval_batch_size < 1:
        raise UsageError("--eval-batch-size must be >= 1")
    if args.device == "cuda":
        import torch

        if not torch.cuda.is_available():
            raise UsageError("--device cuda but no GPU is visible")


def _load_model_files(ckpt: Path, args: argparse.Namespace) -> tuple[Any, Any]:
    """The checkpoint's transformers config and tokenizer, which must belong together and fit ``--max-length``."""
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
    return config, tokenizer


def _resolve_recipe(args: argparse.Namespace, ckpt: Path, manifest: dict[str, Any],
                    task: str) -> tuple[float, int, int, dict[str, Any] | None]:
    """The learning rate, epochs and warm-up as the run uses them, and the ``--tuned-recipe`` choice: a tuned
    choice replaces the flags; a flag not given takes the model preset's default (manifest ``size_preset``,
    never the run's size key: a size key "base" may be a tiny model, tests/configs/paper-shrunk.yaml)."""
    size = manifest.get("size_preset")
    defaults = finetune_hyperparameters(size) if size in FINETUNE_HYPERPARAMETERS else None
    if defaults is None and (args.lr is None or args.epochs is None):
        raise UsageError(f"--checkpoint {ckpt}: {MANIFEST_NAME} has no known size_preset ({size!r}) to take the "
                         "fine-tuning learning rate and epochs from; pass --lr and --epochs")
    defaults = defaults or {}
    lr, epochs, warmup_steps, tuned = args.lr, args.epochs, args.warmup_steps, None
    if getattr(args, "tuned_recipe", None):
        from taco.evaluation.finetune_tuning import read_choice

        tuned = read_choice(args.tuned_recipe, task)
        lr = float(tuned["learning_rate"]) if tuned.get("learning_rate") is not None else lr
        epochs = int(tuned["epochs"]) if tuned.get("epochs") is not None else epochs
        warmup_steps = int(tuned["warmup_steps"]) if tuned.get("warmup_steps") is not None else warmup_steps
    return (lr if lr is not None else float(defaults["learning_rate"]),
            epochs if epochs is not None else int(defaults["epochs"]), warmup_steps, tuned)


# ------------------------------------------------------------------------------------------------
# run
# ------------------------------------------------------------------------------------------------
def _degenerate(predictions, is_regression: bool) -> bool:
    import numpy as np

    p = np.asarray(predictions)
    if len(p) == 0:
        return True
    return bool(np.allclose(p, p[0])) if is_regression else bool(len(np.unique(p)) == 1)


def primary_metrics(args: argparse.Namespace) -> dict[str, str]:
    """Score key -> primary metric: the registry defaults, overridden by ``--primary-metric
    KEY=METRIC`` entries (keys of other tasks are ignored). UsageError names a malformed entry or a
    metric the key does not have."""
    from taco.registry import DEFAULT_PRIMARY_METRIC, METRICS_BY_SCORE_KEY

    out = dict(DEFAULT_PRIMARY_METRIC)
    for item in getattr(args, "primary_metric", None) or []:
        key, sep, metric = str(item).partition("=")
        if not sep or key not in METRICS_BY_SCORE_KEY:
            raise UsageError(f"--primary-metric {item!r}: expected KEY=METRIC with KEY a score key "
                             f"({', '.join(sorted(METRICS_BY_SCORE_KEY))})")
        if metric not in METRICS_BY_SCORE_KEY[key]:
            raise UsageError(f"--primary-metric {item!r}: {key} has the metrics "
                             f"{', '.join(METRICS_BY_SCORE_KEY[key])}")
        out[key] = metric
    return out



# ---- step 4: the record -------------------------------------------------------------------------------
def build_metrics(run: FinetuneRun, data: TaskData, epochs: list[dict],
                  chosen: int, preds: dict[str, Any], precision: str, wall_time_s: float,
                  test_rows: dict[str, tuple[list, list]] | None) -> dict[str, Any]:
    """The ``metrics.json`` record (format: docs/INTERFACES.md)."""
    from taco.registry import DEFAULT_PRIMARY_METRIC
    from taco.manifest import code_version, package_versions

    task = data.task
    reported = epochs[chosen]
    man = run.checkpoint.manifest
    metrics = {
        "task": run.task,
        "seed": run.seed,
        "size": man.get("size"),
        "objective": man.get("objective"),
        "pretrain_seed": man.get("pretrain_seed", (man.get("parameters") or {}).get("seed")),
        "fraction": man.get("fraction"),
        "step": man.get("step"),
        "checkpoint": str(run.checkpoint.path),
        "checkpoint_manifest_sha256": run.checkpoint.manifest_sha256,
        "checkpoint_config_hash": man.get("config_hash"),
        "glue_source": run.glue_source,
        "report_rule": run.report_rule,
        "reported_epoch": reported["epoch"],
        "primary_metric": {k: run.primary_metric.get(k, DEFAULT_PRIMARY_METRIC[k])
                           for k in task.score_keys},
        "epochs": epochs,
        "scores": reported["scores"],
        "degenerate": {k: _degenerate(preds[s], task.is_regression)
                       for s, k in zip(task.dev_splits, task.score_keys)},
        "n_dev": {k: len(data.dev_enc[s]) for s, k in zip(task.dev_splits, task.score_keys)},
        "n_train": len(data.train_enc),
        "wall_time_s": round(wall_time_s, 3),
        "hyperparameters": {
            "learning_rate": run.lr, "epochs": run.epochs, "batch_size": run.batch_size,
            "max_length": run.max_length, "warmup_steps": run.warmup_steps, "dropout": run.dropout,
            "weight_decay": run.weight_decay, "precision": precision,
            "max_train_samples": run.max_train_samples, "max_eval_samples": run.max_eval_samples,
            "data_seed": run.data_seed,
            **run.options,
        },
        "tuned_recipe": run.tuned_recipe,
        "test_predictions": None if test_rows is None else {
            "epoch": reported["epoch"],
            "files": {f: len(idx) for f, (idx, _) in test_rows.items()},
            "absent": {s.submission_file: why for s, why in data.test_absent.items()},
        },
    }
    if run.init_from:  # only then: the record of a run from the pre-trained checkpoint is unchanged
        rec = run.init_from.record
        metrics["init_from"] = {"path": str(run.init_from.path), "task": rec.get("task"),
                                "seed": rec.get("seed"), "epoch": rec.get("epoch")}
    metrics["code_version"] = code_version()
    metrics["packages"] = package_versions()
    return metrics


def write_outputs(out: Path, metrics: dict[str, Any], data: TaskData, preds: dict[str, Any],
                  test_rows: dict[str, tuple[list, list]] | None,
                  save_model: Callable[[Path], Any] | None = None) -> None:
    """``metrics.json``, ``predictions.tsv`` (dev), ``test_predictions.tsv`` and, with ``save_model``
    (called with the folder to write), the model in ``model/`` into ``out`` at once (atomic directory;
    other files already there, e.g. a workflow log, are kept)."""
    from taco.evaluation.finetune_init import MODEL_DIR
    from taco.evaluation.submission import TEST_PREDICTIONS_NAME, write_test_predictions

    task = data.task
    ours = ("metrics.json", "predictions.tsv", TEST_PREDICTIONS_NAME)
    with atomic_directory(out, overwrite=out.exists()) as tmp:
        if out.exists():  # keep whatever else the directory held (a workflow log, tensorboard/ by default)
            for f in out.iterdir():
                if f.is_file() and f.name not in ours:
                    shutil.copy2(f, tmp / f.name)
                elif f.is_dir() and not (save_model is not None and f.name == MODEL_DIR):
                    shutil.copytree(f, tmp / f.name, symlinks=True)
        if save_model is not None:
            save_model(tmp / MODEL_DIR)
        (tmp / "metrics.json").write_text(json.dumps(finite_or_null(metrics), indent=2, default=_json_default,
                                                     allow_nan=False) + "\n")
        with open(tmp / "predictions.tsv", "w", newline="") as fh:
            w = csv.writer(fh, delimiter="\t", lineterminator="\n")
            w.writerow(["split", "idx", "prediction", "label"])
            for split in task.dev_splits:
                dev = data.devs[split]
                idx = dev["idx"] if "idx" in dev.column_names else range(len(dev))
                for i, p, y in zip(idx, preds[split], dev["label"]):
                    w.writerow([split, int(i), repr(float(p)) if task.is_regression else int(p),
                                repr(float(y)) if task.is_regression else int(y)])
        if test_rows is not None:
            write_test_predictions(tmp / TEST_PREDICTIONS_NAME, test_rows)


def run(settings: FinetuneRun) -> int:
    """Fine-tune one seed: load the data, train with per-epoch dev evaluation, choose the reported
    epoch, predict the test split(s) with that epoch's model, write the outputs."""
    t0 = time.time()
    precision = _precision(settings)
    data = load_task_data(settings, settings.checkpoint.tokenizer)
    primary = settings.primary_metric
    monitor = _monitor(settings)
    save = settings.save_model
    evaluator = _make_epoch_evaluator(data, settings.report_rule, primary, monitor, keep_best_state=save)
    work = Path(tempfile.mkdtemp(prefix="taco-finetune-"))
    from taco.training.monitoring import trainer_callback
    from taco.training.runlog import ProgressCallback

    progress = ProgressCallback(f"finetune {settings.task} seed {settings.seed}")
    trainer = build_trainer(settings, data, precision, work, [evaluator, progress, trainer_callback(monitor)])
    evaluator.trainer = trainer
    try:
        trainer.train()
    finally:
        monitor.close()
        shutil.rmtree(work, ignore_errors=True)
    epochs = evaluator.epochs
    if not epochs:
        raise RuntimeError("no epoch was evaluated")
    chosen = choose_epoch(epochs, settings.report_rule, primary)
    test_rows = None
    if settings.test_predictions:
        if settings.report_rule == "last":
            test_rows = predict_tests(trainer, data)  # the model in memory is the last epoch's
        else:
            test_epoch, test_rows = evaluator.test if evaluator.test else (chosen, {})
            if test_epoch != chosen:
                raise RuntimeError(f"test predictions are of epoch {test_epoch + 1}, the reported epoch is "
                                   f"{chosen + 1}")
    preds = evaluator.predictions[chosen]
    metrics = build_metrics(settings, data, epochs, chosen, preds, precision, time.time() - t0, test_rows)
    out = settings.output
    write_outputs(out, metrics, data, preds, test_rows,
                  _model_saver(settings, trainer, evaluator, epochs, chosen) if save else None)
    print(f"taco finetune: wrote {out}/metrics.json (epoch {epochs[chosen]['epoch']}: "
          f"{json.dumps(epochs[chosen]['scores'])})", file=sys.stderr)
    return 0


def _model_saver(run: FinetuneRun, trainer, evaluator, epochs: list[dict], chosen: int) -> Callable[[Path], Any]:
    """What ``--save-model`` writes: the reported epoch's model (the last epoch's is the trainer's; with
    ``--report-rule best`` the state the evaluator kept at the best epoch) with its record."""
    from taco.evaluation.finetune_init import save_finetuned

    model = trainer.model
    if run.report_rule == "best":
        kept_epoch, state = evaluator.best_state or (None, None)
        if kept_epoch != chosen:
            raise RuntimeError(f"the kept model is of epoch {None if kept_epoch is None else kept_epoch + 1}, "
                               f"the reported epoch is {chosen + 1}")
        model.load_state_dict(state)
    record = {"task": run.task, "seed": run.seed, "epoch": epochs[chosen]["epoch"],
              "report_rule": run.report_rule, "scores": epochs[chosen]["scores"],
              "checkpoint": str(run.checkpoint.path), "checkpoint_manifest_sha256": run.checkpoint.manifest_sha256}
    return lambda directory: save_finetuned(model, run.checkpoint.tokenizer, directory, record)


def _monitor(run: FinetuneRun):
    """The run's :class:`taco.training.monitoring.Monitor`: TensorBoard in ``--tensorboard-dir``
    (default ``<output>/tensorboard``), W&B as one run per output folder."""
    from taco.training.monitoring import Monitor, run_id

    report_to = run.report_to
    tb_dir = run.tensorboard_dir
    man = run.checkpoint.manifest
    where = f"{man.get('size')}/{man.get('objective')}/data-{man.get('fraction')}/step-{man.get('step')}"
    return Monitor(report_to, tb_dir if "tensorboard" in report_to else None,
                   wandb_project=run.wandb_project,
                   wandb_dir=run.wandb_dir,
                   wandb_name=f"finetune {run.task} seed-{run.seed} {where}",
                   wandb_id=run_id("finetune", run.output.resolve()), wandb_group=where,
                   wandb_job_type="finetune",
                   wandb_config={"task": run.task, "seed": run.seed, "checkpoint": str(run.checkpoint.path),
                                 "learning_rate": run.lr, "epochs": run.epochs,
                                 "batch_size": run.batch_size, "max_length": run.max_length})


def tensorboard_dir_of(args: argparse.Namespace) -> Path:
    """A fine-tuning run's TensorBoard folder: ``--tensorboard-dir`` (one seed's), else ``<output>/tensorboard``."""
    tb = getattr(args, "tensorboard_dir", None)
    return Path(tb) if tb else Path(args.output) / "tensorboard"


def _json_default(obj):
    try:
        return float(obj)
    except (TypeError, ValueError):
        return str(obj)


def per_seed_args(args: argparse.Namespace) -> list[argparse.Namespace]:
    """One namespace per (``--task``, ``--seed``), tasks in the order given, with ``{task}`` and ``{seed}``
    in ``--output`` (and ``--tensorboard-dir``) filled in; a ``--tensorboard-dir`` without them gets
    ``<task>/`` (several tasks) and ``seed-<n>`` (several seeds) subfolders.

    Raises UsageError if several runs would share one output directory, a task or seed repeats, or
    ``--init-from`` is given with several tasks (it is one task's start: RTE's from MNLI's model).
    """
    seeds = list(args.seed)
    tasks = list(args.task) if isinstance(args.task, (list, tuple)) else [args.task]
    if len(set(seeds)) != len(seeds):
        raise UsageError(f"--seed: repeated seed in {seeds}")
    if len(set(tasks)) != len(tasks):
        raise UsageError(f"--task: repeated task in {tasks}")
    if len(seeds) > 1 and "{seed}" not in args.output:
        raise UsageError("--output must contain {seed} when several seeds are given "
                         "(e.g. results/.../rte/seed-{seed})")
    if len(tasks) > 1 and "{task}" not in args.output:
        raise UsageError("--output must contain {task} when several tasks are given "
                         "(e.g. results/.../{task}/seed-{seed})")
    init = getattr(args, "init_from", None)
    if init and len(tasks) > 1:
        raise UsageError("--init-from starts one task from another task's model: give one --task with it")
    if init and len(seeds) > 1 and "{seed}" not in init:
        raise UsageError("--init-from must contain {seed} when several seeds are given: each seed starts from "
                         "the model of the same seed (e.g. results/.../mnli/seed-{seed}/model)")
    out = []
    tb = getattr(args, "tensorboard_dir", None)
    for task in tasks:
        for seed in seeds:
            one = argparse.Namespace(**vars(args))
            one.task, one.seed = task, seed
            one.output = args.output.replace("{task}", task).replace("{seed}", str(seed))
            if init:
                one.init_from = init.replace("{seed}", str(seed))
            if tb:  # one TensorBoard folder per task and seed
                t = tb.replace("{task}", task)
                if len(tasks) > 1 and "{task}" not in tb:
                    t = str(Path(t) / task)
                one.tensorboard_dir = (t.replace("{seed}", str(seed)) if "{seed}" in t or len(seeds) == 1
                                       else str(Path(t) / f"seed-{seed}"))
            out.append(one)
    return out


def main(argv: list[str] | None = None) -> int:
    from taco.data.glue import GlueFormatError

    args = build_parser().parse_args(argv)
    try:
        runs = per_seed_args(args)
        settings = [check_inputs(a) for a in runs]  # every seed's input checked before any work starts
        for one in settings:
            status = run(one)
            if status:
                return status
        return 0
    except (UsageError, FileNotFoundError, FileExistsError, GlueFormatError, ManifestError) as exc:
        return cli_error("finetune", exc)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
