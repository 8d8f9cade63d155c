"""The numbers of ``taco plan``: jobs, model FLOPs, GPU-hours, disk and time limits of a configuration.

Part of ``taco plan`` (the command: :mod:`taco.workflow.plan.command`; its inputs: :mod:`taco.workflow.plan.inputs`; Markdown / JSON /
one-line output: :mod:`taco.workflow.plan.render`). :func:`build_plan` returns the plan as a
JSON-serialisable dict.

Where the numbers come from
---------------------------
- Model FLOPs: ``taco.flops`` (6N + attention term per token, what the step computes with
  gradient; the formula is stated there; wall-clock per step: ``benchmarks/step_time.py``).
  Pre-training tokens = last budget x global batch x ``max_seq_length`` per run. Fine-tuning
  tokens = epochs x (train examples) x ``finetune.max_length`` (an upper bound: batches are
  padded only to their longest example) plus one forward pass over the dev examples per epoch.
- Time: from **measured** throughput where a device-check result exists (``--device-check``,
  default ``benchmarks/results/device_check.json``, written by ``benchmarks/device_check.sh`` on a
  GPU): the achieved model FLOP/s of the pre-training step of the same preset (and objective
  family: MLM-like or TACO-like), and of the fine-tuning run (its wall time over its FLOPs by the
  same count, start-up and evaluation included). Otherwise from a **stated utilisation** of the
  GPU's peak (``--pretrain-utilization``, ``--finetune-utilization``, ``--peak-tflops``; the
  defaults below are assumptions, not measurements). Several GPUs per job: linear scaling assumed.
- The frozen-feature GLUE probe (``pretrain.glue_probe``): its points per run times the examples it encodes
  and fits at a point, at a MEASURED rate (:data:`PROBE_SECONDS_PER_EXAMPLE`), in the run's GPU-hours and
  in the CPU-hours of a CPU configuration.
- Disk: ``taco.data.disk.data_disk_plan`` (the data stage's estimates, one implementation) for the
  corpus, Hub cache, tokenizer and packed blocks; checkpoints here: a budget checkpoint holds the
  fp32 weights (4 bytes/parameter, decoder tied) and the AdamW state (two fp32 moments, 8
  bytes/parameter) in ``trainer_state/``.
- Time limits: ``set-resources: <rule>: runtime`` of ``workflow/profiles/slurm/config.v8+.yaml``
  (minutes), which replaces the config's own ``runtime`` keys on a cluster.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from taco.families import DEFAULT_FAMILY
from taco.paper import ABLATION_OBJECTIVES, COMPARISON, TABLE4_OBJECTIVES
from taco.registry import GLUE_TASK_SPECS, budget_name
from taco.registry import CONTROL
from taco.workflow import config as wc
from taco.workflow import tuning_grid as tg
from taco.workflow import control as wctl
from taco.workflow.plan.inputs import (PlanError, measured_kind, load_device_check, probe_examples, probe_points,
                                      task_sizes, tasks_of, vocab_size)
from taco.flops import (
    H200_BF16_DENSE_TFLOPS,
    finetune_flops_per_token,
    parameter_count,
    pretrain_flops_per_token,
)

REPO = Path(__file__).resolve().parents[3]
SLURM_PROFILE = REPO / "workflow" / "profiles" / "slurm" / "config.v8+.yaml"
DEVICE_CHECK = REPO / "benchmarks" / "results" / "device_check.json"

#: ASSUMED shares of the peak when nothing was measured (not measurements): pre-training of BERT
#: with bf16 autocast at batch >= 128 x 256; fine-tuning at batch 32 x 128 with an evaluation per
#: epoch and many short jobs. Override with --pretrain-utilization / --finetune-utilization.
DEFAULT_PRETRAIN_UTILIZATION = 0.35
DEFAULT_FINETUNE_UTILIZATION = 0.10
#: ASSUMED seconds per process start of a fine-tuning or dynamics job (imports, model and data
#: loading) when no device check measured it; --job-overhead-s overrides
DEFAULT_JOB_OVERHEAD_S = 30.0

#: GLUE train / dev examples per task (dev: matched + mismatched for MNLI) and labels per task for
#: the classifier head's FLOPs (STS-B is a regression: 1 output), from each task's registry entry
NUM_LABELS: dict[str, int] = {n: t.num_labels for n, t in GLUE_TASK_SPECS.items()}

#: what each table and figure needs: (role, objectives, fractions ("full"/"reduced"), budgets
#: (paper budget names, or "all" = every fine-tuned budget of the role), score keys' tasks or None
#: = every task). From taco.report.tables / figures (docstrings and builders).
TARGET_NEEDS: dict[str, list[tuple[str, tuple[str, ...], tuple[str, ...], tuple[str, ...] | str,
                                   tuple[str, ...] | None]]] = {
    "table1": [("small", COMPARISON[:1], ("full",), ("250k",), None),
               ("small", COMPARISON[1:], ("full",), ("50k", "250k"), None)],
    "table2": [("small", COMPARISON, ("full", "reduced"), ("250k",), ("mnli", "qqp", "qnli", "sst2"))],
    "table3": [("base", COMPARISON, ("full",), "all", None)],
    "table4": [("base", TABLE4_OBJECTIVES, ("full",), ("last",), None)],
    "ablation": [("small", ABLATION_OBJECTIVES, ("full",), "all", None)],
    "figure5": [("small", COMPARISON, ("full",), "all", None)],
    "data_efficiency": [("small", COMPARISON, ("full", "reduced"), "all", None)],
}


# ------------------------------------------------------------------------------------------------
# jobs
# ------------------------------------------------------------------------------------------------
def finetune_jobs_per_checkpoint(config: dict[str, Any], n_tasks: int) -> int:
    """Fine-tuning processes (jobs) per checkpoint: 1 with ``finetune.tasks_per_job: all`` (every task and
    seed in one; not with ``mnli_start``), else one per task (``seeds_per_job: all``) or per task and seed."""
    ft = config["finetune"]
    if ft.get("tasks_per_job", "one") == "all" and not ft.get("mnli_start", False):
        return 1 if n_tasks else 0
    return n_tasks * (len(ft["seeds"]) if ft.get("seeds_per_job", "one") == "one" else 1)


def compute_jobs(config: dict[str, Any], tasks: list[str] | None = None) -> dict[str, int]:
    """Jobs of the rules that carry the compute, for a complete run from nothing, from the same
    grid functions the workflow uses: ``pack`` (one per data fraction), ``pretrain`` (one segment
    per budget and run), ``pretrain_control`` (``taco init``: one no-pre-training control per size and
    pre-training seed, ``pretrain.control``), ``finetune`` (the controls' included; per checkpoint
    :func:`finetune_jobs_per_checkpoint`), ``dynamics`` (per checkpoint of its objectives)."""
    tasks = tasks_of(config) if tasks is None else tasks
    runs = wc.runs(config)
    per_ckpt = finetune_jobs_per_checkpoint(config, len(tasks))
    control_runs = len(wctl.finetuned_checkpoints(config)) * per_ckpt
    return {
        "pack": len({r.fraction_str for r in runs}),
        "pretrain": sum(len(wc.budgets(config, r.size)) for r in runs),
        "pretrain_trial": len(tg.tuning_arms(config)) * tg.tuning_trial_count(config),
        "pretrain_control": len(wctl.checkpoints(config)),
        "finetune": sum(len(wc.finetune_budgets(config, r.size, r.fraction)) for r in runs
                         if wc.finetuned(config, r)) * per_ckpt + control_runs,
        "dynamics": len(wc.dynamics_checkpoints(config)),
        # finetune.tuning: one job per (checkpoint, trial), every task and trial seed in it; a choice per checkpoint
        "finetune_trial": _finetune_checkpoints(config) * len(_finetune_trials(config)),
        "finetune_choice": _finetune_checkpoints(config) if _finetune_trials(config) else 0,
    }


def _finetune_trials(config: dict[str, Any]) -> list[dict[str, Any]]:
    """The settings of ``finetune.tuning``'s grid ([] when off)."""
    t = config["finetune"].get("tuning") or {}
    if not t.get("enabled"):
        return []
    from taco.evaluation.finetune_tuning import trial_settings

    return trial_settings(t["space"])


