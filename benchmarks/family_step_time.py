"""Wall-clock cost of TACO over MLM per encoder family on this machine: one optimizer step of a tiny BERT,
RoBERTa and ModernBERT (BERT-tiny's shape: 2 layers, H 128, 2 heads, FFN 512), MLM alone against MLM + the
TC loss through the plug-in (``taco.tc.plugin.tc_term``), measured side by side in one process.

    python benchmarks/family_step_time.py [--steps 30] [--batch 8] [--seq-len 128] [--threads 1]

A measured step: forward (with hidden states for TACO), the loss, backward and an AdamW step on a
fixed masked batch (``DataCollatorForLanguageModeling`` masking, 15%). Order: 3 warm-up steps each,
then steps alternate between the two arms of one family (MLM, TACO, TACO, MLM, ...), so outside load
hits both alike. Reported per family: the median step time of each arm and their ratio taco/mlm (the
suite's own BERT objective has ``benchmarks/step_time.py``). A ratio, not a time target: the absolute
times depend on the machine.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
from tc_trainer import toy_corpus, wordpiece_tokenizer  # noqa: E402
from transformers import (AutoModelForMaskedLM, BertConfig, DataCollatorForLanguageModeling,  # noqa: E402
                          ModernBertConfig, RobertaConfig)

from taco.tc.plugin import tc_term  # noqa: E402

SHAPE = dict(hidden_size=128, num_hidden_layers=2, num_attention_heads=2, intermediate_size=512)


def model_of(family: str, tok, seq_len: int):
    ids = dict(pad_token_id=tok.pad_token_id, bos_token_id=tok.cls_token_id, eos_token_id=tok.sep_token_id)
    if family == "bert":
        cfg = BertConfig(vocab_size=len(tok), **SHAPE, pad_token_id=tok.pad_token_id, max_position_embeddings=seq_len)
    elif family == "roberta":
        cfg = RobertaConfig(vocab_size=len(tok), **SHAPE, **ids, max_position_embeddings=seq_len + 2)
    else:
        cfg = ModernBertConfig(vocab_size=len(tok), **SHAPE, **ids, cls_token_id=tok.cls_token_id,
                               sep_token_id=tok.sep_token_id, max_position_embeddings=seq_len,
                               layer_types=["full_attention", "sliding_attention"], local_attention=64)
    torch.manual_seed(0)
    return AutoModelForMaskedLM.from_config(cfg, attn_implementation="sdpa").train()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seq-len", type=int, default=128)
    p.add_argument("--threads", type=int, default=1)
    a = p.parse_args(argv)
    torch.set_num_threads(a.threads)
    texts = toy_corpus(2000)
    tok = wordpiece_tokenizer(texts)
    long = [" ".join(texts[i:i + 12]) for i in range(0, 12 * a.batch, 12)]
    enc = [tok(t, truncation=True, max_length=a.seq_len, padding="max_length") for t in long]
    batch = DataCollatorForLanguageModeling(tok, mlm_probability=0.15)(enc)
    print(f"{a.batch} x {a.seq_len} tokens, {a.threads} thread(s), torch {torch.__version__}")
    for family in ("bert", "roberta", "modernbert"):
        arms = {}
        for arm in ("mlm", "taco"):
            model = model_of(family, tok, a.seq_len)
            arms[arm] = (model, torch.optim.AdamW(model.parameters(), lr=1e-4), [])
        g = torch.Generator().manual_seed(0)

        def step(arm: str) -> float:
            model, opt, _ = arms[arm]
            t0 = time.perf_counter()
            out = model(**batch, output_hidden_states=arm == "taco")
            loss = out.loss + (tc_term(out, batch["attention_mask"], generator=g) if arm == "taco" else 0.0)
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            return time.perf_counter() - t0

        for _ in range(3):
            step("mlm"), step("taco")
        order = ("mlm", "taco")
        for i in range(a.steps):
            for arm in (order if i % 2 == 0 else order[::-1]):
                arms[arm][2].append(step(arm))
        med = {arm: statistics.median(arms[arm][2]) for arm in arms}
        print(f"{family:10s} mlm {med['mlm'] * 1e3:7.1f} ms  taco {med['taco'] * 1e3:7.1f} ms  "
              f"taco/mlm {med['taco'] / med['mlm']:.3f}  ({a.steps} steps each)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
