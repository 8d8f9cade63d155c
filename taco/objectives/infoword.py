"""``infoword``: INFOWORD (Kong et al., ICLR 2020), reimplemented from the description for the paper's
Table 4: BERT-NCE plus a span term that maximizes the mutual information between a global sentence
representation and an n-gram of the sentence (a Deep InfoMax-style InfoNCE).

Per sequence of the batch, after BERT masking (``collate``):

- one contiguous n-gram x_{i:j} of real, non-special tokens is chosen (length uniform in
  ``[span_min, span_max]``, start uniform among the places it fits) and every token of it is replaced
  by ``[MASK]`` (its original ids join the MLM labels, so BERT-NCE predicts them too): the masked
  sentence x^_{i:j};
- the n-gram alone, framed ``[CLS] x_{i:j} [SEP]``, is a second, short input (``span_input_ids``,
  ``span_attention_mask``: (B, span_max + 2)).

The encoder runs on both (one extra forward of the short n-gram input). With g(.) the first token's
final hidden state, the span term is ``mean_b [logsumexp_b' s(b, b') - s(b, b)]`` with
``s(b, b') = g(x^_b) . g(ngram_b') / temperature``: the n-grams of the other sequences of the device
batch are the negatives. The loss is ``BERT-NCE + weight x span term`` (lambda).

Options (group ``infoword``; not available in the texts at hand, so exposed and listed in
``taco deviations``): ``weight`` (lambda, 1.0), ``span_min``/``span_max`` (1 and 5 tokens),
``temperature`` (1.0, the plain dot-product critic). The BERT-NCE options (group ``nce``) apply too.
Validation batches carry no n-gram inputs: there the loss is BERT-NCE's and ``dim_loss`` is absent.
"""

from __future__ import annotations

from typing import Any

from taco.objectives.base import Objective
from taco.parameters import objective_option
from taco.objectives.bert_nce import CITATION, nce_flops, nce_loss

__all__ = ["DECLARED", "OPTIONS", "mask_spans"]

OPTIONS = (
    objective_option("infoword", "weight", "infoword_weight", 1.0,
                     "lambda: weight of the span (DIM) term added to BERT-NCE",
                     minimum=0),
    objective_option("infoword", "span_min", "infoword_span_min", 1, "shortest masked n-gram (tokens)", minimum=1),
    objective_option("infoword", "span_max", "infoword_span_max", 5, "longest masked n-gram (tokens)", minimum=1),
    objective_option("infoword", "temperature", "infoword_temperature", 1.0,
                     "temperature dividing the sentence-n-gram scores (> 0)", exclusive_minimum=0),
)


def check_spans(values: dict[str, Any], where: dict[str, str]) -> str | None:
    """Cross-option rule: span_min <= span_max (``where`` names the options as the caller does)."""
    lo, hi = values.get("infoword_span_min", 1), values.get("infoword_span_max", 5)
    if lo > hi:
        return (f"{where.get('infoword_span_min', 'infoword_span_min')}: {lo} exceeds "
                f"{where.get('infoword_span_max', 'infoword_span_max')} {hi}")
    return None


