"""The pre-training recipe of ``taco pretrain``, each parameter declared once (:class:`taco.parameters.Parameter`).

From this table come the ``taco pretrain`` flags (:func:`taco.training.pretrain.build_parser`), their
checks, the words the workflow writes for them (:meth:`taco.workflow.commands.Commands.pretrain_args`,
in this order) and the config schema's properties (``tests/test_parameters.py`` checks they agree). The
objective options (TC, TP, NCE, INFOWORD) are declared the same way, with their objective, in
:mod:`taco.objectives`. A default of ``None`` is the preset's (``taco.registry.PRETRAIN_SCHEDULE``),
for the command run by hand and for the workflow alike. Torch-free.
"""

from __future__ import annotations

from taco.families import DEFAULT_FAMILY, FAMILIES
from taco.objectives.base import MLM_PROBABILITY_PARAMETER
from taco.parameters import SIZE, Parameter

__all__ = ["RECIPE", "RECIPE_AFTER_OBJECTIVE"]

_SIZE = f"pretrain.sizes.{SIZE}"

#: the pre-training seed of a command run by hand (``taco pretrain --seed``, ``taco init --seed``); the workflow
#: always passes the run's own (config ``seed`` or ``pretrain.seeds``)
DEFAULT_PRETRAIN_SEED = 42

#: the schedule, batch and optimiser, in the order the workflow writes them (before the objective's options)
RECIPE: tuple[Parameter, ...] = (
    # added after runs existed: written (and hashed) only when not BERT, so BERT's commands stay the same
    Parameter("--architecture", f"{_SIZE}.architecture", "architecture", DEFAULT_FAMILY,
              "encoder family built from transformers' own classes (one module each in taco/families/): bert (the paper's), "
              "roberta or modernbert; BERT-tiny's recipe and the run's WordPiece for all",
              choices=tuple(FAMILIES), pass_default=False),
    Parameter("--max-steps", f"{_SIZE}.max_steps", "max_steps", None,
              "steps of the FULL run (defines the LR schedule); default: the preset's (250k small, 500k base)",
              type=int, minimum=1),
    Parameter("--warmup-steps", f"{_SIZE}.warmup_steps", "warmup_steps", None,
              "linear warmup steps; default: the preset's (2.5k small, 10k base)", type=int, minimum=0),
    Parameter("--per-device-batch-size", f"{_SIZE}.per_device_batch_size", "per_device_batch_size", 32,
              "sequences per device batch (micro-batch)", minimum=1),
    Parameter("--grad-accum", f"{_SIZE}.grad_accum", "grad_accum", 1,
              "micro-batches per optimizer step (global batch = per-device x accum x processes)", minimum=1),
    Parameter("--lr", f"{_SIZE}.learning_rate", "lr", 1e-4, "peak learning rate of AdamW (linear warmup and decay)",
              exclusive_minimum=0),
    Parameter("--weight-decay", f"{_SIZE}.weight_decay", "weight_decay", 0.01, "AdamW weight decay", minimum=0),
    MLM_PROBABILITY_PARAMETER,
    # added after runs existed: default None (the family's own: 0.1 for BERT and RoBERTa, 0 for ModernBERT),
    # written and hashed only when set, so every finished run keeps its command and hash
    Parameter("--dropout", f"{_SIZE}.dropout", "dropout", None,
              "dropout of the encoder (BERT/RoBERTa: hidden and attention; ModernBERT: embedding, attention and "
              "MLP); default: the family's own", type=float, minimum=0, exclusive_maximum=1),
)

#: written after the objective's options
RECIPE_AFTER_OBJECTIVE: tuple[Parameter, ...] = (
    Parameter("--precision", f"{_SIZE}.precision", "precision", "auto",
              "auto: bf16 on GPUs that support it, else fp16 on GPU, fp32 on CPU", choices=("auto", "fp32", "bf16", "fp16")),
)