def _finetune_checkpoints(config: dict[str, Any]) -> int:
    """Checkpoints that are fine-tuned, the controls included."""
    return (sum(len(wc.finetune_budgets(config, r.size, r.fraction)) for r in wc.runs(config) if wc.finetuned(config, r))
            + len(wctl.finetuned_checkpoints(config)))


# ------------------------------------------------------------------------------------------------
# costs
# ------------------------------------------------------------------------------------------------
class Rates:
    """FLOP/s per kind of work: measured (device check) where it exists, else utilisation x peak."""

    def __init__(self, measured: dict[str, Any] | None, peak_tflops: float, pretrain_util: float,
                 finetune_util: float, job_overhead_s: float | None):
        for name, u in (("--pretrain-utilization", pretrain_util), ("--finetune-utilization", finetune_util)):
            if not 0 < u <= 1:
                raise PlanError(f"{name} must be in (0, 1], got {u}")
        if peak_tflops <= 0:
            raise PlanError(f"--peak-tflops must be positive, got {peak_tflops}")
        self.measured = measured
        self.peak = peak_tflops * 1e12
        self.pretrain_util, self.finetune_util = pretrain_util, finetune_util
        measured_overhead = (measured or {}).get("job_overhead_s")
        if job_overhead_s is not None:
            self.overhead, self.overhead_source = job_overhead_s, "given (--job-overhead-s)"
        elif measured_overhead is not None:
            self.overhead, self.overhead_source = measured_overhead, f"measured ({measured['source']})"
        else:
            self.overhead, self.overhead_source = DEFAULT_JOB_OVERHEAD_S, "assumed"

    def pretrain(self, preset: str, objective: str) -> tuple[float, str]:
        """(FLOP/s, where it comes from) of pre-training ``preset`` with ``objective``."""
        m = (self.measured or {}).get("pretrain_flops_per_s", {}).get((preset, measured_kind(objective)))
        if m:
            return m, f"measured {preset}/{measured_kind(objective)} step ({self.measured['source']})"
        return self.pretrain_util * self.peak, f"assumed {self.pretrain_util:.0%} of {self.peak / 1e12:g} TFLOP/s"

    def finetune(self, preset: str) -> tuple[float, str]:
        """(FLOP/s, where it comes from) of fine-tuning ``preset``."""
        m = (self.measured or {}).get("finetune_flops_per_s", {}).get(preset)
        if m:
            return m, f"measured {preset} fine-tuning run ({self.measured['source']})"
        return self.finetune_util * self.peak, f"assumed {self.finetune_util:.0%} of {self.peak / 1e12:g} TFLOP/s"


