"""Packing invariants: framing, no token lost but the final remainder, determinism, the fraction
subset property, a validation split independent of the fraction, manifest contents, and refusal
to reuse an artifact made with other parameters."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from taco.data.corpus import ArtifactMismatchError, build_corpus, load_documents
from taco.data.blocks import BlockPacker
from taco.data.packing import load_packed, pack_documents, split_documents_for_packing
from taco.data.tokenizer import build_tokenizer, load_tokenizer, tokenizer_hash

L = 64


@pytest.fixture(scope="module")
def inputs(shared_data, tmp_path_factory):
    base = tmp_path_factory.mktemp("pack")
    corpus = build_corpus("synthetic", base / "corpus", num_documents=240, seed=0)
    tok = build_tokenizer("vocab", base / "tok", vocab_file=shared_data / "bert" / "vocab.txt")
    full = pack_documents(corpus, tok, base / "full", max_seq_length=L, seed=3, validation_fraction=0.05)
    return base, corpus, tok, full


def _stream(tok, texts):
    """The expected token stream, built independently with the transformers call path."""
    ids = tok(list(texts), add_special_tokens=False)["input_ids"]
    out = []
    for doc in ids:
        if doc:
            out += doc + [tok.sep_token_id]
    return out


def test_blocks_framed_and_nothing_lost(inputs):
    _, corpus, tok_dir, full = inputs
    dd, manifest = load_packed(full)
    tok = load_tokenizer(tok_dir)
    docs = load_documents(corpus)["text"]
    train_ids, val_ids = split_documents_for_packing(len(docs), seed=3, fraction=1.0, validation_fraction=0.05)
    assert len(val_ids) == 12 and len(train_ids) == 228  # ceil(0.05 * 240), the rest
    for split, ids in (("train", train_ids), ("validation", val_ids)):
        blocks = np.array(dd[split]["input_ids"])
        assert blocks.shape[1] == L
        assert (blocks[:, 0] == tok.cls_token_id).all() and (blocks[:, -1] == tok.sep_token_id).all()
        stream = _stream(tok, [docs[i] for i in ids])
        n = len(stream) // (L - 2)
        assert blocks.shape[0] == n  # only the final remainder (< L - 2 tokens) is missing
        assert blocks[:, 1:-1].ravel().tolist() == stream[: n * (L - 2)]
        assert manifest["counts"]["dropped_tokens"][split] == len(stream) - n * (L - 2)
        assert manifest["counts"]["stream_tokens"][split] == len(stream)
        assert manifest["counts"]["blocks"][split] == n


def test_manifest_and_tokenizer_copy(inputs):
    _, corpus, tok_dir, full = inputs
    m = json.loads((full / "manifest.json").read_text())
    assert m["kind"] == "packed" and m["max_seq_length"] == L and m["fraction"] == 1.0 and m["seed"] == 3
    assert m["tokenizer_hash"] == tokenizer_hash(tok_dir) == tokenizer_hash(full / "tokenizer")
    assert m["inputs"]["tokenizer_hash"] == m["tokenizer_hash"]
    assert len(m["inputs"]["corpus_data_sha256"]) == 64 and len(m["inputs"]["corpus_manifest_sha256"]) == 64
    assert m["source"]["source"] == "synthetic"
    assert m["counts"]["documents"] == {"train": 228, "validation": 12} and m["counts"]["documents_total"] == 240
    assert m["counts"]["tokens"]["train"] + m["counts"]["documents"]["train"] == m["counts"]["stream_tokens"]["train"]
    assert load_tokenizer(full / "tokenizer")("hello")["input_ids"] == [101, 7592, 102]


def test_deterministic_fraction_subset_and_refusal(inputs):
    base, corpus, tok, full = inputs
    again = pack_documents(corpus, tok, base / "again", max_seq_length=L, seed=3, validation_fraction=0.05)
    a, ma = load_packed(full)
    b, mb = load_packed(again)
    assert a["train"]["input_ids"] == b["train"]["input_ids"] and ma["artifact_key"] == mb["artifact_key"]

    quarter = pack_documents(corpus, tok, base / "q", max_seq_length=L, seed=3, fraction=0.25, validation_fraction=0.05)
    q, mq = load_packed(quarter)
    assert q["validation"]["input_ids"] == a["validation"]["input_ids"]  # same held-out blocks
    assert mq["counts"]["documents"]["train"] == 57  # round(0.25 * 228)
    t_full, _ = split_documents_for_packing(240, 3, 1.0, 0.05)
    t_q, _ = split_documents_for_packing(240, 3, 0.25, 0.05)
    t_half, _ = split_documents_for_packing(240, 3, 0.5, 0.05)
    assert set(t_q) < set(t_half) < set(t_full)
    assert mq["artifact_key"] != ma["artifact_key"]

    # the official code's bug: a full-data cache reused for a 25% run. Here it is refused.
    with pytest.raises(ArtifactMismatchError):
        pack_documents(corpus, tok, full, max_seq_length=L, seed=3, fraction=0.25, validation_fraction=0.05)
    with pytest.raises(ArtifactMismatchError):
        pack_documents(corpus, tok, full, max_seq_length=128, seed=3, validation_fraction=0.05)
    stamp = (full / "manifest.json").stat().st_mtime_ns
    pack_documents(corpus, tok, full, max_seq_length=L, seed=3, validation_fraction=0.05)  # same: reused
    assert (full / "manifest.json").stat().st_mtime_ns == stamp


def test_validation_blocks_exact(inputs):
    base, corpus, tok, _ = inputs
    out = pack_documents(corpus, tok, base / "vb", max_seq_length=L, seed=0, validation_blocks=7)
    dd, m = load_packed(out)
    assert len(dd["validation"]) == 7 and m["counts"]["blocks"]["validation"] == 7
    assert m["counts"]["documents"]["train"] + m["counts"]["documents"]["validation"] == 240
    with pytest.raises(ValueError, match="too small"):
        pack_documents(corpus, tok, base / "vb2", max_seq_length=L, seed=0, validation_blocks=10**6)
    assert not (base / "vb2").exists()


def test_packer_carries_remainder_across_batches():
    """group_texts drops a remainder per batch; the packer carries it (same blocks as one batch)."""
    docs = [list(range(10 * k, 10 * k + n)) for k, n in enumerate([5, 0, 7, 3, 9, 4, 6])]
    one = BlockPacker(6, cls_id=-1, sep_id=-2, separator_id=-3)
    whole = one.add(docs)
    many = BlockPacker(6, cls_id=-1, sep_id=-2, separator_id=-3)
    parts = np.concatenate([many.add(docs[i:i + 2]) for i in range(0, len(docs), 2)])
    assert whole.tolist() == parts.tolist()
    # 34 tokens + 6 separators (the empty document gets none) = 40 -> 10 blocks of 4, none dropped
    assert whole.shape == (10, 6) and one.counts()["dropped_tokens"] == 0
    assert one.counts()["empty_documents"] == 1
    assert whole[0].tolist() == [-1, 0, 1, 2, 3, -2] and whole[1].tolist() == [-1, 4, -3, 20, 21, -2]


# ------------------------------------------------------------------ workers, spans, bad shards

SPAN = 10


@pytest.fixture(scope="module")
def sentences(shared_data, tmp_path_factory):
    """A sentence-per-row corpus (600 rows, spans of 10) whose rows say their own number."""
    base = tmp_path_factory.mktemp("sent")
    src = base / "book.txt"
    src.write_text("".join(f"row {i} says the cat sat on the mat .\n" for i in range(600)))
    corpus = build_corpus("local", base / "corpus", paths=[src], split_by="line", rows="sentence", span_rows=SPAN)
    tok = build_tokenizer("vocab", base / "tok", vocab_file=shared_data / "bert" / "vocab.txt")
    return base, corpus, tok


def _row_numbers(tok_dir, blocks):
    """Row numbers in packed order, read back from the text (independent of the packer's bookkeeping)."""
    import re

    tok = load_tokenizer(tok_dir)
    body = np.asarray(blocks)[:, 1:-1].ravel().tolist()  # the stream: blocks are consecutive cuts of it
    return [int(m) for m in re.findall(r"row (\d+) says", tok.decode(body))]


def _adjacent_share(rows):
    return float(np.mean(np.diff(rows) == 1))


def test_subset_keeps_sentence_neighbours(sentences):
    """drawing the 25% in whole spans keeps neighbouring rows adjacent sentences as
    often as the full data does; drawing rows (the old way) would make it about 0.25."""
    base, corpus, tok = sentences
    shares = {}
    for frac in (1.0, 0.5, 0.25):
        out = pack_documents(corpus, tok, base / f"f{frac}", max_seq_length=L, seed=1, fraction=frac,
                             validation_fraction=0.1)
        dd, m = load_packed(out)
        rows = _row_numbers(tok, dd["train"]["input_ids"])
        assert len(rows) > 100
        shares[frac] = _adjacent_share(rows)
        assert m["counts"]["documents"]["train"] == round(frac * 54)  # 60 spans, 6 for validation
        # [SEP] between documents (spans), not between the sentences of one span; the dropped
        # final remainder (< L - 2 tokens, a span is ~100) holds at most one of them
        seps = int((np.asarray(dd["train"]["input_ids"])[:, 1:-1] == load_tokenizer(tok).sep_token_id).sum())
        assert m["counts"]["documents"]["train"] - 1 <= seps <= m["counts"]["documents"]["train"]
    # within a span all 9 neighbours are adjacent; at most the 1 boundary per span is not
    assert all(s >= 1 - 1 / SPAN - 0.02 for s in shares.values()), shares
    assert max(shares.values()) - min(shares.values()) <= 1 / SPAN, shares
    # the old draw, rows at random, computed independently: neighbours rarely adjacent
    rng = np.random.default_rng(1)
    rows_drawn = np.sort(rng.permutation(600)[:150])
    assert _adjacent_share(rows_drawn) < 0.4


def test_validation_whole_spans_in_corpus_order(sentences):
    base, corpus, tok = sentences
    out = pack_documents(corpus, tok, base / "vb", max_seq_length=L, seed=5, validation_blocks=6)
    dd, m = load_packed(out)
    rows = _row_numbers(tok, dd["validation"]["input_ids"])
    assert rows == sorted(rows)  # corpus order
    spans = sorted({r // SPAN for r in rows})
    complete = [s for s in spans[:-1]]  # every span but possibly the last (cut at 6 blocks) is whole
    for s in complete:
        assert [r for r in rows if r // SPAN == s] == list(range(s * SPAN, (s + 1) * SPAN))
    assert len(dd["validation"]) == 6 and m["counts"]["documents"]["validation"] == len(spans)
    # train does not touch a validation span
    assert not {r // SPAN for r in _row_numbers(tok, dd["train"]["input_ids"])} & set(spans)


def test_blocks_identical_for_any_workers(inputs, monkeypatch):
    """byte-identical blocks with 1 or 2 worker processes and any chunk size."""
    from taco.data import packing

    base, corpus, tok, _ = inputs
    monkeypatch.setattr(packing, "WRITE_BLOCKS", 16)  # several record batches
    a = pack_documents(corpus, tok, base / "w1", max_seq_length=L, seed=3, fraction=0.5, validation_blocks=5,
                       workers=1, chunk_rows=7)
    b = pack_documents(corpus, tok, base / "w2", max_seq_length=L, seed=3, fraction=0.5, validation_blocks=5,
                       workers=2, chunk_rows=50)
    for split in ("train", "validation"):
        assert (a / split / "data-00000-of-00001.arrow").read_bytes() == (b / split / "data-00000-of-00001.arrow").read_bytes()
    assert json.loads((a / "manifest.json").read_text())["artifact_key"] == \
        json.loads((b / "manifest.json").read_text())["artifact_key"]


def test_bad_corpus_file_stops_before_output(inputs, tmp_path, capsys):
    """A corpus file that was truncated after `taco corpus` stops pack, naming it; no output."""
    import shutil

    from taco.data.packing import main

    _, corpus, tok, _ = inputs
    broken = tmp_path / "corpus"
    shutil.copytree(corpus, broken)
    data = broken / "data" / "text.arrow"
    data.write_bytes(data.read_bytes()[: data.stat().st_size // 2])
    rc = main(["--corpus", str(broken), "--tokenizer", str(tok), "--output", str(tmp_path / "out"),
               "--max-seq-length", str(L)])
    assert rc == 2 and str(data) in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_disk_plan_matches_a_packed_artifact(inputs):
    """taco.data.disk: bytes per packed token (formula) against the file the packer wrote."""
    from taco.data.disk import data_disk_plan, packed_bytes_per_token

    _, _, _, full = inputs
    m = json.loads((full / "manifest.json").read_text())
    blocks = m["counts"]["blocks"]["train"]
    size = (full / "train" / "data-00000-of-00001.arrow").stat().st_size
    # independent count: int32 ids of every block + one int32 offset per block (+ Arrow framing)
    assert blocks * L * 4 + blocks * 4 <= size <= (blocks * L * 4 + (blocks + 1) * 4) * 1.05 + 4096
    assert packed_bytes_per_token(L) * blocks * (L - 2) == pytest.approx(blocks * L * 4 + blocks * 4)
    plan = data_disk_plan(words=1e9, fractions=(1.0, 0.25), max_seq_length=256, validation_blocks=0)
    assert plan["tokens"] == 1.25e9 and plan["corpus_artifact"] == 0.0  # Hub text read in place
    assert plan["packed_0.25"] == pytest.approx(0.25 * plan["packed_1"])
    assert plan["packed_1"] == pytest.approx(1.25e9 * (4 * 256 + 4) / 254)
    local = data_disk_plan(words=1e9, source="local", validation_blocks=0)
    assert local["hub_download"] == 0 and local["corpus_artifact"] > 0
    with pytest.raises(ValueError, match="fraction"):
        data_disk_plan(fractions=(0.0,))


def test_progress_lines():
    """Progress: documents and tokens done, rate and time left, one line per interval."""
    import io

    from taco.data.parallel import Progress

    out = io.StringIO()
    p = Progress("pack train", total_documents=200, interval=0.0, stream=out)
    p.update(50, 2_000_000)
    p.update(50, 2_000_000)
    p.finish()
    lines = out.getvalue().splitlines()
    assert len(lines) == 3
    assert lines[0].startswith("pack train: 50/200 documents (25.0%), 2.0M tokens, ")
    assert "M tokens/s" in lines[0] and "left" in lines[0]
    assert lines[1].startswith("pack train: 100/200 documents (50.0%), 4.0M tokens")
    assert lines[2].endswith("(done)")
    quiet = io.StringIO()
    q = Progress("x", interval=3600, stream=quiet)
    q.update(5)
    assert quiet.getvalue() == ""  # nothing before the interval has passed


def test_scaling_benchmark_corpus_reads_the_real_books(shared_data, tmp_path, monkeypatch):
    """``bench_packing.py --scaling`` builds its corpus from WikiText-2 and every Gutenberg book,
    two of which hold Latin-1 bytes (SOURCES.md): it must read them (as configs/cpu-real.yaml does)
    and write UTF-8 files of the requested size."""
    import importlib
    import sys as _sys

    monkeypatch.setenv("TACO_SHARED_DATA", str(shared_data))
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parent.parent / "benchmarks"))
    _sys.modules.pop("bench_packing", None)
    bench = importlib.import_module("bench_packing")
    written, n_docs = bench.write_text_corpus(tmp_path / "text", 0.002, file_mb=1)
    files = sorted((tmp_path / "text").glob("part-*.txt"))
    assert len(files) == 2 and written >= 2_000_000 and n_docs > 100
    assert sum(f.stat().st_size for f in files) == written
    for f in files:
        f.read_text(encoding="utf-8")  # strict: every file is valid UTF-8


# ------------------------------------------------------------------ literal special-token text

SPECIALS_TEXT = ("[MASK]", "[SEP]", "[CLS]", "[PAD]", "[UNK]")


@pytest.fixture(scope="module")
def special_text(shared_data, tmp_path_factory):
    """A 40-document file whose text holds literal "[MASK]", "[SEP]", "[CLS]", "[PAD]", "[UNK]"
    (alone, glued to words, at the start and end of a document), and three tokenizers: the BERT
    vocabulary, a Hub-style tokenizer (a local ``save_pretrained`` directory) and one trained on it."""
    base = tmp_path_factory.mktemp("specials")
    docs = []
    for i in range(40):
        lit = SPECIALS_TEXT[i % len(SPECIALS_TEXT)]
        docs.append(f"{lit} document {i} fills the {lit} here and x{lit}y there.\n"
                    f"a second line of document {i} says the cat sat {lit}")
    src = base / "specials.txt"
    src.write_text("\n\n".join(docs) + "\n")
    corpus = build_corpus("local", base / "corpus", paths=[src], split_by="blank_line")
    vocab = build_tokenizer("vocab", base / "vocab", vocab_file=shared_data / "bert" / "vocab.txt")
    hub = build_tokenizer("hub", base / "hub", hub_id=str(vocab))
    trained = build_tokenizer("train", base / "trained", corpus=corpus, vocab_size=200, min_frequency=1)
    return base, corpus, {"vocab": vocab, "hub": hub, "train": trained}


def _special_ids(tok):
    return sorted({tok.convert_tokens_to_ids(t) for t in SPECIALS_TEXT})


@pytest.mark.parametrize("kind", ["vocab", "hub", "train"])
def test_literal_special_text_is_text(special_text, kind):
    """No special id comes from a document's text: counted in the blocks against the format's own
    specials, and against an independent tokenization (transformers, ``split_special_tokens``)."""
    base, corpus, toks = special_text
    tok = load_tokenizer(toks[kind])
    texts = list(load_documents(corpus)["text"])
    n_literal = sum(t.count(s) for t in texts for s in SPECIALS_TEXT)
    assert n_literal == 40 * 4
    # the bug being fixed: the plain call maps the literal strings to special ids
    plain = tok(texts, add_special_tokens=False)["input_ids"]
    assert sum(i in _special_ids(tok) for ids in plain for i in ids) == n_literal
    specials = np.array(_special_ids(tok))
    for sep in ("none", "sep"):
        out = pack_documents(corpus, toks[kind], base / f"{kind}-{sep}", max_seq_length=L, seed=0,
                             validation_blocks=1, document_separator=sep)
        dd, m = load_packed(out)
        stream = []
        for split in ("validation", "train"):
            blocks = np.asarray(dd[split]["input_ids"])
            assert (blocks[:, 0] == tok.cls_token_id).all() and (blocks[:, -1] == tok.sep_token_id).all()
            body = blocks[:, 1:-1]
            in_text = int(np.isin(body, specials).sum())
            # the only special id inside a framed body is the document separator, one per document
            seps = int((body == tok.sep_token_id).sum())
            assert in_text == seps and (seps == 0 if sep == "none" else seps > 0), (kind, sep, split)
            stream += body.ravel().tolist()
        assert m["parameters"]["special_token_text"] == "text"
    # literal "[MASK]" becomes "[", "mask", "]" pieces (or finer) in every tokenizer
    assert tok.tokenize("[MASK]", split_special_tokens=True)[0] == "["
    expected = tok(texts, add_special_tokens=False, split_special_tokens=True)["input_ids"]
    assert not any(i in _special_ids(tok) for ids in expected for i in ids)
    assert m["counts"]["documents"]["train"] + m["counts"]["documents"]["validation"] == 40


def test_literal_special_text_stream_equals_independent_encoding(special_text):
    """The packed stream is exactly what transformers gives with ``split_special_tokens=True``."""
    base, corpus, toks = special_text
    tok = load_tokenizer(toks["vocab"])
    texts = list(load_documents(corpus)["text"])
    out = pack_documents(corpus, toks["vocab"], base / "exact", max_seq_length=L, seed=0, validation_fraction=0.05,
                         document_separator="none")
    dd, _ = load_packed(out)
    train_ids, _ = split_documents_for_packing(len(texts), seed=0, fraction=1.0, validation_fraction=0.05)
    ids = tok([texts[i] for i in train_ids], add_special_tokens=False, split_special_tokens=True)["input_ids"]
    stream = [x for doc in ids for x in doc]
    body = np.asarray(dd["train"]["input_ids"])[:, 1:-1].ravel().tolist()
    assert len(body) > 0 and body == stream[: len(body)]
    # "[MASK]" as text: the pieces of "[", "mask", "]" occur where the text has it
    lb, mask_piece, rb = tok.convert_tokens_to_ids(["[", "mask", "]"])
    triples = sum(1 for a, b, c in zip(stream, stream[1:], stream[2:]) if (a, b, c) == (lb, mask_piece, rb))
    assert triples == sum(texts[i].count("[MASK]") for i in train_ids) > 0


def test_keep_unk_token_corpus_keeps_unk(shared_data, tmp_path):
    """``unk_policy: keep_unk_token`` writes WikiText's ``<unk>`` as "[UNK]" on purpose: that one
    stays the [UNK] id (the same ids as the tokenizer's own split gave); "[MASK]" is still text."""
    src = tmp_path / "wiki.txt"
    src.write_text("".join(f" = Title {i} = \n\n the <unk> sat on a [MASK] mat , <unk> said {i} .\n\n" for i in range(30)))
    corpus = build_corpus("local", tmp_path / "corpus", paths=[src], unk_policy="keep_unk_token")
    tok_dir = build_tokenizer("vocab", tmp_path / "tok", vocab_file=shared_data / "bert" / "vocab.txt")
    tok = load_tokenizer(tok_dir)
    out = pack_documents(corpus, tok_dir, tmp_path / "p", max_seq_length=L, seed=0, validation_fraction=0.3,
                         document_separator="none")
    dd, _ = load_packed(out)
    texts = list(load_documents(corpus)["text"])
    assert sum(t.count("[UNK]") for t in texts) == 60 and sum(t.count("[MASK]") for t in texts) == 30
    words = lambda t: tok(t, add_special_tokens=False, split_special_tokens=True)["input_ids"]  # noqa: E731
    train_ids, val_ids = split_documents_for_packing(len(texts), seed=0, fraction=1.0, validation_fraction=0.3)
    for split, ids in (("train", train_ids), ("validation", val_ids)):
        expected = []
        for i in ids:  # each "[UNK]" the [UNK] id, the rest text
            parts = texts[i].split("[UNK]")
            expected += words(parts[0]) + [x for part in parts[1:] for x in [tok.unk_token_id, *words(part)]]
        assert expected.count(tok.unk_token_id) == sum(texts[i].count("[UNK]") for i in ids)
        body = np.asarray(dd[split]["input_ids"])[:, 1:-1].ravel().tolist()
        assert len(body) > 0 and body == expected[: len(body)]
        assert tok.mask_token_id not in body
    from taco.data.blocks import _encoder, encode

    backend = _encoder(tok)
    plain = "a[UNK]b [UNK] c [UNK]"  # no other literal special: the tokenizer's own added-token split
    assert encode(backend, [plain], unk_id=tok.unk_token_id)[0] == tok(plain, add_special_tokens=False)["input_ids"]
    mixed = "a[UNK]b [MASK] c [UNK]"
    assert encode(backend, [mixed], unk_id=tok.unk_token_id)[0] == \
        words("a") + [tok.unk_token_id] + words("b [MASK] c ") + [tok.unk_token_id]
    assert encode(backend, [mixed])[0] == words(mixed)  # a corpus without the policy: all text


# ------------------------------------------------------------------ the official block format


def _official_stream(corpus, tok_dir, doc_ids):
    """The official code's stream, built independently: ``tokenizer(text)`` per row ([CLS] ... [SEP],
    transformers' call path, literal specials as text), concatenated in corpus order."""
    from taco.data.corpus_store import CorpusReader

    tok = load_tokenizer(tok_dir)
    reader = CorpusReader(corpus)
    starts, stops = reader.documents()
    rows = np.concatenate([np.arange(starts[d], stops[d]) for d in doc_ids])
    ids = tok(reader.texts(rows), split_special_tokens=True)["input_ids"]
    return [x for row in ids for x in row], len(rows)


def test_official_format_blocks(sentences):
    """Every row (sentence) framed by its own [CLS]/[SEP], raw L-token slices of the stream; only
    the final remainder dropped; the format in the manifest and the artifact key."""
    base, corpus, tok_dir = sentences
    tok = load_tokenizer(tok_dir)
    out = pack_documents(corpus, tok_dir, base / "official", max_seq_length=L, seed=1, fraction=0.5,
                         validation_fraction=0.1, block_format="official")
    framed = pack_documents(corpus, tok_dir, base / "framed", max_seq_length=L, seed=1, fraction=0.5,
                            validation_fraction=0.1)
    dd, m = load_packed(out)
    _, mf = load_packed(framed)
    train_ids, val_ids = split_documents_for_packing(60, seed=1, fraction=0.5, validation_fraction=0.1)
    for split, ids in (("train", train_ids), ("validation", val_ids)):
        blocks = np.asarray(dd[split]["input_ids"])
        stream, n_rows = _official_stream(corpus, tok_dir, ids)
        assert stream.count(tok.cls_token_id) == stream.count(tok.sep_token_id) == n_rows  # one pair per sentence
        n = len(stream) // L
        assert blocks.shape == (n, L) and blocks.ravel().tolist() == stream[: n * L]
        assert m["counts"]["blocks"][split] == n and m["counts"]["dropped_tokens"][split] == len(stream) - n * L
        assert m["counts"]["stream_tokens"][split] == len(stream) == m["counts"]["tokens"][split] + 2 * n_rows
        # not framed: most blocks neither start with [CLS] nor end with [SEP]; ~2 specials per sentence
        assert (blocks[:, 0] != tok.cls_token_id).mean() > 0.5
        per_block = np.isin(blocks, [tok.cls_token_id, tok.sep_token_id]).sum(1).mean()
        assert per_block == pytest.approx(2 * L / (len(stream) / n_rows), rel=0.1)
        assert not np.isin(blocks, [tok.mask_token_id, tok.pad_token_id, tok.unk_token_id]).any()
    assert m["block_format"] == "official" and m["parameters"]["block_format"] == "official"
    assert m["parameters"]["document_separator"] is None
    # the framed format keeps its parameters (its key has no block_format entry) and blocks
    assert mf["block_format"] == "framed" and "block_format" not in mf["parameters"]
    assert mf["artifact_key"] != m["artifact_key"]
    with pytest.raises(ArtifactMismatchError, match="block_format"):
        pack_documents(corpus, tok_dir, framed, max_seq_length=L, seed=1, fraction=0.5, validation_fraction=0.1,
                       block_format="official")


def test_official_format_identical_for_any_workers_and_exact_validation(sentences, monkeypatch):
    """Official format: byte-identical blocks with 1 or 2 workers and any chunk size; exactly
    ``validation_blocks`` validation blocks; the first one starts with its first sentence's [CLS]."""
    from taco.data import packing

    base, corpus, tok_dir = sentences
    monkeypatch.setattr(packing, "WRITE_BLOCKS", 8)
    a = pack_documents(corpus, tok_dir, base / "ow1", max_seq_length=L, seed=2, validation_blocks=5,
                       block_format="official", workers=1, chunk_rows=7)
    b = pack_documents(corpus, tok_dir, base / "ow2", max_seq_length=L, seed=2, validation_blocks=5,
                       block_format="official", workers=2, chunk_rows=50)
    for split in ("train", "validation"):
        assert (a / split / SHARD).read_bytes() == (b / split / SHARD).read_bytes()
    dd, m = load_packed(a)
    assert len(dd["validation"]) == 5 and m["counts"]["blocks"]["validation"] == 5
    assert dd["validation"][0]["input_ids"][0] == load_tokenizer(tok_dir).cls_token_id
    assert _row_numbers_official(tok_dir, dd["validation"]["input_ids"]) == \
        sorted(_row_numbers_official(tok_dir, dd["validation"]["input_ids"]))


SHARD = "data-00000-of-00001.arrow"


def _row_numbers_official(tok_dir, blocks):
    import re

    return [int(x) for x in re.findall(r"row (\d+) says", load_tokenizer(tok_dir).decode(np.asarray(blocks).ravel().tolist()))]


def test_official_format_cli(inputs, tmp_path, capsys):
    """``taco pack --block-format official``; ``--document-separator none`` belongs to the framed format."""
    from taco.data.packing import main

    _, corpus, tok, _ = inputs
    rc = main(["--corpus", str(corpus), "--tokenizer", str(tok), "--output", str(tmp_path / "bad"),
               "--max-seq-length", str(L), "--block-format", "official", "--document-separator", "none"])
    assert rc == 2 and "--document-separator" in capsys.readouterr().err and not (tmp_path / "bad").exists()
    rc = main(["--corpus", str(corpus), "--tokenizer", str(tok), "--output", str(tmp_path / "ok"),
               "--max-seq-length", str(L), "--block-format", "official", "--validation-blocks", "2"])
    assert rc == 0 and load_packed(tmp_path / "ok")[1]["block_format"] == "official"


def test_block_format_in_configs_and_deviations():
    """``pack.format`` is validated; config.yaml and configs/gpu-mini.yaml (the paper's recipe) use
    the official format and list no block-format row; a framed configuration lists one."""
    import copy

    import yaml
    from snakemake.utils import update_config, validate
    from taco.workflow.schema import schema_file

    from taco.deviations import find_deviations

    repo = Path(__file__).resolve().parent.parent
    schema = str(schema_file(repo / "workflow" / "schemas" / "config.schema.yaml"))

    def resolved(path, **overrides):
        cfg = yaml.safe_load((repo / path).read_text())
        update_config(cfg, copy.deepcopy(overrides))
        validate(cfg, schema)
        return cfg

    def row(cfg):
        rows = [d for d in find_deviations(cfg) if d.key == "pack.format"]
        assert len(rows) <= 1
        return rows[0] if rows else None

    for path in ("config.yaml", "configs/gpu-mini.yaml"):
        assert resolved(path)["pack"]["format"] == "official" and row(resolved(path)) is None
    framed = resolved("config.yaml", pack={"format": "framed"})
    r = row(framed)
    assert r is not None and r.kind == "configuration" and r.here.startswith("framed: every block [CLS] + 254 tokens")
    assert "scripts/run_mlm_with_contrastive.py:566-591" in r.paper
    smoke = resolved("configs/smoke.yaml")
    assert smoke["pack"]["format"] == "framed" and row(smoke) is not None  # the schema's default
    from snakemake.exceptions import WorkflowError

    with pytest.raises(WorkflowError, match=r"instance\['pack'\]\['format'\]"):
        resolved("config.yaml", pack={"format": "raw"})
