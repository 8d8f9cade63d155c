"""The output of ``taco plan``: the plan (:func:`taco.workflow.plan.costs.build_plan`) as Markdown
(``plan.md``, what ``taco plan`` prints), as JSON (``--json``) and as the one line the workflow prints
at its start.

Part of ``taco plan`` (the command: :mod:`taco.workflow.plan.command`; the numbers:
:mod:`taco.workflow.plan.costs`).
"""

from __future__ import annotations

import json
from typing import Any

from taco.report.markdown_text import md_text

def _h(x: float) -> str:
    """Hours: two decimals below 100, whole hours above."""
    return f"{x:,.2f}" if x < 100 else f"{x:,.0f}"


def _gb(x: float) -> str:
    """Bytes as GB with two decimals."""
    return f"{x / 1e9:,.2f}"


def render_markdown(plan: dict[str, Any]) -> str:
    """The plan as Markdown (``plan.md``; the same text ``taco plan`` prints)."""
    t = plan["throughput"]
    m = t["measured"]
    lines = [f"# Compute plan: {md_text(plan['results_dir'])}", "",
             f"Tasks: {', '.join(plan['tasks'])}; seeds: {len(plan['seeds'])}. Model FLOPs: taco.flops "
             "(6N + attention, what has gradient; not the hardware's count; fine-tuning tokens padded to max_length, an upper bound). Time: "
             + (f"measured throughput from {md_text(m['source'])} ({md_text(m['gpu'])}, {md_text(m['date'])}) where the preset was measured, "
                f"else " if m else "no device-check result: ")
             + f"assumed {t['pretrain_utilization']:.0%} (pre-training) / {t['finetune_utilization']:.0%} "
               f"(fine-tuning) of {t['peak_tflops']:g} TFLOP/s; {t['job_overhead_s']:.0f} s per fine-tuning "
               f"process ({t['job_overhead_source']}). Several GPUs per job: linear scaling assumed."
             + (f" This configuration runs on CPU (`num_gpus: 0`): **{_h(plan['totals']['cpu_hours'])} CPU-hours** "
                f"(one core per job, at the measured {md_text(plan['totals']['cpu_rate_source'])}); the GPU-h "
                "columns below are what it would take on the reference GPU." if plan.get("cpu_only") else ""), "",
             "## Jobs by rule", "", "Compute-carrying rules, complete run from nothing (the config's grid):", "",
             "| rule | jobs |", "|---|---:|"]
    lines += [f"| {k} | {v} |" for k, v in plan["compute_jobs"].items()]
    left = plan.get("snakemake_jobs_left")
    if left is not None:
        lines += ["", "Every rule, as `snakemake -n` plans it now (jobs left to run here):", "",
                  "| rule | jobs |", "|---|---:|"] + [f"| {k} | {v} |" for k, v in left.items()]
        lines.append(f"| **total** | {sum(left.values())} |")
        notes = plan.get("snakemake_notes") or []
        if notes:
            lines += ["", "What the workflow notes at its start (`NOTE:` lines; none stops it):", ""]
            lines += [f"- {n}" for n in notes]
    elif plan.get("snakemake_dry_run_error"):
        lines += ["", "Every rule, as `snakemake -n` plans it now: **not available**, `snakemake -n` failed "
                  f"({plan['snakemake_dry_run_error']}); run it for the whole message."]
    lines += ["", "## Pre-training", "",
              "| run | steps | global batch | tokens | model FLOPs | GPU-h | longest segment h | rate from |",
              "|---|---:|---:|---:|---:|---:|---:|---|"]
    for p in plan["pretrain"]:
        lines.append(f"| {md_text(p['size'])}/{p['objective']}/data-{p['fraction']:g} | {p['steps']:,} | {p['global_batch']} | "
                     f"{p['tokens']:.3g} | {p['flops']:.3g} | {_h(p['gpu_hours'])} | "
                     f"{_h(p['longest_segment_hours'])} | {md_text(p['rate_source'])} |")
    probe = [p for p in plan["pretrain"] if p.get("glue_probe_points")]
    if probe:
        tot = plan["totals"]
        lines += ["", f"The frozen-feature GLUE probe (pretrain.glue_probe) runs at {probe[0]['glue_probe_points']} "
                  f"points of each run and once per control: {_h(tot['glue_probe_hours'])} h in all, in the GPU-h "
                  f"and segment hours above ({md_text(tot['glue_probe_source'])}; mostly scikit-learn fits on the CPU)."]
    if plan.get("tuning"):
        lines += ["", "Tuning trials (pretrain.tuning; in the pre-training total):", "",
                  "| arm | trials | steps | model FLOPs | GPU-h |", "|---|---:|---:|---:|---:|"]
        for t in plan["tuning"]:
            lines.append(f"| {md_text(t['size'])}/{t['objective']} | {t['trials']} | {t['steps']:,} | {t['flops']:.3g} | "
                         f"{_h(t['gpu_hours'])} |")
    f = plan["finetune"]
    lines += ["", "## Fine-tuning", "", "| run | checkpoints | runs (ckpt x task x seed) | model FLOPs | GPU-h |",
              "|---|---:|---:|---:|---:|"]
    for r in f["rows"]:
        lines.append(f"| {md_text(r['size'])}/{r['objective']}/data-{r['fraction']:g} | {r['checkpoints']} | {r['runs']} | "
                     f"{r['flops']:.3g} | {_h(r['gpu_hours'])} |")
    n_runs = sum(r["runs"] for r in f["rows"])
    lines += ["", f"Fine-tuning jobs (processes, cluster submissions): **{plan['compute_jobs'].get('finetune', 0):,}** "
                  f"for {n_runs:,} runs (checkpoint x task x seed; one job per run would be {n_runs:,}): "
                  "finetune.tasks_per_job all = one per checkpoint, seeds_per_job all = one per (checkpoint, task)."]
    tot = plan["totals"]
    lines += ["", f"**Total**: {tot['flops']:.3g} model FLOPs; {_h(tot['pretrain_gpu_hours'])} GPU-h pre-training + "
                  f"{_h(tot['finetune_gpu_hours'])} GPU-h fine-tuning = **{_h(tot['gpu_hours'])} GPU-h** "
                  f"(dynamics jobs: {plan['dynamics_jobs']}, not priced: forward passes over a few blocks).", "",
              *_wall_lines(plan),
              "## Disk", "", f"Corpus: {plan['disk']['corpus_words']:.3g} words ({md_text(plan['disk']['corpus_words_source'])}).",
              "", "| artifact kind | GB |", "|---|---:|"]
    lines += [f"| {k} | {_gb(v)} |" for k, v in plan["disk"]["kinds"].items()]
    download = plan["disk"]["kinds"].get("hub_download", 0.0)
    lines += [f"| **total** | {_gb(plan['disk']['total'])} |", "",
              f"The data stage (download, tokenize, pack) downloads {_gb(download)} GB from the Hub and is CPU work: "
              "its time is in none of the hours above.", "", "## Longest job against the time limit", "",
              "| rule | job | hours | config runtime (min) | slurm profile runtime (min) | fits |",
              "|---|---|---:|---:|---:|---|"]
    for c in plan["time_limits"]:
        fits = "-" if c["fits_profile"] is None else ("yes" if c["fits_profile"] else "**no**")
        lines.append(f"| {c['rule']} | {md_text(c['job'])} | {_h(c['hours'])} | {c['config_runtime_min']} | "
                     f"{c['profile_runtime_min']} | {fits} |")
    if plan.get("targets"):
        ready = sorted(((n, c) for n, c in plan["targets"].items() if not c["missing"]), key=lambda kv: kv[1]["gpu_hours"])
        absent = sorted((n, c) for n, c in plan["targets"].items() if c["missing"])
        lines += ["", "## Cost of each table, figure and claim this configuration makes (on its own; cheapest first)",
                  "", "| target | pre-training needed (run: up to step) | fine-tuning runs | GPU-h |", "|---|---|---:|---:|"]
        for name, c in ready:
            need = "; ".join(f"{md_text(k)}: {v:,}" for k, v in c["pretrain_steps"].items()) or "-"
            lines.append(f"| {name} | {need} | {c['finetune_runs']} | {_h(c['gpu_hours'])} |")
        if absent:  # not priced as if cheap: what is missing, and what of it this configuration would run
            lines += ["", "## Unavailable in this configuration", "",
                      "| target | why | GPU-h of the part it would run |", "|---|---|---:|"]
            lines += [f"| {name} | {'; '.join(map(md_text, c['missing']))} | "
                      f"{_h(c['gpu_hours']) if c['gpu_hours'] else '-'} |" for name, c in absent]
    return "\n".join(lines) + "\n"


