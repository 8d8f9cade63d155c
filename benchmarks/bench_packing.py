"""Packing speed: ``taco.data.packing`` against run_mlm's ``map(tokenize) + map(group_texts)``.

Both turn the same documents (a ``datasets.Dataset`` with a ``text`` column, in memory) into an
in-memory ``Dataset`` of ``max_seq_length``-token blocks with the same fast tokenizer, one Python
process. The baseline is run_mlm.py (transformers 4.x, the official TACO code's base) verbatim:
``tokenizer(text, return_special_tokens_mask=True)`` then ``group_texts`` on batches of 1000,
which drops a remainder in every batch. Ours: Rust batch encoding without offsets, a numpy stream
with a carry across batches, one Arrow column. Disk writes are left out of both.

Prints tokens/s (tokens = tokens in the packed stream) for each, the ratio, and the tokens each
drops. Median of ``--repeats`` alternating runs (the machine may be shared).

Usage: ``python benchmarks/bench_packing.py [--text wikitext|synthetic] [--max-seq-length 256]``
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from itertools import chain
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

REPO = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("TACO_SHARED_DATA", REPO.parent / "shared" / "data"))


def load_text(kind: str, num_documents: int):
    from datasets import Dataset

    if kind == "wikitext":
        from taco.data.corpus import read_local_documents

        files = [SHARED / "corpus" / "wikitext-2" / f for f in ("valid.txt", "test.txt")]
        docs = read_local_documents(files, split_by="blank_line", detokenize=True, unk_policy="drop")
        label = "wikitext-2 valid+test, one document per blank-line block, detokenized"
    else:
        from taco.data.synthetic import generate_documents

        docs = generate_documents(num_documents, seed=0)
        label = f"synthetic language, {num_documents} documents"
    return Dataset.from_dict({"text": docs}), label


def run_group_texts(ds, tok, L):
    """run_mlm.py (non line-by-line): tokenize with special tokens, group_texts per 1000 rows."""

    def tokenize_function(examples):
        return tok(examples["text"], return_special_tokens_mask=True)

    def group_texts(examples):
        concatenated = {k: list(chain(*examples[k])) for k in examples.keys()}
        total = len(concatenated[list(examples.keys())[0]])
        total = (total // L) * L
        return {k: [t[i: i + L] for i in range(0, total, L)] for k, t in concatenated.items()}

    t0 = time.perf_counter()
    tokenized = ds.map(tokenize_function, batched=True, remove_columns=["text"], keep_in_memory=True)
    grouped = tokenized.map(group_texts, batched=True, keep_in_memory=True)
    elapsed = time.perf_counter() - t0
    stream = sum(len(x) for x in tokenized["input_ids"])
    return elapsed, stream, len(grouped), stream - len(grouped) * L


def run_ours(ds, tok, L):
    """taco.data.packing: encode_batch_fast + BlockPacker (carry across batches) -> Arrow column."""
    import numpy as np
    from datasets import Dataset, Features, List, Value
    from datasets.table import InMemoryTable
    import pyarrow as pa

    from taco.data.packing import CHUNK_DOCUMENTS, BlockPacker, _blocks_table, _encoder, encode

    t0 = time.perf_counter()
    backend = _encoder(tok)
    packer = BlockPacker(L, tok.cls_token_id, tok.sep_token_id, tok.sep_token_id)
    tables = []
    for start in range(0, len(ds), CHUNK_DOCUMENTS):
        blocks = packer.add(encode(backend, ds[start:start + CHUNK_DOCUMENTS]["text"]))
        if len(blocks):
            tables.append(_blocks_table(blocks))
    out = Dataset(InMemoryTable(pa.concat_tables(tables)),
                  info=None).cast(Features({"input_ids": List(Value("int32"))}))
    elapsed = time.perf_counter() - t0
    assert np.asarray(out[0]["input_ids"]).shape == (L,)
    return elapsed, packer.stream_tokens, len(out), len(packer.carry)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--text", choices=("wikitext", "synthetic"), default="wikitext")
    p.add_argument("--num-documents", type=int, default=8000, help="synthetic text size")
    p.add_argument("--max-seq-length", type=int, default=256)
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args(argv)
    from datasets.utils.logging import disable_progress_bar

    disable_progress_bar()
    from taco.data.tokenizer import tokenizer_from_vocab

    vocab = SHARED / "bert" / "vocab.txt"
    if not vocab.is_file():
        print(f"bench_packing: {vocab} not found (set TACO_SHARED_DATA)", file=sys.stderr)
        return 2
    if args.text == "wikitext" and not (SHARED / "corpus" / "wikitext-2").is_dir():
        print("bench_packing: wikitext-2 not found; use --text synthetic", file=sys.stderr)
        return 2
    tok = tokenizer_from_vocab(vocab)
    ds, label = load_text(args.text, args.num_documents)
    L = args.max_seq_length
    base_t, ours_t = [], []
    for _ in range(args.repeats):
        tb, base_stream, base_blocks, base_drop = run_group_texts(ds, tok, L)
        to, our_stream, our_blocks, our_drop = run_ours(ds, tok, L)
        base_t.append(tb)
        ours_t.append(to)
    tb, to = statistics.median(base_t), statistics.median(ours_t)
    cpu = platform.processor() or platform.machine()
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    print(f"bench_packing {time.strftime('%Y-%m-%d')} | CPU {cpu}, {os.cpu_count()} cores | "
          f"text: {label}, {len(ds)} docs | max_seq_length {L} | median of {args.repeats}")
    print(f"  run_mlm map(tokenize)+map(group_texts): {base_stream / tb:,.0f} tokens/s "
          f"({tb:.2f} s, {base_stream:,} tokens, {base_blocks} blocks, {base_drop:,} tokens dropped)")
    print(f"  taco.data.packing:                      {our_stream / to:,.0f} tokens/s "
          f"({to:.2f} s, {our_stream:,} tokens, {our_blocks} blocks, {our_drop:,} tokens dropped)")
    print(f"  ratio (ours / group_texts, tokens/s): {(our_stream / to) / (base_stream / tb):.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
