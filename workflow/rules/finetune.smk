# GLUE fine-tuning of a budget checkpoint. By default one job per (checkpoint, task, seed): the unit
# a GPU scheduler wants. With finetune.seeds_per_job: all, one job runs every seed of a
# (checkpoint, task) in one process (same outputs, same numbers; saves the ~5 s start-up per seed
# that dominates tiny CPU runs). Both forms share params and shell, so switching between them
# re-runs nothing.

FT_RUN = f"{R}/finetune/{RUN}/{{task}}"
FT_SEEDS = config["finetune"]["seeds"]
# finetune.mnli_start (default off): input `init` (mnli_start_model, common.smk) and the MNLI rules
# below; off, the rules, their inputs and their commands are those without the option.


rule finetune:
    input:
        checkpoint=f"{R}/pretrain/{RUN}",
        init=mnli_start_model,
        recipe=finetune_recipe,
    output:
        metrics=f"{FT_RUN}/seed-{{seed}}/metrics.json",
        predictions=f"{FT_RUN}/seed-{{seed}}/predictions.tsv",
    log:
        f"{R}/logs/finetune/{RUN}/{{task}}/seed-{{seed}}.log",
    benchmark:
        f"{R}/benchmarks/finetune/{RUN}/{{task}}/seed-{{seed}}.tsv"
    conda:
        ENVS["train"]
    threads: config["finetune"]["threads"]
    resources:
        gpu=config["finetune"]["num_gpus"] if GPUS else 0,
        mem_mb=config["finetune"]["mem_mb"],
        runtime=config["finetune"]["runtime"],
        launch=CMD.launch("finetune", omp=True),
    params:
        args=CMD.args(CMD.finetune_args),
        paths=CMD.paths(CMD.finetune_paths),
    shell:
        "{resources.launch} {params.args} {params.paths} > {log:q} 2>&1"


if config["finetune"]["seeds_per_job"] == "all":

    use rule finetune as finetune_seeds with:
        output:
            metrics=[f"{FT_RUN}/seed-{s}/metrics.json" for s in FT_SEEDS],
            predictions=[f"{FT_RUN}/seed-{s}/predictions.tsv" for s in FT_SEEDS],
        log:
            f"{R}/logs/finetune/{RUN}/{{task}}.log",
        benchmark:
            f"{R}/benchmarks/finetune/{RUN}/{{task}}.tsv"
        resources:
            gpu=config["finetune"]["num_gpus"] if GPUS else 0,
            mem_mb=config["finetune"]["mem_mb"],
            runtime=config["finetune"]["runtime"] * len(FT_SEEDS),
            launch=CMD.launch("finetune", omp=True),

    ruleorder: finetune_seeds > finetune


# finetune.tasks_per_job: all (not with mnli_start): one job per checkpoint fine-tunes every task and
# seed in one process, one run after another (same outputs, same numbers; saves a process start-up per
# task and seed). The tasks come with the job's paths, so switching between the forms re-runs nothing
# beyond the first switch from per-task jobs (their --task was a param).
if config["finetune"]["tasks_per_job"] == "all" and not FT_FROM_MNLI:

    use rule finetune as finetune_checkpoint with:
        output:
            metrics=[f"{R}/finetune/{RUN}/{t}/seed-{s}/metrics.json" for t in TASKS for s in FT_SEEDS],
            predictions=[f"{R}/finetune/{RUN}/{t}/seed-{s}/predictions.tsv" for t in TASKS for s in FT_SEEDS],
        log:
            f"{R}/logs/finetune/{RUN}.log",
        benchmark:
            f"{R}/benchmarks/finetune/{RUN}.tsv"
        resources:
            gpu=config["finetune"]["num_gpus"] if GPUS else 0,
            mem_mb=config["finetune"]["mem_mb"],
            runtime=config["finetune"]["runtime"] * len(FT_SEEDS) * len(TASKS),
            launch=CMD.launch("finetune", omp=True),

    ruleorder: finetune_checkpoint > finetune

    if config["finetune"]["seeds_per_job"] == "all":

        ruleorder: finetune_checkpoint > finetune_seeds


# MNLI's jobs with finetune.mnli_start: the same job, which also saves the reported epoch's model
FT_MNLI = f"{R}/finetune/{RUN}/{{task,mnli}}"
if FT_FROM_MNLI and config["finetune"]["seeds_per_job"] == "all":

    use rule finetune_seeds as finetune_mnli_seeds with:
        output:
            metrics=[f"{FT_MNLI}/seed-{s}/metrics.json" for s in FT_SEEDS],
            predictions=[f"{FT_MNLI}/seed-{s}/predictions.tsv" for s in FT_SEEDS],
            model=[directory(f"{FT_MNLI}/seed-{s}/model") for s in FT_SEEDS],

    ruleorder: finetune_mnli_seeds > finetune_seeds > finetune

elif FT_FROM_MNLI:

    use rule finetune as finetune_mnli with:
        output:
            metrics=f"{FT_MNLI}/seed-{{seed}}/metrics.json",
            predictions=f"{FT_MNLI}/seed-{{seed}}/predictions.tsv",
            model=directory(f"{FT_MNLI}/seed-{{seed}}/model"),

    ruleorder: finetune_mnli > finetune
