"""The reproduction part of the device check: BERT-small pre-trained with MLM and with TACO for the
same number of steps on the carried corpus, validation-loss curves, GLUE fine-tuning of both
checkpoints with three seeds, a small table with t-based intervals.

Three stages, each reusing the package's own code (nothing copied):

- ``prepare`` (here, on a CPU, before the loan): ``taco corpus`` (WikiText-2 valid + test and the
  Gutenberg books of ``../shared/data``), ``taco tokenizer --kind vocab`` (bert-base-uncased's
  ``vocab.txt``), ``taco pack`` into ``benchmarks/carry/blocks``; the GLUE TSVs of the chosen tasks
  (training rows sampled with a fixed seed, capped; dev files whole) into ``benchmarks/carry/glue``;
  ``benchmarks/carry/manifest.json`` says what is there. ``benchmarks/carry`` is ignored by git and
  travels with the device tool's ``carry``.
- ``plan``: steps, budgets and time of each stage from a throughput (the check's measured tokens/s
  where it ran in the same command, else the assumed one stated in ``REPRO``), so that the part fits
  its time box; ``tests/test_device_check.py`` checks the GPU plan against its box.
- ``run`` (on the device): ``taco.training.pretrain.main`` segment by segment (0 -> b1 -> ... -> S,
  each budget resumed from the previous one, one learning-rate schedule of S steps; MLM and TACO
  alternate so both reach the same budgets if the box runs out), each budget's ``eval.json``
  (``taco.training.validation``: the same fixed validation blocks and masks for both) is a point of
  the curve; then ``taco.evaluation.finetune.main`` per checkpoint and task with the seeds in one
  call; then the table.

What it cannot answer: see ``CANNOT_ANSWER`` (printed in the JSON, the Markdown and the README).
"""

from __future__ import annotations

import json
import math
import os
import random
import shutil
import statistics
import subprocess
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
BENCH = REPO / "benchmarks"
CARRY = BENCH / "carry"
WHEELS = REPO / ".whl"
DATA_ROOT = Path(os.environ.get("TACO_SHARED_DATA", REPO.parent / "shared" / "data"))
#: the device tool's limit on what travels (working tree + carried paths)
CARRY_LIMIT_BYTES = 64 * 2**20
OBJECTIVES = ("mlm", "taco")

CANNOT_ANSWER = (
    "An early-training comparison on small data, not the paper's regime: the carried corpus is a few "
    "million tokens (WikiText-2 valid+test and 18 Gutenberg books), which at H200 speed is several to tens "
    "of epochs in a minute, so late points measure memorisation of a small corpus as much as learning; a short "
    "learning-rate schedule of its own (not the paper's 250k-step one); one pre-training run per objective "
    "(the seeds vary fine-tuning only, so no interval covers pre-training variance, and the steps-to-target "
    "speedup has no interval); fine-tuning on capped training sets (800 examples in the GPU mode) of two small GLUE tasks. It "
    "cannot test the paper's claims (TACO-50k vs MLM-250k, the GLUE average, BERT-base), only whether TACO "
    "is ahead of MLM at equal early steps here.")

#: per mode: sizes of the reproduction and the assumptions its plan makes (stated in the output)
REPRO: dict[str, dict[str, Any]] = {
    "cuda": dict(
        size="small", seq_len=128, batch=256, lr=5e-4, warmup_frac=0.06, n_budgets=4, min_steps=200,
        max_steps=6000, precision="bf16", validation_blocks=256,
        tasks=("sst2", "mrpc"), seeds=(1, 2, 3), ft_train=800, ft_eval=1000, ft_epochs=3, ft_batch=32,
        ft_lr=1e-4, ft_warmup=10, ft_max_length=128,
        # plan assumptions (GPU): Trainer throughput when the check measured none; the share of the
        # check's raw step throughput (synthetic batch, no data loader) the Trainer reaches; start-up,
        # per-segment (Trainer set-up, save, validation) and fine-tuning costs
        assumed_tokens_per_s={"mlm": 1.0e6, "taco": 0.85e6}, trainer_factor=0.5,
        startup_s=12.0, segment_overhead_s=4.0, ft_examples_per_s=1000.0, ft_seed_overhead_s=2.5,
        ft_call_overhead_s=3.0, reserve_s=6.0, pretrain_share=0.45),
    "cpu": dict(
        size="tiny", seq_len=64, batch=4, lr=1e-3, warmup_frac=0.1, n_budgets=3, min_steps=6, max_steps=6,
        precision="fp32", validation_blocks=16,
        tasks=("sst2", "mrpc"), seeds=(1, 2, 3), ft_train=32, ft_eval=32, ft_epochs=1, ft_batch=16, ft_lr=3e-4,
        ft_warmup=1, ft_max_length=32,
        assumed_tokens_per_s={"mlm": 2000.0, "taco": 1800.0}, trainer_factor=0.5,
        startup_s=10.0, segment_overhead_s=8.0, ft_examples_per_s=20.0, ft_seed_overhead_s=6.0,
        ft_call_overhead_s=6.0, reserve_s=5.0, pretrain_share=0.45),
}
#: the toy carry (CPU mode, tests): WikiText-2 valid only
TOY_CORPUS = ("corpus/wikitext-2/valid.txt",)
FULL_CORPUS = ("corpus/wikitext-2/valid.txt", "corpus/wikitext-2/test.txt", "corpus/gutenberg")


