"""One-command device check: the GPU paths of the suite, measured and compared, in a few minutes.

    bash benchmarks/device_check.sh                 # on a GPU machine: <= 5 minutes on one H200
    bash benchmarks/device_check.sh --device cpu    # toy sizes on CPU (CI: tests/test_device_check.py)

Parts (each runs in its own process under its own time limit; a part that fails or runs out of
time is recorded as such and the summary is rewritten after every part, so a partial result is
always on disk):

- ``env``: date, host, GPU, driver, Python, torch, CUDA, transformers, datasets versions;
- ``tc``: ``taco.tc.loss.tc_loss`` on the device against the CPU result (value and both input
  gradients) at B=32, L=256, K=50, H=512, in fp32 and with bf16 inputs under bf16 autocast, and its
  extra peak memory (``torch.cuda.max_memory_allocated``) beside the materialized-negatives loss;
- ``objectives``: ``benchmarks/bench_objectives.py`` at small, batch 128, length 256, bf16:
  taco/mlm step time (target <= 1.05) and peak memory per objective;
- ``pretrain_bench``: ``benchmarks/bench_pretrain.py``: ours against the official-style step,
  tokens/s (target >= 1.3x);
- ``mfu``: pre-training step of small and base in bf16 (mlm and taco), tokens/s and model FLOPs
  utilisation from ``taco.flops`` (6N + attention term; peak 989 TFLOP/s bf16 dense);
  target >= 40 % for base;
- ``resume``: synthetic corpus -> tokenizer -> blocks, then ``python -m torch.distributed.run
  --standalone --nproc_per_node 1 -m taco pretrain``: uninterrupted, and interrupted (SIGTERM,
  then SIGKILL of the whole process group) and resumed; the weights are compared (CPU: equal
  within 1e-6; GPU: see ``resume_verdict``);
- ``finetune``: ``taco finetune`` of the resumed run's checkpoint on the synthetic SST-2 (the
  synthetic GLUE source needs no network), with wall time.

Writes ``device_check.json`` and ``device_check.md`` to ``--out`` (default: ``$OUT`` if set, else
``benchmarks/results/``). ``env``, ``tc``, ``objectives``, ``pretrain_bench`` and ``mfu`` never
import ``datasets``; ``resume`` and ``finetune`` need it (the data stage and the Trainer read Arrow
blocks through it): on a machine without it, carry its wheels (``benchmarks/device_wheels.sh``)
or those two parts are recorded as skipped with the reason.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BENCH = REPO / "benchmarks"
SCHEMA = "taco-device-check/1"
PARTS = ("env", "tc", "objectives", "pretrain_bench", "mfu", "compile_attn", "resume", "finetune", "repro")
#: the check (``--part check``): resume and finetune are left out of it to fit its ~3-minute box (the
#: reproduction runs ``taco pretrain`` segments resumed from budgets and ``taco finetune`` on the
#: device); ``--parts resume,finetune`` still runs them
CHECK_PARTS = ("env", "tc", "objectives", "pretrain_bench", "mfu", "compile_attn")
#: ``--part`` -> groups of parts; each group has its own time budget (GROUP_BUDGETS)
PART_GROUPS = {"check": ("check",), "repro": ("repro",), "both": ("check", "repro")}

#: seconds each part may take (GPU mode); each group is also bounded by its budget
TIME_BOXES = {"env": 15, "tc": 25, "objectives": 30, "pretrain_bench": 20, "mfu": 30, "compile_attn": 60,
              "resume": 120, "finetune": 45, "repro": 185}
#: CPU toy mode: generous boxes on a loaded 2-core machine; the toy sizes take far less
CPU_TIME_BOXES = {"env": 60, "tc": 90, "objectives": 120, "pretrain_bench": 120, "mfu": 90, "compile_attn": 240,
                  "resume": 400, "finetune": 150, "repro": 420}
#: each group's budget, seconds (GPU: about 3 minutes each, 6 together; CPU toy mode: generous)
GROUP_BUDGETS = {"cuda": {"check": 185.0, "repro": 185.0}, "cpu": {"check": 700.0, "repro": 420.0}}

#: sizes per mode (GPU sizes are the paper's small and base shapes; CPU sizes are toys that finish in seconds)
SETTINGS = {
    "cuda": {
        "tc": dict(B=32, L=256, K=50, H=512),
        # the paper's per-device batch, 256 x 256, bf16 autocast
        "objectives": ["--size", "small", "--batch", "256", "--length", "256", "--dtype", "bf16",
                       "--rounds", "10", "--warmup", "2"],
        "pretrain_bench": ["--size", "small", "--batch", "256", "--seq-len", "256", "--precision", "bf16",
                           "--steps", "6", "--warmup", "2"],
        "mfu": dict(presets=("small", "base"), objectives=("mlm", "taco"), batch=256, seq_len=256,
                    dtype="bf16", warmup=2, steps=6),
        "compile_attn": dict(size="small", batch=256, seq_len=256, precision="bf16", objectives=("mlm", "taco"),
                             steps=5, warmup=2, vocab=30522, negatives=50, backend="inductor"),
        "resume": dict(size="small", docs=3000, vocab=4000, seq_len=128, batch=32, max_steps=30,
                       save_every=10, sleep=0.25, negatives=50, lr="5e-4", warmup=4, extra=[]),
        "finetune": ["--max-length", "128", "--batch-size", "32", "--epochs", "2", "--device", "cuda"],
    },
    "cpu": {
        "tc": dict(B=4, L=32, K=8, H=64),
        "objectives": ["--size", "tiny", "--batch", "4", "--length", "32", "--negatives", "8", "--vocab", "1000",
                       "--dtype", "fp32", "--rounds", "2", "--warmup", "1", "--objectives", "mlm,taco"],
        "pretrain_bench": ["--size", "tiny", "--batch", "2", "--seq-len", "32", "--precision", "fp32",
                           "--steps", "2", "--warmup", "1"],
        "mfu": dict(presets=("tiny",), objectives=("mlm", "taco"), batch=4, seq_len=32, dtype="fp32",
                    warmup=1, steps=2),
        # aot_eager: exercises torch.compile's path without inductor's C++ build (minutes on 2 cores)
        "compile_attn": dict(size="tiny", batch=4, seq_len=32, precision="fp32", objectives=("mlm",),
                             steps=2, warmup=1, vocab=1000, negatives=8, backend="aot_eager"),
        "resume": dict(size="tiny", docs=300, vocab=400, seq_len=64, batch=4, max_steps=8, save_every=2,
                       sleep=0.4, negatives=8, lr="1e-3", warmup=2, extra=["--device", "cpu"]),
        "finetune": ["--max-length", "64", "--batch-size", "16", "--epochs", "1", "--device", "cpu",
                     "--max-train-samples", "64", "--max-eval-samples", "32"],
    },
}

#: tolerances of the TC comparison (device against CPU): loss relative difference; gradient max
#: absolute difference relative to the largest CPU gradient entry. fp32: reduction order only;
#: bf16: the gradients are bf16 tensors (8-bit mantissa), two units in the last place at the
#: largest entry.
TC_TOLERANCE = {"fp32": {"loss_rel": 1e-5, "grad_rel": 1e-4}, "bf16": {"loss_rel": 1e-5, "grad_rel": 2.0**-6}}
#: resume on CPU (fp32, deterministic kernels): largest weight difference allowed
RESUME_CPU_TOLERANCE = 1e-6
#: the speed and memory targets (GPU only)
TARGETS = {"objectives": ("taco/mlm step time ratio", "<=", 1.05),
           "pretrain_bench": ("ours/official tokens/s", ">=", 1.3),
           "mfu": ("MFU base (mlm, bf16)", ">=", 0.40)}


# ================================================================================================
# helpers shared by the parts (run in the child process)
# ================================================================================================
class PartResult:
    """A part's result dict, rewritten to its JSON file after every ``set`` (partial results survive)."""

    def __init__(self, path: Path):
        self.path = path
        self.data: dict = {}

    def set(self, key: str, value) -> None:
        self.data[key] = value
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.data, indent=2, default=str))
        os.replace(tmp, self.path)


