"""Wall-clock time of one pre-training optimizer step per objective of a configuration, side by side.

The model FLOPs of ``taco.flops`` count matmuls; what a step costs on a machine also
holds the TC sampling, the gathers, the collator, the optimizer and everything else. This
benchmark measures it at the configuration's shapes, for every objective of one size, in one
process, so outside load hits every objective alike (the runs' own ``train_log.jsonl`` step times
come from different loads and are not comparable).

What runs, per objective: the ``taco pretrain`` command the workflow would run for the size's last
budget (``taco.workflow.commands.Commands.pretrain_args``: preset, sequence length, per-device batch,
gradient accumulation, precision, learning-rate schedule, TC and other objective options), parsed
and checked by ``taco.training.pretrain.make_segment_plan``, then the same model (``PreTrainingModel``),
collator (``PreTrainingCollator`` under the per-batch seeded masking) and Trainer subclass with the same
``TrainingArguments`` as ``taco.training.pretrain_trainer.run``, and ``Trainer.train()`` itself.
Not run: the run log and progress callbacks, saving (``--save-every 0``), in-segment validation
(``--eval-every``), and, where ``num_gpus > 1``, the other processes (one process's step: no
gradient all-reduce).

A measured step is the **Trainer step**: the time between two consecutive ``on_step_end``
callbacks, i.e. fetching and collating the micro-batches, forward, loss, backward, gradient clipping,
AdamW, the learning-rate scheduler and the Trainer's logging (CUDA synchronised at the end). Each
objective's ``Trainer.train()`` runs in its own thread, and the threads take turns: only one runs
at any time, the others wait at a step boundary (the wait is not timed). Order: ``--warmup`` steps
of each objective (not recorded), then blocks of ``--block`` steps, the order of the objectives
reversed every round (A B, B A, A B, ...), until each has ``--steps`` recorded steps. Reported:
median and quartiles per objective, the ratio of medians ``<objective>/mlm`` and the model-FLOPs
ratio at the same shapes; beside them the process's CPU time per step (only one thread runs at a
time, so it is that step's; on a loaded machine less noisy than wall-clock, but it leaves out time
waiting on a GPU).

Data: ``--blocks DIR`` (a ``taco pack`` output, e.g. the workflow's blocks of this configuration),
else synthetic blocks at the configuration's sequence length and vocabulary size (ids drawn from a
Zipf law, rank^-1, framed ``[CLS] ... [SEP]``). Only BERT-NCE's and INFOWORD's costs depend on the
text (the number of distinct target tokens, the n-gram positions).

    python benchmarks/step_time.py --configfile configs/cpu-real.yaml [--config data_root=PATH]
        [--size KEY] [--objectives mlm,taco] [--steps 20] [--warmup 2] [--block 5] [--blocks DIR]
        [--device auto|cpu] [--threads N] --output FILE.json

Output JSON (``FORMAT`` in ``benchmarks/README.md``): ``config``, ``size``, ``device``, ``threads``,
``objectives.<name>.{step_s_median, step_s_q25, step_s_q75, n_steps}`` (seconds),
``wall_ratio["<name>/mlm"]``, ``model_flops_ratio["<name>/mlm"]``, and ``details`` (date, load,
shapes, what was timed).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import threading
import time
from datetime import datetime, timezone
from pathlib import Path
from types import SimpleNamespace
from typing import Any

REFERENCE = "mlm"


def cpu_name() -> str:
    """The CPU's model name (``/proc/cpuinfo``), else ``platform.processor()``."""
    try:
        for line in open("/proc/cpuinfo", encoding="utf-8"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def _load_average() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def _overrides(pairs: list[str]) -> dict[str, Any]:
    """``--config KEY=VALUE`` pairs as a mapping (values parsed as YAML, as ``taco plan``'s fallback)."""
    import yaml

    out: dict[str, Any] = {}
    for kv in pairs:
        if "=" not in kv:
            raise ValueError(f"--config {kv!r}: expected KEY=VALUE")
        k, v = kv.split("=", 1)
        out[k] = yaml.safe_load(v)
    return out


def default_objectives(config: dict[str, Any], size: str) -> list[str]:
    """The objectives of ``size``'s runs in the configuration (first appearance order), MLM first."""
    from taco.workflow import config as wc

    names = [r.objective for r in wc.runs(config) if r.size == size]
    return [REFERENCE] + [n for n in dict.fromkeys(names) if n != REFERENCE]


def synthetic_blocks(root: Path, vocab_size: int, seq_len: int, rows: int, seed: int = 0) -> Path:
    """A ``taco pack``-shaped folder (``train`` split of ``input_ids`` (rows, seq_len), ``tokenizer/``
    of ``vocab_size`` entries) at ``root``; ids 5.. drawn from a Zipf law (rank^-1), framed [CLS] ... [SEP]."""
    import datasets
    import numpy as np
    from transformers import BertTokenizerFast

    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(vocab_size - 5)]
    tok = BertTokenizerFast(vocab={w: i for i, w in enumerate(words)}, do_lower_case=True)
    rng = np.random.default_rng(seed)
    p = 1.0 / np.arange(1, vocab_size - 4)
    ids = rng.choice(np.arange(5, vocab_size), size=(rows, seq_len), p=p / p.sum())
    ids[:, 0], ids[:, -1] = tok.cls_token_id, tok.sep_token_id
    root.mkdir(parents=True, exist_ok=True)
    datasets.DatasetDict({"train": datasets.Dataset.from_dict({"input_ids": ids.tolist()})}).save_to_disk(str(root))
    tok.save_pretrained(str(root / "tokenizer"))
    return root


