"""Tokenizer: BERT vocab.txt, trained WordPiece, Hub path (a local save_pretrained dir)."""

from __future__ import annotations

import json

import pytest

from taco.data.corpus import build_corpus
from taco.data.tokenizer import (SPECIAL_TOKENS, build_tokenizer, check_tokenizer, load_tokenizer, main, tokenizer_hash,
                                 tokenizer_from_vocab)


@pytest.fixture(scope="module")
def bert_dir(shared_data, tmp_path_factory):
    out = tmp_path_factory.mktemp("tok") / "bert"
    build_tokenizer("vocab", out, vocab_file=shared_data / "bert" / "vocab.txt")
    return out


def test_vocab_tokenizer_known_ids(bert_dir):
    tok = load_tokenizer(bert_dir)  # AutoTokenizer.from_pretrained
    assert tok.is_fast and len(tok) == 30522
    # bert-base-uncased: [CLS]=101 hello=7592 world=2088 [SEP]=102; lower-cased input
    assert tok("Hello World")["input_ids"] == [101, 7592, 2088, 102]
    # WordPiece continuation, as bert-base-uncased splits it
    assert tok.tokenize("unaffable") == ["una", "##ffa", "##ble"]
    assert tok("a [UNK] b [MASK]")["input_ids"] == [101, 1037, 100, 1038, 103, 102]
    assert (tok.pad_token_id, tok.mask_token_id) == (0, 103)
    manifest = json.loads((bert_dir / "manifest.json").read_text())
    assert manifest["tokenizer_hash"] == tokenizer_hash(bert_dir) == tokenizer_hash(tok)
    assert manifest["special_token_ids"]["[CLS]"] == 101


def test_hash_tracks_what_tokenizes(shared_data):
    vocab = shared_data / "bert" / "vocab.txt"
    assert tokenizer_hash(tokenizer_from_vocab(vocab)) == tokenizer_hash(tokenizer_from_vocab(vocab))
    assert tokenizer_hash(tokenizer_from_vocab(vocab, lowercase=False)) != tokenizer_hash(tokenizer_from_vocab(vocab))


def test_hub_kind_from_local_dir(bert_dir, tmp_path):
    out = build_tokenizer("hub", tmp_path / "hub", hub_id=str(bert_dir))
    assert tokenizer_hash(out) == tokenizer_hash(bert_dir)