def _sync(device) -> None:
    import torch

    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _run(cmd: list[str], timeout: float, env: dict | None = None, cwd: Path | None = None) -> tuple[int, str]:
    """Run ``cmd``; returns (exit status, combined output). Kills its process group on timeout."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                            cwd=str(cwd or REPO), start_new_session=True)
    _RUNNING.append(proc)
    try:
        out, _ = proc.communicate(timeout=max(1.0, timeout))
    except subprocess.TimeoutExpired:
        _killpg(proc, signal.SIGKILL)
        out, _ = proc.communicate()
        raise TimeoutError(f"{' '.join(cmd[:6])} ... ran past {timeout:.0f} s; output tail:\n{out[-2000:]}")
    finally:
        _RUNNING.remove(proc)
    return proc.returncode, out


#: child process groups started by _run (killed with the check on its hard timeout)
_RUNNING: list[subprocess.Popen] = []


def _descendants(pid: int) -> list[int]:
    """Every descendant process id of ``pid`` (Linux /proc). torch.distributed.run starts its workers
    in sessions of their own, so a process-group signal to the launcher does not reach them."""
    children: dict[int, list[int]] = {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(d.name))
    out, todo = [], [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def _killpg(proc: subprocess.Popen, sig: int) -> None:
    """Signal ``proc``'s process group and every descendant (as SLURM signals a whole job step)."""
    pids = _descendants(proc.pid) if os.path.isdir("/proc") else []
    try:
        os.killpg(proc.pid, sig)
    except ProcessLookupError:
        pass
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