def _processes(s: dict[str, Any]) -> int:
    """Training processes of one pre-training job of size ``s``: max(num_gpus, 1) per node x num_nodes."""
    return max(1, int(s["num_gpus"])) * int(s["num_nodes"])  # the schema fills num_nodes (default 1)


def _global_batch(s: dict[str, Any]) -> int:
    return int(s["per_device_batch_size"]) * int(s["grad_accum"]) * _processes(s)


#: MEASURED seconds of the frozen-feature GLUE probe (pretrain.glue_probe) per example it encodes and fits
#: (train + dev, over its tasks): 49-59 CPU-s per probed point of cola, sst2, mrpc, stsb, rte at 5,000 / 2,000
#: examples (~25,000 examples) on BERT-tiny, one core of the 2-core development VM, 2026-12-06
#: (``glue_probe_cpu_seconds`` of the cpu-real E1 runs' eval.json). Most of it is scikit-learn's fits, on the
#: CPU whatever the device, so the plan uses it for every preset (a GPU encodes faster: an upper bound there).
PROBE_SECONDS_PER_EXAMPLE = 55.0 / 25_000
PROBE_RATE_SOURCE = "measured: ~55 CPU-s per point of 5 tasks, ~25,000 examples, BERT-tiny (2026-12-06)"


def pretrain_costs(config: dict[str, Any], rates: Rates) -> list[dict[str, Any]]:
    """Per pre-training run: steps, tokens, FLOPs, GPU-hours, wall hours of the longest segment; the GLUE
    probe's points and hours (:data:`PROBE_SECONDS_PER_EXAMPLE`; the job holds its GPUs meanwhile, so its
    hours x GPUs are in the GPU-hours and its share in the longest segment)."""
    V, L = vocab_size(config), int(config["max_seq_length"])
    options = {"tc_num_negatives": int(config["pretrain"]["tc"]["num_negatives"]),
               "mlm_probability": float(config["pretrain"]["mlm_probability"])}
    out = []
    for r in wc.runs(config):
        s = config["pretrain"]["sizes"][r.size]
        preset, steps = s["preset"], wc.budgets(config, r.size)
        fpt = pretrain_flops_per_token(preset, L, r.objective, vocab_size=V, options=options,
                                       architecture=s.get("architecture", DEFAULT_FAMILY))
        per_step = _global_batch(s) * L * fpt
        rate, source = rates.pretrain(preset, r.objective)
        gpus = _processes(s)
        segments = [b - a for a, b in zip([0] + steps[:-1], steps)]
        points = probe_points(config, r.size)
        probe_h = len(points) * probe_examples(config) * PROBE_SECONDS_PER_EXAMPLE / 3600
        bounds = list(zip([0] + steps[:-1], steps))
        longest = max(range(len(segments)), key=lambda i: segments[i])
        probe_longest_h = (sum(bounds[longest][0] < s <= bounds[longest][1] for s in points)
                           * probe_examples(config) * PROBE_SECONDS_PER_EXAMPLE / 3600)
        out.append({
            "size": r.size, "preset": preset, "objective": r.objective, "fraction": r.fraction,
            "steps": steps[-1], "global_batch": _global_batch(s), "tokens": steps[-1] * _global_batch(s) * L,
            "flops_per_token": fpt, "flops": steps[-1] * per_step, "gpus": gpus,
            "gpu_hours": steps[-1] * per_step / rate / 3600 + probe_h * gpus, "rate_source": source,
            "seconds_per_step": per_step / (rate * gpus), "longest_segment_steps": max(segments),
            "longest_segment_hours": max(segments) * per_step / (rate * gpus) / 3600 + probe_longest_h,
            "flops_per_step": per_step, "rate": rate, "glue_probe_points": len(points), "glue_probe_hours": probe_h,
        })
    return out


