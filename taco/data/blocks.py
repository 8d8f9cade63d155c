"""Documents to blocks: tokenizing them into one token stream and cutting it into blocks.

The mechanics under ``taco pack`` (``taco.data.packing``, which chooses the documents, writes the
splits and the artifact): :func:`encode` tokenizes text as text (a literal "[UNK]" kept as the
``[UNK]`` id for ``unk_policy: keep_unk_token``), :class:`DocumentEncoder` does it for whole
documents of a corpus in ``workers`` spawned processes (:func:`encode_documents`, chunks of about
``chunk_rows`` rows returned in order), the document stream carries either a separator after each
document (``framed``) or ``[CLS] row [SEP]`` around every row (``official``), and
:class:`BlockPacker` cuts the stream into ``max_seq_length`` blocks across chunk borders
(``[CLS] body [SEP]`` framed, or raw slices). Every name is also importable from
``taco.data.packing``.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from taco.data.parallel import WorkerPool

#: what ``unk_policy: keep_unk_token`` writes for WikiText's ``<unk>`` (``taco.data.detokenize``)
UNK_TEXT = "[UNK]"
#: rows per tokenization task (a worker's unit of work)
CHUNK_ROWS = 2000


class BlockPacker:
    """Turn a token stream, fed in pieces, into full blocks across piece borders.

    ``framed=True``: each block is ``[CLS] body [SEP]`` with ``max_seq_length - 2`` stream tokens;
    ``framed=False`` (the official format): each block is a raw slice of ``max_seq_length`` stream
    tokens, whose specials are already in the stream (``[CLS] text [SEP]`` per text).

    ``add_stream(stream)`` (int32 ids, separators / per-text specials already in place) returns an
    (n, max_seq_length) int32 array of the blocks completed so far (n may be 0); a remainder
    shorter than the body is carried to the next call. ``add(list_of_id_lists)`` does the same for
    documents given as id lists (framed: the separator after each non-empty one; unframed: each
    list is a text, put as ``[CLS] ids [SEP]``). ``carry`` holds what would be dropped at the end.
    Counts: ``documents``, ``empty_documents``, ``tokens`` (text tokens, separators and specials
    excluded), ``stream_tokens`` (with them), ``blocks``; ``max_blocks`` stops at that many blocks
    (the rest counts as dropped).
    """

    def __init__(self, max_seq_length: int, cls_id: int, sep_id: int, separator_id: int | None,
                 max_blocks: int | None = None, framed: bool = True):
        if max_seq_length < 3:
            raise ValueError(f"--max-seq-length must be >= 3, got {max_seq_length}")
        self.framed = bool(framed)
        self.length, self.body = max_seq_length, (max_seq_length - 2 if self.framed else max_seq_length)
        self.cls_id, self.sep_id, self.separator_id = cls_id, sep_id, separator_id
        self.max_blocks = max_blocks
        self.carry = np.zeros(0, dtype=np.int32)
        self.documents = self.empty_documents = self.tokens = self.stream_tokens = self.blocks = 0
        self.overflow = 0

    @property
    def full(self) -> bool:
        return self.max_blocks is not None and self.blocks >= self.max_blocks

    def add(self, id_lists: Sequence[Sequence[int]]) -> np.ndarray:
        lengths = np.fromiter((len(x) for x in id_lists), dtype=np.int64, count=len(id_lists))
        flat = np.fromiter(itertools.chain.from_iterable(id_lists), dtype=np.int32, count=int(lengths.sum()))
        if self.framed:
            stream = _with_separators(flat, lengths, self.separator_id)
        else:
            stream = _with_text_specials(flat, lengths, self.cls_id, self.sep_id)
        return self.add_stream(stream, documents=len(id_lists), empty=int((lengths == 0).sum()),
                               tokens=int(lengths.sum()))

    def add_stream(self, stream: np.ndarray, documents: int = 0, empty: int = 0, tokens: int = 0) -> np.ndarray:
        self.documents += documents
        self.empty_documents += empty
        self.tokens += tokens
        self.stream_tokens += len(stream)
        if self.full:
            self.overflow += len(stream)
            return np.empty((0, self.length), dtype=np.int32)
        stream = np.concatenate([self.carry, stream]) if len(self.carry) else np.asarray(stream, dtype=np.int32)
        n = len(stream) // self.body
        if self.max_blocks is not None:
            n = min(n, self.max_blocks - self.blocks)
        if self.framed:
            out = np.empty((n, self.length), dtype=np.int32)
            out[:, 0] = self.cls_id
            out[:, -1] = self.sep_id
            out[:, 1:-1] = stream[: n * self.body].reshape(n, self.body)
        else:
            out = np.array(stream[: n * self.body], dtype=np.int32).reshape(n, self.length)
        self.carry = stream[n * self.body:]
        self.blocks += n
        return out

    def counts(self) -> dict[str, int]:
        return {"documents": self.documents, "empty_documents": self.empty_documents, "tokens": self.tokens,
                "stream_tokens": self.stream_tokens, "blocks": self.blocks,
                "dropped_tokens": len(self.carry) + self.overflow}


def _with_separators(flat: np.ndarray, doc_tokens: np.ndarray, separator_id: int | None) -> np.ndarray:
    """``flat`` with ``separator_id`` after each document that has tokens (None: unchanged)."""
    if separator_id is None:
        return flat
    ends = np.cumsum(doc_tokens)[doc_tokens > 0]
    return np.insert(flat, ends, np.int32(separator_id))


def _with_text_specials(flat: np.ndarray, row_tokens: np.ndarray, cls_id: int, sep_id: int) -> np.ndarray:
    """``flat`` (the rows' ids, concatenated) with every row put as ``[CLS] row [SEP]`` (an empty
    row too: ``[CLS] [SEP]``, as the official code's ``tokenizer("")`` gives)."""
    ends = np.cumsum(row_tokens)
    starts = ends - row_tokens
    at = np.stack([starts, ends], axis=1).ravel()  # [s0, e0, s1, e1, ...]: e_i == s_{i+1} keeps SEP before CLS
    values = np.tile(np.array([cls_id, sep_id], dtype=np.int32), len(row_tokens))
    return np.insert(np.asarray(flat, dtype=np.int32), at, values)


def _encoder(tokenizer):
    """A copy of the fast tokenizer's backend that tokenizes text as text (``text_backend``)."""
    return _backend_from_json(tokenizer.backend_tokenizer.to_str())


def _backend_from_json(tokenizer_json: str):
    """The backend of ``tokenizer_json`` with truncation and padding off and literal special-token
    text split as text (``taco.data.tokenizer.text_backend``)."""
    from taco.data.tokenizer import text_backend

    return text_backend(tokenizer_json)


def encode(backend, texts: Sequence[str], unk_id: int | None = None) -> list[list[int]]:
    """Token ids of each text without special tokens (Rust-side batch encoding).

    With a ``text_backend`` a literal special token in a text is text. ``unk_id`` (a corpus built
    with ``unk_policy: keep_unk_token``): each literal "[UNK]" becomes ``unk_id``, the text between
    them tokenized as text (the same ids as the tokenizer's own added-token split gave).
    """
    fn = getattr(backend, "encode_batch_fast", backend.encode_batch)
    texts = list(texts)
    out = [e.ids for e in fn(texts, add_special_tokens=False)]
    if unk_id is not None:
        for i, text in enumerate(texts):
            if UNK_TEXT in text:
                parts = [e.ids for e in fn(text.split(UNK_TEXT), add_special_tokens=False)]
                out[i] = parts[0] + [x for p in parts[1:] for x in (unk_id, *p)]
    return out


# ------------------------------------------------------------------------------------ workers

_WORKER: dict[str, Any] = {}


def _init_encoder(corpus_dir: str, tokenizer_json: str, separator_id: int | None,
                  text_specials: tuple[int, int] | None = None, unk_id: int | None = None) -> None:
    """Per-process state of a tokenizing worker: the corpus reader and its own tokenizer.

    ``text_specials`` = ``(cls_id, sep_id)``: the official format (every row ``[CLS] row [SEP]``,
    ``separator_id`` unused); ``unk_id``: literal "[UNK]" kept as that id (see ``encode``)."""
    from taco.data.corpus_store import CorpusReader

    _WORKER.update(reader=CorpusReader(corpus_dir, check=False), backend=_backend_from_json(tokenizer_json),
                   separator_id=separator_id, text_specials=text_specials, unk_id=unk_id)


def encode_documents(task: tuple[np.ndarray, np.ndarray]) -> dict[str, Any]:
    """Worker: the token stream of whole documents (row ranges ``[starts[i], stops[i])``).

    Framed format: rows of a document are tokenized and concatenated; the separator follows each
    document that has tokens. Official format (``text_specials``): every row is ``[CLS] row
    [SEP]``. Returns ``{"stream": int32 array, "document_stream": stream tokens per document,
    "documents", "empty_documents", "tokens", "rows"}``.
    """
    starts, stops = task
    reader, backend, sep = _WORKER["reader"], _WORKER["backend"], _WORKER["separator_id"]
    text_specials = _WORKER.get("text_specials")
    n_rows = stops - starts
    first = np.repeat(starts - np.concatenate([[0], np.cumsum(n_rows)[:-1]]), n_rows)
    rows = first + np.arange(int(n_rows.sum()), dtype=np.int64)
    ids = encode(backend, reader.texts(rows), _WORKER.get("unk_id"))
    row_tokens = np.fromiter((len(x) for x in ids), dtype=np.int64, count=len(ids))
    flat = np.fromiter(itertools.chain.from_iterable(ids), dtype=np.int32, count=int(row_tokens.sum()))
    doc_tokens = np.add.reduceat(row_tokens, np.cumsum(n_rows) - n_rows) if len(ids) else row_tokens
    if text_specials is not None:
        stream = _with_text_specials(flat, row_tokens, *text_specials)
        document_stream = doc_tokens + 2 * n_rows
    else:
        stream = _with_separators(flat, doc_tokens, sep)
        document_stream = doc_tokens + (doc_tokens > 0 if sep is not None else 0)
    return {"stream": stream, "document_stream": document_stream,
            "documents": len(starts), "empty_documents": int((doc_tokens == 0).sum()),
            "tokens": int(row_tokens.sum()), "rows": len(rows)}


def _tasks(starts: np.ndarray, stops: np.ndarray, chunk_rows: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Consecutive groups of whole documents of about ``chunk_rows`` rows each (>= 1 document)."""
    cum = np.cumsum(stops - starts)
    cuts = np.unique(np.searchsorted(cum, np.arange(chunk_rows, int(cum[-1]) if len(cum) else 0, chunk_rows),
                                     side="left") + 1)
    bounds = [0, *[int(c) for c in cuts if 0 < c < len(starts)], len(starts)]
    for a, b in zip(bounds[:-1], bounds[1:]):
        if b > a:
            yield starts[a:b], stops[a:b]


class DocumentEncoder:
    """Tokenizes documents of a corpus in ``workers`` processes; chunks come back in order."""

    def __init__(self, corpus: str | os.PathLike, tokenizer_json: str, separator_id: int | None,
                 workers: int = 1, chunk_rows: int = CHUNK_ROWS, text_specials: tuple[int, int] | None = None,
                 unk_id: int | None = None):
        if chunk_rows < 1:
            raise ValueError(f"--chunk-rows must be >= 1, got {chunk_rows}")
        self.chunk_rows = chunk_rows
        self.pool = WorkerPool(workers, _init_encoder, (str(corpus), tokenizer_json, separator_id, text_specials,
                                                        unk_id))

    def chunks(self, starts: np.ndarray, stops: np.ndarray) -> Iterator[dict[str, Any]]:
        return self.pool.map(encode_documents, _tasks(starts, stops, self.chunk_rows))

    def close(self) -> None:
        self.pool.close()
