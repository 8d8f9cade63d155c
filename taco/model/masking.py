"""BERT masking, shared by every objective (Devlin et al. 2019; HF ``DataCollatorForLanguageModeling``,
used by the official code): :func:`mask_tokens`."""

from __future__ import annotations

import torch

from taco.objectives.base import MLM_PROBABILITY


def check_selection_probability(mlm_probability: float) -> None:
    """ValueError unless ``mlm_probability`` lies in [0, 1], the masking kernel's range (a run's configured rate
    is narrower, (0, 1): :data:`taco.objectives.base.MLM_PROBABILITY_PARAMETER`; 1 selects every real token)."""
    if not 0.0 <= mlm_probability <= 1.0:
        raise ValueError(f"mlm_probability must be in [0, 1], got {mlm_probability}")


def mask_tokens(
    input_ids: torch.Tensor,
    special_tokens_mask: torch.Tensor | None,
    attention_mask: torch.Tensor | None,
    mask_token_id: int,
    vocab_size: int,
    mlm_probability: float = MLM_PROBABILITY,
    generator: torch.Generator | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """BERT masking (Devlin et al. 2019; HF ``DataCollatorForLanguageModeling``, used by the official code).

    Each real token (``attention_mask == 1`` and not special) is selected independently with
    probability ``mlm_probability``. Of the selected tokens, 80% become ``mask_token_id``, 10% a
    token drawn uniformly from ``[0, vocab_size)``, 10% stay unchanged. Special tokens and padding
    are never selected.

    Args:
        input_ids: LongTensor (B, L), the original ids (not modified).
        special_tokens_mask: bool/int tensor (B, L), 1 at special tokens; ``None`` means none.
        attention_mask: bool/int tensor (B, L), 1 at real tokens; ``None`` means all real.
        mask_token_id: id of ``[MASK]``.
        vocab_size: size of the vocabulary for the random replacements.
        mlm_probability: selection probability in [0, 1].
        generator: optional ``torch.Generator`` on ``input_ids.device`` for reproducible draws.

    Returns:
        ``(corrupted_ids, labels)``: LongTensors (B, L); ``labels`` holds the original id at the
        selected positions and -100 elsewhere.
    """
    if input_ids.dim() != 2:
        raise ValueError(f"input_ids must be (B, L), got shape {tuple(input_ids.shape)}")
    check_selection_probability(mlm_probability)
    if vocab_size <= 0:
        raise ValueError(f"vocab_size must be positive, got {vocab_size}")
    for name, t in (("special_tokens_mask", special_tokens_mask), ("attention_mask", attention_mask)):
        if t is not None and t.shape != input_ids.shape:
            raise ValueError(f"{name} shape {tuple(t.shape)} != input_ids shape {tuple(input_ids.shape)}")
    device = input_ids.device
    candidates = torch.ones_like(input_ids, dtype=torch.bool)
    if attention_mask is not None:
        candidates &= attention_mask.to(device).bool()
    if special_tokens_mask is not None:
        candidates &= ~special_tokens_mask.to(device).bool()

    u = torch.rand(input_ids.shape, generator=generator, device=device)
    selected = (u < mlm_probability) & candidates
    labels = torch.where(selected, input_ids, torch.full_like(input_ids, -100))

    # one more uniform decides the replacement: [0, .8) mask, [.8, .9) random, [.9, 1) keep
    v = torch.rand(input_ids.shape, generator=generator, device=device)
    random_ids = torch.randint(
        vocab_size, input_ids.shape, generator=generator, device=device, dtype=input_ids.dtype
    )
    corrupted = input_ids.clone()
    to_mask = selected & (v < 0.8)
    to_random = selected & (v >= 0.8) & (v < 0.9)
    corrupted[to_mask] = mask_token_id
    corrupted[to_random] = random_ids[to_random]
    return corrupted, labels
