# One pre-training segment per budget, chained: step-B resumes from step-A (the previous budget).
# Resumable state lives in {R}/.state/ (not a declared output), so Snakemake's cleanup of a killed
# job cannot delete it, and a rerun resumes from the newest state there.


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
    if GPUS and n > 1:
        return prefix + f"{sys.executable} -m torch.distributed.run --standalone --nproc_per_node {n} -m taco"
    return prefix + TACO


rule pretrain:
    input:
        blocks=path_data("blocks", "data-{fraction}"),
        parent=parent_checkpoint,
    output:
        directory(f"{R}/pretrain/{{size}}/{{variant}}/data-{{fraction}}/step-{{step}}"),
    params:
        args=pretrain_args,
        launcher=pretrain_launcher,
        resume=lambda w, input: f"--resume-from {input.parent}" if input.parent else "",
        state=f"{R}/.state/pretrain/{{size}}/{{variant}}/data-{{fraction}}/step-{{step}}",
    threads: lambda w: size_cfg(w.size)["threads"]
    resources:
        gpu=lambda w: size_cfg(w.size)["num_gpus"] if GPUS else 0,
        mem_mb=lambda w: size_cfg(w.size)["mem_mb"],
        runtime=lambda w: size_cfg(w.size)["runtime"],
    log:
        f"{R}/logs/pretrain/{{size}}/{{variant}}/data-{{fraction}}/step-{{step}}.log",
    benchmark:
        f"{R}/benchmarks/pretrain/{{size}}/{{variant}}/data-{{fraction}}/step-{{step}}.tsv"
    shell:
        "OMP_NUM_THREADS={threads} {params.launcher} pretrain --blocks {input.blocks} {params.args} "
        "--until {wildcards.step} {params.resume} --state-dir {params.state} --output {output} "
        ">> {log} 2>&1"
