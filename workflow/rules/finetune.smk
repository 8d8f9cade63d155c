# GLUE fine-tuning: one job per (budget checkpoint, task, seed).


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


rule finetune:
    input:
        checkpoint=f"{R}/pretrain/{{size}}/{{variant}}/data-{{fraction}}/step-{{step}}",
    output:
        metrics=f"{R}/finetune/{{size}}/{{variant}}/data-{{fraction}}/step-{{step}}/{{task}}/seed-{{seed}}/metrics.json",
        predictions=f"{R}/finetune/{{size}}/{{variant}}/data-{{fraction}}/step-{{step}}/{{task}}/seed-{{seed}}/predictions.tsv",
    params:
        args=finetune_args,
        launcher=lambda w: gpu_launch(config["finetune"]["num_gpus"]) + TACO,
        outdir=lambda w, output: os.path.dirname(output.metrics),
    threads: config["finetune"]["threads"]
    resources:
        gpu=config["finetune"]["num_gpus"] if GPUS else 0,
        mem_mb=config["finetune"]["mem_mb"],
        runtime=config["finetune"]["runtime"],
    log:
        f"{R}/logs/finetune/{{size}}/{{variant}}/data-{{fraction}}/step-{{step}}/{{task}}/seed-{{seed}}.log",
    benchmark:
        f"{R}/benchmarks/finetune/{{size}}/{{variant}}/data-{{fraction}}/step-{{step}}/{{task}}/seed-{{seed}}.tsv"
    shell:
        "OMP_NUM_THREADS={threads} {params.launcher} finetune --checkpoint {input.checkpoint} "
        "--task {wildcards.task} --seed {wildcards.seed} {params.args} --output {params.outdir} "
        "> {log} 2>&1"
