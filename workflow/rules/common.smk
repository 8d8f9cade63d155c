# Input functions, wildcard constraints and config checks. Logic lives in taco.workflow.config.

import json
import os
import sys

from snakemake.exceptions import WorkflowError

from taco.workflow import config as wc

R = config["results_dir"]
USE_CONDA = any(
    m.name == "CONDA" for m in workflow.deployment_settings.deployment_method
)
# With per-rule conda environments (--use-conda / --sdm conda) taco is imported from this workflow's
# folder; otherwise from the environment that runs Snakemake (where `pip install -e .` put it).
PY = (
    f"PYTHONPATH={workflow.basedir}${{PYTHONPATH:+:$PYTHONPATH}} python"
    if USE_CONDA
    else sys.executable
)
TACO = f"{PY} -m taco"
ENVS = {name: f"../../envs/{name}.yaml" for name in ("data", "train", "stats")}


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
    return os.path.join(R, "data", *parts)


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
    return (
        f"{TACO} gpu-slot --gpus {GPUS} --need {num_gpus} --lock-dir {R}/.gpu-slots -- "
    )


def pretrain_targets():
    return [
        ckpt_dir(r.size, r.variant, r.fraction_str, s)
        for r in RUNS
        for s in wc.budgets(config, r.size)
    ]


def finetune_targets():
    out = []
    for r in RUNS:
        for step in wc.finetune_budgets(config, r.size, r.fraction):
            for task in TASKS:
                for seed in config["finetune"]["seeds"]:
                    run_dir = f"{r.size}/{r.variant}/data-{r.fraction_str}/step-{step}"
                    out.append(
                        f"{R}/finetune/{run_dir}/{task}/seed-{seed}/metrics.json"
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


# ---- command-line arguments of the taco commands, from the config ----


def corpus_args():
    c = config["corpus"]
    if c["source"] == "synthetic":
        return f"--source synthetic --num-documents {c['num_documents']} --seed {config['seed']}"
    if c["source"] == "local":
        paths = " ".join(wc.substitute_root(p, config) for p in c["paths"])
        args = f"--source local --paths {paths} --split-by {c['split_by']} --unk-policy {c['unk_policy']}"
        return args + (" --wikitext-detokenize" if c["wikitext_detokenize"] else "")
    specs = " ".join(
        f"{d['name']}:{d.get('config') or ''}:{d.get('split', 'train')}"
        for d in c["hub_datasets"]
    )
    return f"--source hub --hub-datasets {specs}"


def tokenizer_args():
    t = config["tokenizer"]
    args = f"--kind {t['kind']}" + (
        " --lowercase" if t["lowercase"] else " --no-lowercase"
    )
    if t["kind"] == "vocab":
        return args + f" --vocab-file {wc.substitute_root(t['vocab_file'], config)}"
    if t["kind"] == "hub":
        return args + f" --hub-id {t['hub_id']}"
    return args + f" --vocab-size {t['vocab_size']}"


def pretrain_args(wildcards):
    s = size_cfg(wildcards.size)
    pre = config["pretrain"]
    tc = pre["tc"]
    return (
        f"--size {s['preset']} --size-name {wildcards.size} --objective {wildcards.variant} "
        f"--max-steps {s['max_steps']} --warmup-steps {s['warmup_steps']} "
        f"--per-device-batch-size {s['per_device_batch_size']} --grad-accum {s['grad_accum']} "
        f"--lr {s['learning_rate']} --weight-decay {s['weight_decay']} "
        f"--mlm-probability {pre['mlm_probability']} --tc-weight {tc['weight']} "
        f"--tc-temperature {tc['temperature']} --tc-window {tc['window']} --tc-negatives {tc['negatives']} "
        f"--save-every {s['save_every']} --precision {s['precision']} "
        f"--logging-steps {pre['logging_steps']} --seed {config['seed']}"
    )


def pretrain_launcher(wildcards):
    n = size_cfg(wildcards.size)["num_gpus"]
    prefix = gpu_launch(n)
    if (
        n > 1
    ):  # several GPUs in one job (local slots or a SLURM allocation): one process per GPU
        return (
            prefix
            + f"{PY} -m torch.distributed.run --standalone --nproc_per_node {n} -m taco"
        )
    return prefix + TACO


def finetune_args(wildcards):
    ft = config["finetune"]
    hp = wc.finetune_hyperparameters(config, wildcards.size)
    g = config["glue"]
    args = (
        f"--glue-source {g['source']} --max-length {ft['max_length']} --batch-size {ft['batch_size']} "
        f"--lr {hp['learning_rate']} --epochs {hp['epochs']} --warmup-steps {ft['warmup_steps']} "
        f"--report-rule {ft['report_rule']}"
    )
    if g["source"] == "local":
        args += f" --glue-dir {wc.substitute_root(g['data_dir'], config)}"
    if ft["max_train_samples"]:
        args += f" --max-train-samples {ft['max_train_samples']}"
    if ft["max_eval_samples"]:
        args += f" --max-eval-samples {ft['max_eval_samples']}"
    return args


def write_json(path, obj, log):
    """Write ``obj`` as JSON to ``path`` (used by local bookkeeping rules)."""
    with open(path, "w") as fh:
        json.dump(obj, fh, indent=2, sort_keys=True)
    with open(log, "w") as fh:
        fh.write(f"wrote {path}\n")
