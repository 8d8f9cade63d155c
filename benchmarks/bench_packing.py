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
        from taco.data.local_text import read_local_documents

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

    from taco.data.blocks import CHUNK_ROWS, BlockPacker, _encoder, encode
    from taco.data.packing import _blocks_table

    t0 = time.perf_counter()
    backend = _encoder(tok)
    packer = BlockPacker(L, tok.cls_token_id, tok.sep_token_id, tok.sep_token_id)
    tables = []
    for start in range(0, len(ds), CHUNK_ROWS):
        blocks = packer.add(encode(backend, ds[start:start + CHUNK_ROWS]["text"]))
        if len(blocks):
            tables.append(_blocks_table(blocks))
    out = Dataset(InMemoryTable(pa.concat_tables(tables)),
                  info=None).cast(Features({"input_ids": List(Value("int32"))}))
    elapsed = time.perf_counter() - t0
    assert np.asarray(out[0]["input_ids"]).shape == (L,)
    return elapsed, packer.stream_tokens, len(out), len(packer.carry)


# ------------------------------------------------------------------------------------ scaling

BASELINE_SCRIPT = r'''
import json, sys, time
from itertools import chain
from datasets.utils.logging import disable_progress_bar
disable_progress_bar()
from taco.data.corpus import load_documents
from taco.data.tokenizer import load_tokenizer
corpus, tok_dir, L, nproc, cache = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
t0 = time.perf_counter()
tok = load_tokenizer(tok_dir)
ds = load_documents(corpus)
def tokenize_function(examples):
    return tok(examples["text"], return_special_tokens_mask=True)
def group_texts(examples):
    concatenated = {k: list(chain(*examples[k])) for k in examples.keys()}
    total = len(concatenated[list(examples.keys())[0]])
    total = (total // L) * L
    return {k: [t[i: i + L] for i in range(0, total, L)] for k, t in concatenated.items()}
tokenized = ds.map(tokenize_function, batched=True, num_proc=nproc, remove_columns=["text"],
                   cache_file_name=cache + "/tokenized.arrow")
grouped = tokenized.map(group_texts, batched=True, num_proc=nproc, cache_file_name=cache + "/grouped.arrow")
elapsed = time.perf_counter() - t0
stream = sum(len(x) for x in tokenized.data.column("input_ids").to_pylist()) if len(tokenized) < 2_000_000 else None
print(json.dumps({"seconds": elapsed, "stream_tokens": stream, "blocks": len(grouped)}))
'''


def source_documents() -> list[str]:
    """Real English documents to repeat: WikiText-2 valid+test (detokenized) and the Gutenberg
    selection (blank-line blocks), interleaved."""
    from taco.data.local_text import read_local_documents

    wiki = read_local_documents([SHARED / "corpus" / "wikitext-2" / f for f in ("valid.txt", "test.txt")],
                                split_by="blank_line", detokenize=True, unk_policy="drop")
    # two of the books hold Latin-1 bytes (SOURCES.md): read them as configs/cpu-real.yaml does
    books = read_local_documents(sorted((SHARED / "corpus" / "gutenberg").glob("*.txt")), split_by="blank_line",
                                 encoding="utf-8-or-latin-1")
    return wiki + books


def write_text_corpus(folder: Path, gigabytes: float, file_mb: int = 32) -> tuple[int, int]:
    """Text files of ``file_mb`` MB (blank-line separated documents) totalling ``gigabytes`` GB,
    the source documents repeated in a seeded shuffled order. Returns (bytes, documents)."""
    import random

    docs = source_documents()
    rng = random.Random(0)
    folder.mkdir(parents=True, exist_ok=True)
    target, written, n_docs, part = int(gigabytes * 1e9), 0, 0, 0
    while written < target:
        order = list(range(len(docs)))
        rng.shuffle(order)
        with open(folder / f"part-{part:05d}.txt", "w", encoding="utf-8") as fh:
            size = 0
            for i in order:
                data = docs[i] + "\n\n"
                fh.write(data)
                size += len(data.encode("utf-8"))
                n_docs += 1
                if size >= file_mb * 1e6 or written + size >= target:
                    break
        written += size
        part += 1
    return written, n_docs