def _pretrain_argv(config: dict[str, Any], size: str, objective: str, blocks: Path, work: Path,
                   device: str) -> list[str]:
    """The workflow's ``taco pretrain`` arguments for ``size``/``objective`` (last budget), without the
    launcher, ``--eval-every`` and saving; then this benchmark's paths."""
    from taco.workflow.commands import Commands
    from taco.workflow import config as wc

    step = str(wc.budgets(config, size)[-1])
    words = Commands(config).pretrain_args(SimpleNamespace(size=size, objective=objective, step=step,
                                                           fraction="1.0", pseed=""))
    words = words[words.index("pretrain") + 1:]  # drop "-m [torch.distributed.run ...] taco pretrain"
    if "--eval-every" in words:
        i = words.index("--eval-every")
        del words[i:i + 2]
    return words + ["--blocks", str(blocks), "--output", str(work / objective / "out"),
                    "--state-dir", str(work / objective / "state"), "--save-every", "0",
                    "--logging-steps", str(config["pretrain"]["logging_steps"]), "--no-progress",
                    "--report-to", "none", "--device", device]


class _Turns:
    """Who runs now: threads wait at step boundaries for their name; ``schedule`` is a list of
    (name, steps, recorded) blocks run in order."""

    def __init__(self, schedule: list[tuple[str, int, bool]], expected: int):
        self.cond = threading.Condition()
        self.expected = expected  # no step runs before every thread waits (set-ups not concurrent with steps)
        self.schedule = schedule
        self.index = 0
        self.left = schedule[0][1] if schedule else 0
        self.error: BaseException | None = None
        self.ready: set[str] = set()

    def current(self) -> tuple[str, int, bool] | None:
        return self.schedule[self.index] if self.index < len(self.schedule) else None

    def wait_turn(self, name: str) -> None:
        with self.cond:
            self.cond.wait_for(lambda: self.error is not None or (
                len(self.ready) == self.expected and (self.current() or ("",))[0] == name))
            if self.error is not None:
                raise RuntimeError("another objective's run failed") from self.error

    def step_done(self, name: str) -> tuple[bool, bool]:
        """One step of ``name``'s block is done: (was it recorded, is the block over)."""
        with self.cond:
            _, _, recorded = self.current()
            self.left -= 1
            return recorded, self.left == 0

    def next_block(self) -> None:
        with self.cond:
            self.index += 1
            cur = self.current()
            self.left = cur[1] if cur else 0
            self.cond.notify_all()

    def fail(self, exc: BaseException) -> None:
        with self.cond:
            if self.error is None:
                self.error = exc
            self.cond.notify_all()

    def arrive(self, name: str) -> None:
        with self.cond:
            self.ready.add(name)
            self.cond.notify_all()


