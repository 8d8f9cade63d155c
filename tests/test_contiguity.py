"""Whole documents on the real local corpus: packed blocks are unbroken stretches of the source text.

The measure is independent of the corpus and packing code: a block's word pieces (special tokens
left out, ``##`` joined) reduced to the characters ``[a-z0-9]`` must occur as one substring of the
source files read raw, reduced the same way (lower case, accents stripped, WikiText's ``<unk>``
removed: the corpus step drops it), files concatenated with a separator no block can contain. An
``[UNK]`` piece may stand for up to ``UNK_GAP`` source characters. So a block that splices two
documents which are not neighbours in the source fails, whatever the document ids say.

With ``configs/cpu-real.yaml``'s corpus (WikiText by article, the books in spans of paragraphs) the
share of such blocks in the full training set, the 25% subset and the validation set must lie within
``MAX_GAP_POINTS`` points of each other, and the validation blocks must come from at least
``MIN_VALIDATION_DOCUMENTS`` documents. Needs ``../shared/data`` (skips with the reason otherwise).
The bert-base-uncased vocabulary stands in for the configuration's trained one (the measure does not
depend on the vocabulary). ``slow``: two packings of ~3M tokens.
"""

from __future__ import annotations

import json
import re
import unicodedata
from pathlib import Path

import numpy as np
import pytest
import yaml

from tests.shared_data import SHARED, VOCAB_TXT

REPO = Path(__file__).resolve().parent.parent
MAX_GAP_POINTS = 5.0
MIN_VALIDATION_DOCUMENTS = 20
#: source characters one [UNK] piece may stand for
UNK_GAP = 200
#: blocks checked per split (a fixed random sample; the validation split is checked whole)
SAMPLE = 600
FILE_SEPARATOR = "|"

_NOT_ALNUM = re.compile(r"[^a-z0-9]+")


def normalise(text: str) -> str:
    """Lower case, accents stripped (NFD, combining marks dropped), only ``[a-z0-9]`` kept."""
    text = unicodedata.normalize("NFD", text.lower())
    text = "".join(c for c in text if not unicodedata.combining(c))
    return _NOT_ALNUM.sub("", text)


def source_text(files: list[Path]) -> str:
    """The files' text, each reduced by :func:`normalise` (``<unk>`` removed first), joined by a separator."""
    parts = []
    for f in files:
        raw = f.read_bytes()
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            text = raw.decode("latin-1")
        parts.append(normalise(text.replace("<unk>", " ")))
    return FILE_SEPARATOR.join(parts)


def block_pieces(ids, id_to_token: dict[int, str], special: set[int], unk_id: int) -> list[str]:
    """A block's text between [UNK]s, each piece normalised (specials dropped, ``##`` joined)."""
    pieces, cur = [], []
    for i in ids:
        i = int(i)
        if i in special:
            continue
        if i == unk_id:
            pieces.append(normalise("".join(cur)))
            cur = []
            continue
        cur.append(id_to_token[i].removeprefix("##"))
    pieces.append(normalise("".join(cur)))
    return pieces


def unbroken(pieces: list[str], source: str) -> bool:
    """Whether the pieces occur in ``source`` in order, each right after the previous one (an
    [UNK] between them may cover up to UNK_GAP characters, never a file boundary), i.e. as one
    stretch of the source."""
    first = next((k for k, p in enumerate(pieces) if p), None)
    if first is None:
        return True
    start = source.find(pieces[first])
    while start != -1:
        pos, ok = start + len(pieces[first]), True
        for p in pieces[first + 1:]:
            if not p:
                continue
            nxt = source.find(p, pos, pos + UNK_GAP + len(p))
            if nxt == -1 or FILE_SEPARATOR in source[pos:nxt]:
                ok = False
                break
            pos = nxt + len(p)
        if ok:
            return True
        start = source.find(pieces[first], start + 1)
    return False