def tuning_costs(config: dict[str, Any], rates: Rates) -> list[dict[str, Any]]:
    """Per tuned arm (``pretrain.tuning``): its trials' steps, FLOPs and GPU-hours (each trial a run of
    ``horizon`` steps at the size's batch); [] when tuning is off."""
    arms = tg.tuning_arms(config)
    if not arms:
        return []
    n, horizon = tg.tuning_trial_count(config), int(config["pretrain"]["tuning"]["horizon"])
    V, L = vocab_size(config), int(config["max_seq_length"])
    options = {"tc_num_negatives": int(config["pretrain"]["tc"]["num_negatives"]),
               "mlm_probability": float(config["pretrain"]["mlm_probability"])}
    out = []
    for size, objective in arms:
        s = config["pretrain"]["sizes"][size]
        fpt = pretrain_flops_per_token(s["preset"], L, objective, vocab_size=V, options=options,
                                       architecture=s.get("architecture", DEFAULT_FAMILY))
        per_step = _global_batch(s) * L * fpt
        rate, source = rates.pretrain(s["preset"], objective)
        out.append({"size": size, "objective": objective, "trials": n, "steps": n * horizon,
                    "flops": n * horizon * per_step, "gpu_hours": n * horizon * per_step / rate / 3600,
                    "rate_source": source})
    return out


def finetune_job_cost(config: dict[str, Any], size: str, task: str, rates: Rates) -> dict[str, Any]:
    """One fine-tuning run (a checkpoint of ``pretrain.sizes.<size>``, one task, one seed): FLOPs and
    GPU-hours without the process start-up (added per process by the callers)."""
    L = int(config["finetune"]["max_length"])
    preset = config["pretrain"]["sizes"][size]["preset"]
    epochs = int(wc.finetune_hyperparameters(config, size)["epochs"])
    n_train, n_dev = task_sizes(config, task)
    fpt = finetune_flops_per_token(preset, L, NUM_LABELS.get(task, 2))
    flops = epochs * (n_train + n_dev / 3.0) * L * fpt  # evaluation: forward only, a third
    rate, source = rates.finetune(preset)
    return {"task": task, "epochs": epochs, "n_train": n_train, "n_dev": n_dev, "flops": flops,
            "gpu_hours": flops / rate / 3600, "rate_source": source}


