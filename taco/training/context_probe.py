"""The context-use probe: how much of a block's word order a pre-training checkpoint uses.

A tiny BERT can sit for thousands of steps on a *bag-of-words plateau*: its MLM loss is below a unigram
model's because it uses which words surround a masked position, not their order. The probe makes that
visible at every validation point (``eval.json``), beside the plain validation loss
(:mod:`taco.training.validation`).

**Protocol** (one number per condition, nats per masked token, token-weighted):

- blocks: the first :data:`PROBE_BLOCKS` (128) validation blocks, in batches of 16;
- masked positions: the same selection as the validation loss (BERT's rule at the run's
  ``mlm_probability``, generator ``mask_seed + i`` for batch ``i``), but *every* selected token is
  replaced by ``[MASK]`` (no 10% random, no 10% kept: no target is visible), so the three conditions
  differ only in the context;
- ``probe_intact_loss``: the block as written around the masks;
- ``probe_shuffled_loss``: the block's non-masked real tokens permuted among their own positions
  (one uniform permutation per block, generator ``mask_seed + 2_000_003 + i``; ``[CLS]``/``[SEP]``,
  padding and the masked positions stay where they are): the same words, no order;
- ``probe_no_context_loss``: every real token replaced by ``[MASK]``: the model sees only positions and
  the special tokens;
- ``probe_unigram_loss``: the cross-entropy of the same masked targets under the unigram distribution
  of the training split's real tokens (counts + 1 over the vocabulary; :func:`unigram_log_probs`,
  computed once per blocks directory and process).

``probe_order_gap = probe_shuffled_loss - probe_intact_loss`` is how much word order the model uses. A
run has left the plateau at the first validation point where the gap exceeds
:data:`taco.stats.validation_points.PLATEAU_EXIT_GAP` (0.1 nats; ``taco efficiency`` reports the step). Source: this suite (the
audit of issue 40); the shuffle control is the standard word-order ablation of probing work (e.g.
Sinha et al. 2021, "Masked language modeling and the distributional hypothesis").
"""

from __future__ import annotations

import functools
import math
from pathlib import Path
from typing import Any

#: validation blocks the probe reads (the first N), and its batch size
PROBE_BLOCKS = 128
PROBE_BATCH = 16
#: seed offset of the per-block shuffles (added to the validation mask seed)
SHUFFLE_SEED_OFFSET = 2_000_003
#: the keys the probe adds to a validation result
PROBE_KEYS = ("probe_intact_loss", "probe_shuffled_loss", "probe_no_context_loss", "probe_unigram_loss",
              "probe_order_gap", "probe_n_blocks", "probe_n_masked_tokens")


@functools.lru_cache(maxsize=4)
def unigram_log_probs(blocks: str, vocab_size: int, special_ids: tuple[int, ...]):
    """ln p(token) of the training split's real tokens, counts + 1 over ``vocab_size`` entries.

    ``blocks``: a ``taco pack`` directory (its ``train`` split's ``input_ids``, shape (N, L)); special
    ids (``[CLS]``, ``[SEP]``, ``[PAD]``, ...) are not counted. Returns a float64 tensor (V,). Cached
    per (directory, vocabulary) in the process. ValueError naming the directory without a train split.
    """
    import numpy as np
    import torch
    from datasets import load_from_disk

    ds = load_from_disk(str(blocks))
    if "train" not in ds:
        raise ValueError(f"{blocks}: no 'train' split to count the unigram distribution from")
    ids = np.asarray(ds["train"].with_format("numpy")["input_ids"]).reshape(-1)
    keep = ~np.isin(ids, np.asarray(special_ids, dtype=ids.dtype))
    counts = np.bincount(ids[keep], minlength=vocab_size)[:vocab_size].astype(np.float64) + 1.0
    return torch.from_numpy(np.log(counts / counts.sum()))