def _child_env(mode: str) -> dict:
    env = dict(os.environ, PYTHONUNBUFFERED="1", HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1",
               TOKENIZERS_PARALLELISM="false")
    env["PYTHONPATH"] = os.pathsep.join([str(REPO)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    if mode == "cpu":
        env["CUDA_VISIBLE_DEVICES"] = ""
    return env


def _floats(pattern: str, text: str) -> dict[str, float]:
    return {m.group(1): float(m.group(2).replace(",", "")) for m in re.finditer(pattern, text)}


def _one(pattern: str, text: str) -> float | None:
    m = re.search(pattern, text)
    return float(m.group(1).replace(",", "")) if m else None


# ================================================================================================
# parts
# ================================================================================================
def part_env(mode: str, res: PartResult, deadline: float, work: Path) -> None:
    """Versions and hardware. No ``datasets`` import (its presence is probed with importlib)."""
    import importlib.metadata as md

    import torch

    res.set("date_utc", datetime.now(timezone.utc).isoformat(timespec="seconds"))
    res.set("host", socket.gethostname())
    res.set("python", platform.python_version())
    res.set("torch", torch.__version__)
    res.set("torch_cuda", torch.version.cuda)
    for pkg in ("transformers", "datasets", "pyarrow", "tokenizers", "safetensors", "numpy"):
        try:
            res.set(pkg, md.version(pkg))
        except md.PackageNotFoundError:
            res.set(pkg, None)
    res.set("datasets_importable", datasets_importable())
    res.set("cpu", _cpu_name())
    res.set("cpu_count", os.cpu_count())
    res.set("torch_threads", torch.get_num_threads())
    if mode == "cuda":
        p = torch.cuda.get_device_properties(0)
        res.set("gpu", torch.cuda.get_device_name(0))
        res.set("gpu_memory_gib", round(p.total_memory / 2**30, 1))
        res.set("gpu_capability", f"{p.major}.{p.minor}")
        res.set("gpu_count", torch.cuda.device_count())
        res.set("bf16_supported", torch.cuda.is_bf16_supported())
        res.set("cudnn", torch.backends.cudnn.version())
        res.set("driver", _driver_version())
    try:
        rc, out = _run(["git", "rev-parse", "HEAD"], 10)
        res.set("git_commit", out.strip() if rc == 0 else None)
    except (OSError, TimeoutError):
        res.set("git_commit", None)


def datasets_importable() -> bool:
    """Whether ``import datasets`` can work here, without importing it (find_spec only)."""
    import importlib.util

    try:
        return importlib.util.find_spec("datasets") is not None
    except (ImportError, ValueError):
        return False


def _need_datasets() -> None:
    if not datasets_importable():
        raise ModuleNotFoundError("datasets is not importable here (the data stage, `taco pretrain` and "
                                  "`taco finetune` read Arrow data through it): carry its wheels, see "
                                  "benchmarks/device_wheels.sh")


def _cpu_name() -> str:
    """The CPU's model name (one definition: ``bench_pretrain.cpu_name``)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_pretrain import cpu_name

    return cpu_name()


def _driver_version() -> str | None:
    try:
        rc, out = _run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"], 20)
        if rc == 0 and out.strip():
            return out.strip().splitlines()[0]
    except (OSError, TimeoutError):
        pass
    try:
        import pynvml

        pynvml.nvmlInit()
        v = pynvml.nvmlSystemGetDriverVersion()
        return v.decode() if isinstance(v, bytes) else v
    except Exception:  # noqa: BLE001 - a missing NVML only loses one field
        return None


def part_tc(mode: str, res: PartResult, deadline: float, work: Path) -> None:
    """TC loss on the device against the CPU (value and gradients), fp32 and bf16 autocast; memory."""
    import torch

    sys.path.insert(0, str(BENCH))
    from bench_objectives import peak_extra_bytes, tc_loss_materialized

    from taco.tc.loss import tc_loss
    from taco.tc.sampling import sample_negative_index, sample_positive_index

    s = SETTINGS[mode]["tc"]
    B, L, K, H = s["B"], s["L"], s["K"], s["H"]
    res.set("shape", s)
    device = torch.device(mode)
    # on CPU the device side runs the chunked-gather path that CUDA uses, the reference the CPU default
    method = "auto" if mode == "cuda" else "chunked"
    res.set("device_method", "auto (chunked gather on CUDA)" if mode == "cuda" else "chunked (the CUDA path), on CPU")
    g = torch.Generator().manual_seed(0)
    hidden = torch.randn(B, L, H, generator=g)
    emb = 0.5 * torch.randn(B, L, H, generator=g)
    attn = torch.ones(B, L, dtype=torch.long)
    attn[0, L - L // 4:] = 0  # one padded row: padding must be ignored alike
    pos = sample_positive_index(attn, 5, g)
    neg = sample_negative_index(attn, K, g)
    anchors = attn.bool()

    def run(dev, dtype, meth):
        h = hidden.to(dev, dtype).detach().clone().requires_grad_()  # fresh leaves, no shared .grad
        e = emb.to(dev, dtype).detach().clone().requires_grad_()
        with torch.autocast(dev.type, dtype=torch.bfloat16, enabled=dtype == torch.bfloat16):
            loss = tc_loss(h, e, pos.to(dev), neg.to(dev), anchors.to(dev), 0.07, method=meth)
        loss.backward()
        return loss.detach().float().cpu(), h.grad.float().cpu(), e.grad.float().cpu()

    for name, dtype in (("fp32", torch.float32), ("bf16", torch.bfloat16)):
        ref = run(torch.device("cpu"), dtype, "auto")
        got = run(device, dtype, method)
        tol = TC_TOLERANCE[name]
        loss_rel = abs(got[0].item() - ref[0].item()) / max(abs(ref[0].item()), 1e-12)
        grad_rel = max((gd - rd).abs().max().item() / max(rd.abs().max().item(), 1e-30)
                       for gd, rd in zip(got[1:], ref[1:]))
        res.set(name, {"loss_cpu": ref[0].item(), "loss_device": got[0].item(), "loss_rel_diff": loss_rel,
                       "grad_max_rel_diff": grad_rel, "tolerance": tol,
                       "equal": loss_rel <= tol["loss_rel"] and grad_rel <= tol["grad_rel"]})

    def mem_of(fn_loss, dtype):
        h = hidden.to(device, dtype).detach().clone().requires_grad_()
        e = emb.to(device, dtype).detach().clone().requires_grad_()
        p, n, a = pos.to(device), neg.to(device), anchors.to(device)

        def call():
            h.grad = e.grad = None
            with torch.autocast(device.type, dtype=torch.bfloat16, enabled=dtype == torch.bfloat16):
                loss = fn_loss(h, e, p, n, a, 0.07)
            loss.backward()

        call()  # warm-up (allocator, kernels)
        h.grad = e.grad = None
        return peak_extra_bytes(call, device) / 2**20

    mem = {}
    for name, dtype in (("fp32", torch.float32), ("bf16", torch.bfloat16)):
        mem[f"tc_loss_{name}_mib"] = round(mem_of(tc_loss, dtype), 2)
        res.set("peak_extra_memory", mem)
    mem["materialized_fp32_mib"] = round(mem_of(tc_loss_materialized, torch.float32), 2)
    mem["ratio_fp32"] = round(mem["tc_loss_fp32_mib"] / mem["materialized_fp32_mib"], 4)
    mem["how"] = ("torch.cuda.max_memory_allocated above the memory live before forward+backward, "
                  "including the two (B, L, H) input gradients" if mode == "cuda" else
                  "torch.profiler allocations replayed (CPU)")
    res.set("peak_extra_memory", mem)


def _bench_in_process(module: str, argv: list[str]) -> tuple[int, str]:
    """Run ``benchmarks/<module>.py``'s ``main(argv)`` in this process (one interpreter start fewer);
    returns (exit status, printed output). The part's own time limit still bounds it."""
    import contextlib
    import importlib
    import io

    sys.path.insert(0, str(BENCH))
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = importlib.import_module(module).main(argv)
    out = buf.getvalue()
    print(out, flush=True)
    return int(rc or 0), out


def part_objectives(mode: str, res: PartResult, deadline: float, work: Path) -> None:
    """``bench_objectives.py`` with the issue's GPU setting; parsed figures."""
    argv = ["--device", mode, *SETTINGS[mode]["objectives"]]
    res.set("command", "python benchmarks/bench_objectives.py " + " ".join(argv))
    rc, out = _bench_in_process("bench_objectives", argv)
    res.set("output", out[-4000:])
    if rc != 0:
        raise RuntimeError(f"bench_objectives exited {rc}")
    res.set("step_time_ms", _floats(r"step time (\S+): ([\d.]+) ms wall", out))
    res.set("step_peak_memory_mib", _floats(r"step peak memory (\S+): ([\d.]+) MiB", out))
    res.set("taco_mlm_step_time_ratio", _one(r"taco/mlm step time ratio: ([\d.]+)", out))
    res.set("tc_memory_ratio", _one(r"tc peak memory / materialized: ([\d.]+)", out))


def part_pretrain_bench(mode: str, res: PartResult, deadline: float, work: Path) -> None:
    """``bench_pretrain.py``: ours against the official-style step."""
    argv = list(SETTINGS[mode]["pretrain_bench"])
    if mode == "cpu":
        argv += ["--threads", str(min(2, os.cpu_count() or 1))]
    res.set("command", "python benchmarks/bench_pretrain.py " + " ".join(argv))
    rc, out = _bench_in_process("bench_pretrain", argv)
    res.set("output", out[-3000:])
    if rc != 0:
        raise RuntimeError(f"bench_pretrain exited {rc}")
    res.set("official_tokens_per_s", _one(r"official .*?:\s+([\d,]+) tokens/s", out))
    res.set("ours_tokens_per_s", _one(r"ours .*?:\s+([\d,]+) tokens/s", out))
    res.set("ratio", _one(r"ratio \(ours / official, tokens/s\): ([\d.]+)x", out))


def part_mfu(mode: str, res: PartResult, deadline: float, work: Path, peak_tflops: float | None = None) -> None:
    """Pre-training step throughput and MFU per preset and objective (synthetic batch on the device)."""
    import torch

    from taco.model.modeling import PreTrainingModel
    from taco.model.configs import bert_config
    from taco.flops import BERT_VOCAB_SIZE, H200_BF16_DENSE_TFLOPS, mfu, pretrain_flops_per_token

    s = SETTINGS[mode]["mfu"]
    device = torch.device(mode)
    if peak_tflops is None and mode == "cuda":
        peak_tflops = H200_BF16_DENSE_TFLOPS
    res.set("peak_tflops", peak_tflops)
    res.set("formula", "taco.flops.pretrain_flops_per_token: 6*N_layers + 6*p_pred*(H^2+H*V) "
                       "+ 12*n_layers*H*L [+ 4*(K+1)*H for TC]; p_pred=0.15")
    res.set("setting", {k: v for k, v in s.items() if k not in ("presets", "objectives")})
    B, L = s["batch"], s["seq_len"]
    V = BERT_VOCAB_SIZE
    amp = torch.bfloat16 if s["dtype"] == "bf16" else None
    from bench_compile_attn import synthetic_batch

    batch = synthetic_batch(B, L, V, device)
    rows = {}
    for preset in s["presets"]:
        for objective in s["objectives"]:
            if time.time() > deadline - 10:
                rows[f"{preset}/{objective}"] = {"status": "skipped: no time left"}
                res.set("runs", rows)
                continue
            torch.manual_seed(0)
            model = PreTrainingModel(bert_config(preset, V), objective).to(device).train()
            opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01)

            def step():
                with torch.autocast(device.type, dtype=amp or torch.float32, enabled=amp is not None):
                    loss = model(**batch).loss
                loss.backward()
                opt.step()
                opt.zero_grad(set_to_none=True)

            for _ in range(s["warmup"]):
                step()
            times = []
            for _ in range(s["steps"]):
                _sync(device)
                t0 = time.perf_counter()
                step()
                _sync(device)
                times.append(time.perf_counter() - t0)
            med = statistics.median(times)
            tps = B * L / med
            fpt = pretrain_flops_per_token(preset, L, objective, vocab_size=V)
            row = {"step_ms": round(med * 1e3, 2), "tokens_per_s": round(tps, 1),
                   "flops_per_token": fpt, "achieved_tflops": round(tps * fpt / 1e12, 3),
                   "mfu": round(mfu(tps, fpt, peak_tflops), 4) if peak_tflops else None}
            if device.type == "cuda":
                row["peak_memory_gib"] = round(torch.cuda.max_memory_allocated(device) / 2**30, 2)
                torch.cuda.reset_peak_memory_stats(device)
            rows[f"{preset}/{objective}"] = row
            res.set("runs", rows)
            del model, opt
            if device.type == "cuda":
                torch.cuda.empty_cache()


def part_compile_attn(mode: str, res: PartResult, deadline: float, work: Path) -> None:
    """torch.compile against eager and SDPA against eager attention (``bench_compile_attn.measure``)."""
    sys.path.insert(0, str(BENCH))
    from bench_compile_attn import measure, report_lines

    s = SETTINGS[mode]["compile_attn"]
    res.set("setting", s)
    rows: dict = {}

    def on_row(objective, row):
        rows[objective] = row
        res.set("runs", rows)
        print("\n".join(report_lines({objective: row})), flush=True)

    measure(mode, s["size"], s["batch"], s["seq_len"], s["precision"], tuple(s["objectives"]), s["steps"],
            s["warmup"], vocab=s["vocab"], negatives=s["negatives"], compile_backend=s["backend"], on_row=on_row,
            deadline=deadline - 20)
    res.set("ratios", {obj: row.get("ratios") for obj, row in rows.items()})


def part_repro(mode: str, res: PartResult, deadline: float, work: Path, carry: str | None = None,
               rates: dict | None = None) -> None:
    """BERT-small MLM vs TACO on the carried corpus, curves, GLUE with 3 seeds (``device_repro``)."""
    _need_datasets()
    sys.path.insert(0, str(BENCH))
    from device_repro import CARRY, run_repro

    out = work / "repro"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    run_repro(mode, res, deadline, out, carry=Path(carry) if carry else CARRY, measured_tokens_per_s=rates)


def _wait_state(state: Path, at_least: int, proc: subprocess.Popen, deadline: float) -> int:
    while time.time() < deadline:
        steps = [int(p.parent.name.split("-")[1]) for p in state.glob("checkpoint-*/taco_state.json")]
        if steps and max(steps) >= at_least:
            return max(steps)
        if proc.poll() is not None:
            raise RuntimeError(f"the run ended (rc {proc.returncode}) before a state at step >= {at_least}")
        time.sleep(0.1)
    _killpg(proc, signal.SIGKILL)
    raise TimeoutError(f"no state at step >= {at_least} before the part's deadline")


def _weights(ckpt: Path) -> dict:
    from safetensors.torch import load_file

    return load_file(str(ckpt / "model.safetensors"))


def weight_diff(a: Path, b: Path) -> dict[str, float]:
    """Largest absolute weight difference, and largest per-tensor max|a-b| / max|a|."""
    wa, wb = _weights(a), _weights(b)
    if wa.keys() != wb.keys():
        raise RuntimeError(f"{a} and {b} hold different tensors")
    absd = max((wa[k].float() - wb[k].float()).abs().max().item() for k in wa)
    reld = max((wa[k].float() - wb[k].float()).abs().max().item() / max(wa[k].float().abs().max().item(), 1e-30)
               for k in wa)
    return {"max_abs": absd, "max_rel": reld}


def part_resume(mode: str, res: PartResult, deadline: float, work: Path) -> None:
    """Blocks from the synthetic language, then torch.distributed.run pre-training killed and resumed."""
    _need_datasets()
    from taco.cli import main as taco

    s = SETTINGS[mode]["resume"]
    res.set("setting", s)
    data = work / "data"
    t0 = time.time()
    if not (data / "blocks" / "manifest.json").is_file():
        shutil.rmtree(data, ignore_errors=True)
        for argv in (["corpus", "--source", "synthetic", "--num-documents", str(s["docs"]), "--seed", "0",
                      "--output", str(data / "corpus")],
                     ["tokenizer", "--kind", "train", "--corpus", str(data / "corpus"), "--vocab-size",
                      str(s["vocab"]), "--output", str(data / "tokenizer")],
                     ["pack", "--corpus", str(data / "corpus"), "--tokenizer", str(data / "tokenizer"),
                      "--max-seq-length", str(s["seq_len"]), "--validation-blocks", "8", "--output",
                      str(data / "blocks")]):
            if taco(argv) != 0:
                raise RuntimeError(f"taco {argv[0]} failed")
    res.set("data_prep_s", round(time.time() - t0, 1))
    S = s["max_steps"]
    launcher = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "1",
                "-m", "taco", "pretrain"]

    def args(name, sleep=0.0):
        out = work / name
        a = ["--blocks", str(data / "blocks"), "--objective", "taco", "--size", s["size"], "--max-steps", str(S),
             "--warmup-steps", str(s["warmup"]), "--until", str(S), "--output", str(out / f"step-{S}"),
             "--state-dir", str(out / "state"), "--per-device-batch-size", str(s["batch"]),
             "--save-every", str(s["save_every"]), "--logging-steps", str(s["save_every"]), "--seed", "7",
             "--lr", s["lr"], "--tc-negatives", str(s["negatives"]), "--no-progress", *s["extra"]]
        if sleep:
            a += ["--debug-step-sleep", str(sleep)]
        return out, a

    env = _child_env(mode)
    res.set("command", " ".join(["python"] + launcher[1:] + args("full")[1]))

    def full_run(name):
        out, a = args(name)
        shutil.rmtree(out, ignore_errors=True)
        t = time.time()
        rc, log = _run(launcher + a, deadline - time.time() - 2, env=env)
        if rc != 0:
            raise RuntimeError(f"uninterrupted run {name} exited {rc}:\n{log[-3000:]}")
        return out / f"step-{S}", round(time.time() - t, 1)

    full, wall = full_run("full")
    res.set("uninterrupted_wall_s", wall)

    out, a = args("resumed", s["sleep"])
    shutil.rmtree(out, ignore_errors=True)
    state = out / "state"
    events = []
    with open(work / "resumed-1.log", "w") as log:  # 1: SIGTERM to the process group (SLURM's time limit)
        p = subprocess.Popen(launcher + a, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=str(REPO),
                             start_new_session=True)
        _wait_state(state, s["save_every"], p, deadline)
        _killpg(p, signal.SIGTERM)
        rc1 = p.wait(timeout=max(5, deadline - time.time()))
    from taco.training.pretrain_state import valid_states

    saved = [st for st, _ in valid_states(state, json.loads((full / "manifest.json").read_text())["config_hash"])]
    events.append({"signal": "SIGTERM", "exit": rc1, "newest_state": max(saved) if saved else None})
    if not saved or max(saved) >= S:
        raise RuntimeError(f"SIGTERM run left no intermediate state below {S} (states {saved}); "
                           f"log tail: {(work / 'resumed-1.log').read_text()[-2000:]}")
    with open(work / "resumed-2.log", "w") as log:  # 2: SIGKILL of the group: no chance to save
        p = subprocess.Popen(launcher + a, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=str(REPO),
                             start_new_session=True)
        got = _wait_state(state, max(saved) + 1, p, deadline)
        _killpg(p, signal.SIGKILL)
        p.wait(timeout=30)
    time.sleep(1.0)
    if (out / f"step-{S}").exists():
        raise RuntimeError(f"the SIGKILL at state {got} did not stop the run: it wrote {out / f'step-{S}'}")
    events.append({"signal": "SIGKILL", "newest_state": got})
    res.set("interruptions", events)
    rc, log3 = _run(launcher + args("resumed")[1], deadline - time.time() - 2, env=env)
    if rc != 0:
        raise RuntimeError(f"final resumed run exited {rc}:\n{log3[-3000:]}")
    from taco.training.runlog import read_log

    kinds = [r.get("event") for r in read_log(state / "logs")]
    res.set("log_events", {k: kinds.count(k) for k in ("resume_state", "interrupted")})
    if kinds.count("resume_state") != 2:
        raise RuntimeError(f"expected two resumes from a saved state in the run log, found {kinds.count('resume_state')}")
    diff = weight_diff(full, out / f"step-{S}")
    res.set("resumed_vs_uninterrupted", diff)
    if mode == "cpu":
        res.set("resume_verdict", {"equal": diff["max_abs"] <= RESUME_CPU_TOLERANCE,
                                   "rule": f"max |w_resumed - w_uninterrupted| <= {RESUME_CPU_TOLERANCE} (fp32, CPU)"})
        return
    # GPU, bf16: atomics in embedding/gather backward are not deterministic, so two uninterrupted
    # runs differ too; resume passes when it adds no more than that floor (x2) does
    rule = "max_abs(resumed vs uninterrupted) <= 2 * max_abs(uninterrupted vs uninterrupted) + 1e-6"
    if time.time() > deadline - wall - 5:
        res.set("resume_verdict", {"equal": None, "rule": rule, "note": "no time left for the floor run"})
        return
    full2, _ = full_run("full2")
    floor = weight_diff(full, full2)
    res.set("uninterrupted_vs_uninterrupted", floor)
    res.set("resume_verdict", {"equal": diff["max_abs"] <= 2 * floor["max_abs"] + 1e-6, "rule": rule})


