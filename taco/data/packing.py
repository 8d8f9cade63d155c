"""Tokenize documents and pack the token stream into ``[CLS] ... [SEP]`` blocks.

Algorithm (deterministic in ``seed``):

1. Documents (a ``taco corpus`` artifact, N rows) are put in the order of
   ``numpy.random.default_rng(seed).permutation(N)``.
2. Validation: the first documents of that order, either ``ceil(validation_fraction * N)`` of them
   or (``validation_blocks``) as many as are needed to fill exactly that many blocks. The
   validation split therefore does not depend on ``fraction``: the 25% and the full run are
   evaluated on the same blocks.
3. Train: the first ``round(fraction * M)`` of the M remaining documents, so the 25% set is a
   subset (a prefix) of the full set and of every larger fraction with the same seed.
4. Each split's documents, in corpus order, are tokenized with the fast tokenizer (batched, no
   special tokens), each non-empty document followed by ``[SEP]`` (``document_separator="sep"``)
   or nothing (``"none"``), into **one continuous stream**. The stream is cut into chunks of
   ``max_seq_length - 2`` tokens, each framed ``[CLS] chunk [SEP]``. Unlike run_mlm's
   ``group_texts`` (which drops a remainder in every batch of 1000 examples) only the final
   remainder (< ``max_seq_length - 2`` tokens) is dropped.

Output (``save_to_disk`` DatasetDict, atomically): splits ``train`` and ``validation``, column
``input_ids`` (``List(int32)``, each exactly ``max_seq_length`` ids); the tokenizer copied into
``<output>/tokenizer/``; ``manifest.json`` with the source, counts (documents, tokens, blocks,
dropped tokens), sha256 of the inputs (corpus data files, tokenizer hash), max length, fraction,
seed and ``artifact_key``. An existing output made with other parameters or inputs is refused
(``ArtifactMismatchError``), never reused: the official code's full-data cache reused for a 25%
run cannot happen here.

Memory: tokens are streamed through in chunks of documents and blocks are written to an Arrow file
as they are made, so memory holds one chunk, not the corpus.

CLI: ``taco pack --corpus DIR --tokenizer DIR --max-seq-length 256 --fraction 1.0 --seed 0
[--validation-fraction F | --validation-blocks N] --output DIR``.
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import sys
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from taco.manifest import atomic_directory, build_manifest, read_manifest, sha256_file, sha256_json, sha256_tree, write_manifest

SEPARATORS = ("sep", "none")
CHUNK_DOCUMENTS = 2000


def split_documents_for_packing(num_documents: int, seed: int = 0, fraction: float = 1.0,
                                validation_fraction: float | None = 0.01,
                                num_validation: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Document indices ``(train, validation)`` (each sorted ascending) as the packer selects them.

    ``num_validation`` (if given) overrides ``validation_fraction``. The train set of a smaller
    ``fraction`` is a subset of that of a larger one (same seed, same validation).

    Raises ValueError for a fraction outside (0, 1] or a validation set that leaves no train doc.
    """
    if not 0.0 < fraction <= 1.0:
        raise ValueError(f"--fraction must be in (0, 1], got {fraction}")
    perm = np.random.default_rng(seed).permutation(num_documents)
    if num_validation is None:
        if validation_fraction is None or not 0.0 <= validation_fraction < 1.0:
            raise ValueError(f"--validation-fraction must be in [0, 1), got {validation_fraction}")
        num_validation = math.ceil(validation_fraction * num_documents)
    pool = perm[num_validation:]
    if len(pool) == 0:
        raise ValueError(f"{num_documents} documents: none left for train after {num_validation} for validation")
    n_train = max(1, math.floor(fraction * len(pool) + 0.5))
    return np.sort(pool[:n_train]), np.sort(perm[:num_validation])


