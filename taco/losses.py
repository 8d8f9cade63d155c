"""Token-alignment contrastive (TC) loss, memory-bounded.

Paper (Fu et al. 2022, Eq. 5-10) and official code (FACTS.md, "TC loss as the official code
computes it"):

    g_j   = h_j - e_j                      (h: last layer, e: ``hidden_states[0]``, lambda = 1)
    s(a, c) = cos(g_a, g_c) / tau          (tau = 0.07)
    L_TC  = mean_{anchors a} -log  exp s(a, p_a) / (exp s(a, p_a) + sum_k exp s(a, n_{a,k}))

with one positive ``p_a`` from the anchor's sequence and K negatives ``n_{a,k}`` from the other
sequences; positives and negatives are detached (stop-gradient, MoCo style), so only the anchor's
``g`` receives gradient. Cross-entropy with the positive at index 0.

Memory: the official code gathers a (B, L, K, H) negatives tensor (about 840 MB in fp32 at B=32,
L=256, K=50, H=512; autograd keeps it for backward). Here the similarities of the anchors with
their gathered keys are computed by :class:`GatheredDot`, a custom ``autograd.Function`` that works
in chunks of anchors and recomputes the gather in backward, so forward and backward together
hold O(B*L*(H+K)) extra memory plus one chunk of at most ``chunk_bytes``.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

__all__ = ["tc_loss", "gathered_dot", "GatheredDot", "DEFAULT_CHUNK_BYTES"]

#: Upper bound on the temporary (chunk, K+1, H) gather per chunk, in bytes.
DEFAULT_CHUNK_BYTES = 32 * 2**20


def _chunk_rows(n_cols: int, hidden: int, itemsize: int, chunk_bytes: int) -> int:
    return max(1, int(chunk_bytes // max(1, n_cols * hidden * itemsize)))


class GatheredDot(torch.autograd.Function):
    """``out[n, k] = <anchors[n], keys[index[n, k]]>`` without materializing ``keys[index]``.

    Shapes: anchors (N, H), keys (M, H), index (N, K) long in ``[0, M)`` -> out (N, K).
    Forward and backward loop over chunks of anchors; only ``anchors``, ``keys`` and ``index`` are
    saved. Gradients flow to ``anchors`` and, if it requires grad, to ``keys`` (scatter-add).
    """

    @staticmethod
    def forward(ctx, anchors, keys, index, chunk_rows):  # type: ignore[override]
        N = anchors.shape[0]
        out = anchors.new_empty(index.shape)
        for s in range(0, N, chunk_rows):
            e = min(N, s + chunk_rows)
            gathered = keys[index[s:e]]  # (c, K, H) temporary
            out[s:e] = torch.bmm(gathered, anchors[s:e].unsqueeze(2)).squeeze(2)
        ctx.save_for_backward(anchors, keys, index)
        ctx.chunk_rows = chunk_rows
        return out

    @staticmethod
    def backward(ctx, grad_out):  # type: ignore[override]
        anchors, keys, index = ctx.saved_tensors
        chunk_rows = ctx.chunk_rows
        N, H = anchors.shape
        grad_anchors = grad_keys = None
        need_a, need_k = ctx.needs_input_grad[0], ctx.needs_input_grad[1]
        if need_a:
            grad_anchors = torch.empty_like(anchors)
        if need_k:
            grad_keys = torch.zeros_like(keys)
        for s in range(0, N, chunk_rows):
            e = min(N, s + chunk_rows)
            g = grad_out[s:e].to(anchors.dtype)  # (c, K)
            if need_a:
                gathered = keys[index[s:e]]  # recompute (c, K, H)
                grad_anchors[s:e] = torch.bmm(g.unsqueeze(1), gathered).squeeze(1)
            if need_k:
                contrib = g.unsqueeze(2) * anchors[s:e].unsqueeze(1)  # (c, K, H)
                grad_keys.index_add_(0, index[s:e].reshape(-1), contrib.reshape(-1, H))
        return grad_anchors, grad_keys, None, None


def gathered_dot(
    anchors: torch.Tensor, keys: torch.Tensor, index: torch.Tensor, chunk_bytes: int = DEFAULT_CHUNK_BYTES
) -> torch.Tensor:
    """(N, H) x (M, H)[index (N, K)] -> (N, K) dot products, chunked (see :class:`GatheredDot`)."""
    if anchors.dim() != 2 or keys.dim() != 2 or index.dim() != 2:
        raise ValueError("gathered_dot expects anchors (N, H), keys (M, H), index (N, K)")
    if anchors.shape[0] != index.shape[0] or anchors.shape[1] != keys.shape[1]:
        raise ValueError(
            f"shape mismatch: anchors {tuple(anchors.shape)}, keys {tuple(keys.shape)}, index {tuple(index.shape)}"
        )
    rows = _chunk_rows(index.shape[1], anchors.shape[1], anchors.element_size(), chunk_bytes)
    return GatheredDot.apply(anchors, keys, index, rows)


def tc_loss(
    hidden: torch.Tensor,
    embeddings: torch.Tensor,
    positive_index: torch.Tensor,
    negative_index: torch.Tensor,
    anchor_mask: torch.Tensor,
    temperature: float = 0.07,
    chunk_bytes: int = DEFAULT_CHUNK_BYTES,
) -> torch.Tensor:
    """Token-alignment contrastive loss (paper Eq. 9; official code's computation), in fp32.

    Args:
        hidden: (B, L, H) last-layer hidden states h.
        embeddings: (B, L, H) embedding-layer output e (``hidden_states[0]``).
        positive_index: LongTensor (B, L), column of each anchor's positive in its own row; -1 = none
            (from :func:`taco.sampling.sample_positive_index`).
        negative_index: LongTensor (B, L, K), flat indices into B*L of each anchor's negatives
            (from :func:`taco.sampling.sample_negative_index`).
        anchor_mask: bool (B, L), positions that are anchors.
        temperature: tau > 0.
        chunk_bytes: bound on the temporary gather per chunk.

    Returns:
        Scalar fp32 tensor: mean over anchors (``anchor_mask`` and ``positive_index >= 0``) of the
        cross-entropy with the positive logit at index 0. Zero (still connected to the graph) if
        there is no anchor. Gradient reaches ``hidden``/``embeddings`` only through the anchors.
    """
    if hidden.dim() != 3 or hidden.shape != embeddings.shape:
        raise ValueError(
            f"hidden and embeddings must both be (B, L, H); got {tuple(hidden.shape)} and {tuple(embeddings.shape)}"
        )
    B, L, H = hidden.shape
    if positive_index.shape != (B, L):
        raise ValueError(f"positive_index must be (B, L) = {(B, L)}, got {tuple(positive_index.shape)}")
    if negative_index.dim() != 3 or negative_index.shape[:2] != (B, L):
        raise ValueError(f"negative_index must be (B, L, K) with (B, L) = {(B, L)}, got {tuple(negative_index.shape)}")
    if anchor_mask.shape != (B, L):
        raise ValueError(f"anchor_mask must be (B, L) = {(B, L)}, got {tuple(anchor_mask.shape)}")
    if not temperature > 0:
        raise ValueError(f"temperature must be positive, got {temperature}")

    with torch.autocast(device_type=hidden.device.type, enabled=False):
        g = hidden.float() - embeddings.float()  # (B, L, H), out of place (official code: in place)
        z = F.normalize(g, dim=-1, eps=1e-12).reshape(B * L, H)
        keys = z.detach()  # stop-gradient on positives and negatives

        valid = anchor_mask.bool() & (positive_index >= 0)  # (B, L)
        flat = valid.reshape(-1).nonzero().squeeze(1)  # (N,) anchor flat ids
        if flat.numel() == 0:
            return g.sum() * 0.0
        rows = torch.div(flat, L, rounding_mode="floor")
        pos_flat = rows * L + positive_index.reshape(-1)[flat]  # (N,)
        neg_flat = negative_index.reshape(B * L, -1)[flat]  # (N, K)
        index = torch.cat([pos_flat.unsqueeze(1), neg_flat], dim=1)  # (N, 1+K), positive first
        logits = gathered_dot(z[flat], keys, index, chunk_bytes) / temperature  # (N, 1+K)
        # cross-entropy with target 0 == logsumexp - positive logit
        return (torch.logsumexp(logits, dim=1) - logits[:, 0]).mean()
