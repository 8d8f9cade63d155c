# GLUE fine-tuning of a budget checkpoint. By default one job per (checkpoint, task, seed): the unit
# a GPU scheduler wants. With finetune.seeds_per_job: all, one job runs every seed of a
# (checkpoint, task) in one process (same outputs, same numbers; saves the ~5 s start-up per seed
# that dominates tiny CPU runs).

FT_RUN = f"{R}/finetune/{{size}}/{{variant}}/data-{{fraction}}/step-{{step}}/{{task}}"
FT_SEEDS = config["finetune"]["seeds"]


if config["finetune"]["seeds_per_job"] == "one":

    rule finetune:
        input:
            checkpoint=f"{R}/pretrain/{{size}}/{{variant}}/data-{{fraction}}/step-{{step}}",
        output:
            metrics=f"{FT_RUN}/seed-{{seed}}/metrics.json",
            predictions=f"{FT_RUN}/seed-{{seed}}/predictions.tsv",
        log:
            f"{R}/logs/finetune/{{size}}/{{variant}}/data-{{fraction}}/step-{{step}}/{{task}}/seed-{{seed}}.log",
        benchmark:
            f"{R}/benchmarks/finetune/{{size}}/{{variant}}/data-{{fraction}}/step-{{step}}/{{task}}/seed-{{seed}}.tsv"
        conda:
            ENVS["train"]
        threads: config["finetune"]["threads"]
        resources:
            gpu=config["finetune"]["num_gpus"] if GPUS else 0,
            mem_mb=config["finetune"]["mem_mb"],
            runtime=config["finetune"]["runtime"],
        params:
            args=finetune_args,
            launcher=lambda w: gpu_launch(config["finetune"]["num_gpus"]) + TACO,
            outdir=lambda w, output: os.path.dirname(output.metrics),
        shell:
            "OMP_NUM_THREADS={threads} {params.launcher} finetune --checkpoint {input.checkpoint} "
            "--task {wildcards.task} --seed {wildcards.seed} {params.args} --output {params.outdir} "
            "> {log} 2>&1"

else:

    rule finetune:
        input:
            checkpoint=f"{R}/pretrain/{{size}}/{{variant}}/data-{{fraction}}/step-{{step}}",
        output:
            metrics=[f"{FT_RUN}/seed-{s}/metrics.json" for s in FT_SEEDS],
            predictions=[f"{FT_RUN}/seed-{s}/predictions.tsv" for s in FT_SEEDS],
        log:
            f"{R}/logs/finetune/{{size}}/{{variant}}/data-{{fraction}}/step-{{step}}/{{task}}.log",
        benchmark:
            f"{R}/benchmarks/finetune/{{size}}/{{variant}}/data-{{fraction}}/step-{{step}}/{{task}}.tsv"
        conda:
            ENVS["train"]
        threads: config["finetune"]["threads"]
        resources:
            gpu=config["finetune"]["num_gpus"] if GPUS else 0,
            mem_mb=config["finetune"]["mem_mb"],
            runtime=lambda w: config["finetune"]["runtime"] * len(FT_SEEDS),
        params:
            args=finetune_args,
            launcher=lambda w: gpu_launch(config["finetune"]["num_gpus"]) + TACO,
            seeds=" ".join(str(s) for s in FT_SEEDS),
            outdir=lambda w, output: os.path.join(
                os.path.dirname(os.path.dirname(output.metrics[0])), "seed-{seed}"
            ),
        shell:
            "OMP_NUM_THREADS={threads} {params.launcher} finetune --checkpoint {input.checkpoint} "
            "--task {wildcards.task} --seed {params.seeds} {params.args} --output {params.outdir} "
            "> {log} 2>&1"
