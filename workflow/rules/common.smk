# Input functions, wildcard constraints and config checks. Logic lives in taco.workflow.config and taco.workflow.config_checks.

import json
import os
import sys

from snakemake.exceptions import WorkflowError

from taco.paper import PAPER_TABLES
from taco.workflow import config as wc
from taco.workflow import config_checks as wcc
from taco.workflow import tuning_grid as tg
from taco.workflow import control as wctl
from taco.workflow.config_source import key_sources, missing_bases_note
from taco.launch.gpuslots import unmanaged_gpus_note
from taco.workflow.commands import RUN_PATH, Commands, run_path
from taco.workflow.settings import plan_config, run_config
from taco.registry import CONTROL, GLUE_TASK_NAMES, OBJECTIVES

USE_CONDA = any(
    m.name == "CONDA" for m in workflow.deployment_settings.deployment_method
)
# With per-rule conda environments (--use-conda / --sdm conda) taco is imported from this workflow's
# folder; otherwise from the environment that runs Snakemake (where `pip install -e .` put it).
PYTHON = (
    ["env", f"PYTHONPATH={workflow.basedir}", "python"] if USE_CONDA else [sys.executable]
)
# Every rule's command line (taco.workflow.commands): params.args hold what changes a result,
# resources.launch/settings what does not, params.paths the job's files.
ENVS = {name: f"../../envs/{name}.yaml" for name in ("data", "train", "stats")}


# checks every key and the requirements across keys (the report steps' too) before the first job;
# normalises results_dir in place (one spelling: results/tiny/ -> results/tiny)
try:
    GLUE_AVAILABILITY = wcc.local_glue_availability(config)
    wcc.check_config(config, GLUE_AVAILABILITY)
except wc.ConfigError as err:  # FILE:LINE: of the key first (taco.workflow.config_source)
    _where = key_sources(workflow.configfiles, workflow.config_settings.config)
    raise WorkflowError(f"Invalid configuration: {_where.annotate(str(err))}"
                        + missing_bases_note(workflow.configfiles)) from None

R = config["results_dir"]
CMD = Commands(config, python=PYTHON)

TASKS = wc.effective_tasks(config, GLUE_AVAILABILITY)
MISSING_TASKS = {
    t: GLUE_AVAILABILITY[t]
    for t in config["glue"]["tasks"]
    if GLUE_AVAILABILITY is not None and GLUE_AVAILABILITY.get(t) is not None
}
# what a valid configuration should know but that stops nothing (pretrain.seeds too few to decide a
# claim): printed by the main process only, as the other notes
if workflow.is_main_process:
    for _note in wcc.config_notes(config):
        print(f"NOTE: {_note}", file=sys.stderr)

# the analysis spec of taco aggregate/tables/figures/claims: the validated AnalysisConfig, built here
# so that a bad `analysis:` setting stops the run before any job, naming the key
try:
    ANALYSIS_SPEC = wc.analysis_spec(config, TASKS, MISSING_TASKS)
except wc.ConfigError as err:
    raise WorkflowError(f"Invalid configuration: {err}") from None
# Snakemake parses the workflow again in each job it spawns (its subprocess and remote exec modes):
# the note belongs to the run, so only the main process prints it.
if MISSING_TASKS and workflow.is_main_process:
    print(
        "NOTE: GLUE tasks absent from the local folder are skipped (tables report which tasks "
        "the averages cover): "
        + "; ".join(f"{t}: {why}" for t, why in MISSING_TASKS.items()),
        file=sys.stderr,
    )
RUNS = wc.runs(config)
FRACTIONS = sorted({r.fraction_str for r in RUNS})
GPUS = config["gpus"]
# gpus: 0 on a GPU box: the main process says once that every job sees every GPU
GPU_NOTE = unmanaged_gpus_note(GPUS)
if GPU_NOTE and workflow.is_main_process:
    print(GPU_NOTE, file=sys.stderr)
