"""Pre-training objectives of the paper and the MLM corruption they share.

Registry (the names are used in configs and output paths):

==================  ==========================================================================
``mlm``             MLM only (BERT, Devlin et al. 2019): 15% of real tokens selected, 80/10/10.
``taco``            MLM + 1.0 x token-alignment contrastive (TC) loss at every real position
                    (Fu et al. 2022, Eq. 9-10; the paper's method).
``taco_concentrated`` MLM + TC only at the MLM-selected positions (paper Sec. 5, "concentrated TACO").
``taco_unmasked``   MLM + TC only at the real positions not selected by MLM (third position flag of
                    the official code).
``mlm_tp``          "Extended MLM" (paper Sec. 5): MLM on the selected 15% plus token prediction
                    (cross-entropy to the original token) at every other real position; both parts
                    are reported (``mlm_loss``, ``tp_loss``). Weighting (``tp_mode``): ``separate``
                    (default, MLM + tp_weight x TP, each a mean) or ``joint`` (one mean CE over all
                    predicted positions); the paper does not say which it used.
==================  ==========================================================================

Defaults follow the paper / official code: TC weight 1.0, temperature tau = 0.07, window W = 5,
K = 50 negatives, MLM probability 0.15.
"""

from __future__ import annotations

from dataclasses import dataclass
import torch

from taco.registry import OBJECTIVE_SPECS, Objective

__all__ = [
    "Objective",
    "OBJECTIVES",
    "get_objective",
    "mask_tokens",
    "tc_anchor_mask",
    "DEFAULT_OBJECTIVE_PARAMS",
    "TP_MODES",
]

#: name -> Objective (defined once, as data, in taco.registry)
OBJECTIVES: dict[str, Objective] = OBJECTIVE_SPECS

#: how ``mlm_tp`` combines its MLM and token-prediction parts (``DEFAULT_OBJECTIVE_PARAMS["tp_mode"]``)
TP_MODES: tuple[str, ...] = ("separate", "joint")

#: Hyper-parameters of the objectives and their defaults (paper / official code).
DEFAULT_OBJECTIVE_PARAMS: dict[str, float | int | str] = {
    "tc_weight": 1.0,  # total loss = MLM + tc_weight * TC (official code: 1.0)
    "tc_temperature": 0.07,  # tau of the cosine-similarity score (paper Eq. 6)
    "tc_window": 5,  # W: positives at offset +-1..+-floor(W/2)
    "tc_num_negatives": 50,  # K negatives per anchor from the other sequences
    "tp_weight": 1.0,  # weight of the token-prediction part of mlm_tp (tp_mode "separate")
    # how mlm_tp combines its two parts (the paper does not say; the official code has no MLM+TP):
    # "separate": mean CE over the MLM-selected positions + tp_weight x mean CE over the other real
    #     positions (the default: the same structure as TACO's MLM + 1.0 x TC);
    # "joint": one mean CE over all predicted positions (selected and unselected together), where the
    #     ~85% unselected positions outweigh the MLM part about 5.7 : 1 (tp_weight must stay 1.0)
    "tp_mode": "separate",
    "mlm_probability": 0.15,  # recorded for provenance; the collator applies it
}


def get_objective(name: str) -> Objective:
    """Return the registered objective ``name``; ``ValueError`` lists the valid names otherwise."""
    try:
        return OBJECTIVES[name]
    except (KeyError, TypeError):
        raise ValueError(
            f"unknown objective {name!r}; valid objectives: {', '.join(OBJECTIVES)}"
        ) from None


def mask_tokens(
    input_ids: torch.Tensor,
    special_tokens_mask: torch.Tensor | None,
    attention_mask: torch.Tensor | None,
    mask_token_id: int,
    vocab_size: int,
    mlm_probability: float = 0.15,
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
    if not 0.0 <= mlm_probability <= 1.0:
        raise ValueError(f"mlm_probability must be in [0, 1], got {mlm_probability}")
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


def tc_anchor_mask(
    objective: Objective | str, attention_mask: torch.Tensor, labels: torch.Tensor | None
) -> torch.Tensor:
    """Bool (B, L): the TC anchors of ``objective`` (real positions; restricted by the MLM selection).

    ``labels`` (B, L) with -100 at unselected positions is required for ``masked``/``unmasked``.
    """
    obj = get_objective(objective) if isinstance(objective, str) else objective
    if not obj.uses_tc:
        raise ValueError(f"objective {obj.name!r} has no TC loss")
    real = attention_mask.bool()
    if obj.tc_positions == "all":
        return real
    if labels is None:
        raise ValueError(f"objective {obj.name!r} needs labels to find the {obj.tc_positions} positions")
    selected = labels != -100
    if obj.tc_positions == "masked":
        return real & selected
    return real & ~selected
