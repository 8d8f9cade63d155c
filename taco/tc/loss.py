"""Token-alignment contrastive (TC) loss, memory-bounded.

Paper (Fu et al. 2022, Eq. 5-10) and official code (docs/paper-facts.md, "TC loss as the official code
computes it"):

    g_j   = h_j - e_j                      (h: last layer, e: ``hidden_states[0]``, lambda = 1)
    s(a, c) = cos(g_a, g_c) / tau          (tau = 0.07)
    L_TC  = mean_{anchors a} -log  exp s(a, p_a) / (exp s(a, p_a) + sum_k exp s(a, n_{a,k}))

with one positive ``p_a`` from the anchor's sequence and K negatives ``n_{a,k}`` from the other
sequences; positives and negatives are detached (stop-gradient, MoCo style), so only the anchor's
``g`` receives gradient. Cross-entropy with the positive at index 0.

Memory: the official code gathers a (B, L, K, H) negatives tensor (about 840 MB in fp32 at B=32,
L=256, K=50, H=512; autograd keeps it for backward). Here the similarities of the anchors with
their gathered keys are computed by :class:`GatheredDot`, a custom ``autograd.Function`` that never
forms them: a sampled dense-dense matmul on CPU or a chunked gather elsewhere in forward, a
weighted embedding bag in backward, saving only the anchors, keys and indices. Forward and
backward together hold O(B*L*(H+K)) extra memory (plus one chunk of at most ``chunk_bytes``).
When 1 + K is at least the number of keys B*L (negatives are drawn with replacement, so K may
exceed B*L), the full (N, B*L) similarity matrix is no larger than the (N, 1+K) logits: it is
formed densely and gathered (the CPU's sampled matmul cannot hold more entries per row than
columns).
"""

from __future__ import annotations

import warnings

import torch
import torch.nn.functional as F

from taco.tc.options import DEFAULTS, NEGATIVE_POOLS

__all__ = ["tc_loss", "gathered_dot", "GatheredDot", "DEFAULT_CHUNK_BYTES", "gather_negative_pool"]

#: Default bound on the temporary (chunk, K+1, H) gather of the chunked path: the larger of 4 MiB and
#: the size of the keys (B*L, H), so the extra memory stays O(B*L*H) whatever K is.
DEFAULT_CHUNK_BYTES: int | None = None
_MIN_CHUNK_BYTES = 4 * 2**20


