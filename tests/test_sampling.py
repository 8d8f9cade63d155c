"""Invariants and exact distributions of the TC positive / negative samplers."""

from __future__ import annotations

import pytest
import torch
from scipy.stats import chisquare

from taco.tc.sampling import sample_negative_index, sample_positive_index

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


# ------------------------------------------------------------------ inner [CLS]/[SEP] (official block format)


def _official_batch(tok, B=32, L=64, seed=0):
    """Blocks in the official format (``taco pack --block-format official``): texts of 5-25 plain
    word ids, each ``[CLS] text [SEP]``, cut into raw L-token slices."""
    import numpy as np

    from taco.data.blocks import BlockPacker

    rng = np.random.default_rng(seed)
    packer = BlockPacker(L, tok.cls_token_id, tok.sep_token_id, None, framed=False)
    blocks = []
    while sum(len(b) for b in blocks) < B:
        texts = [rng.integers(2000, 29000, size=int(rng.integers(5, 26))).tolist() for _ in range(50)]
        blocks.append(packer.add(texts))
    return torch.as_tensor(np.concatenate(blocks)[:B], dtype=torch.long)


def test_inner_specials_never_masked_and_in_tc_as_official(shared_data):
    """As the official code (docs/paper-facts.md, "Block format and inner special tokens"): inner
    [CLS]/[SEP] are never selected for MLM; they are TC anchors, positives (the window crosses the
    text boundary) and negatives like any other position."""
    from taco.data.tokenizer import tokenizer_from_vocab
    from taco.model.collator import PreTrainingCollator
    from taco.objectives.taco import tc_anchor_mask

    tok = tokenizer_from_vocab(shared_data / "bert" / "vocab.txt")
    ids = _official_batch(tok)
    B, L = ids.shape
    special = (ids == tok.cls_token_id) | (ids == tok.sep_token_id)
    assert special[:, 1:-1].sum() > 4 * B  # inner ones: ~2 per ~17-token text
    collate = PreTrainingCollator(tok, mlm_probability=0.15, generator=torch.Generator().manual_seed(0))
    selected_plain = total_plain = 0
    for _ in range(50):
        batch = collate([{"input_ids": row} for row in ids])
        assert torch.equal(batch["original_input_ids"], ids)
        assert (batch["labels"][special] == -100).all(), "an inner [CLS]/[SEP] was selected for MLM"
        assert torch.equal(batch["input_ids"][special], ids[special])
        selected_plain += int((batch["labels"][~special] != -100).sum())
        total_plain += int((~special).sum())
    assert abs(selected_plain / total_plain - 0.15) < 0.01  # the others at the MLM rate

    attention = batch["attention_mask"]
    anchors = tc_anchor_mask("taco", attention, batch["labels"])
    assert anchors[special].all()  # every inner special is an anchor (official: no mask on the InfoNCE)
    assert not tc_anchor_mask("taco_concentrated", attention, batch["labels"])[special].any()

    g = torch.Generator().manual_seed(1)
    reps = 200
    pos = torch.stack([sample_positive_index(attention, 5, generator=g) for _ in range(reps)])  # (reps, B, L)
    j = torch.arange(L)
    # anchors whose right neighbour is an inner special, window inside the block: the special is
    # their positive a quarter of the time (offsets -2, -1, +1, +2 uniform), as for any token
    before_special = torch.zeros_like(special)
    before_special[:, :-1] = special[:, 1:]
    inside = (j >= 2) & (j < L - 2)
    sel = before_special & inside & ~special
    hits = (pos == (j + 1)).float()[:, sel].mean()
    assert abs(float(hits) - 0.25) < 0.02, float(hits)
    # and the window crosses into the next text: positives at +2 from the token before a [SEP]
    assert abs(float((pos == (j + 2)).float()[:, sel].mean()) - 0.25) < 0.02
    neg = sample_negative_index(attention, 50, generator=g)
    share = special.reshape(-1)[neg.reshape(-1)].float().mean()
    assert abs(float(share) - float(special.float().mean())) < 0.01  # specials drawn as often as any position