# ================================================================================================
# plan
# ================================================================================================
def repro_plan(mode: str, box_s: float, measured_tokens_per_s: dict[str, float] | None = None) -> dict[str, Any]:
    """Steps, budgets and the time of each stage, so that the whole part fits ``box_s``.

    Throughput: the check's measured raw step tokens/s x ``trainer_factor`` where given, else
    ``assumed_tokens_per_s``. Fine-tuning is planned first (it is fixed by the tasks, seeds and caps);
    pre-training gets ``pretrain_share`` of the box or what is left, whichever is smaller; both
    objectives run the same steps.
    """
    r = REPRO[mode]
    if measured_tokens_per_s and all(measured_tokens_per_s.get(o) for o in OBJECTIVES):
        tps = {o: measured_tokens_per_s[o] * r["trainer_factor"] for o in OBJECTIVES}
        source = (f"measured by the check (raw step, synthetic batch) x trainer factor {r['trainer_factor']} "
                  "(assumed share the Trainer reaches)")
    else:
        tps = dict(r["assumed_tokens_per_s"])
        source = "assumed (no measurement in this command): " + ", ".join(f"{o} {v:,.0f} tokens/s" for o, v in tps.items())
    n_ft_calls = 2 * len(r["tasks"])
    per_seed = r["ft_train"] * r["ft_epochs"] / r["ft_examples_per_s"] + r["ft_seed_overhead_s"]
    finetune_s = n_ft_calls * (r["ft_call_overhead_s"] + len(r["seeds"]) * per_seed)
    segments_s = 2 * r["n_budgets"] * r["segment_overhead_s"]
    left = box_s - r["startup_s"] - r["reserve_s"] - finetune_s - segments_s
    train_s = max(0.0, min(left, r["pretrain_share"] * box_s))
    tokens_per_step = r["batch"] * r["seq_len"]
    sec_per_step = sum(tokens_per_step / tps[o] for o in OBJECTIVES)  # one step of each objective
    steps = int(train_s / sec_per_step)
    steps = max(r["min_steps"], min(r["max_steps"], steps - steps % r["n_budgets"]))
    budgets = [steps * (i + 1) // r["n_budgets"] for i in range(r["n_budgets"])]
    pretrain_s = steps * sec_per_step + segments_s
    total = r["startup_s"] + pretrain_s + finetune_s + r["reserve_s"]
    return {
        "mode": mode, "size": r["size"], "seq_len": r["seq_len"], "batch": r["batch"], "steps": steps,
        "budgets": budgets, "warmup_steps": max(1, int(round(r["warmup_frac"] * steps))), "lr": r["lr"],
        "tokens_per_step": tokens_per_step, "tokens_per_objective": steps * tokens_per_step,
        "planned_tokens_per_s": {o: round(v, 1) for o, v in tps.items()}, "throughput_source": source,
        "tasks": list(r["tasks"]), "seeds": list(r["seeds"]),
        "finetune": {"train_cap": r["ft_train"], "eval_cap": r["ft_eval"], "epochs": r["ft_epochs"],
                     "batch": r["ft_batch"], "lr": r["ft_lr"], "warmup_steps": r["ft_warmup"],
                     "max_length": r["ft_max_length"]},
        "time_s": {"startup": r["startup_s"], "pretrain": round(pretrain_s, 1), "finetune": round(finetune_s, 1),
                   "reserve": r["reserve_s"], "total": round(total, 1), "box": box_s},
        "fits": total <= box_s,
        "assumptions": {k: r[k] for k in ("trainer_factor", "segment_overhead_s", "ft_examples_per_s",
                                          "ft_seed_overhead_s", "ft_call_overhead_s", "startup_s")},
    }


# ================================================================================================
# prepare (CPU, before the loan) and dry run
# ================================================================================================
def _taco(argv: list[str]) -> None:
    """``taco <command>`` in this process (one interpreter start for the whole preparation)."""
    from taco.cli import main as taco

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    rc = taco(argv)
    if rc != 0:
        raise RuntimeError(f"taco {argv[0]} exited {rc}")


def _sample_tsv(src: Path, dest: Path, n: int | None, seed: int = 0) -> int:
    """Copy a GLUE TSV: header and, if ``n``, ``n`` data lines drawn with ``seed`` (original order kept)."""
    lines = src.read_text(encoding="utf-8").splitlines(keepends=True)
    header, rows = lines[:1], lines[1:]
    if n is not None and n < len(rows):
        keep = sorted(random.Random(seed).sample(range(len(rows)), n))
        rows = [rows[i] for i in keep]
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text("".join(header + rows), encoding="utf-8")
    return len(rows)


def prepare(carry: Path = CARRY, data_root: Path = DATA_ROOT, toy: bool = False, workers: int = 2) -> dict[str, Any]:
    """Build the carry folder (blocks + GLUE TSVs + manifest) from ``data_root``; returns the manifest."""
    from taco.data.glue import local_files

    mode = "cpu" if toy else "cuda"
    r = REPRO[mode]
    for need in ("bert/vocab.txt", *(TOY_CORPUS if toy else FULL_CORPUS)):
        if not (data_root / need).exists():
            raise FileNotFoundError(f"{data_root / need} is missing: `taco data-recipe --output data` makes the "
                                    "folder (docs/data.md); then pass --data-root data (or set TACO_SHARED_DATA)")
    t0 = time.time()
    carry = Path(carry)
    shutil.rmtree(carry, ignore_errors=True)
    scratch = carry.parent / (carry.name + ".tmp-prepare")
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    paths = [str(data_root / p) for p in (TOY_CORPUS if toy else FULL_CORPUS)]
    _taco(["corpus", "--source", "local", "--paths", *paths, "--split-by", "blank_line", "--wikitext-detokenize",
           "--unk-policy", "drop", "--encoding", "utf-8-or-latin-1", "--workers", str(workers),
           "--output", str(scratch / "corpus")])
    _taco(["tokenizer", "--kind", "vocab", "--vocab-file", str(data_root / "bert" / "vocab.txt"),
           "--output", str(scratch / "tokenizer")])
    _taco(["pack", "--corpus", str(scratch / "corpus"), "--tokenizer", str(scratch / "tokenizer"),
           "--max-seq-length", str(r["seq_len"]), "--validation-blocks", str(r["validation_blocks"]),
           "--workers", str(workers), "--output", str(carry / "blocks")])
    shutil.rmtree(scratch, ignore_errors=True)
    glue = {}
    for task in r["tasks"]:
        files = local_files(task, data_root / "glue")
        dir_name = files["train"].parent.name
        n_train = _sample_tsv(files["train"], carry / "glue" / dir_name / "train.tsv", r["ft_train"])
        n_dev = {}
        for split, path in files.items():
            if split != "train" and path.is_file():
                n_dev[path.name] = _sample_tsv(path, carry / "glue" / dir_name / path.name, None)
        glue[task] = {"dir": dir_name, "train_rows": n_train, "dev_rows": n_dev}
    blocks_manifest = json.loads((carry / "blocks" / "manifest.json").read_text())
    manifest = {"kind": "device-repro-carry", "toy": toy, "mode": mode, "data_root": str(data_root),
                "corpus": paths, "seq_len": r["seq_len"], "glue": glue,
                "blocks": {k: blocks_manifest.get(k) for k in ("counts", "parameters", "num_blocks", "tokens")
                           if k in blocks_manifest},
                "prepare_s": round(time.time() - t0, 1)}
    (carry / "manifest.json").write_text(json.dumps(manifest, indent=2, default=str))
    return manifest


def _tree_bytes(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def dry_run(carry_paths: list[str] | None = None) -> dict[str, Any]:
    """What the device tool would carry: the working tree (tracked and untracked-not-ignored files)
    plus the carried ignored paths, with sizes against the 64 MiB limit."""
    carry_paths = carry_paths if carry_paths is not None else [".whl", str(CARRY.relative_to(REPO))]
    r = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=str(REPO),
                       capture_output=True, text=True, check=True)
    tree = sum((REPO / f).stat().st_size for f in r.stdout.split("\0") if f and (REPO / f).is_file())
    items = {}
    for c in carry_paths:
        p = REPO / c
        entry: dict[str, Any] = {"present": p.exists(), "bytes": _tree_bytes(p) if p.exists() else 0}
        if p.is_dir():
            entry["files"] = sorted(str(f.relative_to(p)) for f in p.rglob("*") if f.is_file())[:40]
        items[c] = entry
    total = tree + sum(e["bytes"] for e in items.values())
    problems = [f"{c} is missing" for c, e in items.items() if not e["present"]]
    if total > CARRY_LIMIT_BYTES:
        problems.append(f"{total / 2**20:.1f} MiB would travel, over the {CARRY_LIMIT_BYTES / 2**20:.0f} MiB limit")
    man = REPO / CARRY.relative_to(REPO) / "manifest.json"
    if man.is_file() and json.loads(man.read_text()).get("toy"):
        problems.append(f"{CARRY} holds the toy carry (CPU mode): run --prepare without --toy")
    return {"working_tree_bytes": tree, "carry": items, "total_bytes": total, "limit_bytes": CARRY_LIMIT_BYTES,
            "ok": not problems, "problems": problems}


# ================================================================================================
# run (on the device)
# ================================================================================================
def t_quantile_975(df: float) -> float:
    """Two-sided 95% t quantile (scipy where present, else a table, rounded down in df: conservative)."""
    try:
        from scipy.stats import t

        return float(t.ppf(0.975, df))
    except ImportError:
        table = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262,
                 10: 2.228, 15: 2.131, 20: 2.086, 30: 2.042}
        d = max(1, int(math.floor(df)))
        return table[max(k for k in table if k <= d)]