def _shuffle_context(ids, movable, generator):
    """``ids`` (B, L) with each row's ``movable`` positions (bool (B, L)) permuted among themselves."""
    import torch

    out = ids.clone()
    for b in range(ids.shape[0]):
        pos = movable[b].nonzero(as_tuple=True)[0]
        if pos.numel() > 1:
            perm = torch.randperm(pos.numel(), generator=generator)
            out[b, pos] = ids[b, pos[perm]]
    return out


def context_probe(model: Any, blocks: str | Path, tokenizer: Any, *, mlm_probability: float, mask_seed: int,
                  n_blocks: int = PROBE_BLOCKS, batch_size: int = PROBE_BATCH) -> dict[str, Any]:
    """The probe's losses (module docstring) of ``model`` on ``blocks``' validation split.

    ``model``: a :class:`taco.model.modeling.PreTrainingModel` of any family (its ``encode`` and
    ``mlm_logits`` hooks; evaluated in eval mode, the caller restores train mode). ``blocks``: a ``taco
    pack`` output with ``train`` and ``validation`` splits. Returns the :data:`PROBE_KEYS` (losses in
    nats; ``probe_n_blocks``, ``probe_n_masked_tokens`` counts); the losses are nan when no position is
    selected. ValueError (naming the directory) without the splits.
    """
    import torch
    import torch.nn.functional as F
    from datasets import load_from_disk

    from taco.model.masking import mask_tokens

    ds = load_from_disk(str(blocks))
    if "validation" not in ds or len(ds["validation"]) == 0:
        raise ValueError(f"{blocks}: no non-empty 'validation' split to probe")
    val = ds["validation"].select_columns(["input_ids"])
    rows = torch.as_tensor([list(r) for r in val.select(range(min(n_blocks, len(val))))["input_ids"]], dtype=torch.long)
    special = tuple(sorted(set(int(i) for i in tokenizer.all_special_ids)))
    log_p = unigram_log_probs(str(blocks), int(len(tokenizer)), special)
    mask_id = int(tokenizer.mask_token_id)
    device = next(model.parameters()).device
    sums = {"intact": 0.0, "shuffled": 0.0, "no_context": 0.0, "unigram": 0.0}
    n_sel = 0
    model.eval()
    with torch.no_grad():
        for i, start in enumerate(range(0, rows.shape[0], batch_size)):
            ids = rows[start:start + batch_size]
            is_special = torch.isin(ids, torch.tensor(special, dtype=torch.long))
            gen = torch.Generator().manual_seed(mask_seed + i)
            _, labels = mask_tokens(ids, is_special, None, mask_id, int(len(tokenizer)), mlm_probability, gen)
            selected = labels != -100
            if not selected.any():
                continue
            masked = torch.where(selected, torch.full_like(ids, mask_id), ids)
            movable = ~selected & ~is_special
            shuffled = _shuffle_context(masked, movable,
                                        torch.Generator().manual_seed(mask_seed + SHUFFLE_SEED_OFFSET + i))
            blank = torch.where(is_special, ids, torch.full_like(ids, mask_id))
            targets = ids[selected]
            for name, inp in (("intact", masked), ("shuffled", shuffled), ("no_context", blank)):
                out = model.encode(inp.to(device), torch.ones_like(inp).to(device), None, False)
                logits = model.mlm_logits(out.last_hidden_state[selected.to(device)]).float()
                sums[name] += float(F.cross_entropy(logits, targets.to(device), reduction="sum"))
            sums["unigram"] -= float(log_p[targets].sum())
            n_sel += int(selected.sum())
    mean = {k: (v / n_sel if n_sel else math.nan) for k, v in sums.items()}
    return {"probe_intact_loss": mean["intact"], "probe_shuffled_loss": mean["shuffled"],
            "probe_no_context_loss": mean["no_context"], "probe_unigram_loss": mean["unigram"],
            "probe_order_gap": mean["shuffled"] - mean["intact"], "probe_n_blocks": int(rows.shape[0]),
            "probe_n_masked_tokens": n_sel}