class BlockPacker:
    """Turn batches of token-id lists into full ``[CLS] ... [SEP]`` blocks across batch borders.

    ``add(list_of_id_lists)`` returns an (n, max_seq_length) int32 array of the blocks completed so
    far (n may be 0); a remainder shorter than ``max_seq_length - 2`` is carried to the next call.
    ``carry`` holds what would be dropped at the end. Counts: ``documents``, ``empty_documents``,
    ``tokens`` (document tokens, separators excluded), ``stream_tokens`` (with separators),
    ``blocks``.
    """

    def __init__(self, max_seq_length: int, cls_id: int, sep_id: int, separator_id: int | None,
                 max_blocks: int | None = None):
        if max_seq_length < 3:
            raise ValueError(f"--max-seq-length must be >= 3, got {max_seq_length}")
        self.length, self.body = max_seq_length, max_seq_length - 2
        self.cls_id, self.sep_id, self.separator_id = cls_id, sep_id, separator_id
        self.max_blocks = max_blocks
        self.carry = np.zeros(0, dtype=np.int32)
        self.documents = self.empty_documents = self.tokens = self.stream_tokens = self.blocks = 0

    @property
    def full(self) -> bool:
        return self.max_blocks is not None and self.blocks >= self.max_blocks

    def add(self, id_lists: Sequence[Sequence[int]]) -> np.ndarray:
        lengths = np.fromiter((len(x) for x in id_lists), dtype=np.int64, count=len(id_lists))
        total = int(lengths.sum())
        flat = np.fromiter((i for x in id_lists for i in x), dtype=np.int32, count=total)
        self.documents += len(id_lists)
        self.empty_documents += int((lengths == 0).sum())
        self.tokens += total
        if self.separator_id is not None:
            ends = np.cumsum(lengths)[lengths > 0]
            flat = np.insert(flat, ends, np.int32(self.separator_id))
        self.stream_tokens += len(flat)
        stream = np.concatenate([self.carry, flat]) if len(self.carry) else flat
        n = len(stream) // self.body
        if self.max_blocks is not None:
            n = min(n, self.max_blocks - self.blocks)
        out = np.empty((n, self.length), dtype=np.int32)
        out[:, 0] = self.cls_id
        out[:, -1] = self.sep_id
        out[:, 1:-1] = stream[: n * self.body].reshape(n, self.body)
        self.carry = stream[n * self.body:]
        self.blocks += n
        return out

    def counts(self) -> dict[str, int]:
        return {"documents": self.documents, "empty_documents": self.empty_documents, "tokens": self.tokens,
                "stream_tokens": self.stream_tokens, "blocks": self.blocks,
                "dropped_tokens": len(self.carry)}


def _encoder(tokenizer):
    """A copy of the fast tokenizer's backend with truncation and padding off."""
    from tokenizers import Tokenizer

    backend = Tokenizer.from_str(tokenizer.backend_tokenizer.to_str())
    backend.no_truncation()
    backend.no_padding()
    return backend


def encode(backend, texts: Sequence[str]) -> list[list[int]]:
    """Token ids of each text without special tokens (Rust-side batch encoding)."""
    fn = getattr(backend, "encode_batch_fast", backend.encode_batch)
    return [e.ids for e in fn(list(texts), add_special_tokens=False)]


def _blocks_table(blocks: np.ndarray):
    import pyarrow as pa

    n, length = blocks.shape
    offsets = pa.array(np.arange(0, (n + 1) * length, length, dtype=np.int32))
    return pa.table({"input_ids": pa.ListArray.from_arrays(offsets, pa.array(blocks.ravel()))})


def _pack_split(texts_of, doc_ids: Iterable[int], backend, packer: BlockPacker, writer,
                chunk: int = CHUNK_DOCUMENTS) -> int:
    """Pack documents ``doc_ids`` (in that order) until done or the packer is full.

    Returns how many documents were consumed.
    """
    doc_ids = list(doc_ids)
    used = 0
    for start in range(0, len(doc_ids), chunk):
        if packer.full:
            break
        ids = doc_ids[start:start + chunk]
        encoded = encode(backend, texts_of(ids))
        if packer.max_blocks is not None:
            # feed one document at a time near the end so we know where the last block ends
            for k, e in enumerate(encoded):
                blocks = packer.add([e])
                if len(blocks):
                    writer.write_table(_blocks_table(blocks))
                used += 1
                if packer.full:
                    return used
            continue
        blocks = packer.add(encoded)
        if len(blocks):
            writer.write_table(_blocks_table(blocks))
        used += len(ids)
    return used