def finetune_costs(config: dict[str, Any], tasks: list[str], rates: Rates) -> dict[str, Any]:
    """All fine-tuning: per run (checkpoints x tasks x seeds) and the total, start-up included. The
    no-pre-training controls (``pretrain.control``) are rows of their own (objective ``control``):
    the same fine-tuning of a model of the same shape."""
    seeds = config["finetune"]["seeds"]
    one = config["finetune"].get("seeds_per_job", "one") == "one"
    rows, total_flops, total_h, longest = [], 0.0, 0.0, 0.0
    grid = [(r.size, r.objective, r.fraction,
             wc.finetune_budgets(config, r.size, r.fraction) if wc.finetuned(config, r) else [])
            for r in wc.runs(config)]
    controls = [size for size, _ in wctl.finetuned_checkpoints(config)]
    grid += [(size, CONTROL, 1.0, [wctl.CONTROL_STEP] * controls.count(size))
             for size in wc.control_sizes(config)]
    for size, objective, fraction, ckpts in grid:
        per_task = {t: finetune_job_cost(config, size, t, rates) for t in tasks}
        processes = len(ckpts) * finetune_jobs_per_checkpoint(config, len(tasks))
        flops = len(ckpts) * len(seeds) * sum(c["flops"] for c in per_task.values())
        hours = (len(ckpts) * len(seeds) * sum(c["gpu_hours"] for c in per_task.values())
                 + processes * rates.overhead / 3600)
        # finetune.tuning: every trial on every task with the trials' seeds, its epochs against the default's
        trials = _finetune_trials(config)
        if trials:
            epochs0 = int(wc.finetune_hyperparameters(config, size)["epochs"])
            scale = sum(int(t.get("epochs", epochs0)) / epochs0 for t in trials)
            t_seeds = len(config["finetune"]["tuning"]["seeds"])
            flops += len(ckpts) * t_seeds * scale * sum(c["flops"] for c in per_task.values())
            hours += (len(ckpts) * t_seeds * scale * sum(c["gpu_hours"] for c in per_task.values())
                      + len(ckpts) * len(trials) * rates.overhead / 3600)
        if finetune_jobs_per_checkpoint(config, len(tasks)) == 1 and len(tasks) * len(seeds) > 1:  # one job per checkpoint
            job_h = len(seeds) * sum(c["gpu_hours"] for c in per_task.values()) + rates.overhead / 3600
        else:
            job_h = max((c["gpu_hours"] * (1 if one else len(seeds)) + rates.overhead / 3600)
                        for c in per_task.values()) if per_task else 0.0
        longest = max(longest, job_h)
        rows.append({"size": size, "objective": objective, "fraction": fraction, "checkpoints": len(ckpts),
                     "runs": len(ckpts) * len(tasks) * len(seeds), "flops": flops, "gpu_hours": hours,
                     "per_task": per_task})
        total_flops += flops
        total_h += hours
    return {"rows": rows, "flops": total_flops, "gpu_hours": total_h, "longest_job_hours": longest,
            "overhead_s": rates.overhead, "overhead_source": rates.overhead_source}


def checkpoint_bytes(preset: str, vocab: int) -> float:
    """Bytes of one budget checkpoint: fp32 weights (4/param) + AdamW moments (8/param)."""
    return 12.0 * parameter_count(preset, vocab)


#: synthetic documents generated to estimate a synthetic corpus's size (a larger corpus extends them: document
#: i does not depend on num_documents), so a plan or dry run never generates the whole corpus
SYNTHETIC_SAMPLE = 500


def _corpus_words(config: dict[str, Any]) -> tuple[float, str]:
    c = config["corpus"]
    from taco.data import disk

    if c["source"] == "synthetic":
        from taco.data.synthetic import generate_documents

        n = int(c["num_documents"])
        sample = generate_documents(min(n, SYNTHETIC_SAMPLE), int(config["seed"]))  # a prefix of the corpus
        words = sum(len(d.split()) for d in sample)
        if n <= SYNTHETIC_SAMPLE:
            return float(words), "counted (synthetic documents generated)"
        return words / len(sample) * n, (f"estimated: the first {SYNTHETIC_SAMPLE} synthetic documents' words x "
                                         f"{n:,} documents (none generated beyond them)")
    if c["source"] == "local":
        total = 0
        for p in c["paths"]:
            try:
                path = Path(wc.substitute_root(p, config))
            except wc.ConfigError:
                continue
            files = [path] if path.is_file() else sorted(path.rglob("*")) if path.is_dir() else []
            total += sum(f.stat().st_size for f in files if f.is_file())
        words = total / (disk.TEXT_BYTES_PER_TOKEN * disk.TOKENS_PER_WORD)
        return words, "local files' bytes / (text bytes per token x tokens per word), taco.data.disk"
    return disk.PAPER_WORDS, ("BERT's 3.3B words (Devlin et al. 2019; the current Hub dumps are larger), "
                              "taco.data.disk.PAPER_WORDS")


def disk_costs(config: dict[str, Any]) -> dict[str, Any]:
    """Bytes per artifact kind: data stage (taco.data.disk) + checkpoints + scratch states."""
    from taco.data.disk import data_disk_plan

    words, words_source = _corpus_words(config)
    runs = wc.runs(config)
    fractions = sorted({r.fraction for r in runs}, reverse=True)
    data = data_disk_plan(words=words, fractions=fractions, max_seq_length=int(config["max_seq_length"]),
                          validation_blocks=int(config["validation_blocks"]), source=config["corpus"]["source"])
    V = vocab_size(config)
    ckpt = sum(len(wc.budgets(config, r.size)) * checkpoint_bytes(config["pretrain"]["sizes"][r.size]["preset"], V)
               for r in runs)
    # scratch: per running segment, keep_states (2) periodic states + the one at the budget
    scratch = max(3 * checkpoint_bytes(config["pretrain"]["sizes"][r.size]["preset"], V) for r in runs)
    n_ft = sum(len(wc.finetune_budgets(config, r.size, r.fraction)) for r in runs if wc.finetuned(config, r)) \
        * len(tasks_of(config)) \
        * len(config["finetune"]["seeds"])
    kinds = {k: v for k, v in data.items() if k not in ("tokens", "total")}
    kinds["checkpoints"] = ckpt
    kinds["pretrain_scratch_per_running_segment"] = scratch
    kinds["finetune_outputs"] = n_ft * 100_000.0  # metrics.json + predictions.tsv: < 100 kB per run
    return {"corpus_words": words, "corpus_words_source": words_source, "tokens": data["tokens"],
            "kinds": kinds, "total": sum(kinds.values())}