def part_finetune(mode: str, res: PartResult, deadline: float, work: Path) -> None:
    """``taco finetune`` of the resume part's checkpoint on synthetic SST-2, with wall time."""
    _need_datasets()
    ckpts = sorted((work / "full").glob("step-*"))
    if not ckpts:
        raise FileNotFoundError(f"no checkpoint under {work / 'full'} (the resume part did not finish)")
    out = work / "finetune"
    shutil.rmtree(out, ignore_errors=True)
    cmd = [sys.executable, "-m", "taco", "finetune", "--checkpoint", str(ckpts[-1]), "--task", "sst2",
           "--seed", "1", "--glue-source", "synthetic", "--output", str(out), "--no-progress",
           *SETTINGS[mode]["finetune"]]
    res.set("command", " ".join(["python"] + cmd[1:]))
    t = time.time()
    rc, log = _run(cmd, deadline - time.time() - 2, env=_child_env(mode))
    wall = time.time() - t
    res.set("wall_s", round(wall, 1))
    if rc != 0:
        raise RuntimeError(f"taco finetune exited {rc}:\n{log[-3000:]}")
    m = json.loads((out / "metrics.json").read_text())
    res.set("metrics_wall_time_s", m.get("wall_time_s"))  # inside the process: data, training, evaluation
    res.set("scores", m.get("scores"))
    res.set("n_train", m.get("n_train"))
    res.set("epochs", m.get("epochs"))
    res.set("hyperparameters", m.get("hyperparameters", {}))
    if m.get("n_train") and m.get("wall_time_s"):
        # training examples per second over the in-process wall time (evaluation included)
        res.set("train_examples_per_s", round(m["n_train"] * len(m.get("epochs") or [1]) / m["wall_time_s"], 2))


