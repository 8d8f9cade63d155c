"""Pre-training step throughput: torch.compile against eager, SDPA attention against eager attention.

Three setups of the same ``taco.model.modeling.PreTrainingModel`` (same weights, same batch), per
objective, in one run:

- ``eager-sdpa``: eager PyTorch, ``attn_implementation="sdpa"`` (the model's default: fused
  ``scaled_dot_product_attention``);
- ``eager-eager``: eager PyTorch, ``attn_implementation="eager"`` (matmul + softmax + matmul);
- ``compile-sdpa``: ``torch.compile(model)`` (inductor, default mode) with SDPA attention.

One measured step = forward + backward + AdamW step on a fixed synthetic batch (MLM-masked, as the
trainer feeds it). The setups run alternately (A B C A B C ...) after warm-up, so a busy shared
machine slows them alike; the median step time of each is reported, tokens/s = batch x seq_len /
median, and two ratios (tokens/s): SDPA / eager attention, and compile / eager (both with SDPA).
The first compiled step (compilation) is timed separately and not in the median.

    python benchmarks/bench_compile_attn.py [--size tiny] [--batch 8] [--seq-len 128] [--steps 10]
                                            [--precision fp32|bf16] [--objectives mlm,taco]

``taco pretrain --torch-compile`` / ``--attn-implementation`` (where they exist) use the Trainer's
``torch_compile`` and the model config; this script compiles the model directly, the same graph.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

SETUPS = ("eager-sdpa", "eager-eager", "compile-sdpa")


def _sync(dev) -> None:
    import torch

    if dev.type == "cuda":
        torch.cuda.synchronize(dev)


def synthetic_batch(batch: int, seq_len: int, vocab: int, device: Any) -> dict[str, Any]:
    """A fixed pre-training batch (generator seed 0): ``[CLS] random ids [SEP]`` rows of shape
    (batch, seq_len), corrupted by BERT's 80/10/10 rule at 0.15 (``taco.model.masking.mask_tokens``),
    as ``input_ids``, ``attention_mask``, ``labels``, ``original_input_ids`` on ``device``. Shared by the
    benchmarks that time model steps (here and ``device_check``)."""
    import torch

    from taco.model.masking import mask_tokens

    g = torch.Generator().manual_seed(0)
    ids = torch.randint(5, vocab, (batch, seq_len), generator=g)
    ids[:, 0], ids[:, -1] = 2, 3
    special = torch.zeros(batch, seq_len, dtype=torch.bool)
    special[:, 0] = special[:, -1] = True
    attn = torch.ones(batch, seq_len, dtype=torch.long)
    corrupted, labels = mask_tokens(ids, special, attn, 4, vocab, 0.15, generator=g)
    return {k: v.to(device) for k, v in dict(input_ids=corrupted, attention_mask=attn, labels=labels,
                                             original_input_ids=ids).items()}


def measure(device: str, size: str, batch: int, seq_len: int, precision: str, objectives: tuple[str, ...],
            steps: int, warmup: int, vocab: int = 30522, negatives: int = 50, setups: tuple[str, ...] = SETUPS, compile_backend: str = "inductor",
            on_row: Callable[[str, dict], None] | None = None, deadline: float | None = None) -> dict[str, Any]:
    """Measure every setup per objective; returns ``{objective: {setup: {...}, "ratios": {...}}}``.

    ``on_row(objective, row)`` is called after each objective (partial results survive a time limit);
    an objective not started before ``deadline`` (time.time()) is skipped.
    """
    import torch

    from taco.model.modeling import PreTrainingModel
    from taco.model.configs import bert_config

    dev = torch.device(device)
    amp = torch.bfloat16 if precision == "bf16" else None
    data = synthetic_batch(batch, seq_len, vocab, dev)
    out: dict[str, Any] = {}
    for objective in objectives:
        if deadline is not None and time.time() > deadline:
            out[objective] = {"skipped": "no time left"}
            if on_row:
                on_row(objective, out[objective])
            continue
        kw = {"tc_num_negatives": negatives} if objective != "mlm" else {}
        runners, state = {}, None
        for setup in setups:
            mode, impl = setup.split("-")
            torch.manual_seed(0)
            model = PreTrainingModel(bert_config(size, vocab, attn_implementation=impl), objective, **kw)
            if state is None:
                state = model.state_dict()
            else:
                model.load_state_dict(state)
            model = model.to(dev).train()
            opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01)
            fn = torch.compile(model, backend=compile_backend) if mode == "compile" else model

            def step(fn=fn, opt=opt, model=model):
                with torch.autocast(dev.type, dtype=amp or torch.float32, enabled=amp is not None):
                    loss = fn(**data).loss
                loss.backward()
                opt.step()
                opt.zero_grad(set_to_none=True)

            runners[setup] = step
        row: dict[str, Any] = {}
        for setup, step in list(runners.items()):  # warm-up; the first compiled step is the compilation
            _sync(dev)
            t0 = time.perf_counter()
            try:
                step()
                _sync(dev)
                row[setup] = {"first_step_s": round(time.perf_counter() - t0, 2)}
                for _ in range(max(0, warmup - 1)):
                    step()
            except Exception as exc:  # noqa: BLE001 - e.g. torch.compile failing on a path: recorded, others go on
                msg = f"{type(exc).__name__}: {exc}".strip().splitlines()
                row[setup] = {"error": (msg[0] if msg else type(exc).__name__)[:500],
                              "first_step_s": round(time.perf_counter() - t0, 2)}
                del runners[setup]
        times: dict[str, list[float]] = {s: [] for s in runners}
        for _ in range(steps):
            for setup, step in runners.items():
                _sync(dev)
                t0 = time.perf_counter()
                step()
                _sync(dev)
                times[setup].append(time.perf_counter() - t0)
        for setup, ts in times.items():
            med = statistics.median(ts)
            row[setup].update(step_ms=round(med * 1e3, 2), tokens_per_s=round(batch * seq_len / med, 1))
        tps = {s: row[s]["tokens_per_s"] for s in runners}
        row["ratios"] = {}
        if "eager-sdpa" in tps and "eager-eager" in tps:
            row["ratios"]["sdpa_over_eager_attention"] = round(tps["eager-sdpa"] / tps["eager-eager"], 3)
        if "eager-sdpa" in tps and "compile-sdpa" in tps:
            row["ratios"]["compile_over_eager"] = round(tps["compile-sdpa"] / tps["eager-sdpa"], 3)
        out[objective] = row
        if on_row:
            on_row(objective, row)
        del runners
        if dev.type == "cuda":
            torch.cuda.empty_cache()
    return out


def report_lines(result: dict[str, Any]) -> list[str]:
    lines = []
    for objective, row in result.items():
        if "skipped" in row:
            lines.append(f"  {objective}: skipped ({row['skipped']})")
            continue
        for setup in SETUPS:
            if setup in row and "error" in row[setup]:
                lines.append(f"  {objective} {setup:12s}: failed after {row[setup]['first_step_s']} s: {row[setup]['error'][:200]}")
            elif setup in row:
                r = row[setup]
                lines.append(f"  {objective} {setup:12s}: {r['step_ms']:9.2f} ms/step, {r['tokens_per_s']:>12,.1f} "
                             f"tokens/s (first step {r['first_step_s']} s)")
        ra = row.get("ratios", {})
        if "sdpa_over_eager_attention" in ra:
            lines.append(f"  ratio {objective} (SDPA / eager attention, tokens/s): {ra['sdpa_over_eager_attention']:.3f}x")
        if "compile_over_eager" in ra:
            lines.append(f"  ratio {objective} (torch.compile / eager, SDPA, tokens/s): {ra['compile_over_eager']:.3f}x")
    return lines


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default=None, help="cpu or cuda (default: cuda when visible)")
    p.add_argument("--size", default="tiny", choices=("tiny", "small", "base"))
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seq-len", type=int, default=128)
    p.add_argument("--precision", default="fp32", choices=("fp32", "bf16"))
    p.add_argument("--objectives", default="mlm,taco")
    p.add_argument("--setups", default=",".join(SETUPS))
    p.add_argument("--steps", type=int, default=10, help="measured steps per setup")
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--vocab", type=int, default=30522)
    p.add_argument("--negatives", type=int, default=50)
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    p.add_argument("--compile-backend", default="inductor",
                   help="torch.compile backend (inductor; aot_eager only exercises the path, no speed-up)")
    a = p.parse_args(argv)
    import torch

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from bench_pretrain import cpu_name

    if a.threads:
        torch.set_num_threads(a.threads)
    device = a.device or ("cuda" if torch.cuda.is_available() else "cpu")
    setups = tuple(s for s in a.setups.split(",") if s)
    hw = torch.cuda.get_device_name(0) if device == "cuda" else f"CPU {cpu_name()}, {os.cpu_count()} cores, {torch.get_num_threads()} threads"
    load = " ".join(f"{x:.1f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "-"
    print(f"bench_compile_attn {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC | {hw} | load average {load} | "
          f"torch {torch.__version__} | size {a.size}, batch {a.batch} x {a.seq_len}, {a.precision}, vocab {a.vocab} | "
          f"compile backend {a.compile_backend} | median of {a.steps} (alternating)", flush=True)
    res = measure(device, a.size, a.batch, a.seq_len, a.precision, tuple(a.objectives.split(",")), a.steps, a.warmup,
                  vocab=a.vocab, negatives=a.negatives, setups=setups, compile_backend=a.compile_backend,
                  on_row=lambda obj, row: print("\n".join(report_lines({obj: row})), flush=True))
    return 0 if res else 1


if __name__ == "__main__":
    sys.exit(main())