# Snakemake's "Provided resources: gpu=N" (the profile's limit) is no GPU found here: say so where it differs from gpus
_PROVIDED_GPU = workflow.global_resources.get("gpu")  # a snakemake.resources.Resource, or None
_GPU_RESOURCE_NOTE = wcc.gpu_resource_note(getattr(_PROVIDED_GPU, "value", _PROVIDED_GPU), GPUS)
if _GPU_RESOURCE_NOTE and workflow.is_main_process:
    print(f"NOTE: {_GPU_RESOURCE_NOTE}", file=sys.stderr)
# a profile whose GPUs per job disagree with the config's num_gpus (the SLURM profile's two for pre-training on a
# one-GPU configuration) are said at the start, the dry run included
if workflow.is_main_process:
    wcc.warn_profile_gpus(getattr(workflow.resource_settings, "overwrite_resources", None), config)


wildcard_constraints:
    size=wc.SIZE_PATTERN,
    objective="|".join((*OBJECTIVES, CONTROL)),  # the control: its own rule (control.smk)
    fraction=r"[0-9]+\.[0-9]+",
    step=r"[0-9]+",
    task="|".join(GLUE_TASK_NAMES),
    seed=r"[0-9]+",
    pseed=wc.PSEED_PATTERN,


def path_data(*parts):
    return os.path.join(R, "data", *parts)


# the path of one budget checkpoint of one run, below pretrain/, finetune/, dynamics/, logs/, ...
RUN = RUN_PATH


def ckpt_dir(size, objective, fraction, step, pseed=""):
    return f"{R}/pretrain/{run_path(size, objective, fraction, step, pseed)}"


def size_cfg(size):
    return config["pretrain"]["sizes"][size]


def parent_checkpoint(wildcards):
    """The previous budget checkpoint of the same run ([] for the first budget)."""
    prev = wc.previous_budget(config, wildcards.size, int(wildcards.step))
    if prev is None:
        return []
    return ckpt_dir(wildcards.size, wildcards.objective, wildcards.fraction, prev, wildcards.pseed)


def tuning_trial_dirs(wildcards):
    """The trial checkpoints of one arm (pretrain.tuning): trial-<i>/step-<horizon>; none where the arm's choice
    is recorded (pretrain.tuning.recorded)."""
    if tg.recorded_choice(config, wildcards.size, wildcards.objective):
        return []
    h = config["pretrain"]["tuning"]["horizon"]
    n = tg.tuning_trial_count(config)
    return [f"{R}/tuning/{wildcards.size}/{wildcards.objective}/trial-{i}/step-{h}" for i in range(n)]


def recorded_choice_file(wildcards):
    """The arm's recorded choice.json (pretrain.tuning.recorded), or []."""
    return tg.recorded_choice(config, wildcards.size, wildcards.objective) or []


def tuned_recipe(wildcards):
    """The arm's choice.json for a tuned arm's replicates, or tuned_as's size's ([] when not tuned)."""
    arm = tg.recipe_arm(config, wildcards.size, wildcards.objective)
    if arm is None:
        return []
    return f"{R}/tuning/{arm[0]}/{arm[1]}/choice.json"


FT_TUNING = bool((config["finetune"].get("tuning") or {}).get("enabled"))
FT_TRIAL_SEEDS = list(config["finetune"]["tuning"]["seeds"]) if FT_TUNING else []


def finetune_trial_metrics(wildcards):
    """Every trial's metrics of one checkpoint (finetune.tuning): trial-<i>/<task>/seed-<seed>/metrics.json."""
    from taco.evaluation.finetune_tuning import trial_settings

    run = run_path(wildcards.size, wildcards.objective, wildcards.fraction, wildcards.step, wildcards.pseed)
    n = len(trial_settings(config["finetune"]["tuning"]["space"]))
    return [f"{R}/finetune_tuning/{run}/trial-{i}/{t}/seed-{s}/metrics.json"
            for i in range(n) for t in TASKS for s in FT_TRIAL_SEEDS]


