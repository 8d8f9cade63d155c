"""The similarity measures of ``taco dynamics``, as pure functions on tensors and arrays.

Intra- and inter-context cosine similarity of token representations (:func:`sample_pairs` draws the
pairs in bounded memory, :func:`pair_cosines` and :func:`context_similarity` measure them per block),
the anchor alignment of a masked position with its token's input embedding against a random-token
baseline (:func:`sample_baseline_tokens`, :func:`anchor_cosines`), and the bootstrap-over-blocks
interval every number carries (:func:`bootstrap_summary`). Which representations, pairs and blocks
are measured, and why, is documented in :mod:`taco.evaluation.dynamics`, which loads the checkpoint
and the blocks and writes ``dynamics.json``. Tested on constructed inputs; torch and scipy are
imported inside the functions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

CI_LEVEL = 0.95
N_RESAMPLES = 9999


def valid_token_mask(input_ids, attention_mask, special_ids: Sequence[int]):
    """Positions that take part in the measures: attended and not a special token.

    Args:
        input_ids: LongTensor (B, L).
        attention_mask: tensor (B, L), 1 for real tokens, 0 for padding; None means all real.
        special_ids: ids to exclude ([CLS], [SEP], [PAD], [MASK], [UNK], ...).
    Returns:
        BoolTensor (B, L).
    """
    import torch

    valid = torch.ones_like(input_ids, dtype=torch.bool)
    if attention_mask is not None:
        valid &= attention_mask.bool()
    if len(special_ids):
        valid &= ~torch.isin(input_ids, torch.as_tensor(list(special_ids), device=input_ids.device))
    return valid


def cosine_rows(a, b, eps: float = 1e-8):
    """Row-wise cosine similarity.

    Args:
        a, b: float tensors (P, H) (broadcastable).
    Returns:
        float tensor (P,), unitless in [-1, 1]; a zero row gives 0.
    """
    import torch.nn.functional as F

    return (F.normalize(a.float(), dim=-1, eps=eps) * F.normalize(b.float(), dim=-1, eps=eps)).sum(-1)


def gather_valid(hidden, valid) -> list:
    """Split a batch of hidden states into the valid-token rows of each block.

    Args:
        hidden: float tensor (B, L, H).
        valid: BoolTensor (B, L) from :func:`valid_token_mask`.
    Returns:
        list of B float tensors (n_b, H) on the CPU, in position order.
    """
    return [hidden[b][valid[b]].detach().float().cpu() for b in range(hidden.shape[0])]


@dataclass
class PairIndex:
    """Sampled pairs as global row indices into the concatenation of all blocks' valid tokens.

    ``intra_a``, ``intra_b``, ``inter_a``, ``inter_b``: int64 arrays (n_blocks * pairs_per_block,);
    pairs ``k * pairs_per_block ... (k + 1) * pairs_per_block - 1`` belong to block ``k``
    (the anchor block for inter pairs).
    """

    intra_a: np.ndarray
    intra_b: np.ndarray
    inter_a: np.ndarray
    inter_b: np.ndarray
    pairs_per_block: int
    n_blocks: int


def sample_pairs(lengths: Sequence[int], pairs_per_block: int, rng: np.random.Generator) -> PairIndex:
    """Sample intra- and inter-context pairs, uniformly, in O(n_blocks * pairs_per_block) memory.

    Intra: for block ``b``, ``i`` uniform over its ``n_b`` rows and ``j`` uniform over the other
    ``n_b - 1`` rows (``j != i``). Inter: ``i`` uniform over block ``b``, partner block ``c`` uniform
    over the other blocks, ``j`` uniform over block ``c``. Sampling is with replacement.

    Args:
        lengths: number of valid tokens of each block; every entry must be >= 2.
        pairs_per_block: pairs of each kind per block (>= 1).
        rng: numpy generator (the only source of randomness).
    Raises:
        ValueError: fewer than 2 blocks, a block with fewer than 2 tokens, or pairs_per_block < 1.
    """
    lengths = np.asarray(lengths, dtype=np.int64)
    n = len(lengths)
    if n < 2:
        raise ValueError(f"need at least 2 blocks for inter-context pairs, got {n}")
    if (lengths < 2).any():
        raise ValueError(f"every block needs >= 2 valid tokens; lengths {lengths.tolist()}")
    if pairs_per_block < 1:
        raise ValueError(f"pairs_per_block must be >= 1, got {pairs_per_block}")
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    block = np.repeat(np.arange(n), pairs_per_block)
    nb = lengths[block]
    i = (rng.random(block.size) * nb).astype(np.int64)
    shift = 1 + (rng.random(block.size) * (nb - 1)).astype(np.int64)  # 1 .. n_b - 1
    j = (i + shift) % nb
    intra_a, intra_b = offsets[block] + i, offsets[block] + j
    i2 = (rng.random(block.size) * nb).astype(np.int64)
    partner = (block + 1 + (rng.random(block.size) * (n - 1)).astype(np.int64)) % n
    j2 = (rng.random(block.size) * lengths[partner]).astype(np.int64)
    inter_a, inter_b = offsets[block] + i2, offsets[partner] + j2
    return PairIndex(intra_a, intra_b, inter_a, inter_b, pairs_per_block, n)


def pair_cosines(tokens, a: np.ndarray, b: np.ndarray, chunk: int = 4096,
                 normalized: bool = False) -> np.ndarray:
    """Cosine of rows ``tokens[a[k]]`` and ``tokens[b[k]]`` for every k, in chunks (bounded memory).

    Args:
        tokens: float tensor or array (N, H).
        a, b: int arrays (P,) of row indices.
        normalized: rows of ``tokens`` already have unit L2 norm (skips the normalisation).
    Returns:
        float64 array (P,). Peak extra memory: 2 x chunk x H floats. (NumPy gathers here: on a
        busy 2-core machine they measured ~5x faster than torch advanced indexing.)
    """
    import torch
    import torch.nn.functional as F

    if not normalized:
        tokens = F.normalize(torch.as_tensor(tokens).float(), dim=-1, eps=1e-8)
    t = tokens.numpy() if isinstance(tokens, torch.Tensor) else np.asarray(tokens, dtype=np.float32)
    out = np.empty(len(a), dtype=np.float64)
    for s in range(0, len(a), chunk):
        out[s : s + chunk] = np.einsum("ph,ph->p", t[a[s : s + chunk]], t[b[s : s + chunk]])
    return out


def context_similarity(blocks: Sequence, pairs: PairIndex) -> dict[str, np.ndarray]:
    """Per-block mean intra- and inter-context cosine similarity and their gap.

    Args:
        blocks: list of float tensors (n_b, H), the valid-token representations of each block.
        pairs: from :func:`sample_pairs` on ``[len(x) for x in blocks]``.
    Returns:
        ``{"intra", "inter", "gap"}``: float64 arrays (n_blocks,) of per-block means (cosines).
    """
    import torch

    import torch.nn.functional as F

    tokens = F.normalize(torch.cat(list(blocks), dim=0).float(), dim=-1, eps=1e-8)  # (N, H)
    k = pairs.pairs_per_block
    intra = pair_cosines(tokens, pairs.intra_a, pairs.intra_b, normalized=True).reshape(pairs.n_blocks, k).mean(1)
    inter = pair_cosines(tokens, pairs.inter_a, pairs.inter_b, normalized=True).reshape(pairs.n_blocks, k).mean(1)
    return {"intra": intra, "inter": inter, "gap": intra - inter}


def bootstrap_summary(per_block: np.ndarray, seed: int, n_resamples: int = N_RESAMPLES,
                      level: float = CI_LEVEL) -> dict[str, Any]:
    """Mean of per-block values with a bootstrap CI over blocks (BCa, percentile fallback).

    Args:
        per_block: float array (n_blocks,), NaN entries dropped.
        seed: seeds the resampling generator (same seed -> same interval).
    Returns:
        ``{"mean", "ci_low", "ci_high", "n_blocks"}``; CI bounds are None for fewer than 2 blocks,
        and equal to the mean when the per-block values are constant.
    """
    import warnings

    from scipy import stats

    x = np.asarray(per_block, dtype=np.float64)
    x = x[np.isfinite(x)]
    out: dict[str, Any] = {"mean": float(x.mean()) if x.size else None, "ci_low": None,
                           "ci_high": None, "n_blocks": int(x.size)}
    if x.size < 2:
        return out
    if np.ptp(x) == 0:
        out["ci_low"] = out["ci_high"] = float(x[0])
        return out
    for method in ("BCa", "percentile"):
        rng = np.random.default_rng(seed)
        kwargs = dict(n_resamples=n_resamples, confidence_level=level, method=method, vectorized=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                res = stats.bootstrap((x,), np.mean, rng=rng, **kwargs)
            except TypeError:  # scipy < 1.15
                res = stats.bootstrap((x,), np.mean, random_state=rng, **kwargs)
        lo, hi = res.confidence_interval
        if np.isfinite(lo) and np.isfinite(hi):
            out["ci_low"], out["ci_high"] = float(lo), float(hi)
            break
    return out


def sample_baseline_tokens(targets: np.ndarray, pool: np.ndarray, rng: np.random.Generator,
                           tries: int = 16) -> np.ndarray:
    """Random-token baseline ids: draws from ``pool`` (the sample's unigram distribution), != target.

    Args:
        targets: int array (M,), original ids at masked positions.
        pool: int array (N,), original ids at every valid position of the sample.
    Returns:
        int array (M,); where ``tries`` draws all equal the target (a one-type pool), the last draw.
    """
    out = pool[rng.integers(0, len(pool), size=len(targets))]
    for _ in range(tries):
        same = out == targets
        if not same.any():
            break
        out[same] = pool[rng.integers(0, len(pool), size=int(same.sum()))]
    return out


def anchor_cosines(reps, emb, targets: np.ndarray, baseline: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Anchor alignment (Section 2.2): cos(m_i, E[x_i]) and the baseline cos(m_i, E[y_i]).

    Args:
        reps: float tensor (M, H), last-layer states at the [MASK] positions.
        emb: float tensor (V, H), the static word-embedding matrix.
        targets: int array (M,), original ids x_i; baseline: int array (M,), random ids y_i.
    Returns:
        (aligned, random): float64 arrays (M,) of cosines.
    """
    import torch

    aligned = cosine_rows(reps, emb[torch.as_tensor(targets)]).double().numpy()
    random = cosine_rows(reps, emb[torch.as_tensor(baseline)]).double().numpy()
    return aligned, random