def pack_documents(corpus: str | os.PathLike, tokenizer: str | os.PathLike, output: str | os.PathLike, *,
                   max_seq_length: int = 256, fraction: float = 1.0, seed: int = 0,
                   validation_fraction: float | None = 0.01, validation_blocks: int | None = None,
                   document_separator: str = "sep", hash_inputs: bool = True,
                   overwrite: bool = False) -> Path:
    """Build (or reuse) a packed-blocks artifact; returns ``output``. See the module docstring.

    Args:
        corpus: a ``taco corpus`` documents artifact.
        tokenizer: a ``taco tokenizer`` (or any fast BERT-style ``save_pretrained``) directory.
        max_seq_length: block length in tokens, [CLS] and [SEP] included (paper: 256).
        fraction: share of the non-validation documents used for train (paper variant: 0.25).
        seed: drives the document order (validation choice and fraction subset).
        validation_fraction / validation_blocks: size of the held-out split (blocks wins if set).
        document_separator: ``sep`` puts [SEP] after every document in the stream; ``none``.
        hash_inputs: sha256 of the corpus data files (else its manifest's artifact_key only).

    Raises:
        ValueError: bad parameters, a tokenizer that is not fast / lacks special tokens, an empty
            train or validation split. ArtifactMismatchError: see ``check_existing``.
    """
    from datasets import DatasetDict, Features, List, Value, load_from_disk
    from datasets.arrow_writer import ArrowWriter

    from taco.data.corpus import check_existing, load_documents
    from taco.data.tokenizer import load_tokenizer, tokenizer_hash

    t0 = time.time()
    output = Path(output)
    if document_separator not in SEPARATORS:
        raise ValueError(f"unknown --document-separator {document_separator!r}; expected one of {SEPARATORS}")
    if not 0.0 < fraction <= 1.0:
        raise ValueError(f"--fraction must be in (0, 1], got {fraction}")
    if max_seq_length < 3:
        raise ValueError(f"--max-seq-length must be >= 3, got {max_seq_length}")
    if validation_blocks is not None:
        if validation_blocks < 1:
            raise ValueError(f"--validation-blocks must be >= 1, got {validation_blocks}")
        validation_fraction = None
    elif validation_fraction is None or not 0.0 < validation_fraction < 1.0:
        raise ValueError(f"--validation-fraction must be in (0, 1), got {validation_fraction}")
    corpus_manifest = read_manifest(corpus)
    tok = load_tokenizer(tokenizer)
    tok_hash = tokenizer_hash(tok)
    inputs: dict[str, Any] = {
        "corpus_artifact_key": corpus_manifest.get("artifact_key"),
        "corpus_manifest_sha256": sha256_file(Path(corpus) / "manifest.json"),
        "tokenizer_hash": tok_hash,
    }
    if hash_inputs:
        inputs["corpus_data_sha256"] = sha256_tree(corpus)
    params = {"max_seq_length": max_seq_length, "fraction": fraction, "seed": seed,
              "validation_fraction": validation_fraction, "validation_blocks": validation_blocks,
              "document_separator": document_separator}
    key = sha256_json({"kind": "packed", "parameters": params, "inputs": inputs, "format": 1})
    if check_existing(output, key, overwrite, parameters=params, inputs=inputs):
        print(f"pack: {output} is up to date (artifact_key {key[:12]})", file=sys.stderr)
        return output

    docs = load_documents(corpus)
    n_docs = len(docs)
    backend = _encoder(tok)
    sep_id, cls_id = tok.sep_token_id, tok.cls_token_id
    separator = sep_id if document_separator == "sep" else None
    features = Features({"input_ids": List(Value("int32"))})

    def texts_of(ids):
        return docs.select(ids)["text"]

    with atomic_directory(output, overwrite=True) as tmp:
        scratch = tmp / "_scratch"
        scratch.mkdir()
        # validation first: its documents come first in the seed's order
        val_packer = BlockPacker(max_seq_length, cls_id, sep_id, separator, max_blocks=validation_blocks)
        perm = np.random.default_rng(seed).permutation(n_docs)
        with ArrowWriter(features=features, path=str(scratch / "validation.arrow")) as w:
            if validation_blocks is not None:
                n_val = _pack_split(texts_of, perm, backend, val_packer, w)
                if not val_packer.full:
                    raise ValueError(f"corpus too small for {validation_blocks} validation blocks "
                                     f"({val_packer.blocks} possible)")
                val_ids = np.sort(perm[:n_val])
            else:
                train_ids, val_ids = split_documents_for_packing(n_docs, seed, fraction, validation_fraction)
                _pack_split(texts_of, val_ids.tolist(), backend, val_packer, w)
            w.finalize()
        if validation_blocks is not None:
            train_ids, _ = split_documents_for_packing(n_docs, seed, fraction, num_validation=len(val_ids))
        if val_packer.blocks == 0:
            raise ValueError(f"validation split has no full block of {max_seq_length} tokens; "
                             "raise --validation-fraction or use --validation-blocks")
        train_packer = BlockPacker(max_seq_length, cls_id, sep_id, separator)
        with ArrowWriter(features=features, path=str(scratch / "train.arrow")) as w:
            _pack_split(texts_of, train_ids.tolist(), backend, train_packer, w)
            w.finalize()
        if train_packer.blocks == 0:
            raise ValueError(f"train split has no full block of {max_seq_length} tokens "
                             f"({train_packer.tokens} tokens in {len(train_ids)} documents)")
        from datasets import Dataset

        dd = DatasetDict({"train": Dataset.from_file(str(scratch / "train.arrow")),
                          "validation": Dataset.from_file(str(scratch / "validation.arrow"))})
        data_dir = tmp / "_data"
        dd.save_to_disk(str(data_dir))
        del dd
        shutil.rmtree(scratch)
        for entry in data_dir.iterdir():  # the DatasetDict at the artifact's top level
            os.replace(entry, tmp / entry.name)
        data_dir.rmdir()
        shutil.copytree(tokenizer, tmp / "tokenizer")
        counts = {
            "documents_total": n_docs,
            "documents": {"train": len(train_ids), "validation": int(len(val_ids))},
            "tokens": {"train": train_packer.tokens, "validation": val_packer.tokens},
            "stream_tokens": {"train": train_packer.stream_tokens, "validation": val_packer.stream_tokens},
            "blocks": {"train": train_packer.blocks, "validation": val_packer.blocks},
            "dropped_tokens": {"train": len(train_packer.carry), "validation": len(val_packer.carry)},
            "empty_documents": {"train": train_packer.empty_documents, "validation": val_packer.empty_documents},
        }
        write_manifest(tmp, build_manifest(
            "packed", params, inputs, artifact_key=key,
            source={"corpus": str(corpus), "source": corpus_manifest.get("source"),
                    "parameters": corpus_manifest.get("parameters")},
            counts=counts, tokenizer_hash=tok_hash, max_seq_length=max_seq_length, fraction=fraction,
            seed=seed, train_documents_sha256=sha256_json(train_ids.tolist()),
            validation_documents_sha256=sha256_json(val_ids.tolist()),
            wall_time_s=round(time.time() - t0, 3)))
    # sanity: the artifact loads as a DatasetDict
    load_from_disk(str(output))
    return output


