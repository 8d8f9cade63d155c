# GLUE fine-tuning: one job per (budget checkpoint, task, seed).


rule finetune:
    input:
        checkpoint=f"{R}/pretrain/{{size}}/{{variant}}/data-{{fraction}}/step-{{step}}",
    output:
        metrics=f"{R}/finetune/{{size}}/{{variant}}/data-{{fraction}}/step-{{step}}/{{task}}/seed-{{seed}}/metrics.json",
        predictions=f"{R}/finetune/{{size}}/{{variant}}/data-{{fraction}}/step-{{step}}/{{task}}/seed-{{seed}}/predictions.tsv",
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