def schedule(objectives: list[str], steps: int, warmup: int, block: int) -> list[tuple[str, int, bool]]:
    """The blocks ``(objective, steps, recorded)``: ``warmup`` unrecorded steps of each objective, then
    rounds of ``block`` steps each, the order reversed every round, until each has ``steps`` recorded."""
    out = [(o, warmup, False) for o in objectives if warmup > 0]
    done, r = 0, 0
    while done < steps:
        n = min(block, steps - done)
        out += [(o, n, True) for o in (objectives if r % 2 == 0 else objectives[::-1])]
        done, r = done + n, r + 1
    return out


def measure(configfiles: list[str], size: str | None = None, objectives: list[str] | None = None,
            steps: int = 20, warmup: int = 2, block: int = 5, blocks: str | None = None, device: str = "auto",
            threads: int | None = None, overrides: dict[str, Any] | None = None,
            workdir: str | None = None) -> dict[str, Any]:
    """Measure the Trainer step of each objective side by side (module docstring) and return the result.

    Args:
        configfiles: workflow configuration files, merged as ``taco plan`` / Snakemake do.
        size: a key of ``pretrain.sizes`` (default: the size of the first ``pretrain.runs`` entry).
        objectives: objective names (default: those of ``size``'s runs); MLM, the reference of the
            ratios, is always measured.
        steps: recorded steps per objective (>= 1); warmup: unrecorded steps per objective first (>= 1:
            the first step holds the Trainer's set-up); block: steps per turn (>= 1).
        blocks: a ``taco pack`` output to train on (default: synthetic blocks at the config's shapes).
        device: ``auto`` (CUDA if available) or ``cpu``.
        threads: torch CPU threads (default: ``pretrain.sizes.<size>.threads``, as the workflow's
            ``OMP_NUM_THREADS``).
        overrides: top-level config overrides (``--config KEY=VALUE``).
        workdir: scratch folder (default: a temporary one, removed afterwards).

    Returns:
        The JSON-ready dict of the module docstring; step times in seconds.

    Raises:
        ValueError: a bad count, an unknown size or objective (names the option or config key);
        the errors of ``taco.workflow.plan.load_config`` and ``taco.training.pretrain.make_segment_plan``.
    """
    for name, value in (("--steps", steps), ("--warmup", warmup), ("--block", block)):
        if value < 1:
            raise ValueError(f"{name} must be >= 1, got {value}")
    from taco.workflow.plan.command import load_config
    from taco.workflow.plan.costs import vocab_size

    config = load_config(list(configfiles), overrides or {})
    sizes = config["pretrain"]["sizes"]
    size = size or config["pretrain"]["runs"][0]["size"]
    if size not in sizes:
        raise ValueError(f"--size {size!r}: not a key of pretrain.sizes ({', '.join(sizes)})")
    objectives = list(objectives) if objectives else default_objectives(config, size)
    if REFERENCE not in objectives:
        objectives = [REFERENCE] + objectives
    from taco.objectives import OBJECTIVE_SPECS

    unknown = [o for o in objectives if o not in OBJECTIVE_SPECS]
    if unknown:
        raise ValueError(f"--objectives: unknown {', '.join(unknown)} (valid: {', '.join(OBJECTIVE_SPECS)})")
    s = sizes[size]
    threads = int(threads or s.get("threads") or 1)

    import numpy as np
    import torch

    threads_before = torch.get_num_threads()
    torch.set_num_threads(threads)
    tmp = None
    if workdir is None:
        tmp = tempfile.TemporaryDirectory(prefix="step_time-")
        workdir = tmp.name
    work = Path(workdir)
    try:
        if blocks is None:
            micro = int(s["per_device_batch_size"]) * int(s["grad_accum"])
            data = synthetic_blocks(work / "blocks", vocab_size(config), int(config["max_seq_length"]),
                                    rows=micro * (warmup + steps + 2), seed=int(config["seed"]))
            data_note = "synthetic (Zipf ids)"
        else:
            data, data_note = Path(blocks), str(blocks)
        runs = {o: _setup(config, size, o, data, work, device) for o in objectives}
        max_steps = runs[REFERENCE]["plan"].max_steps
        if warmup + steps > max_steps:
            raise ValueError(f"--warmup {warmup} + --steps {steps} exceed pretrain.sizes.{size}.max_steps {max_steps}")
        times, cpu = _interleave(runs, schedule(objectives, steps, warmup, block))
        used_threads = torch.get_num_threads()
    finally:
        torch.set_num_threads(threads_before)
        if tmp is not None:
            tmp.cleanup()

    from taco.flops import pretrain_flops_per_token

    plan0 = runs[REFERENCE]["plan"]
    cuda = runs[REFERENCE]["cuda"]
    fpt = {o: pretrain_flops_per_token(s["preset"], r["plan"].seq_len, o, vocab_size=r["plan"].vocab_size,
                                       options=r["plan"].objective_params,
                                       architecture=s.get("architecture", "bert")) for o, r in runs.items()}
    stats = {o: {"step_s_median": float(np.median(t)), "step_s_q25": float(np.percentile(t, 25)),
                 "step_s_q75": float(np.percentile(t, 75)), "n_steps": len(t)} for o, t in times.items()}
    ref = stats[REFERENCE]["step_s_median"]
    others = [o for o in objectives if o != REFERENCE]
    return {
        "config": ",".join(str(c) for c in configfiles),
        "size": size,
        "architecture": s.get("architecture", "bert"),
        "device": (f"cuda ({torch.cuda.get_device_name(0)})" if cuda
                   else f"cpu ({cpu_name()}, {os.cpu_count()} cores)"),
        "threads": used_threads,
        "objectives": stats,
        "wall_ratio": {f"{o}/{REFERENCE}": stats[o]["step_s_median"] / ref for o in others},
        "model_flops_ratio": {f"{o}/{REFERENCE}": fpt[o] / fpt[REFERENCE] for o in others},
        "details": {
            "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "load_average": {"start": runs[REFERENCE]["load"], "end": _load_average()},
            "torch": torch.__version__,
            "step": "Trainer step (on_step_end to on_step_end: data + collate + forward + backward + clip + "
                    "AdamW + scheduler + logging)",
            "preset": s["preset"], "seq_len": plan0.seq_len, "vocab_size": plan0.vocab_size,
            "per_device_batch_size": int(s["per_device_batch_size"]), "grad_accum": int(s["grad_accum"]),
            "processes": 1, "num_gpus_in_config": int(s["num_gpus"]), "precision": plan0.precision,
            "blocks": data_note, "warmup_steps": warmup, "block": block,
            "model_flops_per_token": fpt,
            "step_s": times,
            "cpu_s_median": {o: float(np.median(c)) for o, c in cpu.items()},
            "cpu_ratio": {f"{o}/{REFERENCE}": float(np.median(cpu[o]) / np.median(cpu[REFERENCE])) for o in others},
            "step_cpu_s": cpu,
        },
    }