def load_packed(path: str | os.PathLike):
    """``(DatasetDict, manifest)`` of a packed artifact; ValueError if it is not one."""
    from datasets import load_from_disk

    manifest = read_manifest(path)
    if manifest.get("kind") != "packed":
        raise ValueError(f"{path}: manifest kind is {manifest.get('kind')!r}, expected 'packed'")
    return load_from_disk(str(path)), manifest


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="taco pack", description=__doc__.split("\n")[0])
    p.add_argument("--corpus", required=True, help="documents artifact (taco corpus)")
    p.add_argument("--tokenizer", required=True, help="tokenizer directory (taco tokenizer)")
    p.add_argument("--output", required=True)
    p.add_argument("--max-seq-length", type=int, default=256)
    p.add_argument("--fraction", type=float, default=1.0)
    p.add_argument("--seed", type=int, default=0)
    v = p.add_mutually_exclusive_group()
    v.add_argument("--validation-fraction", type=float, default=None, help="share of documents (default 0.01)")
    v.add_argument("--validation-blocks", type=int, default=None, help="exact number of validation blocks")
    p.add_argument("--document-separator", choices=SEPARATORS, default="sep")
    p.add_argument("--no-hash-inputs", dest="hash_inputs", action="store_false",
                   help="skip the sha256 of the corpus data files (record its artifact_key only)")
    p.add_argument("--overwrite", action="store_true")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        out = pack_documents(
            args.corpus, args.tokenizer, args.output, max_seq_length=args.max_seq_length,
            fraction=args.fraction, seed=args.seed,
            validation_fraction=0.01 if args.validation_fraction is None else args.validation_fraction,
            validation_blocks=args.validation_blocks, document_separator=args.document_separator,
            hash_inputs=args.hash_inputs, overwrite=args.overwrite)
    except (ValueError, FileNotFoundError, FileExistsError) as e:
        print(f"taco pack: error: {e}", file=sys.stderr)
        return 2
    print(out)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