def finetune_recipe(wildcards):
    """The checkpoint's fine-tuning choice.json with finetune.tuning on, else []."""
    if not FT_TUNING:
        return []
    run = run_path(wildcards.size, wildcards.objective, wildcards.fraction, wildcards.step, wildcards.pseed)
    return f"{R}/finetune_tuning/{run}/choice.json"


def tuning_choices():
    return [f"{R}/tuning/{size}/{objective}/choice.json" for size, objective in tg.tuning_arms(config)]


def pretrain_targets():
    return [
        ckpt_dir(r.size, r.objective, r.fraction_str, s, r.pseed)
        for r in RUNS
        for s in wc.budgets(config, r.size)
    ]


# a budget deleted in the middle of a run: Snakemake plans nothing for it, so say which one is missing
if workflow.is_main_process:
    from taco.workflow.summary import missing_budget_notes

    for _note in missing_budget_notes([[ckpt_dir(r.size, r.objective, r.fraction_str, s, r.pseed)
                                        for s in wc.budgets(config, r.size)] for r in RUNS]):
        print(f"NOTE: {_note}", file=sys.stderr)


# finetune.mnli_start (default off): RTE, MRPC and STS-B start from the MNLI model of the same checkpoint
# and seed, which the MNLI jobs (rules finetune_mnli / finetune_mnli_seeds, finetune.smk) then also save.
FT_FROM_MNLI = wc.mnli_start_tasks(config, TASKS)


def mnli_start_model(wildcards):
    """The saved MNLI model(s) of the same checkpoint and seed(s) a fine-tuning job starts from; [] unless
    finetune.mnli_start is on and the job's task is one of taco.registry.MNLI_START_TASKS."""
    if "task" not in wildcards.keys() or wildcards.task not in FT_FROM_MNLI:  # a job of every task: no start
        return []
    run = run_path(wildcards.size, wildcards.objective, wildcards.fraction, wildcards.step, wildcards.pseed)
    seeds = [wildcards.seed] if "seed" in wildcards.keys() else config["finetune"]["seeds"]
    return [f"{R}/finetune/{run}/mnli/seed-{s}/model" for s in seeds]


def finetune_targets():
    out = wctl.finetune_targets(config, TASKS)  # the no-pre-training controls, if asked for
    for r in RUNS:
        if not wc.finetuned(config, r):
            continue
        for step in wc.finetune_budgets(config, r.size, r.fraction):
            for task in TASKS:
                for seed in config["finetune"]["seeds"]:
                    run = run_path(r.size, r.objective, r.fraction_str, step, r.pseed)
                    out.append(f"{R}/finetune/{run}/{task}/seed-{seed}/metrics.json")
    return out


def dynamics_targets():
    return [f"{R}/dynamics/{run_path(r.size, r.objective, r.fraction_str, s, r.pseed)}/dynamics.json"
            for r, s in wc.dynamics_checkpoints(config)]


#: the tables `taco tables` writes, and each one's row in the report's "Tables" category (taco.paper)
REPORT_TABLES = list(PAPER_TABLES)
REPORT_TABLE_LABELS = PAPER_TABLES
REPORT_FIGURES = ["figure5", "ablation", "data_efficiency"]
DYNAMICS_FIGURES = ["figure6", "figure2"]
#: each figure's row in the report (a name, as the tables have, not its path)
REPORT_FIGURE_LABELS = {
    "figure5": "Figure 5: average score vs pre-training steps (TACO, MLM)",
    "ablation": "Ablation: the four objectives vs pre-training steps",
    "data_efficiency": "Data efficiency: reduced vs full pre-training data",
    "pretrain_curves": "Pre-training curves: training and validation losses",
    "efficiency": "Steps to target: TACO against MLM (E1, E2)",
    "figure6": "Figure 6: intra- and inter-context similarity",
    "figure2": "Figure 2: learning dynamics of one objective",
}


