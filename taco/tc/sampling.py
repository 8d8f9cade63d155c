"""Positive and negative sampling for the token-alignment contrastive (TC) loss.

Paper (Fu et al. 2022, Sec. 3.2): for each anchor token, one positive is a nearby token of the
same sequence within a window of size W, and K negatives are tokens of the *other* sequences of
the batch. The official code draws the positive offset uniformly from +-1..+-floor(W/2) and, where
it falls off the sequence, a random other position of the same sequence; negatives are uniform
with replacement over all positions of the other sequences.

Differences from the official code (its defects, see docs/paper-facts.md): padding is never a positive or a
negative here, sampling is vectorised on the tensors' device (no Python loop over B or L), and every
draw comes from an optional ``torch.Generator`` so a batch's samples are reproducible.
"""

from __future__ import annotations

import torch

__all__ = ["sample_positive_index", "sample_negative_index"]


def _check_mask(attention_mask: torch.Tensor) -> torch.Tensor:
    if attention_mask.dim() != 2:
        raise ValueError(f"attention_mask must be (B, L), got shape {tuple(attention_mask.shape)}")
    return attention_mask.bool()


def _uniform_below(n: torch.Tensor, generator: torch.Generator | None) -> torch.Tensor:
    """Integer tensor with ``out[i]`` uniform on ``[0, n[i])`` (``n[i] >= 1``; 0 where ``n[i] == 0``)."""
    u = torch.rand(n.shape, generator=generator, device=n.device, dtype=torch.float64)
    out = (u * n.to(torch.float64)).floor().long()
    return torch.minimum(out, (n - 1).clamp_min(0))


def sample_positive_index(
    attention_mask: torch.Tensor, window: int, generator: torch.Generator | None = None
) -> torch.Tensor:
    """One positive column per anchor, in the anchor's own row.

    For anchor ``(b, j)`` the offset ``d`` is uniform on ``{-w..-1, 1..w}`` with ``w = window // 2``;
    if ``j + d`` is off the row or padding, the positive is instead uniform over the other real
    positions of row ``b`` (never ``j`` itself).

    Args:
        attention_mask: (B, L), nonzero at real tokens.
        window: W, odd and >= 3 (the paper's W = 5 gives offsets +-1, +-2).
        generator: optional ``torch.Generator`` on the mask's device.

    Returns:
        LongTensor (B, L) of column indices in ``[0, L)``; -1 at padding positions and where the row
        has no other real token (no positive exists).
    """
    if not isinstance(window, int) or window < 3 or window % 2 == 0:
        raise ValueError(f"window W must be an odd integer >= 3, got {window!r}")
    real = _check_mask(attention_mask)
    B, L = real.shape
    device = real.device
    half = window // 2

    j = torch.arange(L, device=device).expand(B, L)
    r = torch.randint(0, 2 * half, (B, L), generator=generator, device=device)
    offset = torch.where(r < half, r - half, r - half + 1)  # {-half..-1} U {1..half}
    cand = j + offset
    inside = (cand >= 0) & (cand < L)
    cand_c = cand.clamp(0, L - 1)
    ok = inside & real.gather(1, cand_c)

    # Fallback: uniform over the other real positions of the row.
    n_real = real.sum(1, keepdim=True)  # (B, 1)
    rank = real.long().cumsum(1) - 1  # rank of a real column among the row's real columns
    # real_cols[b, r] = column of the r-th real token of row b (stable sort puts real first, in order)
    real_cols = torch.sort((~real).to(torch.int8), dim=1, stable=True).indices
    n_other = (n_real - real.long()).expand(B, L)  # anchor itself excluded when it is real
    u = _uniform_below(n_other, generator)
    u = u + (real & (u >= rank)).long()  # skip the anchor's own rank
    fallback = real_cols.gather(1, u.clamp(max=L - 1))

    pos = torch.where(ok, cand_c, fallback)
    no_positive = ~real | (n_other == 0)
    return pos.masked_fill(no_positive, -1)


def sample_negative_index(
    attention_mask: torch.Tensor, k: int, generator: torch.Generator | None = None,
    rows: tuple[int, int] | None = None,
) -> torch.Tensor:
    """K negatives per anchor: flat indices into ``B * L``, uniform with replacement over the real
    positions of the *other* rows of the batch (paper Sec. 3.2; official code, minus padding).

    Args:
        attention_mask: (B, L), nonzero at real tokens: the pool the negatives are drawn from (this
            process's device batch, or with ``pretrain.tc.negative_pool: all_ranks`` every process's,
            concatenated in rank order).
        k: number of negatives per anchor (paper: K = 50).
        generator: optional ``torch.Generator`` on the mask's device.
        rows: ``(start, stop)``: draw only for the anchors of pool rows ``start..stop-1`` (this
            process's rows of an all-ranks pool); ``None``: every row (the draws are those of the
            single-pool sampler, bit for bit).

    Returns:
        LongTensor (R, L, K), R = ``stop - start`` (B without ``rows``); entry ``n`` addresses pool
        position ``(n // L, n % L)``, never in the anchor's own pool row. Every position, padding
        included, gets valid negatives (padding anchors are excluded by the loss's anchor mask).

    Raises:
        ValueError: if fewer than two rows contain a real token (the TC loss needs at least two
            sequences in the batch), ``k < 1``, or ``rows`` is not a non-empty range inside ``[0, B]``.
    """
    if not isinstance(k, int) or k < 1:
        raise ValueError(f"number of negatives K must be a positive integer, got {k!r}")
    real = _check_mask(attention_mask)
    B, L = real.shape
    r0, r1 = (0, B) if rows is None else (int(rows[0]), int(rows[1]))
    if not 0 <= r0 < r1 <= B:
        raise ValueError(f"rows must be a non-empty range (start, stop) inside [0, {B}], got {rows!r}")
    n_real = real.sum(1)  # (B,)
    if int((n_real > 0).sum()) < 2:
        raise ValueError(
            "the TC loss needs at least two sequences with real tokens in the batch (negatives come "
            f"from the other sequences); got a batch of {B} sequence(s), {int((n_real > 0).sum())} non-empty: "
            "use a device batch of >= 2 sequences (and drop a last batch of 1, e.g. dataloader_drop_last=True)"
        )
    flat_real = real.reshape(-1).nonzero().squeeze(1)  # (T,) sorted; row b occupies a contiguous run
    total = flat_real.numel()
    start = n_real.cumsum(0) - n_real  # (B,) first slot of row b in flat_real
    n_rows = r1 - r0
    own = n_real[r0:r1].view(n_rows, 1, 1)
    n_other = (total - own).expand(n_rows, L, k)
    u = _uniform_below(n_other, generator)
    row_start = start[r0:r1].view(n_rows, 1, 1)
    u = u + (u >= row_start).long() * own  # jump over the anchor's own row
    return flat_real[u]
