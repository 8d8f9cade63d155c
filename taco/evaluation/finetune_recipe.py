"""The fine-tuning recipe of ``taco finetune`` that the configuration sets, each parameter declared once
(:class:`taco.parameters.Parameter`): the flag, its default (the same by hand and in the workflow), its check, the
config schema's property (added by :func:`taco.workflow.schema.workflow_schema`, no hand-written copy) and the
workflow's command words (:meth:`taco.workflow.commands.Commands.finetune_args` loops over
:data:`FINETUNE_RECIPE` in its order and honours ``pass_default``). Values of the official ``run_glue.sh``.

The learning rate and epochs differ per model preset: their declarations here have no default of their own
(``None``: the preset's), and their per-preset values are the presets' table,
:data:`taco.registry.FINETUNE_HYPERPARAMETERS` (as the pre-training schedule's are
:data:`taco.registry.PRETRAIN_SCHEDULE`); the configuration overrides them under
``finetune.hyperparameters.<preset>``. A new fine-tuning option is one entry here (with ``pass_default=False``
so that finished jobs keep their commands) plus its use in :mod:`taco.evaluation.finetune`; ``metrics.json``
records it under ``hyperparameters`` (``docs/architecture.md``). Torch-free.
"""

from __future__ import annotations

from taco.parameters import PRESET, Parameter
from taco.registry import FINETUNE_HYPERPARAMETERS

__all__ = ["FINETUNE_RECIPE"]

_HP = f"finetune.hyperparameters.{PRESET}"


def _by_preset(key: str) -> str:
    return ", ".join(f"{v[key]:g} ({k})" for k, v in FINETUNE_HYPERPARAMETERS.items())


#: in the order the workflow writes their flags
FINETUNE_RECIPE: tuple[Parameter, ...] = (
    Parameter("--max-length", "finetune.max_length", "max_length", 128,
              "tokens per example (longer ones are truncated)", minimum=8),
    Parameter("--batch-size", "finetune.batch_size", "batch_size", 32, "training batch size", minimum=1,
              maximum=65536),
    Parameter("--lr", f"{_HP}.learning_rate", "lr", None,
              f"peak learning rate of AdamW (linear warm-up and decay); default per model preset: "
              f"{_by_preset('learning_rate')}", type=float, exclusive_minimum=0),
    Parameter("--epochs", f"{_HP}.epochs", "epochs", None,
              f"training epochs; default per model preset: {_by_preset('epochs')}", type=int, minimum=1),
    Parameter("--warmup-steps", "finetune.warmup_steps", "warmup_steps", 100,
              "linear warm-up steps of the learning rate", minimum=0),
    Parameter("--dropout", "finetune.dropout", "dropout", 0.1,
              "dropout of the encoder and head while fine-tuning, the same for every checkpoint and the control "
              "(official run_glue.py: BERT's 0.1); a checkpoint's pre-training dropout is not inherited",
              minimum=0.0, exclusive_maximum=1.0),
    Parameter("--report-rule", "finetune.report_rule", "report_rule", "last",
              "which epoch's dev scores are reported: the last, or the best by the primary metric",
              choices=("last", "best")),
)