def test_train_kind_on_synthetic_corpus(tmp_path):
    corpus = build_corpus("synthetic", tmp_path / "corpus", num_documents=200, seed=0)
    out = build_tokenizer("train", tmp_path / "tok", corpus=corpus, vocab_size=600)
    tok = load_tokenizer(out)
    assert [tok.convert_tokens_to_ids(t) for t in ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")] == [0, 1, 2, 3, 4]
    ids = tok("the dogs chase every cat .")["input_ids"]
    assert ids[0] == 2 and ids[-1] == 3 and 1 not in ids
    assert tok.decode(ids, skip_special_tokens=True) == "the dogs chase every cat."
    # same inputs: reused, not rebuilt
    before = (out / "manifest.json").stat().st_mtime_ns
    build_tokenizer("train", out, corpus=corpus, vocab_size=600)
    assert (out / "manifest.json").stat().st_mtime_ns == before


def test_all_unk_tokenizer_is_rejected(shared_data):
    """transformers 5: BertTokenizerFast(vocab_file=...) maps every word to [UNK]; we refuse it."""
    from transformers import BertTokenizerFast

    broken = BertTokenizerFast(vocab_file=str(shared_data / "bert" / "vocab.txt"))
    if set(broken("the of and in", add_special_tokens=False)["input_ids"]) != {broken.unk_token_id}:
        pytest.skip("this transformers version builds BertTokenizerFast(vocab_file=) correctly")
    with pytest.raises(ValueError, match=r"\[UNK\]"):
        check_tokenizer(broken)


def test_cli_errors(tmp_path, capsys):
    assert main(["--kind", "vocab", "--output", str(tmp_path / "x")]) == 2
    assert "--vocab-file" in capsys.readouterr().err
    assert main(["--kind", "vocab", "--vocab-file", str(tmp_path / "none.txt"), "--output", str(tmp_path / "x")]) == 2
    assert "none.txt" in capsys.readouterr().err


def test_text_backend_tokenizes_literal_specials_as_text(bert_dir, tmp_path):
    """the packing backend splits a literal "[MASK]" into "[", "mask", "]"; the saved
    tokenizer (and so its hash and the model's special ids) is unchanged."""
    from taco.data.tokenizer import text_backend

    tok = load_tokenizer(bert_dir)
    before = tokenizer_hash(tok)
    for source in (tok, tok.backend_tokenizer.to_str()):
        enc = text_backend(source).encode("a [MASK] b [SEP][CLS] c", add_special_tokens=False)
        assert enc.tokens == ["a", "[", "mask", "]", "b", "[", "sep", "]", "[", "cl", "##s", "]", "c"]
        assert not set(enc.ids) & set(tok.all_special_ids)
        # a copy with the post-processor still frames a text with the real specials
        assert text_backend(source).encode("a [MASK]").ids == [101, 1037, 1031, 7308, 1033, 102]
    assert tok("a [MASK]", add_special_tokens=False)["input_ids"] == [1037, 103]  # the tokenizer itself: as before
    assert tokenizer_hash(tok) == before == tokenizer_hash(bert_dir)


def test_text_backend_accepts_a_vocabulary_without_bracket_characters():
    """A vocabulary trained on a synthetic language has no "[": literal "[MASK]" text becomes [UNK]
    pieces, which is text, not a leak (regression: the check raised and the pack workers hung)."""
    from transformers import BertTokenizerFast

    from taco.data.tokenizer import text_backend

    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(20)]
    tok = BertTokenizerFast(vocab={t: i for i, t in enumerate(words)}, do_lower_case=True)
    ids = text_backend(tok).encode("w1 [MASK] [SEP] w2", add_special_tokens=False).ids
    assert tok.mask_token_id not in ids and tok.sep_token_id not in ids
    assert ids[0] == words.index("w1") and ids[-1] == words.index("w2")


def _raise_in_initializer():
    raise ValueError("initializer failed")


def _square(x):
    return x * x


def test_worker_pool_reports_a_failing_initializer_instead_of_hanging():
    from taco.data.parallel import WorkerPool

    with WorkerPool(2) as pool:
        assert list(pool.map(_square, range(4))) == [0, 1, 4, 9]
    with pytest.raises(RuntimeError, match="initializer failed"):
        with WorkerPool(2, initializer=_raise_in_initializer) as pool:
            list(pool.map(_square, range(4)))


_TRAIN_IN_A_NEW_PROCESS = """
import json, sys
from taco.data.synthetic import generate_documents
from taco.data.tokenizer import train_tokenizer
texts = generate_documents(300, seed=0)
tok = train_tokenizer(texts, vocab_size=400, lowercase=True, min_frequency=2)
print(json.dumps(tok.get_vocab(), sort_keys=True))
"""


def test_training_gives_the_same_vocabulary_and_ids_in_every_process():
    """huggingface/tokenizers#1794: the library's WordPiece trainer numbers the ``##c`` tokens in
    hash-map order (a new seed per process) and those ids break merge ties, so the same corpus gave
    another vocabulary in another process (every model trained on it then differs). train_tokenizer
    declares them up front; four processes must agree on every token and id."""
    import subprocess
    import sys

    vocabs = {subprocess.run([sys.executable, "-c", _TRAIN_IN_A_NEW_PROCESS], check=True, capture_output=True,
                             text=True, timeout=300).stdout for _ in range(4)}
    assert len(vocabs) == 1
    vocab = json.loads(vocabs.pop())
    assert [t for t, _ in sorted(vocab.items(), key=lambda kv: kv[1])][:5] == list(SPECIAL_TOKENS)