PART_FUNCS = {"env": part_env, "tc": part_tc, "objectives": part_objectives, "pretrain_bench": part_pretrain_bench,
              "mfu": part_mfu, "compile_attn": part_compile_attn, "resume": part_resume, "finetune": part_finetune,
              "repro": part_repro}


# ================================================================================================
# parent: schedule parts, write the summaries
# ================================================================================================
def _verdicts(mode: str, parts: dict) -> dict:
    """Target checks (GPU mode) and equality checks (both modes), from the parts' results."""
    out = {}
    r = parts.get("tc", {}).get("result", {})
    for name in ("fp32", "bf16"):
        if isinstance(r.get(name), dict):
            out[f"tc {name} device == CPU"] = r[name]["equal"]
    r = parts.get("resume", {}).get("result", {})
    if isinstance(r.get("resume_verdict"), dict):
        out["resume == uninterrupted"] = r["resume_verdict"]["equal"]
    if mode != "cuda":
        return out
    r = parts.get("objectives", {}).get("result", {})
    if r.get("taco_mlm_step_time_ratio") is not None:
        out["taco/mlm step time <= 1.05"] = r["taco_mlm_step_time_ratio"] <= 1.05
    r = parts.get("pretrain_bench", {}).get("result", {})
    if r.get("ratio") is not None:
        out["ours/official tokens/s >= 1.3"] = r["ratio"] >= 1.3
    runs = parts.get("mfu", {}).get("result", {}).get("runs", {})
    if runs.get("base/mlm", {}).get("mfu") is not None:
        out["MFU base mlm >= 40%"] = runs["base/mlm"]["mfu"] >= 0.40
    return out


