"""Step time and peak memory of the pre-training objectives, and of the TC loss against the
official code's materialized-negatives approach. A measurement, not a test.

    python benchmarks/bench_objectives.py                        # CPU: tiny, batch 32, length 128, K 50
    python benchmarks/bench_objectives.py --size small --batch 128 --length 256 --dtype bf16  # GPU

Step = forward + backward + AdamW step + zero_grad on a synthetic masked batch. The objectives are
run round-robin (one step of each per round) so that load from other processes hits all of them
alike; the median over rounds is reported. Peak memory is the extra memory above what is live
before the measured call: ``torch.cuda.max_memory_allocated`` on CUDA; on CPU the allocations and
frees recorded by ``torch.profiler`` (``profile_memory=True``) replayed in time order.

Prints one line per figure and ends with ``taco/mlm step time ratio: X`` and
``tc peak memory / materialized: Y``.
"""

from __future__ import annotations

import argparse
import functools
import platform
import statistics
import sys
import time
from collections.abc import Callable

import torch
import torch.nn.functional as F

from taco.tc.loss import tc_loss
from taco.model.modeling import PreTrainingModel
from taco.model.configs import SIZES, bert_config
from taco.model.masking import mask_tokens
from taco.registry import OBJECTIVES
from taco.tc.sampling import sample_negative_index, sample_positive_index


def tc_loss_materialized(hidden, embeddings, positive_index, negative_index, anchor_mask, temperature):
    """The official code's approach: gather a (B, L, K, H) negatives tensor (kept by autograd)."""
    B, L, H = hidden.shape
    with torch.autocast(device_type=hidden.device.type, enabled=False):
        z = F.normalize(hidden.float() - embeddings.float(), dim=-1)  # (B, L, H)
        keys = z.detach()
        pos = keys.gather(1, positive_index.clamp_min(0).unsqueeze(-1).expand(B, L, H))  # (B, L, H)
        neg = keys.reshape(B * L, H)[negative_index]  # (B, L, K, H) materialized
        logits = torch.cat(
            [(z * pos).sum(-1, keepdim=True), torch.einsum("blh,blkh->blk", z, neg)], dim=-1
        ) / temperature  # (B, L, 1+K)
        valid = anchor_mask.bool() & (positive_index >= 0)
        return (torch.logsumexp(logits, -1) - logits[..., 0])[valid].mean()


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def peak_extra_bytes(fn: Callable[[], object], device: torch.device) -> int:
    """Peak memory allocated by ``fn()`` above what was live when it started, in bytes."""
    if device.type == "cuda":
        _sync(device)
        base = torch.cuda.memory_allocated(device)
        torch.cuda.reset_peak_memory_stats(device)
        fn()
        _sync(device)
        return torch.cuda.max_memory_allocated(device) - base
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        fn()
    events = [e for e in prof.events() if e.self_cpu_memory_usage != 0]
    events.sort(key=lambda e: (e.time_range.start, e.self_cpu_memory_usage < 0))
    current = peak = 0
    for e in events:
        current += e.self_cpu_memory_usage
        peak = max(peak, current)
    return peak