def _setup(config: dict[str, Any], size: str, objective: str, blocks: Path, work: Path, device: str) -> dict[str, Any]:
    """Plan (``make_segment_plan``), model, collator and Trainer of one objective, as ``taco pretrain`` builds them."""
    import torch
    from transformers import AutoTokenizer, set_seed
    from datasets import load_from_disk

    from taco.model.collator import PreTrainingCollator
    from taco.model.configs import encoder_config, special_token_ids
    from taco.model.modeling import pretraining_model_class
    from taco.training.pretrain import build_parser, make_segment_plan
    from taco.training.pretrain_trainer import _SeededMaskingCollator, _make_trainer_classes, _training_arguments

    args = build_parser().parse_args(_pretrain_argv(config, size, objective, blocks, work, device))
    plan = make_segment_plan(args)
    tokenizer = AutoTokenizer.from_pretrained(str(plan.blocks / "tokenizer"))
    train = load_from_disk(str(plan.blocks))["train"].select_columns(["input_ids"])
    set_seed(args.seed)
    config = encoder_config(args.size, plan.vocab_size, args.architecture, special_token_ids(tokenizer),
                            attn_implementation=args.attn_implementation)  # the size's encoder family
    model = pretraining_model_class(args.architecture)(config, objective=args.objective, **plan.objective_params)
    targs = _training_arguments(plan, plan.state_dir)
    inner = PreTrainingCollator(tokenizer, mlm_probability=args.mlm_probability, objective=args.objective,
                         objective_params=plan.objective_params)
    collator = _SeededMaskingCollator(inner, args.seed, targs.process_index)
    PretrainTrainer, _, _ = _make_trainer_classes()
    tokens_per_step = args.per_device_batch_size * args.grad_accum * targs.world_size * plan.seq_len
    trainer = PretrainTrainer(model=model, args=targs, train_dataset=train, data_collator=collator,
                              processing_class=tokenizer, tokens_per_step=tokens_per_step)
    cuda = torch.cuda.is_available() and device != "cpu"
    return {"plan": plan, "trainer": trainer, "cuda": cuda, "load": _load_average()}