def share_unbroken(blocks, source: str, id_to_token, special, unk_id, sample: int | None, seed: int = 0) -> float:
    """Share (0-1) of blocks (all, or a fixed random sample of ``sample``) that are one unbroken stretch."""
    idx = np.arange(len(blocks))
    if sample is not None and len(idx) > sample:
        idx = np.sort(np.random.default_rng(seed).choice(idx, size=sample, replace=False))
    hits = [unbroken(block_pieces(blocks[int(i)]["input_ids"], id_to_token, special, unk_id), source) for i in idx]
    return float(np.mean(hits))


def test_the_measure_itself():
    src = normalise("The cat sat.\n\nOn the mat!") + FILE_SEPARATOR + normalise("Another file")
    assert unbroken(["thecatsat", "thecat"], src) is False  # the second piece is not after the first
    assert unbroken(["thecatsatonthe"], src) is True
    assert unbroken(["thecat", "onthemat"], src) is True  # [UNK] for "sat"
    assert unbroken(["mat" + "another"], src) is False  # across files
    assert unbroken(["thecat", "another"], src) is False  # [UNK] far from the next piece
    assert normalise("Café @-@ Zürich") == "cafezurich"


@pytest.mark.slow
def test_cpu_real_blocks_are_whole_stretches_of_text(tmp_path):
    if not (SHARED / "corpus").is_dir() or not VOCAB_TXT.is_file():
        pytest.skip(f"{SHARED}/corpus or {VOCAB_TXT} absent: the real corpus is needed (set TACO_SHARED_DATA)")
    from datasets import load_from_disk

    from taco.data.corpus import build_corpus
    from taco.data.local_text import local_input_files
    from taco.data.packing import pack_documents
    from taco.data.tokenizer import build_tokenizer

    cfg = yaml.safe_load((REPO / "configs" / "cpu-real.yaml").read_text())
    c = cfg["corpus"]
    paths = [p.replace("{data_root}", str(SHARED)) for p in c["paths"]]
    corpus = build_corpus("local", tmp_path / "corpus", paths=paths, split_by=c["split_by"],
                          wikitext_detokenize=c["wikitext_detokenize"], unk_policy=c["unk_policy"],
                          encoding=c["encoding"], max_document_chars=c.get("max_document_chars"), workers=2)
    tok_dir = build_tokenizer("vocab", tmp_path / "tok", vocab_file=str(VOCAB_TXT), lowercase=True)
    packs = {}
    for frac in (1.0, 0.25):
        packs[frac] = pack_documents(corpus, tok_dir, tmp_path / f"blocks-{frac}", max_seq_length=cfg["max_seq_length"],
                                     fraction=frac, seed=cfg["seed"], validation_blocks=cfg["validation_blocks"],
                                     workers=2)
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(tok_dir))
    id_to_token = {i: t for t, i in tok.get_vocab().items()}
    special = {tok.cls_token_id, tok.sep_token_id, tok.pad_token_id}
    source = source_text(local_input_files(paths))
    full, quarter = load_from_disk(str(packs[1.0])), load_from_disk(str(packs[0.25]))
    shares = {
        "full": share_unbroken(full["train"], source, id_to_token, special, tok.unk_token_id, SAMPLE),
        "25%": share_unbroken(quarter["train"], source, id_to_token, special, tok.unk_token_id, SAMPLE),
        "validation": share_unbroken(full["validation"], source, id_to_token, special, tok.unk_token_id, None),
    }
    n_val_docs = json.loads((packs[1.0] / "manifest.json").read_text())["counts"]["documents"]["validation"]
    print(f"unbroken shares: {shares}; validation documents: {n_val_docs}")
    assert n_val_docs >= MIN_VALIDATION_DOCUMENTS
    points = {k: 100 * v for k, v in shares.items()}
    assert max(points.values()) - min(points.values()) <= MAX_GAP_POINTS, points