def run_measured(cmd: list[str], env: dict | None = None) -> dict:
    """Run ``cmd``; wall seconds, peak RSS of its whole process tree (sampled every 0.05 s with
    psutil, workers included) and of its largest single process (``getrusage`` RUSAGE_CHILDREN)."""
    import resource
    import subprocess

    import psutil

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    ps = psutil.Process(proc.pid)
    peak = peak_anon = 0
    while proc.poll() is None:
        try:
            procs = [ps, *ps.children(recursive=True)]
            total = anon = 0
            for p in procs:
                try:
                    m = p.memory_info()
                    total += m.rss
                    anon += m.rss - m.shared  # RssAnon: without file-backed pages (the mapped corpus)
                except psutil.Error:
                    pass
            peak, peak_anon = max(peak, total), max(peak_anon, anon)
        except psutil.Error:
            pass
        time.sleep(0.05)
    out, err = proc.communicate()
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{err[-3000:]}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    largest = after.ru_maxrss * 1024
    # CPU seconds of the whole tree (workers are reaped by their parent, so they count): does not
    # depend on how busy the machine is, unlike the wall time
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return {"seconds": wall, "cpu_seconds": cpu, "tree_peak_rss": peak, "tree_peak_anon": peak_anon,
            "largest_process_rss": largest,
            "stdout": out, "stderr": err}


