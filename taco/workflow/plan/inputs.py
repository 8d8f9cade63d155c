"""What ``taco plan`` reads besides the configuration: the measured rates of a device check, the run's
vocabulary size, its GLUE tasks and their split sizes; and the error it stops with (:class:`PlanError`).
The costs built from them: :mod:`taco.workflow.plan.costs`."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from taco.flops import BERT_VOCAB_SIZE, finetune_flops_per_token
from taco.registry import GLUE_TASK_SPECS, TC_OBJECTIVES
from taco.workflow import config as wc

#: released (train, dev) split sizes of every registered task that has them
GLUE_SIZES: dict[str, tuple[int, int]] = {n: t.sizes for n, t in GLUE_TASK_SPECS.items() if t.sizes}


class PlanError(ValueError):
    """A configuration or device-check file the plan cannot use (the CLI exits 2)."""


def load_device_check(path: str | os.PathLike | None) -> dict[str, Any] | None:
    """Measured rates from a device-check JSON (GPU mode only); None if absent or a CPU run.

    Returns ``{"source": path, "date": ..., "gpu": ..., "pretrain_flops_per_s": {(preset, family):
    FLOP/s}, "finetune_flops_per_s": {preset: FLOP/s}, "job_overhead_s": s or None}``.
    Raises PlanError for an unreadable file given explicitly.
    """
    if path is None:
        return None
    p = Path(path)
    if not p.is_file():
        return None
    try:
        data = json.loads(p.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise PlanError(f"--device-check {p}: {exc}") from None
    if data.get("schema") != "taco-device-check/1":
        raise PlanError(f"--device-check {p}: not a device-check result (schema {data.get('schema')!r})")
    if data.get("device_mode") != "cuda":
        return None
    parts = data.get("parts", {})
    env = parts.get("env", {}).get("result", {})
    rates: dict[tuple[str, str], float] = {}
    for key, row in parts.get("mfu", {}).get("result", {}).get("runs", {}).items():
        if isinstance(row, dict) and row.get("tokens_per_s") and row.get("flops_per_token"):
            preset, objective = key.split("/", 1)
            rates[(preset, measured_kind(objective))] = row["tokens_per_s"] * row["flops_per_token"]
    ft_rates: dict[str, float] = {}
    overhead = None
    ft = parts.get("finetune", {}).get("result", {})
    hp = ft.get("hyperparameters") or {}
    preset = parts.get("resume", {}).get("result", {}).get("setting", {}).get("size")
    if ft.get("metrics_wall_time_s") and ft.get("n_train") and preset and hp.get("max_length"):
        epochs = int(hp.get("epochs") or 1)
        tokens = epochs * ft["n_train"] * hp["max_length"]
        ft_rates[preset] = tokens * finetune_flops_per_token(preset, hp["max_length"]) / ft["metrics_wall_time_s"]
        if ft.get("wall_s"):
            overhead = max(0.0, ft["wall_s"] - ft["metrics_wall_time_s"])
    return {"source": str(p), "date": env.get("date_utc") or data.get("started_utc"), "gpu": env.get("gpu"),
            "pretrain_flops_per_s": rates, "finetune_flops_per_s": ft_rates, "job_overhead_s": overhead}


def measured_kind(objective: str) -> str:
    """Which measured step rate of a device check stands for ``objective``: ``taco`` (a TC loss in the step)
    or ``mlm`` (every other objective)."""
    return "taco" if objective in TC_OBJECTIVES else "mlm"


def _resolved(path: str | None, config: dict[str, Any]) -> str | None:
    """``path`` with ``{data_root}`` filled in (:func:`taco.workflow.config.substitute_root`); None when it
    cannot be (the plan then uses its defaults: the configuration check names the key)."""
    try:
        return wc.substitute_root(path, config)
    except wc.ConfigError:
        return None


def vocab_size(config: dict[str, Any]) -> int:
    """Vocabulary size V: the trained size, the lines of a vocab file, else bert-base-uncased's."""
    tok = config["tokenizer"]
    if tok["kind"] == "train":
        return int(tok["vocab_size"])
    if tok["kind"] == "vocab":
        path = _resolved(tok.get("vocab_file"), config)
        if path and os.path.isfile(path):
            with open(path, encoding="utf-8") as fh:
                return sum(1 for _ in fh)
    return BERT_VOCAB_SIZE