def profile_limits(profile: str | os.PathLike | None = SLURM_PROFILE) -> dict[str, float]:
    """Minutes per rule from the profile's ``set-resources: <rule>: runtime`` (and default-resources)."""
    import yaml

    if profile is None or not Path(profile).is_file():
        return {}
    data = yaml.safe_load(Path(profile).read_text()) or {}
    out = {}
    default = (data.get("default-resources") or {}).get("runtime")
    if isinstance(default, (int, float)):
        out["default"] = float(default)
    for rule, res in (data.get("set-resources") or {}).items():
        if isinstance(res, dict) and isinstance(res.get("runtime"), (int, float)):
            out[rule] = float(res["runtime"])
    return out


# ------------------------------------------------------------------------------------------------
# tables, figures and claims: what each needs and costs
# ------------------------------------------------------------------------------------------------
def _role_size(config: dict[str, Any], role: str) -> str | None:
    return config["analysis"]["roles"].get(role)


def _budget_steps(config: dict[str, Any], size: str) -> dict[str, int]:
    given = config["analysis"].get("budget_names", {}).get(size)
    return dict(given) if given else {budget_name(s): s for s in wc.budgets(config, size)}


def _reduced_fraction(config: dict[str, Any]) -> float | None:
    reduced = sorted({r.fraction for r in wc.runs(config) if r.fraction < 1.0})
    return reduced[0] if reduced else None


def _needs_cost(config, needs, pre_by_run, tasks, rates) -> dict[str, Any]:
    """Cost of a set of (size, objective, fraction, step, tasks) needs: each run's chain up to its
    largest needed step, plus fine-tuning of each needed checkpoint on its tasks x seeds."""
    seeds = len(config["finetune"]["seeds"])
    chains: dict[tuple, int] = {}
    ckpts: dict[tuple, set] = {}
    missing: list[str] = []
    for size, objective, fraction, step, ks, label in needs:
        key = (size, objective, fraction)
        if objective == CONTROL:  # fine-tuning only, of a model of the same shape
            if size in wc.control_sizes(config):
                ckpts.setdefault(((size, objective, 1.0), wctl.CONTROL_STEP), set()).update(ks or tasks)
            else:
                missing.append(f"the no-pre-training control ({size}): pretrain.control is off")
            continue
        if fraction is None:
            missing.append(f"{objective} ({size}) on reduced data: no such run")
            continue
        if key not in pre_by_run:
            missing.append(f"{objective} ({size}, data {fraction:g}): no such run")
            continue
        if step is None:
            missing.append(f"{objective} ({size}) at {label}: not a budget here")
            continue
        chains[key] = max(chains.get(key, 0), step)
        ckpts.setdefault((key, step), set()).update(ks or tasks)
    pre_h = sum(pre_by_run[k]["flops_per_step"] * s / pre_by_run[k]["rate"] / 3600 for k, s in chains.items())
    pre_f = sum(pre_by_run[k]["flops_per_step"] * s for k, s in chains.items())
    ft_h = ft_f = 0.0
    for ((size, objective, fraction), step), ts in ckpts.items():
        for t in sorted(ts):  # a fixed order: float sums of a set varied with PYTHONHASHSEED
            if t not in tasks:
                continue
            c = finetune_job_cost(config, size, t, rates)
            ft_f += seeds * c["flops"]
            ft_h += seeds * (c["gpu_hours"] + rates.overhead / 3600)
    return {"pretrain_steps": {f"{k[1]} ({k[0]}, data {k[2]:g})": s for k, s in chains.items()},
            "finetune_runs": sum(len([t for t in ts if t in tasks]) for ts in ckpts.values()) * seeds,
            "flops": pre_f + ft_f, "gpu_hours": pre_h + ft_h, "missing": missing}