def scaling(args) -> int:
    """Whole-step throughput with 1 and 2 workers, peak memory at two corpus sizes, the run_mlm
    baseline with num_proc=2, and the projected wall time of the paper's corpus on 16 cores."""
    import json
    import shutil

    from taco.data.disk import PAPER_WORDS, TOKENS_PER_WORD, data_disk_plan, format_plan
    from taco.data.tokenizer import build_tokenizer

    work = Path(args.work_dir)
    work.mkdir(parents=True, exist_ok=True)
    py = [sys.executable, "-m", "taco"]
    env = {**os.environ, "TACO_PROGRESS_SECONDS": "60", "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1"}
    tok = build_tokenizer("vocab", work / "tokenizer", vocab_file=SHARED / "bert" / "vocab.txt")
    L = args.max_seq_length
    rows, results = [], {}
    for gb in args.sizes_gb:
        text = work / f"text-{gb:g}gb"
        if not text.is_dir():
            write_text_corpus(text, gb)
        corpus = work / f"corpus-{gb:g}gb"
        shutil.rmtree(corpus, ignore_errors=True)
        c = run_measured(py + ["corpus", "--source", "local", "--paths", str(text), "--split-by", "blank_line",
                               "--workers", str(max(args.workers)), "--output", str(corpus)], env)
        cm = json.loads((corpus / "manifest.json").read_text())
        rows.append(f"  corpus {gb:g} GB ({cm['counts']['characters'] / 1e9:.2f} G characters, "
                    f"{cm['counts']['documents']:,} documents), {max(args.workers)} workers: {c['seconds']:.1f} s, "
                    f"{c['cpu_seconds']:.1f} CPU s ({cm['counts']['characters'] / c['cpu_seconds'] / 1e6:,.1f} M characters "
                    f"per CPU s), peak RSS tree {c['tree_peak_rss'] / 2**20:,.0f} MiB (anonymous {c['tree_peak_anon'] / 2**20:,.0f} MiB)")
        results[("corpus", gb)] = {**c, "characters": cm["counts"]["characters"]}
        runs = {}
        worker_list = args.workers if gb == args.sizes_gb[0] else [max(args.workers)]
        for rep in range(args.repeats if gb == args.sizes_gb[0] else 1):
            for w in worker_list:
                out = work / f"packed-{gb:g}gb-w{w}"
                shutil.rmtree(out, ignore_errors=True)
                r = run_measured(py + ["pack", "--corpus", str(corpus), "--tokenizer", str(tok), "--output", str(out),
                                       "--max-seq-length", str(L), "--validation-blocks", "64",
                                       "--workers", str(w)], env)
                m = json.loads((out / "manifest.json").read_text())
                r["stream_tokens"] = m["counts"]["stream_tokens"]["train"] + m["counts"]["stream_tokens"]["validation"]
                r["step_seconds"] = m["wall_time_s"]  # pack_documents, start to manifest (no interpreter start)
                runs.setdefault(w, []).append(r)
        digests = {w: (work / f"packed-{gb:g}gb-w{w}" / "train" / "data-00000-of-00001.arrow").read_bytes().__hash__()
                   for w in worker_list}
        for w, rs in runs.items():
            r = sorted(rs, key=lambda x: x["step_seconds"])[len(rs) // 2]
            results[(gb, w)] = r
            rows.append(f"  pack {gb:g} GB, {w} worker{'s' if w > 1 else ''}: {r['stream_tokens'] / r['step_seconds']:,.0f} tokens/s "
                        f"({r['step_seconds']:.1f} s in the step, {r['seconds']:.1f} s with interpreter start; "
                        f"{r['stream_tokens']:,} tokens; {r['cpu_seconds']:.1f} CPU s, "
                        f"{r['stream_tokens'] / r['cpu_seconds']:,.0f} tokens per CPU s), peak RSS tree "
                        f"{r['tree_peak_rss'] / 2**20:,.0f} MiB (anonymous {r['tree_peak_anon'] / 2**20:,.0f} MiB)")
        if len(set(digests.values())) > 1:
            rows.append("  WARNING: packed train blocks differ between worker counts")
        elif len(digests) > 1:
            rows.append(f"  packed train blocks identical for workers {sorted(digests)}")
        if gb == args.sizes_gb[0] and args.baseline:
            cache = work / "baseline-cache"
            shutil.rmtree(cache, ignore_errors=True)
            cache.mkdir()
            b = run_measured([sys.executable, "-c", BASELINE_SCRIPT, str(corpus), str(tok), str(L), "2", str(cache)], env)
            info = json.loads(b["stdout"].strip().splitlines()[-1])
            results["baseline"] = {**b, **info, "step_seconds": info["seconds"]}
            stream = info["stream_tokens"] or results[(gb, max(args.workers))]["stream_tokens"]
            rows.append(f"  run_mlm map(tokenize)+map(group_texts), num_proc=2, {gb:g} GB: "
                        f"{stream / info['seconds']:,.0f} tokens/s ({info['seconds']:.1f} s in the step, "
                        f"{b['seconds']:.1f} s with interpreter start; {stream:,} tokens; {b['cpu_seconds']:.1f} CPU s, "
                        f"{stream / b['cpu_seconds']:,.0f} tokens per CPU s), "
                        f"peak RSS tree {b['tree_peak_rss'] / 2**20:,.0f} MiB (anonymous {b['tree_peak_anon'] / 2**20:,.0f} MiB)")
            shutil.rmtree(cache, ignore_errors=True)
    g0 = args.sizes_gb[0]
    rate = {w: results[(g0, w)]["stream_tokens"] / results[(g0, w)]["step_seconds"] for w in args.workers}
    lo, hi = min(args.workers), max(args.workers)
    load = os.getloadavg()
    print(f"bench_packing scaling {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} | {cpu_name()}, "
          f"{os.cpu_count()} cores | load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f} | text: WikiText-2 + "
          f"Gutenberg documents repeated | max_seq_length {L} | median of {args.repeats} (first size)")
    print("\n".join(rows))
    if hi != lo:
        print(f"  ratio ({hi} workers / {lo} worker, tokens/s): {rate[hi] / rate[lo]:.2f}x")
    if "baseline" in results:
        b = results["baseline"]
        stream = b["stream_tokens"] or results[(g0, hi)]["stream_tokens"]
        print(f"  ratio (ours {hi} workers / run_mlm num_proc=2, tokens/s): {rate[hi] / (stream / b['step_seconds']):.2f}x")
    if len(args.sizes_gb) > 1:
        g1 = args.sizes_gb[-1]
        for key, what in (("tree_peak_rss", "RSS"), ("tree_peak_anon", "anonymous RSS")):
            a, z = results[(g0, hi)][key], results[(g1, hi)][key]
            print(f"  peak {what} of the process tree, pack {hi} workers: {a / 2**20:,.0f} MiB at {g0:g} GB, "
                  f"{z / 2**20:,.0f} MiB at {g1:g} GB (ratio {z / a:.2f} for {g1 / g0:.0f}x the corpus)")
            a, z = results[("corpus", g0)][key], results[("corpus", g1)][key]
            print(f"  peak {what} of the process tree, corpus {max(args.workers)} workers: {a / 2**20:,.0f} MiB at "
                  f"{g0:g} GB, {z / 2**20:,.0f} MiB at {g1:g} GB (ratio {z / a:.2f})")
    paper_tokens = PAPER_WORDS * TOKENS_PER_WORD
    big = results[(args.sizes_gb[-1], hi)]
    per_cpu = big["stream_tokens"] / big["cpu_seconds"]  # whole step, all processes, largest size
    for cores in (16,):
        # every core busy: 16 workers at the measured tokens per CPU second of the whole step (main
        # process included); assumes idle cores as fast as these. Wall-time scaling here is lower
        # when the shared machine is loaded.
        seconds = paper_tokens / (per_cpu * cores)
        print(f"  projected pack of the paper's corpus ({PAPER_WORDS / 1e9:.1f}B words, {paper_tokens / 1e9:.2f}B tokens) "
              f"on a {cores}-core node ({per_cpu:,.0f} tokens per CPU s x {cores}): "
              f"{seconds / 60:,.0f} min per data fraction")
    cb = results[("corpus", args.sizes_gb[-1])]
    chars = paper_tokens * 4.6  # taco.data.disk.TEXT_BYTES_PER_TOKEN
    print(f"  projected local-text corpus step for the paper's corpus ({chars / 1e9:.0f} G characters) on 16 cores: "
          f"{chars / (cb['characters'] / cb['cpu_seconds']) / 16 / 60:,.1f} min (a Hub source: load_dataset, not measured)")
    print("  disk at the paper's scale (taco.data.disk.data_disk_plan()):")
    print("\n".join("    " + ln for ln in format_plan(data_disk_plan()).splitlines()))
    return 0


def cpu_name() -> str:
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return "CPU " + line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "CPU " + (platform.processor() or platform.machine())


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--text", choices=("wikitext", "synthetic"), default="wikitext")
    p.add_argument("--num-documents", type=int, default=8000, help="synthetic text size")
    p.add_argument("--max-seq-length", type=int, default=256)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--scaling", action="store_true",
                   help="whole-step scaling: workers, memory at --sizes-gb, run_mlm num_proc=2, projection")
    p.add_argument("--sizes-gb", type=float, nargs="+", default=[0.2, 2.0], help="scaling: generated text sizes")
    p.add_argument("--workers", type=int, nargs="+", default=[1, 2], help="scaling: worker counts compared")
    p.add_argument("--no-baseline", dest="baseline", action="store_false", help="scaling: skip run_mlm")
    p.add_argument("--work-dir", default="/tmp/taco-bench-packing", help="scaling: generated files")
    args = p.parse_args(argv)
    if args.scaling:
        if not (SHARED / "bert" / "vocab.txt").is_file() or not (SHARED / "corpus" / "gutenberg").is_dir():
            print(f"bench_packing: {SHARED} lacks bert/vocab.txt or corpus/ (set TACO_SHARED_DATA)", file=sys.stderr)
            return 2
        return scaling(args)
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