def cpu_model_name() -> str:
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def make_batch(args, device: torch.device, vocab: int, generator: torch.Generator):
    B, L = args.batch, args.length
    ids = torch.randint(5, vocab, (B, L), generator=generator)
    ids[:, 0], ids[:, -1] = 2, 3  # [CLS] ... [SEP] packed blocks, no padding (as in pre-training)
    special = torch.zeros(B, L, dtype=torch.bool)
    special[:, 0] = special[:, -1] = True
    attn = torch.ones(B, L, dtype=torch.long)
    corrupted, labels = mask_tokens(ids, special, attn, 4, vocab, 0.15, generator=generator)
    batch = dict(input_ids=corrupted, attention_mask=attn, labels=labels, original_input_ids=ids)
    return {k: v.to(device) for k, v in batch.items()}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--size", default="tiny", choices=SIZES)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--length", type=int, default=128)
    p.add_argument("--negatives", type=int, default=50, help="K")
    p.add_argument("--vocab", type=int, default=30522)
    p.add_argument("--objectives", default="mlm,taco,mlm_tp,taco_concentrated")
    p.add_argument("--rounds", type=int, default=12, help="measured steps per objective")
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--dtype", default="fp32", choices=["fp32", "bf16", "fp16"])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=0, help="torch.set_num_threads (0: leave torch's default)")
    args = p.parse_args(argv)
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    objectives = [o.strip() for o in args.objectives.split(",") if o.strip()]
    for o in objectives:
        if o not in OBJECTIVES:
            p.error(f"unknown objective {o!r}; valid: {', '.join(OBJECTIVES)}")
    if "mlm" not in objectives or "taco" not in objectives:
        p.error("--objectives must include mlm and taco (for the final ratio)")
    device = torch.device(args.device)
    amp_dtype = {"fp32": None, "bf16": torch.bfloat16, "fp16": torch.float16}[args.dtype]

    def autocast():
        return torch.autocast(device.type, dtype=amp_dtype, enabled=amp_dtype is not None)

    hw = torch.cuda.get_device_name(device) if device.type == "cuda" else cpu_model_name()
    print(f"device: {device.type} ({hw}), torch {torch.__version__}, threads {torch.get_num_threads()}")
    print(
        f"setting: size={args.size} batch={args.batch} length={args.length} K={args.negatives} "
        f"vocab={args.vocab} dtype={args.dtype} rounds={args.rounds}"
    )

    gen = torch.Generator().manual_seed(args.seed)
    batch = make_batch(args, device, args.vocab, gen)
    config = bert_config(args.size, args.vocab)
    runs = {}
    for name in objectives:
        torch.manual_seed(args.seed)
        model = PreTrainingModel(config, name, tc_num_negatives=args.negatives).to(device).train()
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01)
        scaler = torch.amp.GradScaler(device.type, enabled=args.dtype == "fp16")

        def step(model=model, opt=opt, scaler=scaler):
            with autocast():
                out = model(**batch)
            scaler.scale(out.loss).backward()
            scaler.step(opt)
            scaler.update()
            opt.zero_grad(set_to_none=True)
            return out

        runs[name] = step

    for _ in range(args.warmup):
        for step in runs.values():
            step()
    times: dict[str, list[float]] = {n: [] for n in runs}
    cpu_times: dict[str, list[float]] = {n: [] for n in runs}
    for _ in range(args.rounds):
        for name, step in runs.items():
            _sync(device)
            t0, c0 = time.perf_counter(), time.process_time()
            step()
            _sync(device)
            times[name].append(time.perf_counter() - t0)
            cpu_times[name].append(time.process_time() - c0)
    med = {n: statistics.median(t) for n, t in times.items()}
    cpu_med = {n: statistics.median(t) for n, t in cpu_times.items()}
    for name in runs:
        print(
            f"step time {name}: {med[name] * 1e3:.1f} ms wall (median of {args.rounds}, "
            f"min {min(times[name]) * 1e3:.1f}), process CPU time {cpu_med[name] * 1e3:.1f} ms"
        )
    for name, step in runs.items():
        print(f"step peak memory {name}: {peak_extra_bytes(step, device) / 2**20:.1f} MiB")

    # ---- TC loss alone: chunked (taco.tc.loss) vs materialized negatives ----
    H = config.hidden_size
    B, L, K = args.batch, args.length, args.negatives
    g = torch.Generator().manual_seed(args.seed + 1)
    in_dtype = amp_dtype or torch.float32
    hidden = torch.randn(B, L, H, generator=g).to(device, in_dtype).requires_grad_()
    emb = torch.randn(B, L, H, generator=g).to(device, in_dtype).requires_grad_()
    attn = torch.ones(B, L, dtype=torch.long, device=device)
    dg = torch.Generator(device=device).manual_seed(args.seed)
    pos = sample_positive_index(attn, 5, dg)
    neg = sample_negative_index(attn, K, dg)
    anchors = attn.bool()

    def run_tc(fn):
        def call():
            hidden.grad = emb.grad = None
            with autocast():
                loss = fn(hidden, emb, pos, neg, anchors, 0.07)
            loss.backward()
            return loss

        return call

    chunked, materialized = run_tc(tc_loss), run_tc(tc_loss_materialized)
    a, b = chunked(), materialized()
    print(f"tc loss taco.tc.loss vs materialized |diff|: {abs(a.item() - b.item()):.2e}")
    tc_times = {"taco.tc.loss": [], "materialized": []}
    for _ in range(max(3, args.rounds // 2)):
        for name, fn in (("taco.tc.loss", chunked), ("materialized", materialized)):
            _sync(device)
            t0 = time.perf_counter()
            fn()
            _sync(device)
            tc_times[name].append(time.perf_counter() - t0)
    for name, t in tc_times.items():
        print(f"tc fwd+bwd time {name}: {statistics.median(t) * 1e3:.1f} ms")
    hidden.grad = emb.grad = None
    mem_chunked = peak_extra_bytes(chunked, device)
    if device.type == "cpu":  # also the chunked-gather path that CUDA uses
        hidden.grad = emb.grad = None
        mem_gather = peak_extra_bytes(run_tc(functools.partial(tc_loss, method="chunked")), device)
        print(f"tc peak memory taco.tc.loss (chunked-gather path): {mem_gather / 2**20:.1f} MiB")
    hidden.grad = emb.grad = None
    mem_mat = peak_extra_bytes(materialized, device)
    print(f"tc peak memory taco.tc.loss: {mem_chunked / 2**20:.1f} MiB")
    print(f"tc peak memory materialized: {mem_mat / 2**20:.1f} MiB")
    print(f"taco/mlm process CPU time ratio: {cpu_med['taco'] / cpu_med['mlm']:.3f}")
    print(f"taco/mlm step time ratio: {med['taco'] / med['mlm']:.3f}")
    print(f"tc peak memory / materialized: {mem_chunked / mem_mat:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
