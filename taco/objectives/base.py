"""The interface every pre-training objective implements: a torch-free declaration.

An objective is one module of :mod:`taco.objectives` that defines ``DECLARED`` (a tuple of
:class:`Objective`) and, when it adds options, ``OPTIONS`` (a tuple of parameters made by
:func:`taco.parameters.objective_option`). The
declaration is plain data plus callables whose bodies import torch lazily, so the report side,
the workflow and ``taco plan`` import it without torch (``tests/test_boundaries.py``).

What an objective declares, and who reads it:

- ``name``, ``label``, ``style``, ``description``: configs, output paths, tables, figures
  (``taco.report.style``), the deviations report.
- ``options``: the option groups it uses (each option declared once with
  :func:`taco.parameters.objective_option`, beside the loss term it belongs to: the TC options in
  :mod:`taco.tc.options`). From them come the ``taco pretrain`` flags, the config schema section
  ``pretrain.<group>``, the workflow's command words, the model config keys ``taco_<name>``, the
  defaults and the checks (:class:`taco.parameters.Parameter`).
- ``terms``: the loss terms it logs (``mlm``, ``tc``, ``tp``, ``nce``, ``dim``): each is a
  ``<term>_loss`` field of the model output and a column of the training log.
- ``loss_terms``: ``(model, batch, outputs, options, generator) -> {"loss": total, "<term>": value,
  ...}``, the objective's losses from the encoder output (``taco.model.modeling`` calls it).
- every hook (``loss_terms``, ``collate``, ``flops_per_token``) receives ``options``: parameter name ->
  value for every option of every objective and ``mlm_probability`` (the run's values, defaults
  filled in), never the model config.
- ``collate``: optional ``(batch, tokenizer, generator, options) -> batch``, run by the pre-training
  collator after BERT masking (INFOWORD masks a contiguous n-gram here and adds its inputs).
- ``batch_keys``: extra model inputs ``collate`` adds (popped before the encoder sees them).
- ``min_device_batch``: sequences per device batch it needs (2 when negatives come from the other
  sequences: TC, INFOWORD's n-grams).
- ``flops_per_token``: ``(shape, seq_len, vocab_size, options) -> FLOPs`` the objective adds to the
  shared encoder count (``taco.flops``): its head (at ``options["mlm_probability"]``) and extra terms,
  forward + backward.
- ``architectures``: the encoder families it works on (``taco.families.FAMILIES``; default every one); the TACO family
  needs only what every encoder gives (embedding output, last hidden state, the model's MLM head), BERT-NCE
  and INFOWORD reach BERT's own modules and are BERT-only.
- ``reimplemented_from``: the citation when the objective is this suite's reimplementation of
  another paper's baseline (Table 4's BERT-NCE and INFOWORD), empty for the paper's own objectives.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from taco.parameters import Parameter
from taco.families import FAMILIES

#: a run's MLM selection probability, declared once: flag ``--mlm-probability`` (``taco pretrain``, ``taco init``,
#: ``taco dynamics``), config ``pretrain.mlm_probability``, in (0, 1). Default: BERT's 0.15 (Devlin et al. 2019;
#: the official TACO code), also the validation loss's masks and the FLOPs count's share of positions the MLM
#: head predicts (each objective gets the run's value in ``options``). The masking kernel
#: (:func:`taco.model.masking.mask_tokens`) accepts [0, 1]: 1 selects every real token (the context probe).
MLM_PROBABILITY_PARAMETER = Parameter("--mlm-probability", "pretrain.mlm_probability", "mlm_probability", 0.15,
                                      "share of real tokens selected for MLM (80/10/10 corruption)",
                                      exclusive_minimum=0, exclusive_maximum=1)
MLM_PROBABILITY: float = MLM_PROBABILITY_PARAMETER.default


LossTerms = Callable[..., dict[str, Any]]
Collate = Callable[..., dict[str, Any]]
FlopsPerToken = Callable[[Mapping[str, int], int, int, Mapping[str, Any]], float]


@dataclass(frozen=True)
class Objective:
    """One pre-training objective (see the module docstring for who reads each field).

    Attributes:
        name: registry key (configs, output paths, ``--objective``).
        label: printed name in tables and figures (the paper's wording).
        description: one line for humans.
        terms: loss terms it logs, ``("mlm",)`` first for every objective of this suite.
        loss_terms: the losses from the encoder output.
        options: option groups it uses (``("tc",)``); ``mlm_probability`` is shared by all.
        style: matplotlib ``color``/``marker``/``linestyle`` of its curves.
        collate: optional batch hook after BERT masking.
        batch_keys: model inputs ``collate`` adds.
        min_device_batch: sequences per device batch it needs.
        flops_per_token: FLOPs per token it adds to the encoder's (head and extra terms).
        reimplemented_from: citation of the paper whose baseline this reimplements ("" if none).
        needs_hidden_states: the loss reads ``outputs.hidden_states`` (TC: the embedding output).
        architectures: encoder families it works on (default: every one).
    """

    name: str
    label: str
    description: str
    terms: tuple[str, ...]
    loss_terms: LossTerms
    flops_per_token: FlopsPerToken
    options: tuple[str, ...] = ()
    style: Mapping[str, Any] = field(default_factory=dict)
    collate: Collate | None = None
    batch_keys: tuple[str, ...] = ()
    min_device_batch: int = 1
    reimplemented_from: str = ""
    needs_hidden_states: bool = False
    architectures: tuple[str, ...] = tuple(FAMILIES)

    def __post_init__(self) -> None:
        if not self.terms or self.terms[0] != "mlm":
            raise ValueError(f"objective {self.name!r}: terms must start with 'mlm' (the validation loss)")


def head_flops(shape: Mapping[str, int], vocab_size: int, predicted_share: float) -> float:
    """Training FLOPs per token of the MLM head at a share of positions: ``6 p (H^2 + H V)``
    (transform H x H and decoder H x V, forward + backward = 3 x forward); ``predicted_share`` is the
    run's ``mlm_probability`` for sparse prediction, 1.0 for a dense head."""
    h = shape["hidden_size"]
    return 6.0 * predicted_share * (h * h + h * vocab_size)
