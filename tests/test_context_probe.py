"""The context-use probe (taco.training.context_probe) on models whose answer is known."""

from __future__ import annotations

import math
from collections import Counter
from types import SimpleNamespace

import pytest

torch = pytest.importorskip("torch")
datasets = pytest.importorskip("datasets")

from taco.stats.validation_points import PLATEAU_EXIT_GAP  # noqa: E402
from taco.training.context_probe import context_probe  # noqa: E402

V = 64
CLS, SEP, MASK, PAD = 2, 3, 4, 0


class _Tok:
    """The few tokenizer attributes the probe reads."""

    all_special_ids = [PAD, 1, CLS, SEP, MASK]
    mask_token_id = MASK

    def __len__(self):
        return V


def _blocks(tmp_path, rows_train, rows_val):
    path = tmp_path / "blocks"
    datasets.DatasetDict({"train": datasets.Dataset.from_dict({"input_ids": rows_train}),
                          "validation": datasets.Dataset.from_dict({"input_ids": rows_val})}).save_to_disk(str(path))
    return path


class _NextTokenModel(torch.nn.Module):
    """Predicts token t+1 after a visible token t (the order a block is written in): hidden state at j is the
    one-hot of the token at j - 1; logits put ``scale`` on that id + 1. Knows order, nothing else."""

    def __init__(self, scale: float):
        super().__init__()
        self.w = torch.nn.Parameter(torch.zeros(1))
        self.scale = scale

    def encode(self, input_ids, attention_mask, token_type_ids, output_hidden_states):
        prev = torch.roll(input_ids, 1, dims=1)
        return SimpleNamespace(last_hidden_state=torch.nn.functional.one_hot(prev, V).float())

    def mlm_logits(self, hidden):
        nxt = torch.roll(hidden, 1, dims=-1)  # one-hot of t -> of t + 1
        return self.scale * nxt


class _BlindModel(_NextTokenModel):
    """Constant logits: sees nothing."""

    def mlm_logits(self, hidden):
        return torch.zeros(hidden.shape[:-1] + (V,))


def _sequential_rows(n, length=30, start=5):
    # [CLS] a a+1 a+2 ... [SEP]: every token is its left neighbour + 1 (ids 5..63, wrapped)
    out = []
    for i in range(n):
        a = start + i % 20
        out.append([CLS] + [5 + (a + j - 5) % (V - 5) for j in range(length)] + [SEP])
    return out


def test_a_model_that_uses_order_loses_it_when_shuffled_and_a_blind_one_does_not(tmp_path):
    rows = _sequential_rows(32)
    blocks = _blocks(tmp_path, rows, rows)
    ordered = context_probe(_NextTokenModel(8.0), blocks, _Tok(), mlm_probability=0.15, mask_seed=7)
    blind = context_probe(_BlindModel(8.0), blocks, _Tok(), mlm_probability=0.15, mask_seed=7)
    # the blind model: ln V in every condition, no order gap
    for k in ("probe_intact_loss", "probe_shuffled_loss", "probe_no_context_loss"):
        assert blind[k] == pytest.approx(math.log(V), abs=1e-6)
    assert blind["probe_order_gap"] == pytest.approx(0.0, abs=1e-9)
    # the ordered model: where the left neighbour is visible (not masked, ~85%) it is nearly certain
    assert ordered["probe_intact_loss"] < 0.5 * math.log(V)
    assert ordered["probe_order_gap"] > 1.0 > PLATEAU_EXIT_GAP
    # no context: every left neighbour is [MASK] (or [CLS]): the same for every target, near ln V or worse
    assert ordered["probe_no_context_loss"] > ordered["probe_intact_loss"] + 1.0
    assert ordered["probe_n_blocks"] == 32 and ordered["probe_n_masked_tokens"] > 0


def test_unigram_line_equals_an_independent_count(tmp_path):
    import random

    rng = random.Random(0)
    train = [[CLS] + [rng.choice(range(5, 20)) for _ in range(30)] + [SEP] for _ in range(50)]
    val = [[CLS] + [rng.choice(range(5, 40)) for _ in range(30)] + [SEP] for _ in range(8)]
    blocks = _blocks(tmp_path, train, val)
    # mlm_probability 1: every real token of the validation blocks is a target
    res = context_probe(_BlindModel(1.0), blocks, _Tok(), mlm_probability=1.0, mask_seed=0)
    counts = Counter(t for r in train for t in r[1:-1])
    total = sum(counts.values()) + V
    expect = -sum(math.log((counts.get(t, 0) + 1) / total) for r in val for t in r[1:-1]) / (8 * 30)
    assert res["probe_unigram_loss"] == pytest.approx(expect, rel=1e-9)
    assert res["probe_n_masked_tokens"] == 8 * 30


def test_probe_is_deterministic_and_named_errors(tmp_path):
    rows = _sequential_rows(20)
    blocks = _blocks(tmp_path, rows, rows)
    a = context_probe(_NextTokenModel(3.0), blocks, _Tok(), mlm_probability=0.15, mask_seed=11)
    b = context_probe(_NextTokenModel(3.0), blocks, _Tok(), mlm_probability=0.15, mask_seed=11)
    assert a == b
    empty = tmp_path / "empty"
    datasets.DatasetDict({"train": datasets.Dataset.from_dict({"input_ids": rows})}).save_to_disk(str(empty))
    with pytest.raises(ValueError, match="empty.*validation"):
        context_probe(_NextTokenModel(3.0), empty, _Tok(), mlm_probability=0.15, mask_seed=11)
