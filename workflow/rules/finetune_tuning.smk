# Equal fine-tuning budgets (config finetune.tuning, taco.evaluation.finetune_tuning): every checkpoint, the
# no-pre-training control included, runs the same grid of settings with the trials' own seeds; per task the
# best mean dev score (finetune_choice) sets the setting its reported runs read (--tuned-recipe, an input of
# the fine-tuning rules), so the DAG is whole before any trial runs. Off: neither rule is reachable.

FT_TRIAL = f"{R}/finetune_tuning/{RUN}/trial-{{trial}}"


rule finetune_trial:
    wildcard_constraints:
        trial=r"[0-9]+",
    input:
        checkpoint=f"{R}/pretrain/{RUN}",
    output:
        metrics=[f"{FT_TRIAL}/{t}/seed-{s}/metrics.json" for t in TASKS for s in FT_TRIAL_SEEDS],
    log:
        f"{R}/logs/finetune_tuning/{RUN}/trial-{{trial}}.log",
    benchmark:
        f"{R}/benchmarks/finetune_tuning/{RUN}/trial-{{trial}}.tsv"
    conda:
        ENVS["train"]
    threads: config["finetune"]["threads"]
    resources:
        gpu=config["finetune"]["num_gpus"] if GPUS else 0,
        mem_mb=config["finetune"]["mem_mb"],
        runtime=config["finetune"]["runtime"] * len(FT_TRIAL_SEEDS) * max(len(TASKS), 1),
        launch=CMD.launch("finetune", omp=True),
    params:
        args=CMD.args(CMD.finetune_trial_args),
        paths=CMD.paths(CMD.finetune_trial_paths),
    shell:
        "{resources.launch} {params.args} {params.paths} > {log:q} 2>&1"


rule finetune_choice:
    input:
        metrics=finetune_trial_metrics,
    output:
        f"{R}/finetune_tuning/{RUN}/choice.json",
    log:
        f"{R}/logs/finetune_tuning/{RUN}/choice.log",
    conda:
        ENVS["stats"]
    resources:
        launch=CMD.launch("finetune_choice"),
    params:
        args=CMD.args(CMD.finetune_choice_args),
        paths=CMD.paths(CMD.finetune_choice_paths),
    shell:
        "{resources.launch} {params.args} {params.paths} > {log:q} 2>&1"