def mean_ci(values: list[float]) -> dict[str, Any]:
    """Mean and its t-based 95% interval over seeds (None with fewer than two values)."""
    n = len(values)
    if n == 0:
        return {"n": 0, "mean": None, "lo": None, "hi": None}
    m = statistics.fmean(values)
    if n < 2:
        return {"n": n, "mean": m, "lo": None, "hi": None}
    half = t_quantile_975(n - 1) * statistics.stdev(values) / math.sqrt(n)
    return {"n": n, "mean": m, "lo": m - half, "hi": m + half, "sd": statistics.stdev(values)}


def diff_ci(a: list[float], b: list[float]) -> dict[str, Any]:
    """b - a with a Welch t 95% interval (seeds of the two checkpoints are independent runs)."""
    if len(a) < 2 or len(b) < 2:
        return {"diff": (statistics.fmean(b) - statistics.fmean(a)) if a and b else None, "lo": None, "hi": None}
    va, vb = statistics.variance(a) / len(a), statistics.variance(b) / len(b)
    d = statistics.fmean(b) - statistics.fmean(a)
    se = math.sqrt(va + vb)
    if se == 0:
        return {"diff": d, "lo": d, "hi": d, "df": None}
    df = (va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1))
    half = t_quantile_975(df) * se
    return {"diff": d, "lo": d - half, "hi": d + half, "df": round(df, 2)}


