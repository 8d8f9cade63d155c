"""The declaration of an encoder family (:class:`Family`), torch-free.

A family module (``taco/families/<name>.py``) declares ``DECLARED = Family(...)``: everything the suite needs
to know about one encoder built from transformers' own classes, so that a new family is one file (found by
the scan of :mod:`taco.families`, or through its entry-point group):

- ``name``: the value of ``pretrain.sizes.<size>.architecture`` and ``taco pretrain --architecture``.
- ``label``: the printed name (tables, the efficiency page, the deviations).
- ``model_type``: transformers' ``config.model_type`` (``AutoConfig.for_model``; a saved checkpoint's
  ``config.json`` names it, and :func:`taco.families.family_of_model_type` maps it back).
- ``native_class``: the transformers masked-LM class the pre-training model subclasses and a checkpoint is
  saved as (``config.json`` ``architectures``), so it loads without this package.
- ``config_kwargs``: ``(preset, shape, vocab_size, special_ids) -> dict`` of config fields for a preset
  (``shape``: :data:`taco.registry.PRESET_SHAPES`'s layers, H, heads, I; ``special_ids``: the tokenizer's
  ``pad``/``cls``/``sep`` ids, or None where ``needs_special_ids`` is False).
- ``dropout_fields``: the config fields that ``pretrain.sizes.<size>.dropout`` sets.
- ``encoder_matmul_params``: ``(preset, shape) -> int`` weights of the encoder layers' matrix products (the
  model FLOPs count, :mod:`taco.flops`); default BERT's ``n_layers * (4 H^2 + 2 H I)``.
- ``encode``: ``(model, input_ids, attention_mask, token_type_ids, output_hidden_states, **kwargs)`` -> the
  encoder's output (``last_hidden_state`` (B, L, H); ``hidden_states[0]`` the embedding output).
- ``mlm_logits``: ``(model, hidden (..., H)) -> logits (..., V)``, the family's own MLM head.
- ``model_class_name``: the pre-training model class's name in :mod:`taco.model.modeling`.
- ``recipe``: the family's own pre-training recipe from its paper (the deviations page; empty for BERT, the
  paper's model).
- ``attention_kernels``: the ``attn_implementation`` values the family runs under (``taco pretrain
  --attn-implementation``; the first is the default).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["Family", "MAX_POSITIONS", "SPECIAL_IDS", "bert_matmul_params"]

#: the longest sequence every preset of every family takes (BERT's 512 positions)
MAX_POSITIONS = 512
#: the special token ids a family's config may need from the run's tokenizer
SPECIAL_IDS: tuple[str, ...] = ("pad", "cls", "sep")


def bert_matmul_params(preset: str, shape: Mapping[str, int]) -> int:
    """``n_layers * (4 H^2 + 2 H I)``: Q, K, V, O and a two-matrix FFN per layer, no biases (BERT, RoBERTa)."""
    h, i = shape["hidden_size"], shape["intermediate_size"]
    return shape["num_hidden_layers"] * (4 * h * h + 2 * h * i)


@dataclass(frozen=True)
class Family:
    """One encoder family (fields: module docstring)."""

    name: str
    label: str
    model_type: str
    native_class: str
    config_kwargs: Callable[[str, Mapping[str, int], int, Mapping[str, int] | None], dict[str, Any]]
    dropout_fields: tuple[str, ...]
    encode: Callable[..., Any]
    mlm_logits: Callable[[Any, Any], Any]
    model_class_name: str
    needs_special_ids: bool = True
    encoder_matmul_params: Callable[[str, Mapping[str, int]], int] = bert_matmul_params
    recipe: str = ""
    attention_kernels: tuple[str, ...] = ("sdpa", "eager")

    def __post_init__(self) -> None:
        if not self.name.isidentifier() or self.name != self.name.lower():
            raise ValueError(f"family name {self.name!r}: a lower-case identifier (it is a config value and a flag)")
        if not self.attention_kernels:
            raise ValueError(f"family {self.name!r}: attention_kernels names at least one attn_implementation")