def tasks_of(config: dict[str, Any]) -> list[str]:
    """The GLUE tasks that will run (a local folder's absent tasks dropped when the folder exists)."""
    g = config["glue"]
    if g["source"] == "local":
        d = _resolved(g.get("data_dir"), config)
        if d and os.path.isdir(d):
            from taco.data.glue import available_local_tasks

            return wc.effective_tasks(config, available_local_tasks(d))
    return list(g["tasks"])


def task_sizes(config: dict[str, Any], task: str) -> tuple[int, int]:
    """(train, dev) examples fine-tuning uses for ``task``: GLUE's (or the synthetic task's) sizes,
    capped by ``finetune.max_train_samples`` / ``max_eval_samples`` (per dev split; MNLI has two)."""
    ft = config["finetune"]
    if config["glue"]["source"] == "synthetic":
        sizes = GLUE_TASK_SPECS[task].synthetic_sizes
        if not sizes:
            raise PlanError(f"glue.tasks: task {task!r} has no synthetic stand-in (GlueTask.synthetic_sizes in "
                            "taco/registry.py); glue.source synthetic cannot run it")
        n_dev_splits = len(GLUE_TASK_SPECS[task].dev_splits)
        n_train, n_dev = sizes[0], sizes[1] * n_dev_splits
    else:
        if task not in GLUE_SIZES:
            raise PlanError(f"glue.tasks: task {task!r} has no released split sizes in its registry entry "
                            "(taco.registry.GLUE_TASK_SPECS, field sizes); the plan cannot cost it")
        n_train, n_dev = GLUE_SIZES[task]
        n_dev_splits = len(GLUE_TASK_SPECS[task].dev_splits)
    if ft.get("max_train_samples"):
        n_train = min(n_train, int(ft["max_train_samples"]))
    if ft.get("max_eval_samples"):
        n_dev = min(n_dev, int(ft["max_eval_samples"]) * n_dev_splits)
    return n_train, n_dev


def probe_examples(config: dict[str, Any]) -> int:
    """Examples the GLUE probe encodes and fits at one point: per task of ``pretrain.glue_probe.tasks`` its
    train split and first dev split, capped at ``max_train_samples`` / ``max_eval_samples``; 0 without tasks."""
    gp = config["pretrain"].get("glue_probe") or {}
    total = 0
    for task in gp.get("tasks") or []:
        if config["glue"]["source"] == "synthetic":
            n_train, n_dev = GLUE_TASK_SPECS[task].synthetic_sizes or (0, 0)
        else:
            if task not in GLUE_SIZES:
                raise PlanError(f"pretrain.glue_probe.tasks: task {task!r} has no released split sizes")
            n_train, n_dev = GLUE_SIZES[task]
            n_dev //= len(GLUE_TASK_SPECS[task].dev_splits)
        total += min(n_train, int(gp.get("max_train_samples") or n_train))
        total += min(n_dev, int(gp.get("max_eval_samples") or n_dev))
    return total


def probe_points(config: dict[str, Any], size: str) -> list[int]:
    """The steps of one pre-training run of ``size`` at which the GLUE probe runs: every multiple of
    ``pretrain.glue_probe.every`` up to the last budget, and each budget; [] without probe tasks."""
    gp = config["pretrain"].get("glue_probe") or {}
    if not gp.get("tasks"):
        return []
    steps = wc.budgets(config, size)
    every = int(gp.get("every") or 0)
    return sorted(set(steps) | (set(range(every, steps[-1] + 1, every)) if every > 0 else set()))
