"""Pre-training step throughput: ours against the official code's setup, same shape, same run.

- official: ``BertForMaskedLM`` + ``DataCollatorForLanguageModeling`` (mlm_probability 0.15): the
  vocabulary projection runs at every position (dense), as run_mlm.py in the TACO repo does;
- ours: ``taco.model.modeling.PreTrainingModel`` (objective ``mlm`` by default) + ``taco.model.collator.PreTrainingCollator``:
  the projection runs only at the selected positions (sparse prediction).

One measured step = collate one batch + forward + backward + AdamW step (what a training step of
either code does). The two setups are run alternately (A B A B ...) after warm-up, so a noisy
shared machine affects both alike; the median step time of each is reported, tokens/s =
batch x seq_len / median step time, and the ratio ours / official.

    python benchmarks/bench_pretrain.py [--size small] [--batch 8] [--seq-len 128] [--steps 10]
                                        [--precision auto|fp32|bf16|fp16] [--objective mlm]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from datetime import date
from pathlib import Path

import torch

VOCAB_TXT = Path(os.environ.get("TACO_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data")) / "bert" / "vocab.txt"


def tokenizer():
    from transformers import BertTokenizerFast

    if VOCAB_TXT.is_file():
        vocab = {}
        for i, line in enumerate(VOCAB_TXT.read_text(encoding="utf-8").splitlines()):
            vocab.setdefault(line, i)
        tok = BertTokenizerFast(vocab=vocab, do_lower_case=True)
        assert tok("the cat")["input_ids"] == [101, 1996, 4937, 102]
        return tok, "bert-base-uncased vocab.txt"
    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(30522 - 5)]
    return BertTokenizerFast(vocab={w: i for i, w in enumerate(words)}), "synthetic 30522-word vocab"


def cpu_name() -> str:
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--size", default="small", choices=("tiny", "small", "base"))
    p.add_argument("--batch", type=int, default=None, help="default 8 on CPU, 128 on GPU")
    p.add_argument("--seq-len", type=int, default=None, help="default 128 on CPU, 256 on GPU")
    p.add_argument("--steps", type=int, default=10, help="measured steps per setup")
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--precision", default="auto", choices=("auto", "fp32", "bf16", "fp16"))
    p.add_argument("--objective", default="mlm", help="objective of ours (mlm compares like with like)")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's choice)")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)

    from transformers import BertForMaskedLM, DataCollatorForLanguageModeling

    from taco.model.collator import PreTrainingCollator
    from taco.model.modeling import PreTrainingModel
    from taco.model.configs import bert_config

    if a.threads:
        torch.set_num_threads(a.threads)
    cuda = torch.cuda.is_available()
    dev = torch.device("cuda" if cuda else "cpu")
    batch = a.batch or (128 if cuda else 8)
    seq_len = a.seq_len or (256 if cuda else 128)
    precision = a.precision
    if precision == "auto":
        precision = ("bf16" if torch.cuda.is_bf16_supported() else "fp16") if cuda else "fp32"
    amp_dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(precision)

    tok, vocab_name = tokenizer()
    torch.manual_seed(a.seed)
    config = bert_config(a.size, len(tok))
    official = BertForMaskedLM(config).to(dev)
    ours = PreTrainingModel(config, objective=a.objective).to(dev)
    ours.load_state_dict(official.state_dict(), strict=True)  # same weights
    setups = {
        "official": (official, DataCollatorForLanguageModeling(tok, mlm_probability=0.15)),
        "ours": (ours, PreTrainingCollator(tok, mlm_probability=0.15)),
    }
    opts = {k: torch.optim.AdamW(m.parameters(), lr=1e-4, weight_decay=0.01) for k, (m, _) in setups.items()}
    scalers = {k: torch.amp.GradScaler("cuda", enabled=precision == "fp16") for k in setups}
    g = torch.Generator().manual_seed(a.seed)
    n_batches = 4
    data = []
    for _ in range(n_batches):
        ids = torch.randint(1000, len(tok), (batch, seq_len), generator=g)
        ids[:, 0], ids[:, -1] = tok.cls_token_id, tok.sep_token_id
        data.append([{"input_ids": row.tolist()} for row in ids])

    def step(name: str, i: int) -> float:
        model, collate = setups[name]
        if cuda:
            torch.cuda.synchronize()
        t = time.perf_counter()
        b = collate(data[i % n_batches])
        b = {k: v.to(dev, non_blocking=True) for k, v in b.items()
             if k in ("input_ids", "attention_mask", "labels", "original_input_ids")}
        with torch.autocast(dev.type, dtype=amp_dtype, enabled=amp_dtype is not None):
            loss = model(**b).loss
        scalers[name].scale(loss).backward()
        scalers[name].unscale_(opts[name])
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scalers[name].step(opts[name])
        scalers[name].update()
        opts[name].zero_grad(set_to_none=True)
        if cuda:
            torch.cuda.synchronize()
        return time.perf_counter() - t

    official.train(), ours.train()
    for i in range(a.warmup):
        step("official", i), step("ours", i)
    times = {"official": [], "ours": []}
    for i in range(a.steps):
        order = ("official", "ours") if i % 2 == 0 else ("ours", "official")
        for name in order:
            times[name].append(step(name, i))
    med = {k: statistics.median(v) for k, v in times.items()}
    tps = {k: batch * seq_len / med[k] for k in med}
    device = (f"GPU {torch.cuda.get_device_name(0)}" if cuda
              else f"CPU {cpu_name()}, {os.cpu_count()} cores, torch threads {torch.get_num_threads()}")
    print(f"bench_pretrain {date.today().isoformat()} | {device} | torch {torch.__version__} | size {a.size}, "
          f"batch {batch} x {seq_len}, {precision}, vocab {len(tok)} ({vocab_name}) | median of {a.steps} steps "
          f"(collate + fwd + bwd + AdamW), alternating")
    print(f"  official BertForMaskedLM + DataCollatorForLanguageModeling (dense): {tps['official']:,.0f} tokens/s "
          f"({med['official'] * 1000:.1f} ms/step)")
    print(f"  ours PreTrainingModel[{a.objective}] + PreTrainingCollator (sparse):     {tps['ours']:,.0f} tokens/s "
          f"({med['ours'] * 1000:.1f} ms/step)")
    print(f"  ratio (ours / official, tokens/s): {tps['ours'] / tps['official']:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