def _chunk_rows(n_cols: int, hidden: int, itemsize: int, chunk_bytes: int) -> int:
    return max(1, int(chunk_bytes // max(1, n_cols * hidden * itemsize)))


def _sddmm_cpu(anchors: torch.Tensor, keys: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """CPU forward: sampled dense-dense matmul on a CSR pattern (one row per anchor, columns = index).

    ``torch.sparse.sampled_addmm`` computes one dot product per stored entry, in storage order,
    without sorting or deduplicating the columns (duplicates are valid: negatives are drawn with
    replacement) and without forming (N, K, H); on CPU it is an order of magnitude faster than a
    gather + bmm.
    """
    N, K = index.shape
    crow = torch.arange(0, N * K + 1, K, device=index.device, dtype=torch.long)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "sparse CSR support is in beta"
        pattern = torch.sparse_csr_tensor(
            crow,
            index.reshape(-1),
            torch.zeros(N * K, dtype=anchors.dtype, device=anchors.device),
            size=(N, keys.shape[0]),
            check_invariants=False,
        )
        out = torch.sparse.sampled_addmm(pattern, anchors, keys.t(), beta=0.0, alpha=1.0)
    return out.values().view(N, K)


class GatheredDot(torch.autograd.Function):
    """``out[n, k] = <anchors[n], keys[index[n, k]]>`` without materializing ``keys[index]``.

    Shapes: anchors (N, H), keys (M, H), index (N, K) long in ``[0, M)`` -> out (N, K).

    Forward, by ``path``: ``"sddmm"`` a sampled dense-dense matmul on CPU (:func:`_sddmm_cpu`, needs
    K <= M); ``"chunked"`` a loop over chunks of ``chunk_rows`` anchors, each gathering a temporary
    (chunk, K, H); ``"dense"`` the full (N, M) product ``anchors @ keys.T`` gathered at ``index``
    (no larger than the output when M <= K). Backward:
    ``grad_anchors[n] = sum_k grad[n, k] * keys[index[n, k]]`` is exactly a weighted-sum embedding
    bag (``F.embedding_bag(index, keys, per_sample_weights=grad, mode="sum")``), a fused kernel
    that forms no (N, K, H) either. Only ``anchors``, ``keys`` and ``index`` are saved for
    backward. If ``keys`` requires grad (not the case in the TC loss, where keys are detached),
    its gradient is scatter-added chunk by chunk.
    """

    @staticmethod
    def forward(ctx, anchors, keys, index, chunk_rows, path):  # type: ignore[override]
        N = anchors.shape[0]
        if path not in _PATHS:
            raise ValueError(f"path must be one of {_PATHS}, got {path!r}")
        if path == "sddmm" and N > 0:
            out = _sddmm_cpu(anchors, keys, index)
        elif path == "dense":
            out = (anchors @ keys.t()).gather(1, index)
        else:
            out = anchors.new_empty(index.shape)
            for s in range(0, N, chunk_rows):
                e = min(N, s + chunk_rows)
                gathered = keys.index_select(0, index[s:e].reshape(-1)).view(e - s, -1, keys.shape[1])
                out[s:e] = torch.bmm(gathered, anchors[s:e].unsqueeze(2)).squeeze(2)
        ctx.save_for_backward(anchors, keys, index)
        ctx.chunk_rows = chunk_rows
        return out

    @staticmethod
    def backward(ctx, grad_out):  # type: ignore[override]
        anchors, keys, index = ctx.saved_tensors
        N, H = anchors.shape
        grad_anchors = grad_keys = None
        grad_out = grad_out.to(anchors.dtype)
        if ctx.needs_input_grad[0]:
            grad_anchors = F.embedding_bag(index, keys, per_sample_weights=grad_out.contiguous(), mode="sum")
        if ctx.needs_input_grad[1]:
            grad_keys = torch.zeros_like(keys)
            for s in range(0, N, ctx.chunk_rows):
                e = min(N, s + ctx.chunk_rows)
                contrib = grad_out[s:e].unsqueeze(2) * anchors[s:e].unsqueeze(1)  # (c, K, H)
                grad_keys.index_add_(0, index[s:e].reshape(-1), contrib.reshape(-1, H))
        return grad_anchors, grad_keys, None, None, None


_PATHS = ("sddmm", "chunked", "dense")


def gathered_dot(
    anchors: torch.Tensor,
    keys: torch.Tensor,
    index: torch.Tensor,
    chunk_bytes: int | None = DEFAULT_CHUNK_BYTES,
    method: str = "auto",
) -> torch.Tensor:
    """(N, H) x (M, H)[index (N, K)] -> (N, K) dot products, memory-bounded (see :class:`GatheredDot`).

    ``chunk_bytes`` bounds the temporary gather of the chunked path (``None``: max(4 MiB, size of keys)).
    ``method``: ``"sddmm"`` (CPU only, K <= M), ``"chunked"``, ``"dense"``, or ``"auto"``: dense when
    K >= M (the (N, M) product is then no larger than the (N, K) output), else sddmm on CPU for
    fp32/fp64, else chunked.

    Raises:
        ValueError: an unknown ``method``, ``"sddmm"`` off the CPU / not fp32 or fp64 / with K > M, or
        inconsistent shapes or dtypes.
    """
    if method not in ("auto", *_PATHS):
        raise ValueError(f"method must be auto, sddmm, chunked or dense, got {method!r}")
    cpu_ok = anchors.device.type == "cpu" and anchors.dtype in (torch.float32, torch.float64)
    if method == "sddmm" and not cpu_ok:
        raise ValueError("method='sddmm' needs fp32/fp64 tensors on the CPU")
    if anchors.dim() != 2 or keys.dim() != 2 or index.dim() != 2:
        raise ValueError("gathered_dot expects anchors (N, H), keys (M, H), index (N, K)")
    if anchors.shape[0] != index.shape[0] or anchors.shape[1] != keys.shape[1]:
        raise ValueError(
            f"shape mismatch: anchors {tuple(anchors.shape)}, keys {tuple(keys.shape)}, index {tuple(index.shape)}"
        )
    if anchors.dtype != keys.dtype:
        raise ValueError(f"anchors and keys must share a dtype, got {anchors.dtype} and {keys.dtype}")
    n_keys, n_cols = keys.shape[0], index.shape[1]
    if method == "sddmm" and n_cols > n_keys:
        raise ValueError(f"method='sddmm' needs at most as many columns per anchor as keys: index has {n_cols} "
                         f"columns, keys {n_keys} rows (use 'auto' or 'dense')")
    if method == "auto":
        method = "dense" if n_cols >= n_keys else "sddmm" if cpu_ok else "chunked"
    if chunk_bytes is None:
        chunk_bytes = max(_MIN_CHUNK_BYTES, keys.numel() * keys.element_size())
    rows = _chunk_rows(n_cols, anchors.shape[1], anchors.element_size(), chunk_bytes)
    return GatheredDot.apply(anchors, keys, index.long(), rows, method)


def gather_negative_pool(tensor: torch.Tensor) -> tuple[torch.Tensor, int]:
    """Every process's ``tensor`` concatenated along dim 0 in rank order, and this rank's first row.

    The pool of ``pretrain.tc.negative_pool: all_ranks``: keys and attention masks need no gradient,
    so a plain ``torch.distributed.all_gather`` of the detached tensor (one process per GPU under
    ``torch.distributed.run``) gives the pool the official code's ``torch.nn.DataParallel`` sees in one
    process (both GPUs' sequences). Without an initialised process group, or with one process,
    returns ``(tensor, 0)`` (the pool is this process's batch).

    Shapes: ``tensor`` (B, ...) -> (world x B, ...). Every rank must pass the same shape (checked
    first with a small all-gather of the shapes, so a mismatch raises ValueError on every rank
    instead of hanging or mixing rows).
    """
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() == 1:
        return tensor, 0
    world, rank = dist.get_world_size(), dist.get_rank()
    if tensor.dim() > 7:
        raise ValueError(f"gather_negative_pool: at most 7 dimensions, got {tensor.dim()}")
    shape = torch.tensor([tensor.dim(), *tensor.shape, *([0] * (7 - tensor.dim()))], dtype=torch.long,
                         device=tensor.device)
    shapes = [torch.empty_like(shape) for _ in range(world)]
    dist.all_gather(shapes, shape)
    if any(not torch.equal(s, shape) for s in shapes):
        found = [tuple(int(v) for v in s[1:1 + int(s[0])]) for s in shapes]
        raise ValueError(f"TC negative pool all_ranks: the processes' device batches differ in shape {found}; "
                         "every process needs the same (per-device batch, sequence length)")
    detached = tensor.detach().contiguous()
    parts = [torch.empty_like(detached) for _ in range(world)]
    dist.all_gather(parts, detached)
    return torch.cat(parts, dim=0), rank * tensor.shape[0]


def tc_loss(
    hidden: torch.Tensor,
    embeddings: torch.Tensor,
    positive_index: torch.Tensor,
    negative_index: torch.Tensor,
    anchor_mask: torch.Tensor,
    temperature: float = DEFAULTS["tc_temperature"],
    chunk_bytes: int | None = DEFAULT_CHUNK_BYTES,
    method: str = "auto",
    negative_pool: str = "rank",
) -> torch.Tensor:
    """Token-alignment contrastive loss (paper Eq. 9; official code's computation), in fp32.

    Args:
        hidden: (B, L, H) last-layer hidden states h.
        embeddings: (B, L, H) embedding-layer output e (``hidden_states[0]``).
        positive_index: LongTensor (B, L), column of each anchor's positive in its own row; -1 = none
            (from :func:`taco.tc.sampling.sample_positive_index`).
        negative_index: LongTensor (B, L, K), flat indices into the pool's positions of each anchor's
            negatives (from :func:`taco.tc.sampling.sample_negative_index`): B*L of this batch with
            ``negative_pool="rank"``, world*B*L of every process's batch with ``"all_ranks"`` (drawn with
            ``rows`` = this rank's rows of the gathered masks).
        anchor_mask: bool (B, L), positions that are anchors.
        temperature: tau > 0.
        chunk_bytes: bound on the temporary gather per chunk of the chunked path (``None``: automatic).
        method: how the anchor-key similarities are formed, see :func:`gathered_dot`.
        negative_pool: ``rank`` (keys of this batch) or ``all_ranks`` (the detached keys of every
            process, :func:`gather_negative_pool`; a collective: every rank must call it). The anchors
            and their positives are this batch's either way; with equal anchor counts per rank, the
            mean over ranks equals the loss of one process over the concatenated batches.

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
    if negative_pool not in NEGATIVE_POOLS:
        raise ValueError(f"negative_pool must be one of {', '.join(NEGATIVE_POOLS)}, got {negative_pool!r}")

    with torch.autocast(device_type=hidden.device.type, enabled=False):
        g = hidden.float() - embeddings.float()  # (B, L, H), out of place (official code: in place)
        z = F.normalize(g, dim=-1, eps=1e-12).reshape(B * L, H)
        keys = z.detach()  # stop-gradient on positives and negatives
        offset = 0  # flat index of this batch's first position in the pool
        if negative_pool == "all_ranks":  # before any early return: every rank joins the collective
            pooled, first_row = gather_negative_pool(keys.view(B, L, H))
            keys, offset = pooled.reshape(-1, H), first_row * L

        valid = anchor_mask.bool() & (positive_index >= 0)  # (B, L)
        flat = valid.reshape(-1).nonzero().squeeze(1)  # (N,) anchor flat ids
        if flat.numel() == 0:
            return g.sum() * 0.0
        rows = torch.div(flat, L, rounding_mode="floor")
        pos_flat = offset + rows * L + positive_index.reshape(-1)[flat]  # (N,)
        neg_flat = negative_index.reshape(B * L, -1)[flat]  # (N, K)
        index = torch.cat([pos_flat.unsqueeze(1), neg_flat], dim=1)  # (N, 1+K), positive first
        logits = gathered_dot(z[flat], keys, index, chunk_bytes, method) / temperature  # (N, 1+K)
        # cross-entropy with target 0 == logsumexp - positive logit
        return (torch.logsumexp(logits, dim=1) - logits[:, 0]).mean()