def _interleave(runs: dict[str, dict[str, Any]],
                blocks: list[tuple[str, int, bool]]) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Run each objective's ``Trainer.train()`` in its own thread, taking turns by ``blocks``; returns the
    recorded step times per objective: wall-clock and the process's CPU time (s; only one thread runs
    at a time, so the process's CPU time during a step is that step's)."""
    import torch
    from transformers import TrainerCallback
    from transformers.trainer_callback import PrinterCallback

    turns = _Turns(blocks, len(runs))
    times: dict[str, list[float]] = {o: [] for o in runs}
    cpu: dict[str, list[float]] = {o: [] for o in runs}
    total = {o: sum(n for name, n, _ in blocks if name == o) for o in runs}

    class Timer(TrainerCallback):
        def __init__(self, name: str, cuda: bool):
            self.name, self.cuda, self.t0, self.c0, self.done = name, cuda, 0.0, 0.0, 0

        def on_train_begin(self, args, state, control, **kw):
            turns.arrive(self.name)
            turns.wait_turn(self.name)
            self.t0, self.c0 = time.perf_counter(), time.process_time()

        def on_step_end(self, args, state, control, **kw):
            if self.cuda:
                torch.cuda.synchronize()
            t, c = time.perf_counter(), time.process_time()
            recorded, over = turns.step_done(self.name)
            if recorded:
                times[self.name].append(t - self.t0)
                cpu[self.name].append(c - self.c0)
            self.done += 1
            if self.done >= total[self.name]:
                control.should_training_stop = True  # hands over in on_train_end, once train() is done
                return
            if over:
                turns.next_block()
                turns.wait_turn(self.name)
            self.t0, self.c0 = time.perf_counter(), time.process_time()

        def on_train_end(self, args, state, control, **kw):
            if self.done >= total[self.name]:
                turns.next_block()

    def target(name: str) -> None:
        try:
            runs[name]["trainer"].train()
        except BaseException as exc:  # noqa: BLE001 - handed to the main thread
            turns.fail(exc)

    threads = []
    for name, r in runs.items():
        r["trainer"].remove_callback(PrinterCallback)  # the log dicts on stdout (disable_tqdm): not printed here
        r["trainer"].add_callback(Timer(name, r["cuda"]))
        th = threading.Thread(target=target, args=(name,), name=f"step_time-{name}", daemon=True)
        th.start()
        with turns.cond:  # one set-up at a time: the next thread starts once this one waits for its turn
            turns.cond.wait_for(lambda: name in turns.ready or turns.error is not None)
        threads.append(th)
    for th in threads:
        th.join()
    if turns.error is not None:
        raise turns.error
    return times, cpu


def format_lines(result: dict[str, Any]) -> list[str]:
    """The printed summary: one header line, one line per objective, one per ratio."""
    d = result["details"]
    load = d["load_average"]
    lines = [f"step_time {d['date']} | {result['device']}, {result['threads']} thread(s) | load average "
             f"{load['start']} -> {load['end']} | torch {d['torch']} | {result['config']} size {result['size']}: "
             f"{d['preset']}, {d['per_device_batch_size']} x {d['seq_len']} x accum {d['grad_accum']}, "
             f"{d['precision']}, vocab {d['vocab_size']}, blocks {d['blocks']} | median [IQR] of the Trainer step, "
             f"alternating blocks of {d['block']} after {d['warmup_steps']} warm-up steps"]
    for o, st in result["objectives"].items():
        lines.append(f"  {o:<18} {st['step_s_median'] * 1000:9.1f} ms/step [{st['step_s_q25'] * 1000:.1f}, "
                     f"{st['step_s_q75'] * 1000:.1f}] (n {st['n_steps']}), process CPU "
                     f"{d['cpu_s_median'][o] * 1000:.1f} ms/step")
    for k, v in result["wall_ratio"].items():
        lines.append(f"  ratio {k}: wall-clock {v:.3f}x, process CPU time {d['cpu_ratio'][k]:.3f}x, "
                     f"model FLOPs {result['model_flops_ratio'][k]:.3f}x")
    return lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--configfile", nargs="+", required=True, help="workflow configuration file(s), merged in order")
    p.add_argument("--config", nargs="*", default=[], metavar="KEY=VALUE", help="top-level overrides (data_root=...)")
    p.add_argument("--size", default=None, help="a key of pretrain.sizes (default: the first run's size)")
    p.add_argument("--objectives", default=None, help="comma-separated (default: the size's objectives; mlm always)")
    p.add_argument("--steps", type=int, default=20, help="recorded steps per objective (default 20)")
    p.add_argument("--warmup", type=int, default=2, help="unrecorded steps per objective first (default 2)")
    p.add_argument("--block", type=int, default=5, help="steps per turn (default 5)")
    p.add_argument("--blocks", default=None, help="a taco pack output (default: synthetic blocks at the shapes)")
    p.add_argument("--device", choices=("auto", "cpu"), default="auto")
    p.add_argument("--threads", type=int, default=None, help="torch threads (default: the size's threads)")
    p.add_argument("--workdir", default=None, help="scratch folder (default: a temporary one)")
    p.add_argument("--output", required=True, help="the result JSON")
    a = p.parse_args(argv)
    try:
        result = measure(a.configfile, a.size, a.objectives.split(",") if a.objectives else None, a.steps,
                         a.warmup, a.block, a.blocks, a.device, a.threads, _overrides(a.config), a.workdir)
    except (ValueError, FileNotFoundError, FileExistsError) as exc:
        print(f"step_time: error: {exc}", file=sys.stderr)
        return 2
    Path(a.output).parent.mkdir(parents=True, exist_ok=True)
    Path(a.output).write_text(json.dumps(result, indent=2) + "\n")
    print("\n".join(format_lines(result)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
