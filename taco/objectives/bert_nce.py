"""``bert_nce``: BERT-NCE (Kong et al., ICLR 2020, "A Mutual Information Maximization Perspective of
Language Representation Learning"), reimplemented from the description for the paper's Table 4.

Masked-token prediction with an InfoNCE loss instead of the full softmax: at each MLM-selected
position the final hidden state, through the MLM head's transform, is scored against the true
token's (input = output, tied) embedding and against sampled negative tokens; the loss is the
cross-entropy of the true token among the candidates. The score is the MLM head's logit (dot product
with the tied embedding plus the decoder bias) divided by a temperature, so the full-softmax MLM
loss of the same head stays comparable with every other objective's (the validation loss).

Options (group ``nce``; where Kong et al. give no detail it is an option, listed in
``taco deviations``):

- ``negative_source``: ``batch`` (default): the candidates are the distinct target tokens of the device
  batch, so every other masked token of the batch is a negative (in-batch negatives, no extra
  sampling); ``vocabulary``: those plus ``num_negatives`` tokens drawn uniformly from the vocabulary.
- ``num_negatives``: K tokens drawn from the vocabulary per device batch (``vocabulary`` only).
- ``temperature``: divides the scores (1.0: the plain dot-product critic of Kong et al.'s InfoNCE).

The logged ``mlm_loss`` is the full-softmax cross-entropy of the same head at the same positions,
computed without gradient (a diagnostic; ``nce_loss`` is what is trained).
"""

from __future__ import annotations

from typing import Any

from taco.objectives.base import Objective, head_flops
from taco.parameters import objective_option

__all__ = ["DECLARED", "OPTIONS", "NEGATIVE_SOURCES", "nce_loss"]

#: where BERT-NCE's negative tokens come from
NEGATIVE_SOURCES: tuple[str, ...] = ("batch", "vocabulary")

#: Kong et al. (2020): Table 4 of Fu et al. (2022) compares TACO with these numbers cited from it
CITATION = "Kong et al. (ICLR 2020), reimplemented from the description"

OPTIONS = (
    objective_option("nce", "negative_source", "nce_negatives", "batch",
                     "where BERT-NCE's negatives come from: batch = the other masked tokens' targets of the device "
                     "batch; vocabulary = those plus num_negatives tokens drawn uniformly from the vocabulary",
                     choices=NEGATIVE_SOURCES, flag="--nce-negatives"),
    objective_option("nce", "num_negatives", "nce_num_negatives", 1024,
                     "K tokens drawn uniformly from the vocabulary per device batch (negative_source: vocabulary)",
                     minimum=1),
    objective_option("nce", "temperature", "nce_temperature", 1.0, "temperature dividing the InfoNCE scores (> 0)",
                     exclusive_minimum=0),
)


def nce_loss(model: Any, sequence: Any, batch: dict[str, Any], options: dict[str, Any],
             generator: Any = None) -> tuple[Any, Any]:
    """InfoNCE masked-token loss and the (no-gradient) full-softmax MLM loss.

    Args:
        model: ``PreTrainingModel`` (its ``cls.predictions`` head: transform, tied decoder, bias).
        sequence: (B, L, H) last hidden states.
        batch: ``labels`` (B, L), original id at the MLM-selected positions, -100 elsewhere.
        options: ``nce_negatives``, ``nce_num_negatives``, ``nce_temperature``.
        generator: optional ``torch.Generator`` for the vocabulary draws (global RNG otherwise).

    Returns:
        ``(nce, mlm)``: scalar fp32 tensors (nats). With C the sorted distinct candidate ids (the
        batch's targets, plus K uniform draws for ``vocabulary``): ``nce = mean_i [logsumexp_c s(i, c)
        - s(i, y_i)]`` with ``s(i, c) = (t(h_i) . E_c + b_c) / temperature``. A graph-connected 0 when
        no position is selected.
    """
    import torch
    import torch.nn.functional as F

    labels = batch["labels"]
    selected = labels != -100
    head = model.cls.predictions
    transformed = head.transform(sequence[selected])  # (P, H)
    targets = labels[selected]  # (P,)
    if targets.numel() == 0:
        zero = transformed.sum() * 0.0
        return zero, zero.detach()
    candidates = targets
    if options["nce_negatives"] == "vocabulary":
        drawn = torch.randint(head.decoder.weight.shape[0], (int(options["nce_num_negatives"]),),
                              generator=generator, device="cpu" if generator is None else generator.device)
        candidates = torch.cat([targets, drawn.to(targets.device)])
    candidates = torch.unique(candidates)  # sorted, distinct: a target is never its own negative twice
    target_index = torch.searchsorted(candidates, targets)  # (P,)
    weight = head.decoder.weight[candidates]  # (C, H), tied to the input embeddings
    bias = head.decoder.bias[candidates] if head.decoder.bias is not None else head.bias[candidates]
    scores = (transformed @ weight.t() + bias).float() / float(options["nce_temperature"])  # (P, C)
    nce = F.cross_entropy(scores, target_index)
    with torch.no_grad():
        mlm = F.cross_entropy(head.decoder(transformed).float(), targets)
    return nce, mlm


def nce_terms(model: Any, batch: dict[str, Any], outputs: Any, options: dict[str, Any],
              generator: Any = None) -> dict[str, Any]:
    """``{"loss": nce, "mlm": full-softmax diagnostic, "nce"}`` (scalar tensors)."""
    nce, mlm = nce_loss(model, outputs.last_hidden_state, batch, options, generator)
    return {"loss": nce, "mlm": mlm, "nce": nce}


def nce_flops(shape, seq_len, vocab_size, options) -> float:
    """Model FLOPs of the training step's head: the MLM head's transform and scores at the selected
    positions (``mlm_probability``),
    forward + backward (``head_flops``), counted as if every vocabulary entry were a candidate (an
    upper bound: the candidates are the batch's distinct targets, at most the vocabulary).

    Only what is computed with gradient is training compute: the full-softmax diagnostic ``mlm_loss``
    (:func:`nce_loss`, under ``torch.no_grad``; forward only, ``2 p H V`` per token, 4.9% of an MLM
    step at the small preset and 256-token blocks) is left out.
    """
    return head_flops(shape, vocab_size, options["mlm_probability"])


DECLARED = (
    Objective("bert_nce", "BERT-NCE", "masked-token prediction with InfoNCE over sampled negatives "
              "(Kong et al. 2020; this suite's reimplementation)", ("mlm", "nce"), nce_terms, nce_flops,
              options=("nce",), style=dict(color="#882255", marker="P", linestyle="--"),
              reimplemented_from=CITATION,
              # reaches BERT's own modules (model.cls.predictions, model.bert)
              architectures=("bert",)),
)