def write_summary(out_dir: Path, summary: dict) -> tuple[Path, Path]:
    """Write ``device_check.json``, ``device_check.md`` (atomically) and, once the reproduction has
    a curve or a score, ``device_check.png`` into ``out_dir``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    summary["verdicts"] = _verdicts(summary["device_mode"], summary["parts"])
    repro = summary["parts"].get("repro", {}).get("result") or {}
    if repro:
        try:  # a figure that cannot be drawn is named, never fatal: the JSON and Markdown still come
            sys.path.insert(0, str(BENCH))
            from device_repro import write_figure

            fig = write_figure(out_dir / "device_check.png", repro)
            summary["figure"] = fig.name if fig else None
        except Exception as exc:  # noqa: BLE001
            summary["figure"] = f"not drawn: {type(exc).__name__}: {exc}"[:300]
    js, md = out_dir / "device_check.json", out_dir / "device_check.md"
    for path, text in ((js, json.dumps(summary, indent=2, default=str)), (md, render_markdown(summary))):
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_text(text)
        os.replace(tmp, path)
    return js, md


def _fmt(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def key_figures(summary: dict) -> list[str]:
    """One line per measured figure, for recording in benchmarks/README.md (only what was measured)."""
    parts = summary["parts"]
    r = lambda name: parts.get(name, {}).get("result", {})  # noqa: E731
    out = []
    for name in ("fp32", "bf16"):
        t = r("tc").get(name)
        if isinstance(t, dict):
            out.append(f"tc {name}: loss CPU {t['loss_cpu']:.6f} device {t['loss_device']:.6f} "
                       f"(rel diff {t['loss_rel_diff']:.2e}), grad max rel diff {t['grad_max_rel_diff']:.2e}")
    mem = r("tc").get("peak_extra_memory", {})
    if "materialized_fp32_mib" in mem:
        out.append(f"tc peak extra memory: fp32 {mem['tc_loss_fp32_mib']} MiB, bf16 {mem['tc_loss_bf16_mib']} MiB, "
                   f"materialized fp32 {mem['materialized_fp32_mib']} MiB (ratio {mem['ratio_fp32']})")
    o = r("objectives")
    if o.get("taco_mlm_step_time_ratio") is not None:
        out.append(f"objectives step ms {o.get('step_time_ms')}; peak MiB {o.get('step_peak_memory_mib')}; "
                   f"taco/mlm step time ratio {o['taco_mlm_step_time_ratio']}")
    b = r("pretrain_bench")
    if b.get("ratio") is not None:
        out.append(f"pretrain_bench tokens/s official {b.get('official_tokens_per_s')} ours {b.get('ours_tokens_per_s')} "
                   f"ratio {b['ratio']}x")
    for key, row in r("mfu").get("runs", {}).items():
        if "tokens_per_s" in row:
            m = f", MFU {row['mfu']:.1%}" if row.get("mfu") is not None else ""
            out.append(f"mfu {key}: {row['step_ms']} ms/step, {row['tokens_per_s']:,.0f} tokens/s, "
                       f"{row['achieved_tflops']} TFLOP/s{m}")
    z = r("resume")
    if "resumed_vs_uninterrupted" in z:
        floor = z.get("uninterrupted_vs_uninterrupted")
        out.append(f"resume: max abs weight diff resumed vs uninterrupted {z['resumed_vs_uninterrupted']['max_abs']:.3g}"
                   + (f", uninterrupted vs uninterrupted {floor['max_abs']:.3g}" if floor else "")
                   + f"; equal: {z.get('resume_verdict', {}).get('equal')}")
    for obj, row in (r("compile_attn").get("runs") or {}).items():
        ra = row.get("ratios") or {}
        tps = {k: v.get("tokens_per_s") for k, v in row.items() if isinstance(v, dict) and "tokens_per_s" in v}
        errs = {k: v["error"][:120] for k, v in row.items() if isinstance(v, dict) and "error" in v}
        out.append(f"compile_attn {obj}: tokens/s {tps}; SDPA/eager attention {ra.get('sdpa_over_eager_attention')}x, "
                   f"compile/eager {ra.get('compile_over_eager')}x"
                   + (f", compile first step {row['compile-sdpa'].get('first_step_s')} s" if "compile-sdpa" in row else "")
                   + (f"; failed: {errs}" if errs else ""))
    if r("repro"):
        sys.path.insert(0, str(BENCH))
        from device_repro import key_figure_lines

        out += key_figure_lines(r("repro"))
    f = r("finetune")
    if "wall_s" in f and "n_train" in f:
        out.append(f"finetune synthetic sst2: {f['wall_s']} s wall ({f.get('metrics_wall_time_s')} s in process), "
                   f"{f['n_train']} train examples, {len(f.get('epochs') or [])} epoch(s), scores {f.get('scores')}")
    return out


def render_markdown(summary: dict) -> str:
    """The human summary: header (date, hardware, versions), one section per part, verdicts."""
    env = summary["parts"].get("env", {}).get("result", {})
    lines = [f"# Device check ({summary['device_mode']})", "",
             f"- date (UTC): {summary['started_utc']} ; wall {summary.get('wall_s', '-')} s of budget {summary['budget_s']} s "
             f"({', '.join(f'{k} {v:.0f} s' for k, v in summary.get('budgets', {}).items())})",
             f"- command: `{summary['command']}`",
             f"- GPU: {env.get('gpu', 'none')} ({_fmt(env.get('gpu_memory_gib'))} GiB, capability "
             f"{env.get('gpu_capability', '-')}), driver {env.get('driver', '-')}",
             f"- CPU: {env.get('cpu', '-')}, {env.get('cpu_count', '-')} cores",
             f"- Python {env.get('python', '-')}, torch {env.get('torch', '-')}, CUDA {env.get('torch_cuda', '-')}, "
             f"transformers {env.get('transformers', '-')}, datasets {env.get('datasets', '-')}, "
             f"pyarrow {env.get('pyarrow', '-')}", ""]
    if summary.get("verdicts"):
        lines += ["## Verdicts", "", "| check | result |", "|---|---|"]
        lines += [f"| {k} | {'yes' if v else ('no' if v is False else 'not judged')} |"
                  for k, v in summary["verdicts"].items()]
        lines.append("")
    try:  # a summary must always be written: a figure that cannot be formatted is named, not fatal
        figures = key_figures(summary)
    except Exception as exc:  # noqa: BLE001
        figures = [f"key figures unavailable: {type(exc).__name__}: {exc}"]
    if figures:
        lines += ["## Key figures", "", "```"] + figures + ["```", ""]
    lines += ["## Parts", "", "| part | status | wall s | limit s |", "|---|---|---:|---:|"]
    for name, p in summary["parts"].items():
        lines.append(f"| {name} | {p['status']} | {_fmt(p.get('wall_s'))} | {_fmt(p.get('timeout_s'))} |")
    lines.append("")
    for name, p in summary["parts"].items():
        if name == "env":
            continue
        r = {k: v for k, v in p.get("result", {}).items() if k != "output"}
        lines += [f"### {name}", ""]
        if p.get("reason"):
            lines += [f"status {p['status']}: {p['reason'][:600]}", ""]
        if name == "repro":
            sys.path.insert(0, str(BENCH))
            from device_repro import CANNOT_ANSWER, markdown_lines

            try:
                lines += markdown_lines(r) if r else [f"What this cannot answer: {CANNOT_ANSWER}", ""]
            except Exception as exc:  # noqa: BLE001
                lines += [f"repro section unavailable: {type(exc).__name__}: {exc}", ""]
            if summary.get("figure"):
                lines += [f"Figure: {summary['figure']}", ""]
            continue
        if r:
            lines += ["```", json.dumps(r, indent=1, default=str)[:4000], "```", ""]
    return "\n".join(lines)


def _measured_rates(summary: dict, size: str) -> dict | None:
    """tokens/s of ``size`` per objective from this command's mfu part (sizes the reproduction)."""
    runs = summary["parts"].get("mfu", {}).get("result", {}).get("runs", {})
    rates = {o: runs.get(f"{size}/{o}", {}).get("tokens_per_s") for o in ("mlm", "taco")}
    return rates if all(rates.values()) else None


