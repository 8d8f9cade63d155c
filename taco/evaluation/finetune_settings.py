"""The typed settings of one ``taco finetune`` run (one task, one seed), built once from the command line by
:func:`taco.evaluation.finetune.check_inputs` after every check: the data, the trainer, the monitor and the
``metrics.json`` record read these fields, never the argparse ``Namespace`` or a dict of facts (as pre-training's
segments read :class:`taco.training.segment.SegmentArgs`). Frozen: nothing changes a setting after the checks.
Torch-free (the checkpoint's ``config`` and ``tokenizer`` are transformers objects, typed ``Any`` here).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Checkpoint:
    """The pre-trained checkpoint a run starts from, as the checks found it.

    ``path``: the budget checkpoint folder; ``manifest``: its ``manifest.json``; ``manifest_sha256``: that file's
    sha256 (recorded in ``metrics.json``); ``config`` / ``tokenizer``: transformers' objects loaded from it;
    ``size_preset``: the model preset the fine-tuning defaults follow (None: not in the manifest)."""

    path: Path
    manifest: dict[str, Any]
    manifest_sha256: str
    config: Any
    tokenizer: Any
    size_preset: str | None


@dataclass(frozen=True)
class InitFrom:
    """``--init-from``: the saved model whose encoder the run starts from, and its ``finetuned.json`` record."""

    path: Path
    record: dict[str, Any]


@dataclass(frozen=True)
class FinetuneRun:
    """Every setting of one (task, seed) fine-tuning run, resolved: ``lr`` and ``epochs`` as the run uses them (the
    command line, else a ``--tuned-recipe`` choice, else the model preset's), ``warmup_steps`` likewise;
    ``primary_metric`` the score key -> metric map the report rule and the record use (the registry defaults with
    ``--primary-metric`` over them); ``options`` the declared recipe options that ``metrics.json`` records under
    their config word (:func:`taco.evaluation.finetune.declared_options`; empty today)."""

    task: str
    seed: int
    output: Path
    checkpoint: Checkpoint
    glue_source: str
    glue_dir: str | None
    max_length: int
    batch_size: int
    lr: float
    epochs: int
    warmup_steps: int
    dropout: float
    report_rule: str
    eval_batch_size: int
    weight_decay: float
    primary_metric: dict[str, str]
    max_train_samples: int | None
    max_eval_samples: int | None
    data_seed: int
    device: str
    precision: str
    test_predictions: bool
    save_model: bool
    logging_steps: int
    no_progress: bool
    report_to: tuple[str, ...]
    tensorboard_dir: Path
    wandb_project: str
    wandb_dir: str | None
    init_from: InitFrom | None = None
    tuned_recipe: dict[str, Any] | None = None
    options: dict[str, Any] = field(default_factory=dict)
