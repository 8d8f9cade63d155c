"""Model configurations of the presets (``tiny``, ``small``, ``base``) for each encoder family: one dispatcher
over the family modules (:mod:`taco.families`), as cramming's ``architectures/construction.py``.

:func:`encoder_config` builds a family's configuration with transformers itself (``AutoConfig.for_model`` of
the family's ``model_type`` with the fields of its ``config_kwargs``), so the model classes are transformers'
own and no modeling code is copied. Every family keeps the preset's layers, hidden size and heads and the
suite's WordPiece vocabulary; what differs is each family's module (RoBERTa's position offset, ModernBERT's
FFN width, layer types and special ids: their docstrings).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from taco.families import DEFAULT_FAMILY, get_family
from taco.families.base import SPECIAL_IDS
from taco.registry import PRESET_SHAPES

__all__ = ["SIZES", "bert_config", "encoder_config", "special_token_ids", "dropout_overrides", "config_from_tokenizer"]

SIZES: tuple[str, ...] = tuple(PRESET_SHAPES)


def _check(size: str, vocab_size: int) -> None:
    if size not in PRESET_SHAPES:
        raise ValueError(f"unknown model size {size!r}; valid sizes: {', '.join(SIZES)}")
    if not isinstance(vocab_size, int) or vocab_size <= 0:
        raise ValueError(f"vocab_size must be a positive int, got {vocab_size!r}")


def special_token_ids(tokenizer: Any) -> dict[str, int]:
    """``{"pad", "cls", "sep"}`` ids of a tokenizer (the suite's WordPiece: [PAD], [CLS], [SEP]).

    Raises ValueError naming the missing token."""
    ids = {"pad": tokenizer.pad_token_id, "cls": tokenizer.cls_token_id, "sep": tokenizer.sep_token_id}
    missing = [k for k, v in ids.items() if v is None]
    if missing:
        raise ValueError(f"tokenizer has no {', '.join(missing)} token; the encoder configs need pad, cls and sep")
    return {k: int(v) for k, v in ids.items()}


def encoder_config(size: str, vocab_size: int, architecture: str = DEFAULT_FAMILY,
                   special_ids: Mapping[str, int] | None = None, **overrides: Any):
    """The configuration of a preset in an encoder family.

    Args:
        size: preset (``tiny``, ``small``, ``base``).
        vocab_size: V of the run's tokenizer.
        architecture: a family of :data:`taco.families.FAMILIES` (``bert``, ``roberta``, ``modernbert``, ...).
        special_ids: ``{"pad", "cls", "sep"}`` ids (:func:`special_token_ids`); required by families whose
            configs default to their own tokenizers' ids (``needs_special_ids``: all but BERT).
        **overrides: config fields (``attn_implementation`` included: it must be one of the family's
            ``attention_kernels``).

    Raises:
        ValueError: unknown family or size, bad vocab_size, missing special ids, an attention kernel the
            family does not run under.
    """
    family = get_family(architecture)
    _check(size, vocab_size)
    if family.needs_special_ids and (not special_ids or any(k not in special_ids for k in SPECIAL_IDS)):
        raise ValueError(f"architecture {architecture!r} needs special_ids with pad, cls and sep "
                         "(taco.model.configs.special_token_ids(tokenizer))")
    from transformers import AutoConfig

    kwargs = family.config_kwargs(size, PRESET_SHAPES[size], vocab_size, special_ids)
    kwargs.update(overrides)
    attn = kwargs.pop("attn_implementation", None)
    if attn is not None and attn not in family.attention_kernels:
        raise ValueError(f"architecture {architecture!r} runs under attn_implementation "
                         f"{' or '.join(family.attention_kernels)}, not {attn!r} (taco/families/{architecture}.py)")
    config = AutoConfig.for_model(family.model_type, **kwargs)
    if attn is not None:
        config._attn_implementation = attn
    return config


def bert_config(size: str, vocab_size: int, **overrides: Any):
    """``BertConfig`` of a preset size, max positions 512 (:func:`encoder_config` of the ``bert`` family).

    ``overrides`` are any ``BertConfig`` fields (e.g. ``hidden_dropout_prob=0.0``,
    ``attn_implementation="eager"``). Raises ValueError for an unknown size or a bad vocab_size.
    """
    return encoder_config(size, vocab_size, "bert", **overrides)


def dropout_overrides(architecture: str, dropout: float) -> dict[str, float]:
    """The config fields that set an encoder family's dropout to ``dropout`` (``pretrain.sizes.<size>.dropout``;
    the family's ``dropout_fields``: BERT and RoBERTa ``hidden_dropout_prob`` and
    ``attention_probs_dropout_prob``, ModernBERT ``embedding_dropout``, ``attention_dropout`` and
    ``mlp_dropout``). ValueError for an unknown family."""
    return {f: float(dropout) for f in get_family(architecture).dropout_fields}


def config_from_tokenizer(tokenizer: Any, architecture: str = DEFAULT_FAMILY, size: str = "tiny", **overrides: Any):
    """A family's configuration for a tokenizer: the preset ``size``'s shape, ``vocab_size`` = len(tokenizer)
    and the tokenizer's own pad / cls / sep ids (:func:`encoder_config` with :func:`special_token_ids`).

    What it spares a user: ``RobertaConfig``'s default ``pad_token_id=1`` silently disagreeing with a
    tokenizer whose ``[PAD]`` is 0, and a bare ``ModernBertConfig(vocab_size=...)`` failing inside
    transformers ("Padding_idx must be within num_embeddings"). ``overrides``: any config field.
    ValueError for an unknown family or size, or a tokenizer without pad, cls or sep."""
    return encoder_config(size, len(tokenizer), architecture, special_token_ids(tokenizer), **overrides)


