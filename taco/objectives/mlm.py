"""``mlm``: masked language modeling (BERT, Devlin et al. 2019), and the MLM term every objective shares.

15% of the real tokens are selected, 80/10/10 corrupted (``taco.model.masking.mask_tokens``), and
the MLM head predicts the original token at the selected positions only (sparse prediction, as in
cramming; the official code's loss counts the same positions). The loss is the mean cross-entropy over
the selected positions (nats).
"""

from __future__ import annotations

from typing import Any

from taco.objectives.base import Objective, head_flops

__all__ = ["DECLARED", "predict_tokens", "masked_mean"]


def masked_mean(values: Any, mask: Any) -> Any:
    """Mean of ``values[mask]`` (values, mask: (P,)); a graph-connected 0 when ``mask`` is empty.

    Written without a host sync (no ``mask.any()``), so it is cheap on CUDA.
    """
    m = mask.to(values.dtype)
    return (values * m).sum() / m.sum().clamp_min(1.0)


def predict_tokens(model: Any, sequence: Any, batch: dict[str, Any], predict_unselected: bool = False):
    """Cross-entropy of the MLM head at the positions that need a prediction.

    Args:
        model: a pre-training model of ``taco.model.modeling`` (its family's MLM head, ``mlm_logits``).
        sequence: (B, L, H) last hidden states.
        batch: ``labels`` (B, L), original id at MLM-selected positions, -100 elsewhere;
            ``attention_mask`` (B, L); ``original_input_ids``/``input_ids`` (B, L) for the targets of
            the unselected positions.
        predict_unselected: also predict the real unselected positions (MLM+TP's token prediction).

    Returns:
        ``(ce, is_mlm)``: per-prediction cross-entropy (P,) in fp32 and a bool (P,) marking the
        MLM-selected ones (the rest are token-prediction positions).
    """
    import torch
    import torch.nn.functional as F

    labels = batch["labels"]
    selected = labels != -100  # (B, L)
    if predict_unselected:
        real = batch["attention_mask"].bool()
        tp_mask = real & ~selected
        predict = selected | tp_mask
        source = batch.get("original_input_ids")
        source = source if source is not None else batch["input_ids"]
        targets = torch.where(selected, labels, source)
    else:
        predict = selected
        targets = labels
    # sparse prediction: vocabulary projection only where a prediction is needed
    pred_logits = model.mlm_logits(sequence[predict])  # (P, V)
    pred_targets = targets[predict]  # (P,)
    ce = F.cross_entropy(pred_logits.float(), pred_targets, reduction="none")  # (P,)
    return ce, selected[predict]


def mlm_terms(model: Any, batch: dict[str, Any], outputs: Any, options: dict[str, Any],
              generator: Any = None) -> dict[str, Any]:
    """``{"loss", "mlm"}``: the MLM mean cross-entropy over the selected positions (scalar tensors)."""
    ce, is_mlm = predict_tokens(model, outputs.last_hidden_state, batch)
    mlm_loss = masked_mean(ce, is_mlm)
    return {"loss": mlm_loss, "mlm": mlm_loss}


def mlm_flops(shape, seq_len, vocab_size, options) -> float:
    """The MLM head at the selected positions (``mlm_probability``, 15%)."""
    return head_flops(shape, vocab_size, options["mlm_probability"])


DECLARED = (
    Objective("mlm", "MLM", "masked language modeling only (BERT)", ("mlm",), mlm_terms, mlm_flops,
              style=dict(color="#D55E00", marker="o", linestyle="-")),
)
