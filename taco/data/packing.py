"""Tokenize documents and pack the token stream into blocks: ``[CLS] ... [SEP]`` framed, or the official format.

Algorithm (deterministic in the data ``seed``; the same blocks, byte for byte, whatever the
number of workers or the chunk size):

1. The corpus's **documents** (``taco.data.corpus_store``: a Wikipedia article, or a span of
   ``span_rows`` contiguous BookCorpus sentences; N of them) are put in the order of
   ``numpy.random.default_rng(seed).permutation(N)``.
2. Validation: the first documents of that order, either ``ceil(validation_fraction * N)`` of them
   or (``validation_blocks``) as few as fill that many blocks. They are packed as whole documents
   **in corpus order** (sorted), so a validation block is a stretch of contiguous text. The split
   does not depend on ``fraction``: the 25% and the full run are evaluated on the same blocks.
3. Train: the first ``round(fraction * M)`` of the M remaining documents in that order, packed in
   corpus order. The subset is drawn in whole documents and spans, so the share of packed
   neighbouring rows that are adjacent sentences is the same for every fraction; the 25% set is a
   subset of every larger fraction's. The subset depends on the data seed only (``taco pack
   --seed``, the configuration's top-level ``seed``): pre-training seeds never redraw it.
4. Each document's rows are tokenized with the fast tokenizer (no special tokens) into **one
   continuous stream**, in one of two block formats (``block_format``):

   - ``framed`` (default): a document's rows are concatenated and each non-empty document is
     followed by ``[SEP]`` (``document_separator="sep"``) or nothing (``"none"``); the stream is cut
     into chunks of ``max_seq_length - 2`` tokens, each framed ``[CLS] chunk [SEP]``.
   - ``official`` (the official code's, ``run_mlm_with_contrastive.py`` lines 566-591): every row
     (a text: a Wikipedia article, a BookCorpus sentence) becomes ``[CLS] text [SEP]`` (an empty
     row ``[CLS] [SEP]``, as ``tokenizer("")`` gives), concatenated, and the stream is cut into raw
     slices of ``max_seq_length`` tokens: a block starts and ends wherever the cut falls and holds
     the inner ``[CLS]``/``[SEP]`` of every text it spans. ``document_separator`` is not used.

   Unlike run_mlm's ``group_texts`` (which drops a remainder in every batch of 1000 examples) only
   the final remainder is dropped, in both formats.

   Text is tokenized **as text** (``taco.data.tokenizer.text_backend``): a literal "[MASK]",
   "[SEP]" or "[CLS]" written in a document becomes ``[``, ``mask``, ``]`` pieces, never a special
   id, so special ids in a block come only from its format. One exception, on purpose: in a corpus
   built with ``unk_policy: keep_unk_token`` (WikiText's ``<unk>`` written as "[UNK]" by the corpus
   step) the literal "[UNK]" stays the ``[UNK]`` id, as that policy means.

Parallelism: ``workers`` spawned processes tokenize chunks of ``chunk_rows`` rows (each worker's
tokenizer limited to one thread; spawned, never forked after the Rust tokenizer started threads);
the main process receives the chunks' token streams **in order**, packs and writes them. At most
``2 * workers`` chunks are in flight. ``workers=1`` tokenizes in the main process, one thread.

Memory: bounded by ``chunk_rows`` and ``workers`` (a few chunks of text and token ids per
process), plus four 8-byte integers per corpus document for the draw (document ranges, order,
selection; ~0.26 GB for the ~8M documents of the paper's corpus). Disk: the blocks are written
once, straight into the ``save_to_disk`` layout (no scratch copy); see ``taco.data.disk``.

Output (a ``datasets.DatasetDict`` directory, atomically): splits ``train`` and ``validation``,
column ``input_ids`` (``List(int32)``, each exactly ``max_seq_length`` ids); the tokenizer copied
into ``<output>/tokenizer/``; ``manifest.json`` with the source, counts (documents, rows, tokens,
blocks, dropped tokens), sha256 of the inputs (the corpus files, tokenizer hash), max length,
fraction, seed and ``artifact_key``. An existing output made with other parameters or inputs is
refused (``ArtifactMismatchError``), never reused: the official code's full-data cache reused for
a 25% run cannot happen here. Every corpus file is checked (size, rows; sha256 with
``hash_inputs``) before any output is written: a bad shard stops the step with its name.

Progress: a line in the job's log every 30 s per split (documents and tokens done, tokens/s, time
left; ``taco.data.parallel.Progress``).

Tokenizing and cutting into blocks (``encode``, ``DocumentEncoder``, ``BlockPacker``) are
``taco.data.blocks``, re-exported here; this module draws the documents, writes the splits and the
artifact.

CLI: ``taco pack --corpus DIR --tokenizer DIR --max-seq-length 256 --fraction 1.0 --seed 0
[--block-format framed|official] [--validation-fraction F | --validation-blocks N] [--workers N]
--output DIR``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import shutil
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from taco.data.blocks import (
    CHUNK_ROWS, BlockPacker, DocumentEncoder)
from taco.data.parallel import Progress
from taco.manifest import atomic_directory, build_manifest, read_manifest, sha256_file, sha256_json, write_manifest

SEPARATORS = ("sep", "none")
#: ``framed``: ``[CLS] max_seq_length - 2 tokens [SEP]`` over the stream of documents; ``official``:
#: ``[CLS] text [SEP]`` per row, raw ``max_seq_length`` slices (the official code's format)
BLOCK_FORMATS = ("framed", "official")
#: ``parameters.special_token_text`` of every artifact: literal special-token text is tokenized as
#: text (an artifact made before, which mapped it to special ids, is not reused)
SPECIAL_TOKEN_TEXT = "text"
#: blocks per Arrow record batch written (1000 x 256 x 4 bytes = 1 MB)
WRITE_BLOCKS = 1000
#: the data file of each split, as ``Dataset.save_to_disk`` names a single shard
SHARD_NAME = "data-00000-of-00001.arrow"


def split_documents_for_packing(num_documents: int, seed: int = 0, fraction: float = 1.0,
                                validation_fraction: float | None = 0.01,
                                num_validation: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Document indices ``(train, validation)`` (each sorted ascending) as the packer selects them.

    Documents are the corpus's documents and sentence spans (``CorpusReader.documents``), never
    single sentence rows. ``num_validation`` (if given) overrides ``validation_fraction``. The
    train set of a smaller ``fraction`` is a subset of that of a larger one (same seed, same
    validation). Depends on ``(num_documents, seed, fraction, validation size)`` only.

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


# ------------------------------------------------------------------------------------ steps


def _blocks_table(blocks: np.ndarray):
    import pyarrow as pa

    n, length = blocks.shape
    offsets = pa.array(np.arange(0, (n + 1) * length, length, dtype=np.int32))
    return pa.table({"input_ids": pa.ListArray.from_arrays(offsets, pa.array(blocks.ravel()))})


def check_arguments(max_seq_length: int, fraction: float, validation_fraction: float | None,
                    validation_blocks: int | None, document_separator: str, workers: int,
                    block_format: str = "framed") -> float | None:
    """Step 1: reject bad parameters before any work; returns the validation fraction in force
    (None when ``validation_blocks`` decides). Raises ValueError naming the option."""
    if block_format not in BLOCK_FORMATS:
        raise ValueError(f"unknown --block-format {block_format!r}; expected one of {BLOCK_FORMATS}")
    if document_separator not in SEPARATORS:
        raise ValueError(f"unknown --document-separator {document_separator!r}; expected one of {SEPARATORS}")
    if block_format == "official" and document_separator != "sep":
        raise ValueError("--document-separator is an option of --block-format framed; the official format "
                         "puts [CLS] ... [SEP] around every text")
    if not 0.0 < fraction <= 1.0:
        raise ValueError(f"--fraction must be in (0, 1], got {fraction}")
    if max_seq_length < 3:
        raise ValueError(f"--max-seq-length must be >= 3, got {max_seq_length}")
    if workers < 1:
        raise ValueError(f"--workers must be >= 1, got {workers}")
    if validation_blocks is not None:
        if validation_blocks < 1:
            raise ValueError(f"--validation-blocks must be >= 1, got {validation_blocks}")
        return None
    if validation_fraction is None or not 0.0 < validation_fraction < 1.0:
        raise ValueError(f"--validation-fraction must be in (0, 1), got {validation_fraction}")
    return validation_fraction


def pack_inputs(corpus: str | os.PathLike, tok, hash_inputs: bool, threads: int = 1):
    """Step 2: open the corpus (every file checked: a bad shard raises CorpusFileError naming it,
    before any output) and describe the inputs that determine the blocks. Returns (reader, inputs)."""
    from taco.data.corpus_store import CorpusReader
    from taco.data.tokenizer import tokenizer_hash

    reader = CorpusReader(corpus)
    inputs: dict[str, Any] = {
        "corpus_artifact_key": reader.manifest.get("artifact_key"),
        "corpus_manifest_sha256": sha256_file(Path(corpus) / "manifest.json"),
        "tokenizer_hash": tokenizer_hash(tok),
    }
    if hash_inputs:  # re-hash the text files (in place too) against the corpus manifest
        inputs["corpus_data_sha256"] = sha256_json(reader.verify_hashes(threads))
    return reader, inputs


def choose_validation(encoder: DocumentEncoder, starts: np.ndarray, stops: np.ndarray, seed: int,
                      validation_blocks: int, body: int) -> np.ndarray:
    """Step 3a (``validation_blocks``): the shortest prefix of the seed's document order whose
    token stream fills ``validation_blocks`` blocks; its document indices, sorted (corpus order).

    Raises ValueError when the whole corpus cannot fill them.
    """
    order = np.random.default_rng(seed).permutation(len(starts))
    need, have, taken = validation_blocks * body, 0, 0
    step = max(64, encoder.chunk_rows)
    progress = Progress("pack validation (choosing)", total_documents=None)
    while taken < len(order) and have < need:
        batch = order[taken:taken + step]
        lengths = np.concatenate([c["document_stream"] for c in encoder.chunks(starts[batch], stops[batch])])
        cum = have + np.cumsum(lengths)
        k = int(np.searchsorted(cum, need, side="left"))  # first document that completes the need
        if k < len(batch):
            return np.sort(order[:taken + k + 1])
        have, taken = int(cum[-1]), taken + len(batch)
        progress.update(len(batch), int(lengths.sum()))
    raise ValueError(f"corpus too small for {validation_blocks} validation blocks "
                     f"({have // body} possible from all {len(order)} documents)")


def draw_documents(encoder: DocumentEncoder, starts: np.ndarray, stops: np.ndarray, seed: int, fraction: float,
                   validation_fraction: float | None, validation_blocks: int | None,
                   body: int) -> tuple[np.ndarray, np.ndarray]:
    """Step 3: ``(train, validation)`` document indices, each sorted (corpus order): validation by
    ``validation_blocks`` (``choose_validation``) or ``validation_fraction``, train the ``fraction``
    of the rest (``split_documents_for_packing``). A function of the data seed only."""
    n_docs = len(starts)
    if validation_blocks is not None:
        val_ids = choose_validation(encoder, starts, stops, seed, validation_blocks, body)
    else:
        _, val_ids = split_documents_for_packing(n_docs, seed, fraction, validation_fraction)
    train_ids, _ = split_documents_for_packing(n_docs, seed, fraction, num_validation=len(val_ids))
    return train_ids, val_ids


def pack_split(encoder: DocumentEncoder, starts: np.ndarray, stops: np.ndarray, packer: BlockPacker,
               split_dir: Path, label: str) -> None:
    """Step 4: tokenize the documents ``[starts[i], stops[i])`` (corpus order) in the workers,
    pack the stream and write the blocks to ``split_dir/data-00000-of-00001.arrow`` as they come."""
    from datasets import Features, List, Value
    from datasets.arrow_writer import ArrowWriter

    split_dir.mkdir(parents=True)
    progress = Progress(label, total_documents=len(starts))
    pending: list[np.ndarray] = []  # blocks not yet written: written in record batches of
    n_pending = 0                    # exactly WRITE_BLOCKS, so the file's bytes depend on the blocks only
    with ArrowWriter(features=Features({"input_ids": List(Value("int32"))}), path=str(split_dir / SHARD_NAME)) as w:
        for chunk in encoder.chunks(starts, stops):
            blocks = packer.add_stream(chunk["stream"], chunk["documents"], chunk["empty_documents"], chunk["tokens"])
            if len(blocks):
                pending.append(blocks)
                n_pending += len(blocks)
            if n_pending >= WRITE_BLOCKS:
                ready = np.concatenate(pending)
                k = len(ready) // WRITE_BLOCKS * WRITE_BLOCKS
                for i in range(0, k, WRITE_BLOCKS):
                    w.write_table(_blocks_table(ready[i:i + WRITE_BLOCKS]))
                pending, n_pending = [ready[k:]], len(ready) - k
            progress.update(chunk["documents"], chunk["tokens"])
        if n_pending:
            w.write_table(_blocks_table(np.concatenate(pending)))
        w.finalize()
    progress.finish()


def finish_split_dir(split_dir: Path) -> None:
    """Step 5: the ``state.json`` and ``dataset_info.json`` that ``Dataset.save_to_disk`` writes
    beside its shard (same keys), so ``load_from_disk`` reads the blocks where they were written."""
    from datasets import Dataset

    ds = Dataset.from_file(str(split_dir / SHARD_NAME))
    state = {"_data_files": [{"filename": SHARD_NAME}], "_fingerprint": ds._fingerprint, "_format_columns": None,
             "_format_kwargs": {}, "_format_type": None, "_output_all_columns": False, "_split": None}
    (split_dir / "state.json").write_text(json.dumps(state, indent=2, sort_keys=True), encoding="utf-8")
    info = asdict(ds.info)
    (split_dir / "dataset_info.json").write_text(json.dumps({k: info[k] for k in sorted(info)}, indent=2),
                                                 encoding="utf-8")
    del ds


def packed_counts(num_rows: int, starts: np.ndarray, stops: np.ndarray, train_ids: np.ndarray,
                  val_ids: np.ndarray, train: BlockPacker, val: BlockPacker) -> dict[str, Any]:
    """Step 6: the manifest's counts per split (documents, rows, tokens, blocks, dropped tokens)."""
    tc, vc = train.counts(), val.counts()
    both = lambda key: {"train": tc[key], "validation": vc[key]}  # noqa: E731
    return {
        "documents_total": len(starts),
        "rows_total": num_rows,
        "documents": {"train": len(train_ids), "validation": int(len(val_ids))},
        "rows": {"train": int((stops[train_ids] - starts[train_ids]).sum()),
                 "validation": int((stops[val_ids] - starts[val_ids]).sum())},
        "tokens": both("tokens"), "stream_tokens": both("stream_tokens"), "blocks": both("blocks"),
        "dropped_tokens": both("dropped_tokens"), "empty_documents": both("empty_documents"),
    }


