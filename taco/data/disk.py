"""Disk cost of each data artifact, at any corpus size (the compute plan imports ``data_disk_plan``).

Per-token byte costs (bert-base-uncased WordPiece; measured 2026-11-30 with
``taco.data.corpus.read_local_documents`` + ``tokenizer_from_vocab`` on the shared data):

================================  =======================  ==================================
quantity                          value                    source
================================  =======================  ==================================
tokens per word                   1.22 (Wikipedia), 1.34   WikiText-2 valid+test (441k tokens),
                                  (books); 1.25 blended    Gutenberg selection (2.87M tokens)
UTF-8 text bytes per token        4.81 (Wikipedia), 4.05   same texts
                                  (books); 4.6 blended
Hub parquet download / text       0.57 (snappy), 0.40      ``pyarrow.parquet.write_table`` of
                                  (zstd); 0.57 used        the same texts
Hub Arrow cache / text            1.01 (articles), 1.08    ``Dataset.save_to_disk`` of the same
                                  (sentence rows)          texts: text + 4-byte row offsets
packed block bytes per corpus     4 x L/(L-2) + 4/(L-2)    int32 ids incl. [CLS]/[SEP] framing
token                             = 4.05 at L=256          + one int32 list offset per block
================================  =======================  ==================================

Artifacts (``taco corpus`` -> ``taco tokenizer`` -> ``taco pack``, one pack per data fraction):

- ``hub_download``: the parquet files ``datasets`` downloads (Hub cache, ``downloads/``).
- ``hub_arrow_cache``: the Arrow files ``datasets`` prepares from them (Hub cache). The corpus
  artifact reads these **in place** (``taco.data.corpus_store``), so ``corpus_artifact`` is only
  its manifest for a Hub source; for a local or synthetic source it is one copy of the text.
- ``packed``: per fraction ``f``, ``f`` of the train tokens plus the validation blocks.
- ``tokenizer``: the ``save_pretrained`` directory, copied into each packed artifact too.

BERT's corpus was 3.3B words (BooksCorpus 800M + English Wikipedia 2,500M; Devlin et al. 2019,
section 3.1); the current dumps (``wikimedia/wikipedia`` 20231101.en, ``rojagtap/bookcorpus``)
are larger: pass their word count. The packed artifact is written once (no scratch copy); while
an artifact is rebuilt over an old one (``--overwrite``) both exist until the rename.
"""

from __future__ import annotations

from collections.abc import Sequence

#: BERT's pre-training corpus in words (BooksCorpus 800M + English Wikipedia 2,500M)
PAPER_WORDS = 3.3e9
TOKENS_PER_WORD = 1.25
TEXT_BYTES_PER_TOKEN = 4.6
PARQUET_PER_TEXT_BYTE = 0.57
ARROW_PER_TEXT_BYTE = 1.05
#: a bert-base-uncased tokenizer directory (tokenizer.json + config)
TOKENIZER_BYTES = 720_000


def packed_bytes_per_token(max_seq_length: int = 256) -> float:
    """Bytes of a packed artifact per stream token: int32 ids of ``[CLS] body [SEP]`` blocks plus
    one int32 list offset per block, i.e. ``4 * L / (L - 2) + 4 / (L - 2)``."""
    if max_seq_length < 3:
        raise ValueError(f"max_seq_length must be >= 3, got {max_seq_length}")
    body = max_seq_length - 2
    return 4.0 * max_seq_length / body + 4.0 / body


def data_disk_plan(words: float = PAPER_WORDS, fractions: Sequence[float] = (1.0, 0.25),
                   max_seq_length: int = 256, validation_blocks: int = 2048, source: str = "hub",
                   tokens_per_word: float = TOKENS_PER_WORD,
                   text_bytes_per_token: float = TEXT_BYTES_PER_TOKEN) -> dict[str, float]:
    """Bytes on disk of each data artifact for a corpus of ``words`` words.

    Args:
        words: corpus size in whitespace-separated words (default: BERT's 3.3B).
        fractions: the data fractions packed (one packed artifact each; paper: 1.0 and 0.25).
        max_seq_length: block length L; validation_blocks: held-out blocks (config keys).
        source: ``hub`` (Hub cache files read in place: the corpus artifact is a manifest) or
            ``local``/``synthetic`` (the corpus artifact holds one copy of the text, no Hub cache).
        tokens_per_word, text_bytes_per_token: see the module table.

    Returns: ``{"tokens", "hub_download", "hub_arrow_cache", "corpus_artifact", "tokenizer",
    "packed_<fraction>" for each fraction, "total"}`` (bytes; ``tokens`` is a count).

    Raises ValueError for non-positive sizes or a fraction outside (0, 1].
    """
    if words <= 0 or tokens_per_word <= 0 or text_bytes_per_token <= 0:
        raise ValueError("words, tokens_per_word and text_bytes_per_token must be > 0")
    if source not in ("hub", "local", "synthetic"):
        raise ValueError(f"unknown source {source!r}")
    tokens = words * tokens_per_word
    text = tokens * text_bytes_per_token
    per_token = packed_bytes_per_token(max_seq_length)
    plan: dict[str, float] = {"tokens": tokens}
    if source == "hub":
        plan.update(hub_download=text * PARQUET_PER_TEXT_BYTE, hub_arrow_cache=text * ARROW_PER_TEXT_BYTE,
                    corpus_artifact=0.0)
    else:
        plan.update(hub_download=0.0, hub_arrow_cache=0.0, corpus_artifact=text * ARROW_PER_TEXT_BYTE)
    plan["tokenizer"] = float(TOKENIZER_BYTES) * (1 + len(fractions))
    validation = validation_blocks * max_seq_length * 4.0
    for f in fractions:
        if not 0.0 < f <= 1.0:
            raise ValueError(f"fraction must be in (0, 1], got {f}")
        plan[f"packed_{f:g}"] = tokens * f * per_token + validation
    plan["total"] = sum(v for k, v in plan.items() if k != "tokens")
    return plan


def format_plan(plan: dict[str, float]) -> str:
    """One line per artifact, GB (10^9 bytes)."""
    lines = [f"{k:>16}: {v / 1e9:10.2f} GB" for k, v in plan.items() if k != "tokens"]
    return f"{'tokens':>16}: {plan['tokens'] / 1e9:10.2f} B\n" + "\n".join(lines)
