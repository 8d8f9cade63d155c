"""The WordPiece tokenizer: bert-base-uncased from a local ``vocab.txt``, from the Hub, or trained.

Output: a ``save_pretrained`` directory (``tokenizer.json`` + ``tokenizer_config.json``) that
``transformers.AutoTokenizer.from_pretrained(dir)`` loads as a fast BERT tokenizer, plus
``manifest.json`` with ``tokenizer_hash`` (``tokenizer_hash()``: sha256 of the tokenizer's
canonical JSON and its special tokens, so two directories that tokenize identically hash the same).

Kinds:

- ``vocab``: the BERT pipeline (BertNormalizer with lower-casing, BertPreTokenizer, WordPiece with
  ``##`` continuation, ``[CLS] $A [SEP]`` post-processor) over a ``vocab.txt`` (one token per line,
  id = line number; e.g. ``shared/data/bert/vocab.txt`` = bert-base-uncased, 30522 ids). Built with
  ``tokenizers`` and ``tokenizer_object=``: in transformers 5, ``BertTokenizerFast(vocab_file=...)``
  silently maps every word to ``[UNK]``.
- ``hub``: ``AutoTokenizer.from_pretrained(hub_id)`` (a Hub id or a local directory); must be fast.
- ``train``: the same pipeline, WordPiece trained with ``tokenizers.trainers.WordPieceTrainer`` on
  a documents artifact (``taco corpus``); special tokens get ids 0-4: [PAD] [UNK] [CLS] [SEP] [MASK].

CLI: ``taco tokenizer --kind {vocab,hub,train} [--vocab-file F | --hub-id ID | --corpus DIR
--vocab-size N] [--lowercase/--no-lowercase] --output DIR``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from taco.cli_parts import cli_error
from taco.manifest import atomic_directory, build_manifest, sha256_file, sha256_json, sha256_tree, write_manifest
from taco.textfile import read_utf8

KINDS = ("vocab", "hub", "train")
SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


def read_vocab(vocab_file: str | os.PathLike) -> dict[str, int]:
    """``vocab.txt`` -> {token: line number}. Raises ValueError if a BERT special token is absent,
    InputEncodingError (a ValueError) naming the file and line if it is not UTF-8."""
    path = Path(vocab_file)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: vocab file not found (one WordPiece token per line)")
    vocab: dict[str, int] = {}
    for i, tok in enumerate(read_utf8(path, "vocab file").splitlines()):
        vocab.setdefault(tok, i)
    missing = [t for t in SPECIAL_TOKENS if t not in vocab]
    if missing:
        raise ValueError(f"{path}: special token(s) {missing} not in the vocabulary")
    return vocab


def _bert_pipeline(model, vocab: dict[str, int], lowercase: bool):
    from tokenizers import Tokenizer, decoders, normalizers, pre_tokenizers

    tok = Tokenizer(model)
    tok.normalizer = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=True,
                                                strip_accents=None, lowercase=lowercase)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece(prefix="##")
    if vocab:
        _set_post_processor(tok, vocab)
    return tok


def _set_post_processor(tok, vocab: dict[str, int]) -> None:
    from tokenizers import processors

    cls, sep = vocab["[CLS]"], vocab["[SEP]"]
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", cls), ("[SEP]", sep)])


def _wrap(tok, lowercase: bool, model_max_length: int = 512):
    from transformers import BertTokenizerFast

    return BertTokenizerFast(
        tokenizer_object=tok, unk_token="[UNK]", sep_token="[SEP]", pad_token="[PAD]",
        cls_token="[CLS]", mask_token="[MASK]", do_lower_case=lowercase, model_max_length=model_max_length)


def tokenizer_from_vocab(vocab_file: str | os.PathLike, lowercase: bool = True, model_max_length: int = 512):
    """A fast BERT WordPiece tokenizer over ``vocab_file`` (ids = line numbers)."""
    from tokenizers import models

    vocab = read_vocab(vocab_file)
    model = models.WordPiece(vocab, unk_token="[UNK]", max_input_chars_per_word=100)
    return _wrap(_bert_pipeline(model, vocab, lowercase), lowercase, model_max_length)


def _continuing_subword_tokens(tok, texts) -> list[str]:
    """``##c`` for every character ``c`` that follows another inside a word (after the pipeline's
    normaliser and pre-tokeniser), sorted: exactly the continuing-subword tokens the trainer creates."""
    chars: set[str] = set()
    for batch in texts:
        for text in [batch] if isinstance(batch, str) else batch:
            for word, _ in tok.pre_tokenizer.pre_tokenize_str(tok.normalizer.normalize_str(text)):
                chars.update(word[1:])
    return ["##" + c for c in sorted(chars)]


def train_tokenizer(texts, vocab_size: int = 8000, lowercase: bool = True, min_frequency: int = 2,
                    model_max_length: int = 512):
    """Train a BERT-style WordPiece tokenizer (``tokenizers.trainers.WordPieceTrainer``) on strings or
    lists of strings: ``texts`` is an iterable, or a zero-argument callable returning a fresh one (the
    text is read twice; an iterable is kept in memory for that).

    Deterministic: the same text gives the same vocabulary and ids in every process. The library's
    trainer is not (huggingface/tokenizers#1794): it numbers the continuing-subword tokens (``##c``) in
    hash-map order, and those ids break ties between equally frequent merges, so two runs on one corpus
    gave different vocabularies (smoke corpus: 6 trainings, 6 different id maps, different token sets).
    Here those tokens are declared up front, sorted, as trainer special tokens (fixed ids after
    ``[PAD] [UNK] [CLS] [SEP] [MASK]``), and the tokenizer is then rebuilt from the trained vocabulary
    with only the five BERT special tokens.

    Raises:
        ValueError: ``vocab_size`` not above the number of special tokens.
    """
    from tokenizers import models, trainers

    if vocab_size <= len(SPECIAL_TOKENS):
        raise ValueError(f"--vocab-size must exceed {len(SPECIAL_TOKENS)}, got {vocab_size}")
    again = texts if callable(texts) else (lambda kept=list(texts): kept)
    probe = _bert_pipeline(models.WordPiece(unk_token="[UNK]"), {}, lowercase)
    subwords = _continuing_subword_tokens(probe, again())
    tok = _bert_pipeline(models.WordPiece(unk_token="[UNK]", max_input_chars_per_word=100), {}, lowercase)
    trainer = trainers.WordPieceTrainer(vocab_size=vocab_size, min_frequency=min_frequency,
                                        special_tokens=[*SPECIAL_TOKENS, *subwords], continuing_subword_prefix="##",
                                        show_progress=False)
    tok.train_from_iterator(again(), trainer=trainer)
    vocab = tok.get_vocab()
    model = models.WordPiece(vocab, unk_token="[UNK]", max_input_chars_per_word=100)
    return _wrap(_bert_pipeline(model, vocab, lowercase), lowercase, model_max_length)


def tokenizer_hash(tokenizer_or_dir: Any) -> str:
    """sha256 of what determines tokenization: the backend's canonical JSON and special tokens.

    Accepts a fast tokenizer or a ``save_pretrained`` directory. Equal for a tokenizer and its
    saved-then-loaded copy; different for another vocabulary, lower-casing or special tokens.
    """
    tok = tokenizer_or_dir
    if isinstance(tok, (str, os.PathLike)):
        from transformers import AutoTokenizer

        tok = AutoTokenizer.from_pretrained(str(tok))
    if not getattr(tok, "is_fast", False):
        raise ValueError(f"{type(tok).__name__} is not a fast tokenizer")
    backend = json.loads(tok.backend_tokenizer.to_str())
    backend.pop("version", None)
    backend.pop("truncation", None)
    backend.pop("padding", None)
    special = {k: str(v) for k, v in sorted(tok.special_tokens_map.items())}
    return sha256_json({"backend": backend, "special_tokens": special})


def text_backend(tokenizer_or_json: Any):
    """A copy of a fast tokenizer's Rust backend that tokenizes text **as text**.

    ``tokenizer_or_json``: a fast tokenizer or its backend's JSON (``backend_tokenizer.to_str()``).
    Truncation and padding are off, and ``encode_special_tokens`` is on: a literal "[MASK]",
    "[SEP]" or "[CLS]" written in a document is split like any other text (``[``, ``mask``,
    ``]``), never mapped to a special id (``add_special_tokens=False`` only turns off the
    post-processor's ``[CLS] $A [SEP]``; the added-token matcher still maps the literal strings).
    Special ids in packed blocks thus come only from the block format (``taco.data.packing``).
    The same for a ``vocab``, ``hub`` or ``train`` tokenizer: it is a property of the backend, not
    of the saved tokenizer (which stays unchanged, so ``tokenizer_hash`` does too).

    Raises ValueError when this ``tokenizers`` version still maps a literal special token.
    """
    from tokenizers import Tokenizer

    text = tokenizer_or_json if isinstance(tokenizer_or_json, str) else tokenizer_or_json.backend_tokenizer.to_str()
    backend = Tokenizer.from_str(text)
    backend.no_truncation()
    backend.no_padding()
    backend.encode_special_tokens = True  # not serialized by to_str(): set on every copy
    specials = {t.content for t in backend.get_added_tokens_decoder().values() if t.special}
    unk = getattr(backend.model, "unk_token", None)
    # a special leaks when its literal text comes back as that one special token; "[UNK]" (and any text
    # whose characters the vocabulary lacks, e.g. "[" in a synthetic vocabulary) legitimately becomes
    # the unknown token, so it cannot be told apart and is not a leak
    leaked = [s for s in sorted(specials)
              if s != unk and backend.encode(s, add_special_tokens=False).tokens == [s]]
    if leaked:
        raise ValueError(f"this tokenizers version maps literal special-token text to special ids ({leaked}); "
                         "tokenizers >= 0.19 (encode_special_tokens) is needed")
    return backend


def check_tokenizer(tok) -> None:
    """Raise ValueError unless ``tok`` is fast, has [CLS]/[SEP]/[MASK]/[PAD] and is not all-[UNK]."""
    if not getattr(tok, "is_fast", False):
        raise ValueError(f"{type(tok).__name__} is not a fast tokenizer (packing needs one)")
    for name in ("cls_token_id", "sep_token_id", "mask_token_id", "pad_token_id", "unk_token_id"):
        if getattr(tok, name, None) is None:
            raise ValueError(f"tokenizer has no {name.replace('_id', '')}")
    ids = tok("the of and in", add_special_tokens=False)["input_ids"]
    if ids and all(i == tok.unk_token_id for i in ids):
        raise ValueError("tokenizer maps plain English words to [UNK] (broken vocabulary?)")


def build_tokenizer(kind: str, output: str | os.PathLike, *, corpus: str | os.PathLike | None = None,
                    vocab_file: str | os.PathLike | None = None, hub_id: str | None = None,
                    vocab_size: int = 8000, lowercase: bool = True, min_frequency: int = 2,
                    model_max_length: int = 512, overwrite: bool = False) -> Path:
    """Build, save (``save_pretrained``) and hash a tokenizer; returns ``output``.

    An existing ``output`` made the same way is reused; one made otherwise raises
    ``ArtifactMismatchError`` unless ``overwrite``.
    """
    from taco.data.corpus import check_existing, load_documents
    from taco.data.parallel import Progress

    t0 = time.time()
    output = Path(output)
    if kind not in KINDS:
        raise ValueError(f"unknown tokenizer kind {kind!r}; expected one of {KINDS}")
    params: dict[str, Any] = {"kind": kind, "lowercase": lowercase, "model_max_length": model_max_length}
    inputs: dict[str, str] = {}
    if kind == "vocab":
        if not vocab_file:
            raise ValueError("--kind vocab needs --vocab-file")
        inputs["vocab_file"] = sha256_file(vocab_file)
    elif kind == "hub":
        if not hub_id:
            raise ValueError("--kind hub needs --hub-id")
        params["hub_id"] = str(hub_id)
        if Path(hub_id).is_dir():
            inputs["hub_dir"] = sha256_tree(hub_id)
    else:
        if not corpus:
            raise ValueError("--kind train needs --corpus (a `taco corpus` artifact)")
        params.update(vocab_size=vocab_size, min_frequency=min_frequency)
        from taco.manifest import read_manifest

        inputs["corpus"] = read_manifest(corpus).get("artifact_key") or sha256_tree(corpus)
    key = sha256_json({"kind": "tokenizer", "parameters": params, "inputs": inputs, "format": 1})
    if check_existing(output, key, overwrite):
        print(f"tokenizer: {output} is up to date", file=sys.stderr)
        return output

    if kind == "vocab":
        tok = tokenizer_from_vocab(vocab_file, lowercase, model_max_length)
    elif kind == "hub":
        from transformers import AutoTokenizer

        tok = AutoTokenizer.from_pretrained(str(hub_id))
    else:
        docs = load_documents(corpus)
        progress = Progress("tokenizer train: reading (2 passes)", total_documents=2 * len(docs), unit="rows")

        def batches():  # empty Hub rows (kept in place) are skipped; read twice (train_tokenizer)
            for i in range(0, len(docs), 1000):
                texts = docs[i:i + 1000]["text"]
                progress.update(len(texts))
                yield [t for t in texts if t and t.strip()]

        tok = train_tokenizer(batches, vocab_size, lowercase, min_frequency, model_max_length)
        progress.finish()
    check_tokenizer(tok)
    with atomic_directory(output, overwrite=True) as tmp:
        tok.save_pretrained(str(tmp))
        write_manifest(tmp, build_manifest(
            "tokenizer", params, inputs, artifact_key=key, tokenizer_hash=tokenizer_hash(tok),
            vocab_size=len(tok), special_token_ids={t: tok.convert_tokens_to_ids(t) for t in SPECIAL_TOKENS},
            wall_time_s=round(time.time() - t0, 3)))
    return output


def load_tokenizer(path: str | os.PathLike):
    """``AutoTokenizer.from_pretrained(path)``, checked to be a usable fast BERT-style tokenizer."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(path))
    check_tokenizer(tok)
    return tok


def build_parser() -> argparse.ArgumentParser:
    from taco.data.command import data_parser

    p = data_parser("tokenizer", __doc__.split("\n")[0], output_help="tokenizer directory to write (save_pretrained)",
                    overwrite_help="replace a tokenizer made with other settings")
    p.add_argument("--kind", choices=KINDS, default="vocab",
                   help="vocab: from a vocab.txt (--vocab-file); hub: a Hub tokenizer (--hub-id); train: a new "
                        "WordPiece vocabulary trained on --corpus")
    p.add_argument("--corpus", help="documents artifact (kind train)")
    p.add_argument("--vocab-file", help="vocab.txt (kind vocab)")
    p.add_argument("--hub-id", help="Hub id or local save_pretrained dir (kind hub)")
    p.add_argument("--vocab-size", type=int, default=8000, help="kind train")
    p.add_argument("--min-frequency", type=int, default=2, help="kind train")
    p.add_argument("--lowercase", action=argparse.BooleanOptionalAction, default=True,
                   help="lowercase the text before WordPiece (as bert-base-uncased)")
    p.add_argument("--model-max-length", type=int, default=512, help="the tokenizer's model_max_length")
    p.add_argument("--workers", type=int, default=None,
                   help="threads of the Rust WordPiece trainer (RAYON_NUM_THREADS; default: all cores)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.workers is not None:
        if args.workers < 1:
            return cli_error("tokenizer", f"--workers must be >= 1, got {args.workers}")
        os.environ["RAYON_NUM_THREADS"] = str(args.workers)  # before the trainer starts its pool
    from taco.data.command import run_data_command

    return run_data_command("tokenizer", args.output, lambda: build_tokenizer(
        args.kind, args.output, corpus=args.corpus, vocab_file=args.vocab_file, hub_id=args.hub_id,
        vocab_size=args.vocab_size, lowercase=args.lowercase, min_frequency=args.min_frequency,
        model_max_length=args.model_max_length, overwrite=args.overwrite))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