def target_costs(config: dict[str, Any], pre: list[dict[str, Any]], tasks: list[str], rates: Rates) -> dict[str, Any]:
    """Each table, figure and claim: what it needs and what that costs on its own."""
    pre_by_run = {(p["size"], p["objective"], p["fraction"]): p for p in pre}
    reduced = _reduced_fraction(config)
    out: dict[str, Any] = {}
    for name, specs in TARGET_NEEDS.items():
        needs, roles_missing = [], []
        for role, objectives, fracs, budgets, ts in specs:
            size = _role_size(config, role)
            if size is None:
                roles_missing.append(f"role {role} not in analysis.roles")
                continue
            names = _budget_steps(config, size)
            for frac_kind in fracs:
                fraction = 1.0 if frac_kind == "full" else reduced
                for obj in objectives:
                    if fraction is None or (size, obj, fraction) not in pre_by_run:
                        needs.append((size, obj, fraction, None, ts, ""))
                    elif budgets == "all":
                        needs += [(size, obj, fraction, st, ts, "") for st in wc.finetune_budgets(config, size, fraction)]
                    elif budgets == ("last",):
                        needs += [(size, obj, fraction, st, ts, "")
                                  for st in wc.finetune_budgets(config, size, fraction)[-1:]]
                    else:
                        needs += [(size, obj, fraction, names.get(b), ts, b) for b in budgets]
        out[name] = _needs_cost(config, needs, pre_by_run, tasks, rates)
        out[name]["missing"] = roles_missing + out[name]["missing"]
    try:
        from taco.stats.claims import CLAIMS, LAST_BUDGET
        from taco.registry import CONTROL, TASK_SCORE_KEYS
    except ImportError:  # the statistics environment is absent: tables only
        return out
    key_task = {k: t for t, ks in TASK_SCORE_KEYS.items() for k in ks}
    for c in CLAIMS:
        size = _role_size(config, c.role)
        needs = []
        ts = tuple(sorted({key_task[k] for k in c.keys})) if c.keys else None
        for arm in (c.a, c.b):
            if size is None:
                continue
            if arm.objective == CONTROL:
                needs.append((size, CONTROL, 1.0, wctl.CONTROL_STEP, ts, arm.budget))
                continue
            fraction = reduced if arm.fraction is None else arm.fraction
            if fraction is None:
                needs.append((size, arm.objective, None, None, ts, arm.budget))
                continue
            step = (wc.finetune_budgets(config, size, fraction)[-1:] or [None])[0] if arm.budget == LAST_BUDGET \
                else _budget_steps(config, size).get(arm.budget)
            needs.append((size, arm.objective, fraction, step, ts, arm.budget))
        cost = _needs_cost(config, needs, pre_by_run, tasks, rates)
        if size is None:
            cost["missing"].append(f"role {c.role} not in analysis.roles")
        out[f"{c.id}: {c.text}"] = cost
    return out


# ------------------------------------------------------------------------------------------------
# the plan
# ------------------------------------------------------------------------------------------------
#: MEASURED model FLOP/s of one CPU core (one thread): BERT-tiny's MLM step (V 8,192, batch 32 x 128, 1.52e10
#: model FLOPs) took 0.26 CPU-s on the 2-core development VM (docs/records/2026-11-30-cpu-experiment-notebook.md); a CPU-only configuration
#: (num_gpus 0 everywhere) is priced in CPU-hours at this rate, the reference GPU's hours beside it
CPU_MODEL_FLOPS_PER_CORE_S = 5.85e10
CPU_RATE_SOURCE = "BERT-tiny MLM step, 0.26 CPU-s on the 2-core development VM (docs/records/2026-11-30-cpu-experiment-notebook.md)"


def wall_hours(plan: dict[str, Any], gpus: int) -> dict[str, Any]:
    """Wall-clock hours of the whole run on N GPUs, for N in 1, 8, 64 and the config's ``gpus``: at least the
    GPU-hours shared perfectly over N (``total / N``) and at least the longest chain of jobs that must run one
    after another (a run's budget segments in order, then one fine-tuning job of its last checkpoint:
    ``critical_path``), whichever is larger. A lower bound: queueing, the data stage and job start-up are not
    in it. ``{"critical_path": h, "by_gpus": {N: h}}``."""
    ft = plan["finetune"].get("longest_job_hours", 0.0)
    chain = max((p["gpu_hours"] / max(1, int(p.get("gpus", 1))) for p in plan["pretrain"]), default=0.0) + ft
    total = plan["totals"]["gpu_hours"]
    counts = sorted({1, 8, 64, *([gpus] if gpus > 0 else [])})
    return {"critical_path": chain, "by_gpus": {n: max(total / n, chain) for n in counts}}


