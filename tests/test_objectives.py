"""Objective registry, BERT masking statistics and the pre-training collator."""

from __future__ import annotations

import math

import pytest
import torch

from taco.model.collator import PreTrainingCollator
from taco.objectives import get_objective
from taco.model.masking import mask_tokens
from taco.objectives.taco import tc_anchor_mask
from taco.objectives import OBJECTIVE_SPECS as OBJECTIVES

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(95)]


@pytest.fixture(scope="module")
def tokenizer():
    from transformers import BertTokenizerFast

    tok = BertTokenizerFast(vocab={t: i for i, t in enumerate(VOCAB)})
    assert tok("w0 w1 w2").input_ids == [2, 5, 6, 7, 3]  # guard against the all-[UNK] pitfall
    return tok


def test_registry():
    shipped = {"mlm", "taco", "taco_concentrated", "taco_unmasked", "mlm_tp", "bert_nce", "infoword"}
    assert shipped <= set(OBJECTIVES)  # a new objective module adds to these without editing this test
    spec = {name: ("tc" in o.terms, getattr(o, "tc_positions", None), "tp" in o.terms)
            for name, o in OBJECTIVES.items() if name in shipped}
    assert spec == {
        "mlm": (False, None, False),
        "taco": (True, "all", False),
        "taco_concentrated": (True, "masked", False),
        "taco_unmasked": (True, "unmasked", False),
        "mlm_tp": (False, None, True),
        "bert_nce": (False, None, False),
        "infoword": (False, None, False),
    }
    assert get_objective("taco") is OBJECTIVES["taco"]
    with pytest.raises(ValueError, match="mlm, taco, taco_concentrated, taco_unmasked, mlm_tp, bert_nce, infoword"):
        get_objective("bert")


def test_anchor_masks():
    am = torch.tensor([[1, 1, 1, 0]])
    labels = torch.tensor([[-100, 7, -100, -100]])
    assert tc_anchor_mask("taco", am, labels).tolist() == [[True, True, True, False]]
    assert tc_anchor_mask("taco_concentrated", am, labels).tolist() == [[False, True, False, False]]
    assert tc_anchor_mask("taco_unmasked", am, labels).tolist() == [[True, False, True, False]]
    with pytest.raises(ValueError, match="no TC"):
        tc_anchor_mask("mlm", am, labels)


def _within(count, n, p, sigmas=4.5):
    return abs(count - n * p) <= sigmas * math.sqrt(n * p * (1 - p))


def test_masking_statistics():
    B, L, V, MASK = 400, 256, 1000, 4
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(5, V, (B, L), generator=g)
    ids[:, 0], ids[:, -1] = 2, 3
    special = torch.zeros(B, L, dtype=torch.bool)
    special[:, 0] = special[:, -1] = True
    attn = torch.ones(B, L, dtype=torch.long)
    attn[::3, 200:] = 0  # padding in every third row
    corrupted, labels = mask_tokens(ids, special, attn, MASK, V, 0.15, generator=g)
    selected = labels != -100
    candidates = attn.bool() & ~special
    n = int(candidates.sum())
    assert not (selected & ~candidates).any(), "special token or padding selected"
    assert _within(int(selected.sum()), n, 0.15)
    assert torch.equal(labels[selected], ids[selected])
    assert torch.equal(corrupted[~selected], ids[~selected]), "unselected tokens must be unchanged"
    s = int(selected.sum())
    masked = int((corrupted[selected] == MASK).sum())
    unchanged = int((corrupted[selected] == ids[selected]).sum())
    random_ = s - masked - unchanged
    assert _within(masked, s, 0.8)
    # a random replacement equals the original with prob 1/V, [MASK] with prob 1/V
    assert _within(unchanged, s, 0.1 + 0.1 / V)
    assert _within(random_, s, 0.1 - 0.2 / V)
    assert corrupted.min() >= 0 and corrupted.max() < V


def test_masking_reproducible_and_errors():
    ids = torch.randint(5, 50, (4, 32))
    a = mask_tokens(ids, None, None, 4, 50, generator=torch.Generator().manual_seed(1))
    b = mask_tokens(ids, None, None, 4, 50, generator=torch.Generator().manual_seed(1))
    assert all(torch.equal(x, y) for x, y in zip(a, b))
    with pytest.raises(ValueError, match="mlm_probability"):
        mask_tokens(ids, None, None, 4, 50, 1.5)
    with pytest.raises(ValueError, match=r"\(B, L\)"):
        mask_tokens(ids[0], None, None, 4, 50)
    with pytest.raises(ValueError, match="attention_mask shape"):
        mask_tokens(ids, None, torch.ones(4, 31), 4, 50)


def test_collator_equal_length_blocks(tokenizer):
    g = torch.Generator().manual_seed(0)
    blocks = [[2] + torch.randint(5, 100, (62,), generator=g).tolist() + [3] for _ in range(64)]
    coll = PreTrainingCollator(tokenizer, mlm_probability=0.15, generator=torch.Generator().manual_seed(0))
    batch = coll([{"input_ids": b} for b in blocks])
    assert set(batch) == {"input_ids", "attention_mask", "labels", "original_input_ids"}
    for v in batch.values():
        assert v.dtype == torch.long and v.shape == (64, 64)
    assert torch.equal(batch["original_input_ids"], torch.tensor(blocks))
    assert batch["attention_mask"].all()
    sel = batch["labels"] != -100
    assert not sel[:, 0].any() and not sel[:, -1].any(), "[CLS]/[SEP] selected"
    assert _within(int(sel.sum()), 64 * 62, 0.15)
    # the collator's own generator makes batches reproducible
    again = PreTrainingCollator(tokenizer, generator=torch.Generator().manual_seed(0))([{"input_ids": b} for b in blocks])
    assert all(torch.equal(batch[k], again[k]) for k in batch)


def test_collator_pads_unequal_lengths(tokenizer):
    feats = [{"input_ids": tokenizer("w1 w2 w3 w4 w5 w6").input_ids}, {"input_ids": tokenizer("w7").input_ids}]
    batch = PreTrainingCollator(tokenizer, mlm_probability=1.0)(feats)
    assert batch["input_ids"].shape == (2, 8)
    assert batch["attention_mask"].tolist() == [[1] * 8, [1, 1, 1, 0, 0, 0, 0, 0]]
    assert batch["original_input_ids"][1].tolist() == [2, 12, 3, 0, 0, 0, 0, 0]  # w7 = id 12
    expected_sel = [[False] + [True] * 6 + [False], [False, True] + [False] * 6]
    assert (batch["labels"] != -100).tolist() == expected_sel  # p=1: every real non-special token
    assert batch["input_ids"][1, 3:].tolist() == [0] * 5


def test_collator_errors(tokenizer):
    with pytest.raises(ValueError, match="empty"):
        PreTrainingCollator(tokenizer)([])
    with pytest.raises(ValueError, match="input_ids"):
        PreTrainingCollator(tokenizer)([{"text": "x"}])
    with pytest.raises(ValueError, match="mlm_probability"):
        PreTrainingCollator(tokenizer, mlm_probability=-0.1)
