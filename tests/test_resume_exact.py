"""Resume equals one uninterrupted run, bit for bit, wherever the chain is cut.

The Trainer groups an epoch's micro-batches into ceil(m / grad_accum) optimizer steps, the last over
the remainder; the masking generator's batch index must count that partial step. Cuts inside the
first epoch, at the partial step (the epoch's end) and after it, with accumulation 1, 3 and 4; the
model's sha256 must equal that of one run.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
datasets = pytest.importorskip("datasets")

from taco.training import pretrain as train  # noqa: E402
from taco.training.pretrain_trainer import micro_batches_before

N_BLOCKS, BATCH = 22, 2  # 11 micro-batches per epoch


def test_micro_batches_before_counts_the_partial_step():
    # 11 micro-batches, accumulation 3: steps of 3, 3, 3, 2 -> 4 steps per epoch
    assert [micro_batches_before(s, 11, 3) for s in range(7)] == [0, 3, 6, 9, 11, 14, 17]
    assert micro_batches_before(8, 11, 3) == 22  # two whole epochs
    assert [micro_batches_before(s, 11, 1) for s in (0, 5, 11, 12)] == [0, 5, 11, 12]
    # an exact multiple: no partial step
    assert micro_batches_before(5, 12, 4) == 20
    with pytest.raises(ValueError):
        micro_batches_before(1, 0, 3)


@pytest.fixture(scope="module")
def blocks(tmp_path_factory):
    import numpy as np
    from transformers import BertTokenizerFast

    root = tmp_path_factory.mktemp("resume_exact")
    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(59)]
    tok = BertTokenizerFast(vocab={t: i for i, t in enumerate(words)}, do_lower_case=True)
    rng = np.random.default_rng(0)

    def rows(n):
        return {"input_ids": [[2] + rng.integers(5, 64, size=14).tolist() + [3] for _ in range(n)]}

    out = root / "blocks"
    datasets.DatasetDict({"train": datasets.Dataset.from_dict(rows(N_BLOCKS)),
                          "validation": datasets.Dataset.from_dict(rows(4))}).save_to_disk(str(out))
    tok.save_pretrained(str(out / "tokenizer"))
    (out / "manifest.json").write_text(json.dumps({"kind": "blocks", "fraction": 1.0}))
    return out


def _args(blocks: Path, out: Path, until: int, max_steps: int, grad_accum: int, *extra: str) -> list[str]:
    return ["--blocks", str(blocks), "--objective", "taco", "--size", "tiny", "--max-steps", str(max_steps),
            "--warmup-steps", "2", "--until", str(until), "--output", str(out), "--state-dir", str(out) + ".state",
            "--per-device-batch-size", str(BATCH), "--grad-accum", str(grad_accum), "--save-every", "0",
            "--logging-steps", "100", "--seed", "7", "--device", "cpu", "--no-progress", "--tc-negatives", "4",
            *extra]


def _sha(ckpt: Path) -> str:
    return hashlib.sha256((ckpt / "model.safetensors").read_bytes()).hexdigest()


# (grad_accum, max_steps, cuts): cuts inside the first epoch, at its last (partial) step, after it
CASES = [(1, 14, (5, 11, 12)), (3, 9, (2, 4, 5)), (4, 7, (2, 3, 5))]


def _cut_once(blocks: Path, root: Path, cut: int, max_steps: int, grad_accum: int) -> str:
    """sha256 of a run to ``cut`` resumed to ``max_steps`` (one cut only)."""
    first, second = root / f"cut{cut}" / "a", root / f"cut{cut}" / "b"
    assert train.main(_args(blocks, first, cut, max_steps, grad_accum)) == 0
    assert train.main(_args(blocks, second, max_steps, max_steps, grad_accum, "--resume-from", str(first))) == 0
    return _sha(second)


@pytest.mark.parametrize("grad_accum,max_steps,cuts", CASES, ids=[f"accum{c[0]}" for c in CASES])
def test_chain_cut_anywhere_equals_one_run(blocks, tmp_path, grad_accum, max_steps, cuts):
    """One chain cut at every point of ``cuts`` (each segment resumes the previous one, as the
    workflow's budget segments do): its final model must equal the uninterrupted run's. Where it does
    not, each cut is tried alone (a run to the cut, resumed to the end) to name the ones that differ."""
    full = tmp_path / "full"
    assert train.main(_args(blocks, full, max_steps, max_steps, grad_accum)) == 0
    previous: Path | None = None
    for i, until in enumerate((*cuts, max_steps)):
        seg = tmp_path / "chain" / f"seg{i}-until{until}"
        resume = ("--resume-from", str(previous)) if previous is not None else ()
        assert train.main(_args(blocks, seg, until, max_steps, grad_accum, *resume)) == 0
        previous = seg
    if _sha(previous) != _sha(full):
        bad = [cut for cut in cuts if _cut_once(blocks, tmp_path / "alone", cut, max_steps, grad_accum) != _sha(full)]
        pytest.fail(f"grad_accum {grad_accum}: the chain cut at steps {cuts} differs from one run; "
                    f"cut alone, these differ: {bad or 'none (only the chain of resumes)'}")
