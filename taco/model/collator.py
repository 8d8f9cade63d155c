"""Batch collator for pre-training: pads, masks (BERT 80/10/10) and keeps the original ids.

Works as a Hugging Face ``Trainer`` ``data_collator`` and as a plain ``DataLoader`` ``collate_fn``.
The official code uses HF ``DataCollatorForLanguageModeling``; this one does the same corruption
(via :func:`taco.model.masking.mask_tokens`) and additionally returns ``original_input_ids`` (targets
of the ``mlm_tp`` token prediction) and takes an optional ``torch.Generator`` for reproducibility.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch

from taco.model.masking import check_selection_probability, mask_tokens
from taco.objectives.base import MLM_PROBABILITY

__all__ = ["PreTrainingCollator"]


class PreTrainingCollator:
    """Collate ``[{"input_ids": [...]}, ...]`` into a masked pre-training batch.

    Args:
        tokenizer: a Hugging Face tokenizer with ``mask_token_id``, ``pad_token_id`` and
            ``all_special_ids`` (and ``len(tokenizer)`` for the random replacements).
        mlm_probability: selection probability (BERT and the paper: 0.15).
        generator: optional CPU ``torch.Generator``; draws use the global RNG otherwise.
        objective: optional objective (name or declaration) whose ``collate`` hook runs after the
            BERT masking with the same generator (INFOWORD masks an n-gram and adds its inputs);
            ``None`` or an objective without a hook: plain BERT masking.
        objective_params: the objective's parameters (``DEFAULT_OBJECTIVE_PARAMS`` names) for the hook.

    Calling it returns LongTensors (B, L), L = longest example: ``input_ids`` (corrupted),
    ``attention_mask`` (1 at real tokens, 0 at right padding), ``labels`` (original id at selected
    positions, -100 elsewhere), ``original_input_ids`` (uncorrupted, padded with ``pad_token_id``).
    Features may carry their own ``attention_mask`` / ``special_tokens_mask``; extra keys are ignored.
    """

    def __init__(self, tokenizer: Any, mlm_probability: float = MLM_PROBABILITY, generator: torch.Generator | None = None,
                 objective: Any = None, objective_params: Mapping[str, Any] | None = None):
        if getattr(tokenizer, "mask_token_id", None) is None:
            raise ValueError("the tokenizer has no mask token; MLM needs one")
        if getattr(tokenizer, "pad_token_id", None) is None:
            raise ValueError("the tokenizer has no pad token")
        check_selection_probability(mlm_probability)
        self.tokenizer = tokenizer
        self.mlm_probability = float(mlm_probability)
        self.generator = generator
        self.mask_token_id = int(tokenizer.mask_token_id)
        self.pad_token_id = int(tokenizer.pad_token_id)
        self.vocab_size = int(len(tokenizer))
        if isinstance(objective, str):
            from taco.objectives import get_objective

            objective = get_objective(objective)
        self.objective = objective
        from taco.objectives import DEFAULT_OBJECTIVE_PARAMS

        self.objective_params = {**DEFAULT_OBJECTIVE_PARAMS, **(objective_params or {})}
        self.special_ids = torch.tensor(sorted(set(int(i) for i in tokenizer.all_special_ids)), dtype=torch.long)

    def _pad(self, rows: Sequence[Sequence[int]], length: int, value: int) -> torch.Tensor:
        out = torch.full((len(rows), length), value, dtype=torch.long)
        for i, r in enumerate(rows):
            r = torch.as_tensor(r, dtype=torch.long)
            out[i, : r.numel()] = r
        return out

    def __call__(self, features: Sequence[Mapping[str, Any]]) -> dict[str, torch.Tensor]:
        if len(features) == 0:
            raise ValueError("cannot collate an empty list of examples")
        try:
            rows = [f["input_ids"] for f in features]
        except (KeyError, TypeError):
            raise ValueError("each example must be a mapping with an 'input_ids' list") from None
        lengths = [len(r) for r in rows]
        L = max(lengths)
        if L == 0:
            raise ValueError("all examples are empty")
        if all(lengths[0] == n for n in lengths) and all(isinstance(r, torch.Tensor) for r in rows):
            original = torch.stack([r.long() for r in rows])
        else:
            original = self._pad(rows, L, self.pad_token_id)
        if all("attention_mask" in f for f in features):
            attention_mask = self._pad([f["attention_mask"] for f in features], L, 0)
        else:
            attention_mask = (torch.arange(L).unsqueeze(0) < torch.tensor(lengths).unsqueeze(1)).long()
        if all("special_tokens_mask" in f for f in features):
            special = self._pad([f["special_tokens_mask"] for f in features], L, 1).bool()
        else:
            special = torch.isin(original, self.special_ids)
        corrupted, labels = mask_tokens(
            original,
            special,
            attention_mask,
            self.mask_token_id,
            self.vocab_size,
            self.mlm_probability,
            generator=self.generator,
        )
        batch = {
            "input_ids": corrupted,
            "attention_mask": attention_mask,
            "labels": labels,
            "original_input_ids": original,
        }
        if self.objective is not None and self.objective.collate is not None:
            batch = self.objective.collate(batch, self.tokenizer, self.generator, self.objective_params)
        return batch
