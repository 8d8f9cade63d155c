"""The pre-training recipe of ``taco pretrain``, each parameter declared once (issue 22.1).

A :class:`RecipeFlag` names a parameter's command-line flag, its configuration key (under
``pretrain.sizes.<size>`` or under ``pretrain``), its type, its command-line default (for
``taco pretrain`` run by hand; the workflow always passes the configuration's value, whose default
is the schema's) and its help. From this table come the ``taco pretrain`` flags
(:func:`taco.training.pretrain.build_parser`) and the words the workflow writes for them
(:meth:`taco.workflow.commands.Commands.pretrain_args`, in this order); ``tests/test_commands.py``
checks the schema has each key. The objective options (TC, TP, NCE, INFOWORD) are declared the same
way, with their objective, in :mod:`taco.objectives`. Torch-free.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from taco.objectives.base import MLM_PROBABILITY

__all__ = ["RecipeFlag", "RECIPE", "RECIPE_AFTER_OBJECTIVE"]


@dataclass(frozen=True)
class RecipeFlag:
    """One recipe parameter: ``flag`` (``--lr``), ``key`` (config ``learning_rate``), ``type``,
    command-line ``default``, ``help``; ``per_size``: the key is under ``pretrain.sizes.<size>``
    (else under ``pretrain``); ``choices`` for an enumerated value."""

    flag: str
    key: str
    type: type
    default: Any
    help: str
    per_size: bool = True
    choices: tuple[str, ...] | None = None

    @property
    def dest(self) -> str:
        """The argparse destination (``--per-device-batch-size`` -> ``per_device_batch_size``)."""
        return self.flag[2:].replace("-", "_")

    def config_key(self, size: str = "<size>") -> str:
        """The dotted configuration key (``pretrain.sizes.<size>.learning_rate``)."""
        return f"pretrain.sizes.{size}.{self.key}" if self.per_size else f"pretrain.{self.key}"

    def value(self, config: dict[str, Any], size: str) -> Any:
        """This parameter's value in a (schema-validated, defaults filled) workflow configuration."""
        pre = config["pretrain"]
        return pre["sizes"][size][self.key] if self.per_size else pre[self.key]


#: the schedule, batch and optimiser, in the order the workflow writes them (before the objective's options)
RECIPE: tuple[RecipeFlag, ...] = (
    RecipeFlag("--max-steps", "max_steps", int, None,
               "steps of the FULL run (defines the LR schedule); default 250k small, 500k base"),
    RecipeFlag("--warmup-steps", "warmup_steps", int, None, "default 2.5k small, 10k base"),
    RecipeFlag("--per-device-batch-size", "per_device_batch_size", int, 8, "sequences per device batch (micro-batch)"),
    RecipeFlag("--grad-accum", "grad_accum", int, 1,
               "micro-batches per optimizer step (global batch = per-device x accum x processes)"),
    RecipeFlag("--lr", "learning_rate", float, 1e-4, "peak learning rate of AdamW (linear warmup and decay)"),
    RecipeFlag("--weight-decay", "weight_decay", float, 0.01, "AdamW weight decay"),
    RecipeFlag("--mlm-probability", "mlm_probability", float, MLM_PROBABILITY,
               "share of real tokens selected for MLM (80/10/10 corruption)", per_size=False),
)

#: written after the objective's options
RECIPE_AFTER_OBJECTIVE: tuple[RecipeFlag, ...] = (
    RecipeFlag("--precision", "precision", str, "auto", "auto: bf16 on GPUs that support it, else fp16 on GPU, "
               "fp32 on CPU", choices=("auto", "fp32", "bf16", "fp16")),
)
