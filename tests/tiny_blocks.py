"""Packed blocks for tests and benchmarks that train a few steps: a 256-entry WordPiece vocabulary
(``[PAD] [UNK] [CLS] [SEP] [MASK] w0 ... w250``) and random blocks of ``[CLS] + 30 tokens + [SEP]``, in the
layout ``taco pack`` writes (``datasets.DatasetDict`` with train/validation, ``tokenizer/``, ``manifest.json``).
"""

from __future__ import annotations

import json
from pathlib import Path


def write_blocks(root: Path, n_train: int = 40, n_validation: int = 8, seed: int = 0) -> Path:
    """``root/blocks`` with ``n_train`` and ``n_validation`` blocks of 32 tokens drawn with ``seed``; returns it."""
    import datasets
    import numpy as np
    from transformers import BertTokenizerFast

    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(251)]
    tok = BertTokenizerFast(vocab={t: i for i, t in enumerate(words)}, do_lower_case=True)
    assert tok("w0 w1")["input_ids"] == [2, 5, 6, 3]
    rng = np.random.default_rng(seed)

    def rows(n):
        return {"input_ids": [[2] + rng.integers(5, 256, size=30).tolist() + [3] for _ in range(n)]}

    blocks = root / "blocks"
    datasets.DatasetDict({"train": datasets.Dataset.from_dict(rows(n_train)),
                          "validation": datasets.Dataset.from_dict(rows(n_validation))}).save_to_disk(str(blocks))
    tok.save_pretrained(str(blocks / "tokenizer"))
    (blocks / "manifest.json").write_text(json.dumps({"kind": "blocks", "fraction": 1.0}))
    return blocks
