"""Model configurations of the presets (``tiny``, ``small``, ``base``) for each encoder family.

:func:`bert_config` is the suite's BERT (the paper's model); :func:`encoder_config` gives the same
preset as a RoBERTa or ModernBERT configuration built by transformers itself (``AutoConfig.for_model``),
so the model classes are transformers' own (``RobertaForMaskedLM``, ``ModernBertForMaskedLM``) and no
modeling code is copied. Every family keeps the preset's layers, hidden size and heads and the suite's
WordPiece vocabulary; what differs is the architecture (``taco.architectures.ARCHITECTURES``):

- ``roberta``: BERT's layers; position ids start at ``padding_idx + 1`` (RoBERTa's
  ``create_position_ids_from_input_ids``), so ``max_position_embeddings`` = 512 + pad id + 1 (RoBERTa's
  own 514 with its pad id 1). ``type_vocab_size`` stays 2: the suite's WordPiece tokenizer gives segment
  ids to sentence pairs (RoBERTa's checkpoints have 1).
- ``modernbert``: pre-norm, RoPE, GeGLU FFN of width :data:`taco.architectures.MODERNBERT_INTERMEDIATE` (2/3 of
  BERT's, the same FFN weights), ``layer_types`` set explicitly (every third layer global from the first,
  ModernBERT's ``global_attn_every_n_layers=3``; transformers 5.24 derives them from that number when
  absent) and ``local_attention`` 128 (a window of +-64 tokens); no dropout (ModernBERT's defaults).
  ``ModernBertConfig``'s special ids default to its own tokenizer's (pad 50283, cls/bos 50281, sep/eos
  50282): they are set from the run's tokenizer, since ``pad_token_id`` is the embedding's ``padding_idx``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from taco.architectures import ARCHITECTURES, MODERNBERT_INTERMEDIATE
from taco.registry import PRESET_SHAPES

__all__ = ["SIZES", "MAX_POSITIONS", "MODERNBERT_GLOBAL_EVERY", "MODERNBERT_LOCAL_ATTENTION", "bert_config",
           "encoder_config", "special_token_ids"]

SIZES: tuple[str, ...] = tuple(PRESET_SHAPES)
#: the longest sequence every preset takes (BERT's 512)
MAX_POSITIONS = 512
#: ModernBERT: a global-attention layer every this many layers, from the first (ModernBERT's default)
MODERNBERT_GLOBAL_EVERY = 3
#: ModernBERT: the local layers' attention window in tokens (ModernBERT's default; +-64 each side)
MODERNBERT_LOCAL_ATTENTION = 128


def _check(size: str, vocab_size: int) -> None:
    if size not in PRESET_SHAPES:
        raise ValueError(f"unknown model size {size!r}; valid sizes: {', '.join(SIZES)}")
    if not isinstance(vocab_size, int) or vocab_size <= 0:
        raise ValueError(f"vocab_size must be a positive int, got {vocab_size!r}")


def bert_config(size: str, vocab_size: int, **overrides: Any):
    """``BertConfig`` of a preset size (``tiny``, ``small``, ``base``), max positions 512.

    ``overrides`` are any ``BertConfig`` fields (e.g. ``hidden_dropout_prob=0.0``,
    ``attn_implementation="eager"``). Raises ValueError for an unknown size or a bad vocab_size.
    """
    from transformers import BertConfig

    _check(size, vocab_size)
    kwargs: dict[str, Any] = dict(PRESET_SHAPES[size], vocab_size=vocab_size, max_position_embeddings=MAX_POSITIONS)
    kwargs.update(overrides)
    attn = kwargs.pop("attn_implementation", None)
    config = BertConfig(**kwargs)
    if attn is not None:
        config._attn_implementation = attn
    return config


def special_token_ids(tokenizer: Any) -> dict[str, int]:
    """``{"pad", "cls", "sep"}`` ids of a tokenizer (the suite's WordPiece: [PAD], [CLS], [SEP]).

    Raises ValueError naming the missing token."""
    ids = {"pad": tokenizer.pad_token_id, "cls": tokenizer.cls_token_id, "sep": tokenizer.sep_token_id}
    missing = [k for k, v in ids.items() if v is None]
    if missing:
        raise ValueError(f"tokenizer has no {', '.join(missing)} token; the encoder configs need pad, cls and sep")
    return {k: int(v) for k, v in ids.items()}


def encoder_config(size: str, vocab_size: int, architecture: str = "bert",
                   special_ids: Mapping[str, int] | None = None, **overrides: Any):
    """The configuration of a preset in an encoder family (module docstring).

    Args:
        size: preset (``tiny``, ``small``, ``base``).
        vocab_size: V of the run's tokenizer.
        architecture: ``bert`` (:func:`bert_config`, unchanged), ``roberta`` or ``modernbert``.
        special_ids: ``{"pad", "cls", "sep"}`` ids (:func:`special_token_ids`); required for roberta
            and modernbert (their configs' defaults are their own tokenizers'), unused for bert.
        **overrides: config fields (``attn_implementation`` included).

    Raises:
        ValueError: unknown architecture or size, bad vocab_size, missing special ids.
    """
    if architecture not in ARCHITECTURES:
        raise ValueError(f"unknown architecture {architecture!r}; valid: {', '.join(ARCHITECTURES)}")
    if architecture == "bert":
        return bert_config(size, vocab_size, **overrides)
    _check(size, vocab_size)
    if not special_ids or any(k not in special_ids for k in ("pad", "cls", "sep")):
        raise ValueError(f"architecture {architecture!r} needs special_ids with pad, cls and sep "
                         "(taco.model.configs.special_token_ids(tokenizer))")
    from transformers import AutoConfig

    shape = PRESET_SHAPES[size]
    pad, cls, sep = int(special_ids["pad"]), int(special_ids["cls"]), int(special_ids["sep"])
    if architecture == "roberta":
        kwargs: dict[str, Any] = dict(shape, vocab_size=vocab_size, max_position_embeddings=MAX_POSITIONS + pad + 1,
                                      type_vocab_size=2, pad_token_id=pad, bos_token_id=cls, eos_token_id=sep)
    else:
        n = shape["num_hidden_layers"]
        kwargs = dict(
            num_hidden_layers=n, hidden_size=shape["hidden_size"], num_attention_heads=shape["num_attention_heads"],
            intermediate_size=MODERNBERT_INTERMEDIATE[size], vocab_size=vocab_size,
            max_position_embeddings=MAX_POSITIONS, pad_token_id=pad, bos_token_id=cls, eos_token_id=sep,
            cls_token_id=cls, sep_token_id=sep, local_attention=MODERNBERT_LOCAL_ATTENTION,
            layer_types=["full_attention" if i % MODERNBERT_GLOBAL_EVERY == 0 else "sliding_attention"
                         for i in range(n)])
    kwargs.update(overrides)
    attn = kwargs.pop("attn_implementation", None)
    config = AutoConfig.for_model(architecture, **kwargs)
    if attn is not None:
        config._attn_implementation = attn
    return config


def dropout_overrides(architecture: str, dropout: float) -> dict[str, float]:
    """The config fields that set an encoder family's dropout to ``dropout`` (``pretrain.sizes.<size>.dropout``):
    BERT and RoBERTa ``hidden_dropout_prob`` and ``attention_probs_dropout_prob``; ModernBERT
    ``embedding_dropout``, ``attention_dropout`` and ``mlp_dropout`` (transformers' field names). ValueError for
    an unknown family."""
    if architecture in ("bert", "roberta"):
        return {"hidden_dropout_prob": float(dropout), "attention_probs_dropout_prob": float(dropout)}
    if architecture == "modernbert":
        return {"embedding_dropout": float(dropout), "attention_dropout": float(dropout), "mlp_dropout": float(dropout)}
    raise ValueError(f"unknown architecture {architecture!r}; valid: {', '.join(ARCHITECTURES)}")


def config_from_tokenizer(tokenizer: Any, architecture: str = "bert", size: str = "tiny", **overrides: Any):
    """A family's configuration for a tokenizer: the preset ``size``'s shape, ``vocab_size`` = len(tokenizer)
    and the tokenizer's own pad / cls / sep ids (:func:`encoder_config` with :func:`special_token_ids`).

    What it spares a user: ``RobertaConfig``'s default ``pad_token_id=1`` silently disagreeing with a
    tokenizer whose ``[PAD]`` is 0, and a bare ``ModernBertConfig(vocab_size=...)`` failing inside
    transformers ("Padding_idx must be within num_embeddings"). ``overrides``: any config field.
    ValueError for an unknown family or size, or a tokenizer without pad, cls or sep."""
    return encoder_config(size, len(tokenizer), architecture, special_token_ids(tokenizer), **overrides)
