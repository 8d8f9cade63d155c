"""TC loss against a slow, direct transcription of the paper's Eq. 9 (explicit loops over anchors)."""

from __future__ import annotations

import math

import pytest
import torch

from taco.tc.loss import GatheredDot, gathered_dot, tc_loss
from taco.tc.sampling import sample_negative_index, sample_positive_index


def reference_tc_loss(hidden, embeddings, pos, neg, anchor_mask, tau):
    """Paper Eq. 9 with g = h - e, f = cos / tau, stop-gradient on positives and negatives.

    Written anchor by anchor and negative by negative, in float64, independent of taco.tc.loss.
    """
    B, L, H = hidden.shape
    h = hidden.double()
    e = embeddings.double()
    terms = []
    for b in range(B):
        for j in range(L):
            if not bool(anchor_mask[b, j]) or int(pos[b, j]) < 0:
                continue
            g_anchor = h[b, j] - e[b, j]
            p = int(pos[b, j])
            g_pos = (h[b, p] - e[b, p]).detach()

            def f(u, v):
                return torch.dot(u, v) / (torch.sqrt(torch.dot(u, u)) * torch.sqrt(torch.dot(v, v))) / tau

            numerator = torch.exp(f(g_anchor, g_pos))
            denominator = numerator
            for k in range(neg.shape[2]):
                n = int(neg[b, j, k])
                bn, jn = divmod(n, L)
                g_neg = (h[bn, jn] - e[bn, jn]).detach()
                denominator = denominator + torch.exp(f(g_anchor, g_neg))
            terms.append(-torch.log(numerator / denominator))
    if not terms:
        return (h.sum() * 0).float()
    return torch.stack(terms).mean()


