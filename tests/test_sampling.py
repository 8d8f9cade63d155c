"""Invariants and exact distributions of the TC positive / negative samplers."""

from __future__ import annotations

import pytest
import torch
from scipy.stats import chisquare

from taco.model.sampling import sample_negative_index, sample_positive_index

ALPHA = 1e-3  # chi-square p-value threshold; fixed seeds make the tests deterministic


def _mask(lengths, L):
    return (torch.arange(L).unsqueeze(0) < torch.tensor(lengths).unsqueeze(1)).long()


def test_positive_invariants_many_draws(device):
    lengths = [20, 15, 3, 2, 1, 0, 7]
    L, W = 20, 5
    mask = _mask(lengths, L)
    reps = 400
    big = mask.repeat(reps, 1)  # many independent draws of the same rows
    # drawn on the device (its own generator), checked on the CPU
    pos = sample_positive_index(big.to(device), W, generator=torch.Generator(device=device).manual_seed(0)).cpu()
    assert pos.shape == big.shape and pos.dtype == torch.long
    real = big.bool()
    j = torch.arange(L).expand_as(pos)
    has = pos >= 0
    # -1 exactly at padding and in rows with fewer than two real tokens
    n_real = real.sum(1, keepdim=True)
    assert torch.equal(~has, ~real | (n_real < 2))
    p = pos.clamp_min(0)
    assert not (has & (p == j)).any(), "positive equals the anchor"
    assert real.gather(1, p)[has].all(), "positive on padding"
    # inside the window whenever the row has a real token inside the window on both sides
    in_window = (p - j).abs() <= W // 2
    full = has & (j >= W // 2) & (j + W // 2 < n_real)
    assert in_window[full].all()
    # where the window is partly off the sequence, out-of-window fallbacks happen
    edge = has & (j == 0) & (n_real > W)
    assert (~in_window[edge]).any()


def _expected_positive(j, n, W):
    """Exact law of the positive of anchor j in a row with n real tokens (then padding)."""
    half = W // 2
    offsets = [d for d in range(-half, half + 1) if d != 0]
    probs = torch.zeros(n, dtype=torch.float64)
    bad = 0
    for d in offsets:
        c = j + d
        if 0 <= c < n:
            probs[c] += 1 / len(offsets)
        else:
            bad += 1
    for c in range(n):
        if c != j:
            probs[c] += bad / len(offsets) / (n - 1)
    return probs


@pytest.mark.parametrize("j,n,W", [(0, 12, 5), (5, 12, 5), (10, 12, 5), (1, 3, 7), (2, 9, 3)])
def test_positive_distribution_chi_square(j, n, W):
    L, reps = 16, 6000
    mask = _mask([n] * reps, L)
    pos = sample_positive_index(mask, W, generator=torch.Generator().manual_seed(1234 + j))[:, j]
    expected = _expected_positive(j, n, W)
    support = expected > 0
    counts = torch.bincount(pos, minlength=n).double()
    assert counts[~support].sum() == 0
    stat = chisquare(counts[support].numpy(), (expected[support] * reps).numpy())
    assert stat.pvalue > ALPHA, stat


def test_negative_invariants_and_uniformity(device):
    lengths = [10, 4, 0, 7]
    B, L, K = len(lengths), 10, 6000
    mask = _mask(lengths, L)
    neg = sample_negative_index(mask.to(device), K, generator=torch.Generator(device=device).manual_seed(7)).cpu()
    assert neg.shape == (B, L, K) and neg.dtype == torch.long
    assert neg.min() >= 0 and neg.max() < B * L
    flat_real = mask.reshape(-1).bool()
    assert flat_real[neg].all(), "negative on padding"
    rows = neg // L
    assert not (rows == torch.arange(B).view(B, 1, 1)).any(), "negative from the anchor's own row"
    for b, j in [(0, 0), (0, 9), (1, 2), (3, 6), (2, 5)]:  # (2, 5) is a padding anchor of an empty row
        allowed = flat_real.clone()
        allowed[b * L : (b + 1) * L] = False
        counts = torch.bincount(neg[b, j], minlength=B * L).double()
        assert counts[~allowed].sum() == 0
        m = int(allowed.sum())
        stat = chisquare(counts[allowed].numpy(), [K / m] * m)
        assert stat.pvalue > ALPHA, (b, j, stat)


def test_reproducible_from_generator(device):
    mask = _mask([9, 5, 8], 9).to(device)

    def gen(seed):
        return torch.Generator(device=device).manual_seed(seed)

    a = sample_positive_index(mask, 5, gen(3))
    b = sample_positive_index(mask, 5, gen(3))
    c = sample_positive_index(mask, 5, gen(4))
    assert a.device.type == device.type
    assert torch.equal(a, b) and not torch.equal(a, c)
    a = sample_negative_index(mask, 50, gen(3))
    b = sample_negative_index(mask, 50, gen(3))
    c = sample_negative_index(mask, 50, gen(4))
    assert torch.equal(a, b) and not torch.equal(a, c)


@pytest.mark.parametrize("W", [1, 2, 4, 0, -3, 5.0])
def test_window_must_be_odd_and_at_least_3(W):
    with pytest.raises(ValueError, match="odd"):
        sample_positive_index(torch.ones(2, 4), W)


def test_negatives_need_two_sequences():
    with pytest.raises(ValueError, match="at least two sequences"):
        sample_negative_index(torch.ones(1, 8), 5)
    with pytest.raises(ValueError, match="at least two sequences"):
        sample_negative_index(_mask([8, 0], 8), 5)
    with pytest.raises(ValueError, match="positive integer"):
        sample_negative_index(torch.ones(2, 8), 0)
    with pytest.raises(ValueError, match=r"\(B, L\)"):
        sample_negative_index(torch.ones(8), 3)