def _ids_sha256(ids: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(ids, dtype=np.int64).tobytes()).hexdigest()


def pack_documents(corpus: str | os.PathLike, tokenizer: str | os.PathLike, output: str | os.PathLike, *,
                   max_seq_length: int = 256, fraction: float = 1.0, seed: int = 0,
                   validation_fraction: float | None = 0.01, validation_blocks: int | None = None,
                   document_separator: str = "sep", block_format: str = "framed", hash_inputs: bool = True,
                   workers: int = 1, chunk_rows: int = CHUNK_ROWS, overwrite: bool = False) -> Path:
    """Build (or reuse) a packed-blocks artifact; returns ``output``. See the module docstring.

    Args:
        corpus: a ``taco corpus`` artifact (format 3: documents and sentence spans).
        tokenizer: a ``taco tokenizer`` (or any fast BERT-style ``save_pretrained``) directory.
        max_seq_length: block length in tokens, specials included (paper: 256).
        fraction: share of the non-validation documents used for train (the paper's reduced-data setting: 0.25).
        seed: the data seed; drives the document order (validation choice and fraction subset).
        validation_fraction / validation_blocks: size of the held-out split (blocks wins if set).
        document_separator: ``sep`` puts [SEP] after every document in the stream; ``none``
            (framed format only).
        block_format: ``framed`` (``[CLS] body [SEP]`` blocks) or ``official`` (``[CLS] text [SEP]``
            per row, raw slices: the official code's); see the module docstring. ``official`` enters
            the parameters (and so the artifact key); ``framed`` leaves the key of earlier versions.
        hash_inputs: re-hash the corpus's text files against its manifest (else sizes and rows only).
        workers: tokenizing processes (the job's threads); the output does not depend on it.
        chunk_rows: rows per tokenization task; bounds memory; the output does not depend on it.

    Raises:
        ValueError: bad parameters, a tokenizer that is not fast / lacks special tokens, an empty
            train or validation split. CorpusFileError (a ValueError): a corpus file that is
            missing, truncated or changed, named. ArtifactMismatchError: see ``check_existing``.
            All before anything is written to ``output``.
    """
    from datasets import load_from_disk

    from taco.data.corpus import check_existing
    from taco.data.tokenizer import load_tokenizer

    t0 = time.time()
    output = Path(output)
    validation_fraction = check_arguments(max_seq_length, fraction, validation_fraction, validation_blocks,
                                          document_separator, workers, block_format)
    official = block_format == "official"
    tok = load_tokenizer(tokenizer)
    reader, inputs = pack_inputs(corpus, tok, hash_inputs, threads=workers)
    params = {"max_seq_length": max_seq_length, "fraction": fraction, "seed": seed,
              "validation_fraction": validation_fraction, "validation_blocks": validation_blocks,
              "document_separator": None if official else document_separator,
              "special_token_text": SPECIAL_TOKEN_TEXT}
    if official:  # framed artifacts keep their parameters: one format, one key, as before
        params["block_format"] = block_format
    key = sha256_json({"kind": "packed", "parameters": params, "inputs": inputs, "format": 2})
    if check_existing(output, key, overwrite, parameters=params, inputs=inputs):
        print(f"pack: {output} is up to date (artifact_key {key[:12]})", file=sys.stderr)
        return output

    starts, stops = reader.documents()
    sep_id, cls_id = tok.sep_token_id, tok.cls_token_id
    separator = sep_id if document_separator == "sep" and not official else None
    keep_unk = (reader.manifest.get("parameters") or {}).get("unk_policy") == "keep_unk_token"
    encoder = DocumentEncoder(corpus, tok.backend_tokenizer.to_str(), separator, workers, chunk_rows,
                              text_specials=(cls_id, sep_id) if official else None,
                              unk_id=tok.unk_token_id if keep_unk else None)
    body = max_seq_length if official else max_seq_length - 2
    try:
        with atomic_directory(output, overwrite=True) as tmp:
            train_ids, val_ids = draw_documents(encoder, starts, stops, seed, fraction, validation_fraction,
                                                validation_blocks, body)
            val_packer = BlockPacker(max_seq_length, cls_id, sep_id, separator, max_blocks=validation_blocks,
                                     framed=not official)
            pack_split(encoder, starts[val_ids], stops[val_ids], val_packer, tmp / "validation", "pack validation")
            if val_packer.blocks == 0:
                raise ValueError(f"validation split has no full block of {max_seq_length} tokens; "
                                 "raise --validation-fraction or use --validation-blocks")
            train_packer = BlockPacker(max_seq_length, cls_id, sep_id, separator, framed=not official)
            pack_split(encoder, starts[train_ids], stops[train_ids], train_packer, tmp / "train", "pack train")
            if train_packer.blocks == 0:
                raise ValueError(f"train split has no full block of {max_seq_length} tokens "
                                 f"({train_packer.tokens} tokens in {len(train_ids)} documents)")
            for split in ("train", "validation"):
                finish_split_dir(tmp / split)
            (tmp / "dataset_dict.json").write_text(json.dumps({"splits": ["train", "validation"]}), encoding="utf-8")
            shutil.copytree(tokenizer, tmp / "tokenizer")
            write_manifest(tmp, build_manifest(
                "packed", params, inputs, artifact_key=key,
                source={"corpus": str(corpus), "source": reader.manifest.get("source"),
                        "parameters": reader.manifest.get("parameters")},
                counts=packed_counts(reader.num_rows, starts, stops, train_ids, val_ids, train_packer, val_packer),
                tokenizer_hash=inputs["tokenizer_hash"], max_seq_length=max_seq_length,
                block_format=block_format, fraction=fraction, seed=seed, workers=workers,
                train_documents_sha256=_ids_sha256(train_ids), validation_documents_sha256=_ids_sha256(val_ids),
                wall_time_s=round(time.time() - t0, 3)))
    finally:
        encoder.close()
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
    from taco.data.command import data_parser

    p = data_parser("pack", __doc__.split("\n")[0], output_help="packed-blocks directory to write",
                    overwrite_help="replace blocks made with other settings")
    p.add_argument("--corpus", required=True, help="corpus artifact (taco corpus)")
    p.add_argument("--tokenizer", required=True, help="tokenizer directory (taco tokenizer)")
    p.add_argument("--max-seq-length", type=int, default=256, help="tokens per block")
    p.add_argument("--fraction", type=float, default=1.0,
                   help="share of the training documents kept (whole documents, drawn with --seed)")
    p.add_argument("--seed", type=int, default=0, help="the data seed (validation choice and subset)")
    v = p.add_mutually_exclusive_group()
    v.add_argument("--validation-fraction", type=float, default=None, help="share of documents (default 0.01)")
    v.add_argument("--validation-blocks", type=int, default=None, help="exact number of validation blocks")
    p.add_argument("--block-format", choices=BLOCK_FORMATS, default="framed",
                   help="framed: [CLS] body [SEP] per block; official: [CLS] text [SEP] per row, raw slices "
                        "(the official code's)")
    p.add_argument("--document-separator", choices=SEPARATORS, default="sep", help="framed format only")
    p.add_argument("--workers", type=int, default=1, help="tokenizing processes (the job's threads)")
    p.add_argument("--chunk-rows", type=int, default=CHUNK_ROWS, help="rows per tokenization task")
    p.add_argument("--no-hash-inputs", dest="hash_inputs", action="store_false",
                   help="skip re-hashing the corpus files (sizes and row counts are still checked)")
    return p


def main(argv: list[str] | None = None) -> int:
    from taco.data.command import run_data_command

    args = build_parser().parse_args(argv)
    return run_data_command("pack", args.output, lambda: pack_documents(
        args.corpus, args.tokenizer, args.output, max_seq_length=args.max_seq_length,
        fraction=args.fraction, seed=args.seed,
        validation_fraction=0.01 if args.validation_fraction is None else args.validation_fraction,
        validation_blocks=args.validation_blocks, document_separator=args.document_separator,
        block_format=args.block_format, hash_inputs=args.hash_inputs, workers=args.workers, chunk_rows=args.chunk_rows,
        overwrite=args.overwrite))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