def steps_to_target(reference: list[dict], other: list[dict], key: str = "mlm_loss") -> dict[str, Any]:
    """Step at which ``other``'s curve reaches ``reference``'s value at its last point, and the speedup
    T / k*: the suite's own method (``taco.stats.speedup.speedup_interval``, the same as ``taco
    efficiency``'s E1) with one pre-training run per arm, so it prints no interval and says why."""
    import numpy as np

    from taco.stats.speedup import CODE_LEFT, CODE_RIGHT, LOWER, speedup_interval

    if not reference or not other:
        return {"status": "no curves"}
    T, target = reference[-1]["step"], reference[-1][key]
    pts = [(p["step"], p[key]) for p in other if p.get(key) is not None]
    out: dict[str, Any] = {"target_step": T, "target_value": target, "interval": None,
                           "why_no_interval": "one pre-training run per objective (the interval is over "
                                              "pre-training runs: taco efficiency, pretrain.seeds >= 3)",
                           "method": "taco.stats.speedup"}
    steps = np.array([s for s, _ in pts], dtype=float)
    iv = speedup_interval(steps, np.array([target]), np.array([[v for _, v in pts]]), T, LOWER, 0.9)
    code = int(iv.status[0])
    if code == CODE_LEFT:
        return {**out, "status": f"reached at or before its first point (step {pts[0][0]})", "k_star": None,
                "speedup_at_least": T / pts[0][0]}
    if code == CODE_RIGHT:
        return {**out, "status": "not reached", "k_star": None, "speedup": None}
    k = T / float(iv.speedup)
    return {**out, "status": "reached", "k_star": round(k, 1), "speedup": round(float(iv.speedup), 3)}


