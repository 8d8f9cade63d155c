"""The fine-tuning recipe of ``taco finetune`` that the configuration sets (``finetune.*``), each
parameter declared once (:class:`taco.parameters.Parameter`): the flag, its default (the same by hand and
in the workflow), its check and the config schema's property (``tests/test_parameters.py``). The
learning rate and epochs are per model preset (``finetune.hyperparameters``,
:data:`taco.registry.FINETUNE_HYPERPARAMETERS`). Values of the official ``run_glue.sh``. Torch-free.
"""

from __future__ import annotations

from taco.parameters import Parameter

__all__ = ["FINETUNE_RECIPE", "FINETUNE_PARAMETERS"]

FINETUNE_RECIPE: tuple[Parameter, ...] = (
    Parameter("--max-length", "finetune.max_length", "max_length", 128,
              "tokens per example (longer ones are truncated)", minimum=8),
    Parameter("--batch-size", "finetune.batch_size", "batch_size", 32, "training batch size", minimum=1,
              maximum=65536),
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

#: name -> declaration
FINETUNE_PARAMETERS: dict[str, Parameter] = {p.name: p for p in FINETUNE_RECIPE}