def _wall_lines(plan: dict[str, Any]) -> list[str]:
    """The wall-clock table of :func:`taco.workflow.plan.costs.wall_hours` (none in a plan without it)."""
    w = plan.get("wall_hours")
    if not w:
        return []
    cells = " | ".join(_h(h) for h in w["by_gpus"].values())
    return ["", "Wall-clock hours on N GPUs (at least the GPU-hours shared over N, at least the longest chain: "
                f"{_h(w['critical_path'])} h, a run's segments in order and one fine-tuning job; queueing and the data "
                "stage not included):", "",
            "| GPUs | " + " | ".join(str(n) for n in w["by_gpus"]) + " |",
            "|---|" + "---:|" * len(w["by_gpus"]), f"| hours | {cells} |", ""]


def summary_line(plan: dict[str, Any]) -> str:
    """One line for the workflow's start: jobs, GPU-hours, disk, time-limit warnings."""
    tot = plan["totals"]
    warn = [c for c in plan["time_limits"] if c["fits_profile"] is False]
    jobs = ", ".join(f"{k} {v}" for k, v in plan["compute_jobs"].items())
    cost = (f"{_h(tot['cpu_hours'])} CPU-h on one core per job (on the reference GPU {_h(tot['gpu_hours'])} GPU-h)"
            if plan.get("cpu_only") else
            f"{_h(tot['gpu_hours'])} GPU-h ({_h(tot['pretrain_gpu_hours'])} pre-training, "
            f"{_h(tot['finetune_gpu_hours'])} fine-tuning)")
    s = f"compute plan ({jobs} jobs): {tot['flops']:.3g} model FLOPs, {cost}, disk {_gb(plan['disk']['total'])} GB"
    for c in warn:
        s += f"; WARNING: {c['rule']} {c['job']} needs {_h(c['hours'])} h > profile runtime {c['profile_runtime_min']} min"
    return s


def render_json(plan: dict[str, Any]) -> str:
    """The plan as JSON (``taco plan --json``; values JSON cannot hold written as their ``str``)."""
    return json.dumps(plan, indent=2, default=str)