def _ckpt_eval(ckpt: Path) -> dict[str, Any]:
    e = json.loads((ckpt / "eval.json").read_text()) if (ckpt / "eval.json").is_file() else {}
    m = json.loads((ckpt / "manifest.json").read_text()) if (ckpt / "manifest.json").is_file() else {}
    return {"mlm_loss": e.get("mlm_loss"), "mlm_accuracy": e.get("mlm_accuracy"), "tc_loss": e.get("tc_loss"),
            "tokens_seen": m.get("tokens_seen"), "segment_wall_time_s": m.get("wall_time_s")}


def run_repro(mode: str, res, deadline: float, work: Path, carry: Path = CARRY,
              measured_tokens_per_s: dict[str, float] | None = None) -> None:
    """The reproduction (see the module docstring); every result is ``res.set`` as soon as it exists."""
    from taco.evaluation.finetune import main as finetune_main
    from taco.registry import DEFAULT_PRIMARY_METRIC
    from taco.training.pretrain import main as pretrain_main

    t_start = time.time()
    carry = Path(carry)
    blocks = carry / "blocks"
    if not (blocks / "manifest.json").is_file():
        raise FileNotFoundError(f"{blocks}: no packed blocks; run `python benchmarks/device_check.py --prepare` "
                                "here and carry benchmarks/carry")
    cman = json.loads((carry / "manifest.json").read_text()) if (carry / "manifest.json").is_file() else {}
    res.set("cannot_answer", CANNOT_ANSWER)
    res.set("carry", {"toy": cman.get("toy"), "corpus": cman.get("corpus"), "blocks": cman.get("blocks"),
                      "glue": cman.get("glue")})
    plan = repro_plan(mode, box_s=round(deadline - t_start, 1), measured_tokens_per_s=measured_tokens_per_s)
    res.set("plan", plan)
    r = REPRO[mode]
    counts = (cman.get("blocks") or {}).get("counts") or {}
    train_tokens = (counts.get("tokens") or {}).get("train")
    res.set("corpus_train_tokens", train_tokens)
    if train_tokens:
        res.set("epochs_over_corpus", round(plan["tokens_per_objective"] / train_tokens, 2))
    dev_args = ["--device", "cpu"] if mode == "cpu" else []
    curves: dict[str, list[dict]] = {o: [] for o in OBJECTIVES}
    prev: dict[str, Path | None] = {o: None for o in OBJECTIVES}
    ft_reserve = plan["time_s"]["finetune"] + r["reserve_s"]
    last_pair_s, last_seg_steps, done_budget, stopped = None, None, 0, None
    for b in plan["budgets"]:
        seg_steps = b - done_budget
        if last_pair_s is not None:
            need = last_pair_s * seg_steps / last_seg_steps
            if time.time() + need > deadline - ft_reserve:
                stopped = f"pre-training stopped after step {done_budget} of {plan['steps']} (time box)"
                break
        t_pair = time.time()
        for obj in OBJECTIVES:
            out = work / "pretrain" / obj / f"step-{b}"
            argv = ["--blocks", str(blocks), "--objective", obj, "--size", plan["size"],
                    "--max-steps", str(plan["steps"]), "--warmup-steps", str(plan["warmup_steps"]), "--until", str(b),
                    "--output", str(out), "--state-dir", str(work / "pretrain" / obj / "state"),
                    "--per-device-batch-size", str(plan["batch"]), "--lr", str(plan["lr"]), "--seed", "42",
                    "--save-every", "0", "--logging-steps", str(max(1, seg_steps // 5)), "--no-progress",
                    "--precision", r["precision"], *dev_args]
            if prev[obj] is not None:
                argv += ["--resume-from", str(prev[obj])]
            t = time.time()
            rc = pretrain_main(argv)
            if rc != 0:
                raise RuntimeError(f"taco pretrain {obj} to step {b} exited {rc}")
            prev[obj] = out
            curves[obj].append({"step": b, "wall_s": round(time.time() - t, 2), **_ckpt_eval(out)})
            res.set("curves", curves)
        last_pair_s, last_seg_steps, done_budget = time.time() - t_pair, seg_steps, b
    res.set("pretrain_done_step", done_budget)
    if stopped:
        res.set("pretrain_stopped", stopped)
    if done_budget == 0:
        raise TimeoutError("no pre-training budget finished inside the box")
    seg_tps = {}
    for obj in OBJECTIVES:
        steps_wall = [(c["step"], c["segment_wall_time_s"]) for c in curves[obj] if c.get("segment_wall_time_s")]
        if steps_wall:
            wall = sum(w for _, w in steps_wall)
            seg_tps[obj] = round(done_budget * plan["tokens_per_step"] / wall, 1) if wall else None
    res.set("achieved_tokens_per_s", {"value": seg_tps, "how": "budget steps x tokens per step / the segments' "
                                      "own wall_time_s (Trainer, data loading, saving and validation included)"})
    res.set("steps_to_target", steps_to_target(curves["mlm"], curves["taco"]))
    res.set("pretrain_s", round(time.time() - t_start, 1))

    # ---- fine-tuning: both checkpoints at the last common budget, every task, the seeds in one call
    glue: dict[str, Any] = {}
    per_seed_est = r["ft_train"] * r["ft_epochs"] / r["ft_examples_per_s"] + r["ft_seed_overhead_s"]
    call_est = r["ft_call_overhead_s"] + len(plan["seeds"]) * per_seed_est
    call_walls: list[float] = []
    for task in plan["tasks"]:
        metric = DEFAULT_PRIMARY_METRIC.get(task, "accuracy")
        row: dict[str, Any] = {"metric": metric, "step": done_budget}
        for obj in OBJECTIVES:
            est = max(call_walls) if call_walls else call_est
            if time.time() + est > deadline - 2:
                row[obj] = {"skipped": "no time left in the box"}
                glue[task] = row
                res.set("glue", glue)
                continue
            out = work / "finetune" / obj / task / "seed-{seed}"
            argv = ["--checkpoint", str(prev[obj]), "--task", task, "--seed", *map(str, plan["seeds"]),
                    "--glue-source", "local", "--glue-dir", str(carry / "glue"), "--output", str(out),
                    "--max-length", str(r["ft_max_length"]), "--batch-size", str(r["ft_batch"]),
                    "--lr", str(r["ft_lr"]), "--epochs", str(r["ft_epochs"]), "--warmup-steps", str(r["ft_warmup"]),
                    "--max-train-samples", str(r["ft_train"]), "--max-eval-samples", str(r["ft_eval"]),
                    "--no-test-predictions", "--no-progress", "--logging-steps", "1000",
                    "--device", "cpu" if mode == "cpu" else "cuda"]
            t = time.time()
            rc = finetune_main(argv)
            call_walls.append(time.time() - t)
            if rc != 0:
                row[obj] = {"error": f"taco finetune exited {rc}"}
            else:
                vals, degenerate = [], 0
                for seed in plan["seeds"]:
                    m = json.loads((Path(str(out).replace("{seed}", str(seed))) / "metrics.json").read_text())
                    key = next(iter(m["scores"]))
                    vals.append(100.0 * m["scores"][key][metric])
                    degenerate += int(any((m.get("degenerate") or {}).values()))
                row[obj] = {"values": [round(v, 2) for v in vals], **mean_ci(vals), "degenerate_seeds": degenerate,
                            "wall_s": round(call_walls[-1], 1), "n_train": m.get("n_train"), "n_dev": m.get("n_dev")}
            glue[task] = row
            res.set("glue", glue)
        if all(isinstance(row.get(o), dict) and "values" in row[o] for o in OBJECTIVES):
            row["taco_minus_mlm"] = diff_ci(row["mlm"]["values"], row["taco"]["values"])
            glue[task] = row
            res.set("glue", glue)
    res.set("wall_s", round(time.time() - t_start, 1))


# ================================================================================================
# reporting (used by device_check.write_summary)
# ================================================================================================
def _f(v, fmt="{:.3f}") -> str:
    return "-" if v is None else fmt.format(v)


def markdown_lines(result: dict[str, Any]) -> list[str]:
    """The repro's Markdown section: plan, curves, speedup, GLUE table with intervals, caveats."""
    lines = []
    plan = result.get("plan") or {}
    if plan:
        lines += [f"Plan: {plan['size']}, {plan['steps']} steps of {plan['batch']} x {plan['seq_len']} tokens per "
                  f"objective (budgets {plan['budgets']}, warmup {plan['warmup_steps']}, lr {plan['lr']}, "
                  f"linear decay to step {plan['steps']}); throughput {plan['throughput_source']}; planned "
                  f"{plan['time_s']['total']} s of a {plan['time_s']['box']} s box.", ""]
    if result.get("epochs_over_corpus") is not None:
        lines += [f"Epochs over the carried corpus per objective: {result['epochs_over_corpus']}", ""]
    if result.get("pretrain_stopped"):
        lines += [f"**{result['pretrain_stopped']}**", ""]
    curves = result.get("curves") or {}
    if curves:
        lines += ["| step | MLM val MLM loss | TACO val MLM loss | MLM acc | TACO acc | TACO val TC loss |",
                  "|---:|---:|---:|---:|---:|---:|"]
        by = {o: {c["step"]: c for c in curves.get(o, [])} for o in OBJECTIVES}
        for s in sorted(set(by["mlm"]) | set(by["taco"])):
            m, t = by["mlm"].get(s, {}), by["taco"].get(s, {})
            lines.append(f"| {s} | {_f(m.get('mlm_loss'))} | {_f(t.get('mlm_loss'))} | {_f(m.get('mlm_accuracy'))} "
                         f"| {_f(t.get('mlm_accuracy'))} | {_f(t.get('tc_loss'))} |")
        lines.append("")
    st = result.get("steps_to_target")
    if st and "target_step" in st:
        sp = st.get("speedup")
        lines += [f"Steps to target: TACO reaches MLM's validation loss at step {st['target_step']} "
                  f"({_f(st['target_value'])}) {st['status']}"
                  + (f" at step {st['k_star']}: speedup {sp}x" if sp else "")
                  + (f" (speedup >= {st['speedup_at_least']:.2f}x)" if st.get("speedup_at_least") else "")
                  + f"; no interval ({st['why_no_interval']}).", ""]
    tps = (result.get("achieved_tokens_per_s") or {}).get("value")
    if tps:
        lines += [f"Achieved pre-training tokens/s (segments, all included): {tps}", ""]
    glue = result.get("glue") or {}
    if glue:
        lines += ["| task (metric x 100) | MLM mean [95% t CI] | TACO mean [95% t CI] | TACO - MLM [95% Welch CI] |",
                  "|---|---|---|---|"]
        for task, row in glue.items():
            cells = []
            for o in OBJECTIVES:
                c = row.get(o) or {}
                if "mean" in c:
                    cells.append(f"{_f(c['mean'], '{:.1f}')} [{_f(c['lo'], '{:.1f}')}, {_f(c['hi'], '{:.1f}')}]"
                                 + (f" ({c['degenerate_seeds']} degenerate)" if c.get("degenerate_seeds") else ""))
                else:
                    cells.append(c.get("skipped") or c.get("error") or "-")
            d = row.get("taco_minus_mlm") or {}
            dc = (f"{_f(d.get('diff'), '{:+.1f}')} [{_f(d.get('lo'), '{:+.1f}')}, {_f(d.get('hi'), '{:+.1f}')}]"
                  if d else "-")
            lines.append(f"| {task} ({row['metric']}, step {row['step']}) | {cells[0]} | {cells[1]} | {dc} |")
        lines.append("")
    lines += [f"What this cannot answer: {result.get('cannot_answer', CANNOT_ANSWER)}", ""]
    return lines


def key_figure_lines(result: dict[str, Any]) -> list[str]:
    out = []
    curves = result.get("curves") or {}
    for o in OBJECTIVES:
        pts = curves.get(o) or []
        if pts:
            out.append(f"repro {o} val MLM loss: " + ", ".join(f"{p['step']}: {_f(p.get('mlm_loss'))}" for p in pts))
    st = result.get("steps_to_target") or {}
    if st.get("status"):
        out.append(f"repro steps-to-target (MLM at {st.get('target_step')}): {st['status']}"
                   + (f", speedup {st['speedup']}x" if st.get("speedup") else ""))
    for task, row in (result.get("glue") or {}).items():
        parts = []
        for o in OBJECTIVES:
            c = row.get(o) or {}
            if "mean" in c:
                parts.append(f"{o} {c['mean']:.1f} [{_f(c['lo'], '{:.1f}')}, {_f(c['hi'], '{:.1f}')}]")
        d = row.get("taco_minus_mlm") or {}
        if d.get("diff") is not None:
            parts.append(f"taco-mlm {d['diff']:+.1f} [{_f(d.get('lo'), '{:+.1f}')}, {_f(d.get('hi'), '{:+.1f}')}]")
        if parts:
            out.append(f"repro {task} {row['metric']}: " + "; ".join(parts))
    return out


def write_figure(path: Path, result: dict[str, Any]) -> Path | None:
    """One figure: validation MLM loss against step (both objectives), GLUE means with t intervals."""
    curves = result.get("curves") or {}
    glue = result.get("glue") or {}
    if not any(curves.values()) and not glue:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
    for o, color in zip(OBJECTIVES, ("tab:blue", "tab:red")):
        pts = [p for p in curves.get(o, []) if p.get("mlm_loss") is not None]
        if pts:
            ax1.plot([p["step"] for p in pts], [p["mlm_loss"] for p in pts], "o-", color=color, label=o.upper())
    st = result.get("steps_to_target") or {}
    if st.get("target_value") is not None:
        ax1.axhline(st["target_value"], color="grey", ls=":", lw=1, label="MLM at its last step")
    if st.get("k_star"):
        ax1.axvline(st["k_star"], color="tab:red", ls="--", lw=1, label=f"k* = {st['k_star']:.0f}")
    ax1.set_xlabel("pre-training step")
    ax1.set_ylabel("validation MLM loss (nats)")
    ax1.set_title("Validation loss (same blocks and masks)")
    ax1.legend(fontsize=8)
    tasks = list(glue)
    for j, (o, color) in enumerate(zip(OBJECTIVES, ("tab:blue", "tab:red"))):
        xs, ys, errs = [], [], [[], []]
        for i, task in enumerate(tasks):
            c = glue[task].get(o) or {}
            if c.get("mean") is not None:
                xs.append(i + (j - 0.5) * 0.35)
                ys.append(c["mean"])
                errs[0].append(c["mean"] - c["lo"] if c.get("lo") is not None else 0)
                errs[1].append(c["hi"] - c["mean"] if c.get("hi") is not None else 0)
        if xs:
            ax2.bar(xs, ys, width=0.35, color=color, alpha=0.7, label=o.upper(), yerr=errs, capsize=3)
    ax2.set_xticks(range(len(tasks)), [f"{t}\n({glue[t]['metric']})" for t in tasks], fontsize=8)
    ax2.set_ylabel("dev score x 100 (mean, 95% t CI, 3 seeds)")
    ax2.set_title("GLUE fine-tuning")
    if tasks:
        ax2.legend(fontsize=8)
    fig.suptitle("Early-training MLM vs TACO on a small corpus (not the paper's regime)", fontsize=10)
    fig.tight_layout()
    tmp = path.with_suffix(".tmp.png")
    fig.savefig(tmp, dpi=110)
    plt.close(fig)
    os.replace(tmp, path)
    return path