def run_parts(args, mode: str, out_dir: Path) -> dict:
    t_start = time.time()
    boxes = TIME_BOXES if mode == "cuda" else CPU_TIME_BOXES
    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="taco-device-check-"))
    work.mkdir(parents=True, exist_ok=True)
    summary = {"schema": SCHEMA, "device_mode": mode,
               "started_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
               "command": "bash benchmarks/device_check.sh " + " ".join(args.argv),
               "budget_s": sum(args.budgets.values()), "budgets": args.budgets, "work_dir": str(work), "parts": {}}
    def _on_term(signum, frame):  # the shell's hard timeout: record where it stopped, then exit
        for entry in summary["parts"].values():
            if entry["status"] == "running":
                entry.update(status="killed", reason=f"the check received signal {signum} (hard timeout)")
        for proc in list(_RUNNING):
            _killpg(proc, signal.SIGKILL)
        summary["wall_s"] = round(time.time() - t_start, 1)
        write_summary(out_dir, summary)
        os._exit(128 + signum)

    signal.signal(signal.SIGTERM, _on_term)
    group_deadline: dict[str, float] = {}
    for name in args.parts:
        group = "repro" if name == "repro" else "check"
        if group not in group_deadline:  # a group's clock starts with its first part
            group_deadline[group] = time.time() + args.budgets[group]
        deadline = group_deadline[group]
        remaining = deadline - time.time()
        limit = min(boxes[name] * args.box_scale, remaining - 3)
        entry = {"status": "running", "timeout_s": round(limit, 1)}
        summary["parts"][name] = entry
        if limit < 5:
            entry.update(status="skipped", reason=f"no time left in the {args.budgets[group]:.0f} s {group} budget")
            write_summary(out_dir, summary)
            continue
        result_file = work / f"part-{name}.json"
        result_file.unlink(missing_ok=True)
        cmd = [sys.executable, str(Path(__file__).resolve()), "--run-part", name, "--device", mode,
               "--work", str(work), "--result", str(result_file), "--part-deadline", str(time.time() + limit)]
        if args.peak_tflops:
            cmd += ["--peak-tflops", str(args.peak_tflops)]
        if name == "repro":
            sys.path.insert(0, str(BENCH))
            from device_repro import REPRO

            rates = _measured_rates(summary, REPRO[mode]["size"])
            cmd += ["--carry", str(args.carry)] + (["--rates", json.dumps(rates)] if rates else [])
        t0 = time.time()
        print(f"[device_check] {name}: running (limit {limit:.0f} s)", flush=True)
        try:
            rc, out = _run(cmd, limit + 2, env=_child_env(mode))
            entry["status"] = "ok" if rc == 0 else ("skipped" if rc == 4 else "failed")
            if rc != 0:
                entry["reason"] = out.strip().splitlines()[-1][:1000] if out.strip() else f"exit {rc}"
                entry["log_tail"] = out[-3000:]
        except TimeoutError as exc:
            entry.update(status="timeout", reason=f"ran past its {limit:.0f} s limit", log_tail=str(exc)[-3000:])
        entry["wall_s"] = round(time.time() - t0, 1)
        if result_file.is_file():
            try:
                entry["result"] = json.loads(result_file.read_text())
            except json.JSONDecodeError:
                entry["result"] = {}
        summary["wall_s"] = round(time.time() - t_start, 1)
        write_summary(out_dir, summary)
        print(f"[device_check] {name}: {entry['status']} in {entry['wall_s']} s"
              + (f" ({entry['reason'][:300]})" if entry.get("reason") else ""), flush=True)
    summary["wall_s"] = round(time.time() - t_start, 1)
    js, md = write_summary(out_dir, summary)
    print(f"[device_check] wrote {js} and {md}", flush=True)
    if not args.work and not args.keep_work:
        shutil.rmtree(work, ignore_errors=True)
    return summary


