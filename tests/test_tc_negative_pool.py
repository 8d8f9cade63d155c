"""The TC negative pool across processes (``pretrain.tc.negative_pool``).

The official scripts train on 2 GPUs in one process (``torch.nn.DataParallel``), so the TC loss draws
its negatives from both GPUs' sequences. With ``all_ranks`` two gloo processes with B sequences each
give the loss (and the anchors' gradients) of one process over the 2B sequences with the same sampled
indices: at the loss (:func:`taco.tc.loss.tc_loss`) and through the model's forward
(``taco.objectives.taco.tc_terms``: the gathered masks, this rank's rows, the offset of its positives).
Equal anchor counts per rank, so the mean over ranks is the one-process mean. Two processes are
started once for every check (a few seconds).
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from taco.tc.loss import tc_loss  # noqa: E402
from taco.tc.sampling import sample_negative_index, sample_positive_index  # noqa: E402

WORLD, B, L, H, K, W = 2, 3, 6, 8, 7, 3
#: real tokens per row: rank 0's rows, then rank 1's (15 anchors per rank, some padding)
LENGTHS = [6, 4, 5, 5, 6, 4]
VOCAB = 50
#: fork: the processes inherit the imported torch and transformers (seconds, not a re-import each)
START = "fork" if "fork" in __import__("multiprocessing").get_all_start_methods() else "spawn"


def _inputs():
    """Hidden states, embeddings, mask and the one-process samples of the 2B sequences (deterministic)."""
    gen = torch.Generator().manual_seed(0)
    hidden = torch.randn(WORLD * B, L, H, generator=gen, dtype=torch.float64)
    emb = torch.randn(WORLD * B, L, H, generator=gen, dtype=torch.float64)
    mask = (torch.arange(L).unsqueeze(0) < torch.tensor(LENGTHS).unsqueeze(1)).long()
    pos = sample_positive_index(mask, W, gen)
    neg = sample_negative_index(mask, K, gen)
    return hidden, emb, mask, pos, neg


def _model():
    from taco.model.modeling import PreTrainingModel
    from taco.model.configs import bert_config

    torch.manual_seed(3)
    config = bert_config("tiny", VOCAB, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
                         attn_implementation="eager")
    return PreTrainingModel(config, objective="taco", tc_negative_pool="all_ranks", tc_num_negatives=K,
                              tc_window=W).train()


def _model_batch():
    gen = torch.Generator().manual_seed(1)
    mask = (torch.arange(L).unsqueeze(0) < torch.tensor(LENGTHS).unsqueeze(1)).long()
    ids = torch.randint(5, VOCAB, (WORLD * B, L), generator=gen) * mask
    labels = torch.where(torch.rand(WORLD * B, L, generator=gen) < 0.3, ids, torch.full_like(ids, -100))
    labels = labels.masked_fill(mask == 0, -100)
    return ids, mask, labels


def _worker(rank: int, init_file: str, out: str) -> None:
    import torch.distributed as dist

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=WORLD)
    try:
        rows = slice(rank * B, (rank + 1) * B)
        hidden, emb, mask, pos, neg = _inputs()
        h = hidden[rows].clone().requires_grad_(True)
        loss = tc_loss(h, emb[rows], pos[rows], neg[rows], mask[rows].bool(), negative_pool="all_ranks")
        loss.backward()
        model = _model()
        ids, mask_m, labels = _model_batch()
        model_out = model(input_ids=ids[rows], attention_mask=mask_m[rows], labels=labels[rows],
                          generator=torch.Generator().manual_seed(100 + rank))
        torch.save({"loss": loss.detach(), "grad": h.grad, "model_tc": model_out.tc_loss.detach()},
                   f"{out}/rank{rank}.pt")
    finally:
        dist.destroy_process_group()


@pytest.fixture(scope="module")
def ranks(tmp_path_factory):
    """What each of two gloo processes computed (started once)."""
    import torch.multiprocessing as mp

    import taco.model.modeling  # noqa: F401  (imported once here: the forked processes inherit it)

    d = tmp_path_factory.mktemp("pool")
    mp.start_processes(_worker, args=(str(d / "init"), str(d)), nprocs=WORLD, start_method=START, join=True)
    return [torch.load(d / f"rank{r}.pt") for r in range(WORLD)]


def test_two_ranks_all_ranks_pool_equal_one_process_over_both_batches(ranks):
    hidden, emb, mask, pos, neg = _inputs()
    h = hidden.clone().requires_grad_(True)
    full = tc_loss(h, emb, pos, neg, mask.bool())
    full.backward()
    mean = sum(r["loss"] for r in ranks) / WORLD
    torch.testing.assert_close(mean, full.detach(), rtol=1e-12, atol=1e-12)
    # each rank's mean over its own anchors: its gradient is WORLD x its share of the one-process one
    grads = torch.cat([r["grad"] for r in ranks]) / WORLD
    torch.testing.assert_close(grads, h.grad, rtol=1e-10, atol=1e-12)
    # the rank pool (this process's batch only) is a different loss: the check can fail
    local = [tc_loss(hidden[r * B:(r + 1) * B], emb[r * B:(r + 1) * B], pos[r * B:(r + 1) * B],
                     sample_negative_index(mask[r * B:(r + 1) * B], K, torch.Generator().manual_seed(5)),
                     mask[r * B:(r + 1) * B].bool()) for r in range(WORLD)]
    assert not torch.isclose(sum(local) / WORLD, full.detach())


def test_model_forward_with_all_ranks_draws_from_every_process(ranks):
    """Through ``PreTrainingModel``: each rank's draws (its generator: positives in its rows, negatives
    over the gathered masks at its rows) reproduced in one process over the 2B sequences."""
    model = _model()
    ids, mask, labels = _model_batch()
    with torch.no_grad():
        out = model.bert(ids, attention_mask=mask, output_hidden_states=True, return_dict=True)
    pos, neg = [], []
    for r in range(WORLD):
        gen = torch.Generator().manual_seed(100 + r)
        pos.append(sample_positive_index(mask[r * B:(r + 1) * B], W, gen))
        neg.append(sample_negative_index(mask, K, gen, rows=(r * B, (r + 1) * B)))
    full = tc_loss(out.last_hidden_state, out.hidden_states[0], torch.cat(pos), torch.cat(neg), mask.bool(),
                   model.config.taco_tc_temperature)
    mean = sum(r["model_tc"] for r in ranks) / WORLD
    torch.testing.assert_close(mean, full, rtol=1e-5, atol=1e-6)


def test_rows_draw_only_other_rows_of_the_pool():
    mask = (torch.arange(L).unsqueeze(0) < torch.tensor(LENGTHS).unsqueeze(1)).long()
    gen = torch.Generator().manual_seed(0)
    neg = sample_negative_index(mask, 400, gen, rows=(B, 2 * B))
    assert neg.shape == (B, L, 400)
    pool_rows = torch.div(neg, L, rounding_mode="floor")
    own = torch.arange(B, 2 * B).view(B, 1, 1)
    assert not (pool_rows == own).any()
    assert mask.reshape(-1)[neg].bool().all()  # never padding
    assert set(pool_rows.unique().tolist()) == set(range(2 * B))  # rank 0's rows too
    # without rows: the draws of the single-pool sampler
    a = sample_negative_index(mask, K, torch.Generator().manual_seed(4))
    b = sample_negative_index(mask, K, torch.Generator().manual_seed(4), rows=(0, 2 * B))
    assert torch.equal(a, b)
    with pytest.raises(ValueError, match="rows"):
        sample_negative_index(mask, K, rows=(2, 2))


def test_without_a_process_group_all_ranks_is_the_batch_itself():
    hidden, emb, mask, pos, neg = _inputs()
    torch.testing.assert_close(tc_loss(hidden, emb, pos, neg, mask.bool(), negative_pool="all_ranks"),
                               tc_loss(hidden, emb, pos, neg, mask.bool()))
    with pytest.raises(ValueError, match="negative_pool"):
        tc_loss(hidden, emb, pos, neg, mask.bool(), negative_pool="everything")