def build_plan(config: dict[str, Any], device_check: str | os.PathLike | None = DEVICE_CHECK,
               peak_tflops: float = H200_BF16_DENSE_TFLOPS,
               pretrain_utilization: float = DEFAULT_PRETRAIN_UTILIZATION,
               finetune_utilization: float = DEFAULT_FINETUNE_UTILIZATION,
               job_overhead_s: float | None = None, profile: str | os.PathLike | None = SLURM_PROFILE,
               with_targets: bool = True) -> dict[str, Any]:
    """The compute plan of a validated config (JSON-serialisable dict; see :func:`render_markdown`)."""
    measured = load_device_check(device_check)
    rates = Rates(measured, peak_tflops, pretrain_utilization, finetune_utilization, job_overhead_s)
    tasks = tasks_of(config)
    pre = pretrain_costs(config, rates)
    tuning = tuning_costs(config, rates)
    ft = finetune_costs(config, tasks, rates)
    limits = profile_limits(profile)
    longest_pre = max(pre, key=lambda p: p["longest_segment_hours"])
    checks = [
        {"rule": "pretrain", "job": f"{longest_pre['size']}/{longest_pre['objective']} segment of "
                                    f"{longest_pre['longest_segment_steps']} steps",
         "hours": longest_pre["longest_segment_hours"], "config_runtime_min":
             config["pretrain"]["sizes"][longest_pre["size"]].get("runtime"),
         "profile_runtime_min": limits.get("pretrain")},
        {"rule": "finetune", "job": ("longest checkpoint (all tasks and seeds)"
                                     if finetune_jobs_per_checkpoint(config, 2) == 1 else
                                     "longest (checkpoint, task" + (", seed)" if config["finetune"].get(
                                         "seeds_per_job", "one") == "one" else ", all seeds)")),
         "hours": ft["longest_job_hours"],
         "config_runtime_min": config["finetune"].get("runtime"), "profile_runtime_min": limits.get("finetune")},
    ]
    for c in checks:
        lim = c["profile_runtime_min"]
        c["fits_profile"] = None if lim is None else c["hours"] * 60 <= lim
    plan = {
        "results_dir": config["results_dir"], "tasks": tasks, "seeds": list(config["finetune"]["seeds"]),
        "compute_jobs": compute_jobs(config, tasks),
        "throughput": {"measured": {"source": measured["source"], "date": measured["date"], "gpu": measured["gpu"]}
                       if measured else None,
                       "peak_tflops": peak_tflops, "pretrain_utilization": pretrain_utilization,
                       "finetune_utilization": finetune_utilization,
                       "job_overhead_s": rates.overhead, "job_overhead_source": rates.overhead_source},
        "pretrain": pre,
        "finetune": {k: v for k, v in ft.items() if k != "rows"} | {"rows": [
            {k: v for k, v in r.items() if k != "per_task"} for r in ft["rows"]]},
        "dynamics_jobs": len(wc.dynamics_checkpoints(config)),
        "tuning": tuning,
        "totals": {"flops": sum(p["flops"] for p in (*pre, *tuning)) + ft["flops"],
                   "pretrain_gpu_hours": sum(p["gpu_hours"] * 1 for p in (*pre, *tuning)),
                   "finetune_gpu_hours": ft["gpu_hours"]},
        "disk": disk_costs(config),
        "time_limits": checks,
    }
    plan["totals"]["gpu_hours"] = plan["totals"]["pretrain_gpu_hours"] + plan["totals"]["finetune_gpu_hours"]
    plan["wall_hours"] = wall_hours(plan, int(config.get("gpus") or 0))
    plan["cpu_only"] = (all(int(s["num_gpus"]) == 0 for s in config["pretrain"]["sizes"].values())
                        and int(config["finetune"]["num_gpus"]) == 0)
    # the GLUE probe: its points in the runs above, and the controls' one point each (taco init)
    controls = len(wctl.checkpoints(config))
    plan["totals"]["glue_probe_hours"] = (sum(p["glue_probe_hours"] for p in pre)
                                          + controls * probe_examples(config) * PROBE_SECONDS_PER_EXAMPLE / 3600)
    plan["totals"]["glue_probe_source"] = PROBE_RATE_SOURCE
    if plan["cpu_only"]:
        plan["totals"]["cpu_hours"] = (plan["totals"]["flops"] / CPU_MODEL_FLOPS_PER_CORE_S / 3600
                                       + plan["totals"]["glue_probe_hours"])
        plan["totals"]["cpu_rate_source"] = CPU_RATE_SOURCE
    if with_targets:
        plan["targets"] = target_costs(config, pre, tasks, rates)
    return plan