def _child(args) -> int:
    res = PartResult(Path(args.result))
    try:
        fn = PART_FUNCS[args.run_part]
        kw = {"peak_tflops": args.peak_tflops} if args.run_part == "mfu" else {}
        if args.run_part == "repro":
            kw = {"carry": args.carry, "rates": json.loads(args.rates) if args.rates else None}
        fn(args.device, res, args.part_deadline, Path(args.work), **kw)
    except ModuleNotFoundError as exc:
        res.set("skipped", str(exc))
        print(f"skipped: {exc}", flush=True)
        return 4
    except Exception as exc:  # noqa: BLE001 - recorded in the summary with its message
        import traceback

        traceback.print_exc()
        res.set("error", f"{type(exc).__name__}: {exc}"[:3000])
        print(f"{type(exc).__name__}: {str(exc)[:800]}".replace("\n", " "), flush=True)
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", choices=("auto", "cuda", "cpu"), default="auto",
                   help="auto: cuda when a GPU is visible, else the CPU toy mode")
    p.add_argument("--out", default=None, help="output folder (default: $OUT, else benchmarks/results)")
    p.add_argument("--part", choices=tuple(PART_GROUPS), default="both",
                   help="check: the device check (~3 min on GPU); repro: MLM vs TACO reproduction (~3 min); both")
    p.add_argument("--budget-s", type=float, default=None,
                   help="the check's time budget, seconds (default 185 on GPU, 700 in the CPU toy mode)")
    p.add_argument("--repro-budget-s", type=float, default=None,
                   help="the reproduction's time budget, seconds (default 185 on GPU, 420 in the CPU toy mode)")
    p.add_argument("--box-scale", type=float, default=1.0, help="scale every part's time box")
    p.add_argument("--parts", default=None,
                   help=f"the check's parts, comma-separated subset of {','.join(p for p in PARTS if p != 'repro')} "
                        f"(default {','.join(CHECK_PARTS)})")
    p.add_argument("--carry", default=str(BENCH / "carry"), help="the carried folder (blocks, GLUE TSVs)")
    p.add_argument("--dry-run", action="store_true",
                   help="list what the device tool would carry and its size (<= 64 MiB), run nothing")
    p.add_argument("--prepare", action="store_true",
                   help="here, on the CPU: pack the corpus and copy the GLUE TSVs into --carry, then exit")
    p.add_argument("--toy", action="store_true", help="with --prepare: the small carry of the CPU toy mode")
    p.add_argument("--data-root", default=None, help="with --prepare: ../shared/data (or $TACO_SHARED_DATA)")
    p.add_argument("--peak-tflops", type=float, default=None,
                   help="peak dense TFLOP/s for MFU (default 989, H100/H200 bf16; none on CPU)")
    p.add_argument("--work", default=None, help="scratch folder (default: a temporary one, removed)")
    p.add_argument("--keep-work", action="store_true", help="keep the temporary scratch folder")
    p.add_argument("--run-part", default=None, help=argparse.SUPPRESS)
    p.add_argument("--result", default=None, help=argparse.SUPPRESS)
    p.add_argument("--part-deadline", type=float, default=None, help=argparse.SUPPRESS)
    p.add_argument("--rates", default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.run_part:
        return _child(args)
    args.argv = argv
    sys.path.insert(0, str(BENCH))
    if args.dry_run:
        from device_repro import dry_run

        carry = os.path.relpath(Path(args.carry).resolve(), REPO)
        d = dry_run([".whl", carry])
        for c, e in d["carry"].items():
            print(f"carry {c}: {'present' if e['present'] else 'MISSING'}, {e['bytes'] / 2**20:.2f} MiB"
                  + (f", {len(e.get('files', []))} files listed" if e.get("files") else ""))
            for f in e.get("files", [])[:12]:
                print(f"    {f}")
        print(f"working tree (tracked + untracked not ignored): {d['working_tree_bytes'] / 2**20:.2f} MiB")
        print(f"total that would travel: {d['total_bytes'] / 2**20:.2f} MiB of {d['limit_bytes'] / 2**20:.0f} MiB: "
              + ("OK" if d["ok"] else "NOT OK: " + "; ".join(d["problems"])))
        print('device tool call: run(command="bash benchmarks/device_check.sh --part both", '
              f'carry=[".whl", "{carry}"], timeout_s=450)')
        return 0 if d["ok"] else 1
    if args.prepare:
        from device_repro import DATA_ROOT, prepare

        try:
            man = prepare(Path(args.carry), Path(args.data_root) if args.data_root else DATA_ROOT, toy=args.toy)
        except FileNotFoundError as exc:  # no data folder: say how to make one, no traceback
            print(f"device_check --prepare: {exc}", file=sys.stderr)
            return 2
        print(json.dumps(man, indent=1, default=str))
        return 0
    groups = PART_GROUPS[args.part]
    parts: list[str] = []
    if "check" in groups:
        parts = [x.strip() for x in (args.parts or ",".join(CHECK_PARTS)).split(",") if x.strip()]
        bad = [x for x in parts if x not in PARTS or x == "repro"]
        if bad or not parts:
            p.error(f"--parts: unknown part(s) {bad}; valid: {', '.join(x for x in PARTS if x != 'repro')}")
    elif args.parts:
        p.error("--parts selects parts of the check: use it with --part check or both")
    if "repro" in groups:
        parts += (["env"] if "env" not in parts else []) + ["repro"]
    args.parts = parts
    import torch

    mode = args.device
    if mode == "auto":
        mode = "cuda" if torch.cuda.is_available() else "cpu"
    if mode == "cuda" and not torch.cuda.is_available():
        p.error("--device cuda but torch sees no GPU")
    args.budgets = {g: b for g, b in GROUP_BUDGETS[mode].items() if g in groups}
    if args.budget_s is not None and "check" in groups:
        args.budgets["check"] = args.budget_s
    if args.repro_budget_s is not None and "repro" in groups:
        args.budgets["repro"] = args.repro_budget_s
    if any(b <= 0 for b in args.budgets.values()):
        p.error("--budget-s / --repro-budget-s must be positive")
    out_dir = Path(args.out or os.environ.get("OUT") or BENCH / "results")
    summary = run_parts(args, mode, out_dir)
    return 0 if all(v["status"] in ("ok",) for v in summary["parts"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
