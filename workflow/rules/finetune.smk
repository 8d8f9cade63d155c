# GLUE fine-tuning of a budget checkpoint. By default one job per (checkpoint, task, seed): the unit
# a GPU scheduler wants. With finetune.seeds_per_job: all, one job runs every seed of a
# (checkpoint, task) in one process (same outputs, same numbers; saves the ~5 s start-up per seed
# that dominates tiny CPU runs). Both forms share params and shell, so switching between them
# re-runs nothing.

FT_RUN = f"{R}/finetune/{RUN}/{{task}}"
FT_SEEDS = config["finetune"]["seeds"]


rule finetune:
    input:
        checkpoint=f"{R}/pretrain/{RUN}",
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
        args=CMD.args("finetune"),
        paths=CMD.paths("finetune"),
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