# The report (`snakemake --report report.html`): HTML, images and PDF are shown inline, anything else
# is a download. Each Markdown page (tables, claims, efficiency, deviations, plan) has an HTML
# rendering beside it (taco.report.html) that the report shows; the long-form CSVs are downloads in
# one category of their own. Captions: workflow/report/<name>.rst (paths relative to workflow/rules).


def report_page(name, category, label, caption=None):
    """``{R}/<name>.html`` marked for the report: shown inline in ``category``, a row labelled
    ``label`` there, captioned by ``workflow/report/<caption or name>.rst``."""
    return report(f"{R}/{name}.html", caption=f"../report/{caption or name}.rst", category=category,
                  labels={"page": label})


def report_figure(name, category):
    """``{R}/<name>.png`` marked for the report: shown in ``category``, a row named by
    :data:`REPORT_FIGURE_LABELS`, captioned by ``workflow/report/<name>.rst``."""
    return report(f"{R}/{name}.png", caption=f"../report/{name}.rst", category=category,
                  labels={"figure": REPORT_FIGURE_LABELS[name]})


def report_csv(name, subcategory, caption=None):
    """``{R}/<name>.csv`` marked for the report: a download in the "Data (CSV)" category."""
    return report(f"{R}/{name}.csv", caption=f"../report/{caption or name}.rst", category="Data (CSV)",
                  subcategory=subcategory)


def all_targets():
    out = [f"{R}/{t}.csv" for t in REPORT_TABLES]
    out += [f"{R}/{f}.png" for f in REPORT_FIGURES]
    out += [f"{R}/claims.csv", f"{R}/claims.md", f"{R}/deviations.md"]
    if dynamics_targets():
        out += [f"{R}/{f}.png" for f in DYNAMICS_FIGURES]
    return out


# GLUE test-server submissions (submission.smk)


def submission_runs(wildcards):
    """metrics.json of every fine-tuned task and seed of one checkpoint (test_predictions.tsv beside it)."""
    run = run_path(wildcards.size, wildcards.objective, wildcards.fraction, wildcards.step, wildcards.pseed)
    return [f"{R}/finetune/{run}/{task}/seed-{seed}/metrics.json" for seed in config["finetune"]["seeds"]
            for task in TASKS]


def submission_targets():
    """Every submission zip of the grid: fine-tuned budget checkpoint x seed."""
    return [
        f"{R}/glue_submission/{run_path(r.size, r.objective, r.fraction_str, step, r.pseed)}/seed-{seed}.zip"
        for r in RUNS
        if wc.finetuned(config, r)
        for step in wc.finetune_budgets(config, r.size, r.fraction)
        for seed in config["finetune"]["seeds"]
    ]


def write_page(markdown_path, text, log):
    """Write the Markdown page ``text`` to ``markdown_path`` and its HTML rendering beside it
    (taco.report.html, as the report commands do; local rules), and a line to ``log``."""
    from taco.report.html import write_markdown_page

    paths = write_markdown_page(markdown_path, text)
    with open(log, "w") as fh:
        fh.write("wrote " + ", ".join(map(str, paths)) + "\n")


def write_json(path, obj, log):
    """Write ``obj`` as JSON to ``path`` (used by local bookkeeping rules)."""
    with open(path, "w") as fh:
        json.dump(obj, fh, indent=2, sort_keys=True)
    with open(log, "w") as fh:
        fh.write(f"wrote {path}\n")


def write_lines(path, lines, log):
    """Write one path per line to ``path`` (the input list of `taco aggregate --inputs-from`)."""
    with open(path, "w") as fh:
        fh.writelines(f"{line}\n" for line in lines)
    with open(log, "w") as fh:
        fh.write(f"wrote {path} ({len(lines)} lines)\n")
