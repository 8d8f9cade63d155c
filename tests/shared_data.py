"""Where the real test data lives, and the bert-base-uncased tokenizer built from it.

``$TACO_SHARED_DATA`` or ``<repo>/../shared/data`` (glue/, corpus/, bert/vocab.txt). Tests that need
it skip with the path in the reason where it is absent.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

SHARED = Path(os.environ.get("TACO_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
VOCAB_TXT = SHARED / "bert" / "vocab.txt"
GLUE_DIR = SHARED / "glue"


def bert_tokenizer():
    """bert-base-uncased WordPiece from ``vocab.txt`` (built with ``vocab=``: transformers 5's
    ``vocab_file=`` maps every word to [UNK]); checked on a known sentence."""
    if not VOCAB_TXT.is_file():
        pytest.skip(f"{VOCAB_TXT} absent: cannot build the BERT tokenizer (set TACO_SHARED_DATA)")
    from transformers import BertTokenizerFast

    vocab: dict[str, int] = {}
    for i, line in enumerate(VOCAB_TXT.read_text(encoding="utf-8").splitlines()):
        vocab.setdefault(line, i)
    tok = BertTokenizerFast(vocab=vocab, do_lower_case=True)
    assert tok("the cat")["input_ids"] == [101, 1996, 4937, 102]
    return tok