def mask_spans(batch: dict[str, Any], tokenizer: Any, generator: Any, options: dict[str, Any]) -> dict[str, Any]:
    """Mask one contiguous n-gram per sequence and add the n-gram inputs (module docstring).

    Args:
        batch: the collator's output: ``input_ids`` (corrupted), ``labels``, ``attention_mask``,
            ``original_input_ids``: LongTensors (B, L).
        tokenizer: gives ``mask_token_id``, ``cls_token_id``, ``sep_token_id``, ``pad_token_id`` and the
            special ids.
        generator: CPU ``torch.Generator`` (the collator's per-batch one: resume-exact) or ``None``.
        options: ``infoword_span_min``, ``infoword_span_max``.

    Returns:
        The batch with the n-gram masked in ``input_ids`` and labelled in ``labels`` and two new
        LongTensors ``span_input_ids``/``span_attention_mask`` (B, span_max + 2). A row without a
        real non-special token gets an empty n-gram (``[CLS] [SEP]``).
    """
    import torch

    lo, hi = int(options["infoword_span_min"]), int(options["infoword_span_max"])
    original = batch["original_input_ids"]
    B, L = original.shape
    special = torch.isin(original, torch.tensor(sorted(set(int(i) for i in tokenizer.all_special_ids))))
    usable = batch["attention_mask"].bool() & ~special  # (B, L)
    span_ids = torch.full((B, hi + 2), int(tokenizer.pad_token_id), dtype=torch.long)
    span_mask = torch.zeros((B, hi + 2), dtype=torch.long)
    input_ids, labels = batch["input_ids"].clone(), batch["labels"].clone()
    lengths = torch.randint(lo, hi + 1, (B,), generator=generator)
    draws = torch.rand((B,), generator=generator)
    for b in range(B):
        n = int(lengths[b])
        # starts s where usable[s:s+n] are all true; shorten n to the longest usable run if needed
        run = torch.zeros(L + 1, dtype=torch.long)
        run[1:] = torch.cumsum(usable[b].long(), 0)
        starts = torch.empty(0, dtype=torch.long)
        while n > 0:
            s = torch.arange(0, L - n + 1)
            starts = s[(run[s + n] - run[s]) == n]
            if starts.numel():
                break
            n -= 1
        body = []
        if n > 0:
            s0 = int(starts[min(int(draws[b] * starts.numel()), starts.numel() - 1)])
            body = original[b, s0:s0 + n].tolist()
            input_ids[b, s0:s0 + n] = int(tokenizer.mask_token_id)
            labels[b, s0:s0 + n] = original[b, s0:s0 + n]
        row = [int(tokenizer.cls_token_id), *body, int(tokenizer.sep_token_id)]
        span_ids[b, :len(row)] = torch.tensor(row)
        span_mask[b, :len(row)] = 1
    return {**batch, "input_ids": input_ids, "labels": labels, "span_input_ids": span_ids,
            "span_attention_mask": span_mask}


def infoword_terms(model: Any, batch: dict[str, Any], outputs: Any, options: dict[str, Any],
                   generator: Any = None) -> dict[str, Any]:
    """``{"loss": nce + weight x dim, "mlm", "nce", "dim"}`` (``dim`` absent without n-gram inputs)."""
    import torch.nn.functional as F
    import torch

    sequence = outputs.last_hidden_state
    nce, mlm = nce_loss(model, sequence, batch, options, generator)
    terms = {"loss": nce, "mlm": mlm, "nce": nce}
    if batch.get("span_input_ids") is None:
        return terms
    sentence = sequence[:, 0]  # (B, H): g(masked sentence), the first token's final state
    ngram = model.bert(batch["span_input_ids"], attention_mask=batch["span_attention_mask"],
                       return_dict=True).last_hidden_state[:, 0]  # (B, H)
    scores = (sentence.float() @ ngram.float().t()) / float(options["infoword_temperature"])  # (B, B)
    dim = F.cross_entropy(scores, torch.arange(scores.shape[0], device=scores.device))
    terms["dim"] = dim
    terms["loss"] = nce + options["infoword_weight"] * dim
    return terms


def infoword_flops(shape, seq_len, vocab_size, options) -> float:
    """BERT-NCE's, plus the n-gram's extra encoder pass: ``span_max + 2`` tokens per sequence of
    ``seq_len``, each costing the encoder's matmuls (``6 n (4 H^2 + 2 H I)``) and attention over its
    ``span_max + 2`` positions (``12 n H (span_max + 2)``); the B x B scores are negligible."""
    n, h, i = shape["num_hidden_layers"], shape["hidden_size"], shape["intermediate_size"]
    span = int(options["infoword_span_max"]) + 2
    extra = span / seq_len * (6.0 * n * (4 * h * h + 2 * h * i) + 12.0 * n * h * span)
    return nce_flops(shape, seq_len, vocab_size, options) + extra


DECLARED = (
    Objective("infoword", "INFOWORD", "BERT-NCE + InfoNCE between the masked sentence's first-token state and "
              "the masked n-gram's (Kong et al. 2020; this suite's reimplementation)", ("mlm", "nce", "dim"),
              infoword_terms, infoword_flops, options=("nce", "infoword"),
              style=dict(color="#555555", marker="*", linestyle=(0, (5, 1))), collate=mask_spans,
              batch_keys=("span_input_ids", "span_attention_mask"), min_device_batch=2,
              reimplemented_from=CITATION,
              # reaches BERT's own modules (model.cls.predictions, model.bert)
              architectures=("bert",)),
)