def _case(B, L, H, K, seed, pad=True):
    g = torch.Generator().manual_seed(seed)
    hidden = torch.randn(B, L, H, generator=g)
    emb = torch.randn(B, L, H, generator=g) * 0.5
    mask = torch.ones(B, L, dtype=torch.long)
    if pad:
        for b in range(B):
            n = int(torch.randint(1, L + 1, (1,), generator=g))
            mask[b, n:] = 0
        mask[0, :] = 1  # at least two rows keep real tokens
        mask[1, : max(2, L // 2)] = 1
    pos = sample_positive_index(mask, 5, generator=g)
    neg = sample_negative_index(mask, K, generator=g)
    anchors = mask.bool() & (torch.rand(B, L, generator=g) < 0.8)
    return hidden, emb, mask, pos, neg, anchors


SHAPES = [(2, 5, 4, 3), (3, 7, 8, 5), (4, 9, 16, 12), (5, 6, 3, 1)]


@pytest.mark.parametrize("B,L,H,K", SHAPES)
@pytest.mark.parametrize("tau", [0.07, 0.5])
def test_tc_loss_matches_reference_value_and_gradient(B, L, H, K, tau, device):
    hidden, emb, mask, pos, neg, anchors = _case(B, L, H, K, seed=B * 100 + L)
    h1, e1 = hidden.to(device, copy=True).requires_grad_(), emb.to(device, copy=True).requires_grad_()
    h2, e2 = hidden.double().requires_grad_(), emb.double().requires_grad_()
    pos_d, neg_d, anchors_d = pos.to(device), neg.to(device), anchors.to(device)
    # both forward paths; chunk_bytes=1 forces one anchor per chunk: chunking must not change the result
    for method, chunk_bytes in (("auto", None), ("chunked", 1), ("chunked", 2**20)):
        h1.grad = e1.grad = None
        got = tc_loss(h1, e1, pos_d, neg_d, anchors_d, tau, chunk_bytes=chunk_bytes, method=method)
        got.backward()
        h2.grad = e2.grad = None
        want = reference_tc_loss(h2, e2, pos, neg, anchors, tau)  # CPU, float64
        want.backward()
        assert got.dtype == torch.float32 and got.device.type == device.type
        torch.testing.assert_close(got.double().cpu(), want, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(h1.grad.double().cpu(), h2.grad, rtol=1e-4, atol=1e-5)
        torch.testing.assert_close(e1.grad.double().cpu(), e2.grad, rtol=1e-4, atol=1e-5)


def test_only_anchors_get_gradient_and_padding_is_ignored():
    hidden, emb, mask, pos, neg, anchors = _case(4, 10, 8, 6, seed=3)
    h = hidden.clone().requires_grad_()
    tc_loss(h, emb, pos, neg, anchors, 0.07).backward()
    has_grad = h.grad.abs().sum(-1) > 0
    assert not (has_grad & ~anchors).any(), "non-anchor positions (incl. padding) must get no gradient"
    # changing padding content does not change the loss
    hidden2 = hidden.clone()
    hidden2[~mask.bool()] = 1e3 * torch.randn_like(hidden2[~mask.bool()])
    a = tc_loss(hidden, emb, pos, neg, anchors, 0.07)
    b = tc_loss(hidden2, emb, pos, neg, anchors, 0.07)
    torch.testing.assert_close(a, b)


def test_bf16_autocast_is_computed_in_fp32(device):
    hidden, emb, mask, pos, neg, anchors = _case(3, 8, 16, 7, seed=11)
    want = reference_tc_loss(hidden, emb, pos, neg, anchors, 0.07)
    on = {"positive_index": pos.to(device), "negative_index": neg.to(device), "anchor_mask": anchors.to(device)}
    h = hidden.to(device, copy=True).requires_grad_()
    with torch.autocast(device.type, dtype=torch.bfloat16):
        got = tc_loss(h, emb.to(device), temperature=0.07, **on)
    assert got.dtype == torch.float32
    torch.testing.assert_close(got.double().cpu(), want, rtol=1e-5, atol=1e-5)
    got.backward()
    assert h.grad.dtype == torch.float32
    # bf16 inputs: the loss equals the fp32 loss of the bf16-rounded values
    hb, eb = hidden.bfloat16(), emb.bfloat16()
    with torch.autocast(device.type, dtype=torch.bfloat16):
        got_b = tc_loss(hb.to(device), eb.to(device), temperature=0.07, **on)
    want_b = reference_tc_loss(hb.float(), eb.float(), pos, neg, anchors, 0.07)
    assert got_b.dtype == torch.float32
    torch.testing.assert_close(got_b.double().cpu(), want_b, rtol=1e-5, atol=1e-5)


def test_perfect_alignment_limit():
    # anchors identical to their positive and orthogonal to all negatives: loss = log(1 + K e^{-1/tau})
    B, L, H, K, tau = 2, 2, 4, 3, 0.1
    hidden = torch.zeros(B, L, H)
    hidden[0, :, 0] = 1.0
    hidden[1, :, 1] = 1.0
    emb = torch.zeros_like(hidden)
    pos = torch.tensor([[1, 0], [1, 0]])
    neg = sample_negative_index(torch.ones(B, L), K, generator=torch.Generator().manual_seed(0))
    loss = tc_loss(hidden, emb, pos, neg, torch.ones(B, L, dtype=torch.bool), tau)
    expected = -math.log(math.exp(1 / tau) / (math.exp(1 / tau) + K * math.exp(0.0)))
    assert loss.item() == pytest.approx(expected, abs=1e-6)  # fp32: logsumexp(~10) - 10


def test_no_anchor_gives_connected_zero():
    hidden, emb, mask, pos, neg, anchors = _case(2, 4, 3, 2, seed=0, pad=False)
    h = hidden.clone().requires_grad_()
    loss = tc_loss(h, emb, pos, neg, torch.zeros_like(anchors), 0.07)
    assert loss.item() == 0.0
    loss.backward()
    assert torch.count_nonzero(h.grad) == 0


def test_saved_tensors_never_hold_gathered_negatives():
    """What autograd saves for backward stays O(B*L*(H+K)): no (N, K, H)-sized tensor."""
    B, L, H, K = 8, 64, 64, 50
    hidden, emb, mask, pos, neg, anchors = _case(B, L, H, K, seed=5, pad=False)
    h = hidden.clone().requires_grad_()
    e = emb.clone().requires_grad_()
    saved = []

    def pack(t):
        saved.append((t.numel(), t.element_size()))
        return t

    for method in ("sddmm", "chunked"):
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            loss = tc_loss(h, e, pos, neg, anchors, 0.07, chunk_bytes=64 * 1024, method=method)
        loss.backward()
    n_anchor = int(anchors.sum())
    biggest = max(n for n, _ in saved)
    assert biggest < n_anchor * K * H // 8, f"a saved tensor has {biggest} elements"
    total = sum(n * s for n, s in saved)
    # generous O(B*L*(H+K)) bound: 16 copies of (B*L*H) fp32 plus 4 of (B*L*(K+1)) int64/fp32
    assert total < 16 * B * L * H * 4 + 4 * B * L * (K + 1) * 8


def test_gathered_dot_gradcheck():
    g = torch.Generator().manual_seed(0)
    a = torch.randn(5, 3, dtype=torch.double, generator=g, requires_grad=True)
    keys = torch.randn(7, 3, dtype=torch.double, generator=g, requires_grad=True)
    idx = torch.randint(0, 7, (5, 4), generator=g)
    for path in ("sddmm", "chunked", "dense"):
        assert torch.autograd.gradcheck(lambda x, y: GatheredDot.apply(x, y, idx, 2, path), (a, keys))
    want = torch.einsum("nh,nkh->nk", a, keys[idx])
    for method in ("auto", "sddmm", "chunked", "dense"):
        torch.testing.assert_close(gathered_dot(a, keys, idx, method=method), want)
    with pytest.raises(ValueError, match="method"):
        gathered_dot(a, keys, idx, method="gather")


def test_more_negatives_than_keys_trains(device):
    """K >> B*L (negatives drawn with replacement): the loss and its gradient equal the paper's Eq. 9
    (independent float64 loops) and the chunked path; the CPU's sampled matmul cannot hold 1 + K
    entries per row over B*L columns, so ``auto`` must not pick it."""
    B, L, H, K = 2, 4, 8, 64  # 1 + K = 65 > B*L = 8
    hidden, emb, mask, pos, neg, anchors = _case(B, L, H, K, seed=7, pad=False)
    want = reference_tc_loss(hidden.clone().requires_grad_(True), emb, pos, neg, anchors, 0.07)
    losses, grads = [], []
    for method in ("auto", "chunked"):
        h = hidden.clone().to(device).requires_grad_(True)
        loss = tc_loss(h, emb.to(device), pos.to(device), neg.to(device), anchors.to(device), 0.07, method=method)
        loss.backward()
        losses.append(loss.detach().cpu())
        grads.append(h.grad.cpu())
    torch.testing.assert_close(losses[0].double(), want.detach(), rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(losses[0], losses[1])
    torch.testing.assert_close(grads[0], grads[1])
    h64 = hidden.double().requires_grad_(True)
    reference_tc_loss(h64, emb.double(), pos, neg, anchors, 0.07).backward()
    torch.testing.assert_close(grads[0].double(), h64.grad, rtol=1e-4, atol=1e-6)
    a, keys = torch.randn(3, 4, dtype=torch.double), torch.randn(2, 4, dtype=torch.double)
    with pytest.raises(ValueError, match="columns"):
        gathered_dot(a, keys, torch.zeros(3, 3, dtype=torch.long), method="sddmm")


def test_errors():
    hidden, emb, mask, pos, neg, anchors = _case(2, 4, 3, 2, seed=0, pad=False)
    with pytest.raises(ValueError, match="hidden and embeddings"):
        tc_loss(hidden, emb[:, :3], pos, neg, anchors, 0.07)
    with pytest.raises(ValueError, match="positive_index"):
        tc_loss(hidden, emb, pos[:, :3], neg, anchors, 0.07)
    with pytest.raises(ValueError, match="negative_index"):
        tc_loss(hidden, emb, pos, neg[0], anchors, 0.07)
    with pytest.raises(ValueError, match="anchor_mask"):
        tc_loss(hidden, emb, pos, neg, anchors[:1], 0.07)
    with pytest.raises(ValueError, match="temperature"):
        tc_loss(hidden, emb, pos, neg, anchors, 0.0)
