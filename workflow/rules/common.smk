# Input functions, wildcard constraints and config checks. Logic lives in taco.workflow_config.

import json
import os
import sys

from snakemake.exceptions import WorkflowError

from taco import workflow_config as wc

R = config["results_dir"]
TACO = f"{sys.executable} -m taco"


def _local_glue_availability():
    """task -> None if its files are present in the local GLUE folder, else why not."""
    if config["glue"]["source"] != "local":
        return None
    from taco.data.glue import available_local_tasks

    data_dir = wc.substitute_root(config["glue"]["data_dir"], config)
    try:
        return available_local_tasks(data_dir)
    except FileNotFoundError as err:
        raise wc.ConfigError(f"glue.data_dir: {err}") from None


try:
    GLUE_AVAILABILITY = _local_glue_availability()
    wc.check_config(config, GLUE_AVAILABILITY)
except wc.ConfigError as err:
    raise WorkflowError(f"Invalid configuration: {err}") from None

TASKS = wc.effective_tasks(config, GLUE_AVAILABILITY)
MISSING_TASKS = {
    t: GLUE_AVAILABILITY[t]
    for t in config["glue"]["tasks"]
    if GLUE_AVAILABILITY is not None and GLUE_AVAILABILITY.get(t) is not None
}
if MISSING_TASKS:
    print(
        "NOTE: GLUE tasks absent from the local folder are skipped (tables report which tasks "
        "the averages cover): "
        + "; ".join(f"{t}: {why}" for t, why in MISSING_TASKS.items()),
        file=sys.stderr,
    )
RUNS = wc.runs(config)
FRACTIONS = sorted({r.fraction_str for r in RUNS})
GPUS = config["gpus"]


wildcard_constraints:
    size="[A-Za-z0-9_]+",
    variant="|".join(wc.VARIANTS),
    fraction=r"[0-9]+\.[0-9]+",
    step=r"[0-9]+",
    task="|".join(wc.TASKS),
    seed=r"[0-9]+",


def path_data(*parts):
    return "/".join([R, "data", *parts])


def ckpt_dir(size, variant, fraction, step):
    return f"{R}/pretrain/{size}/{variant}/data-{fraction}/step-{step}"


def size_cfg(size):
    return config["pretrain"]["sizes"][size]


def parent_checkpoint(wildcards):
    """The previous budget checkpoint of the same run ([] for the first budget)."""
    prev = wc.previous_budget(config, wildcards.size, int(wildcards.step))
    if prev is None:
        return []
    return ckpt_dir(wildcards.size, wildcards.variant, wildcards.fraction, prev)


def gpu_launch(num_gpus, nproc=1):
    """Command prefix giving the job its own GPU slot(s) (CUDA_VISIBLE_DEVICES) on a local box."""
    if not GPUS or not num_gpus:
        return ""
    return f"{TACO} gpu-slot --gpus {GPUS} --need {num_gpus} --lock-dir {R}/.gpu-slots -- "


def pretrain_targets():
    return [ckpt_dir(r.size, r.variant, r.fraction_str, s) for r in RUNS for s in wc.budgets(config, r.size)]


def finetune_targets():
    out = []
    for r in RUNS:
        for step in wc.finetune_budgets(config, r.size):
            for task in TASKS:
                for seed in config["finetune"]["seeds"]:
                    out.append(
                        f"{R}/finetune/{r.size}/{r.variant}/data-{r.fraction_str}/step-{step}"
                        f"/{task}/seed-{seed}/metrics.json"
                    )
    return out


def dynamics_targets():
    if not config["dynamics"]["enabled"]:
        return []
    return [
        f"{R}/dynamics/{r.size}/{r.variant}/data-{r.fraction_str}/step-{s}/dynamics.json"
        for r in RUNS
        if r.variant in config["dynamics"]["variants"] and r.fraction == 1.0
        for s in wc.budgets(config, r.size)
    ]


REPORT_TABLES = ["table1", "table2", "table3", "table4", "ablation"]
REPORT_FIGURES = ["figure5", "ablation", "data_efficiency"]
DYNAMICS_FIGURES = ["figure6", "figure2"]


def all_targets():
    out = [f"{R}/{t}.csv" for t in REPORT_TABLES]
    out += [f"{R}/{f}.png" for f in REPORT_FIGURES]
    out += [f"{R}/claims.csv", f"{R}/claims.md"]
    if dynamics_targets():
        out += [f"{R}/{f}.png" for f in DYNAMICS_FIGURES]
    return out
