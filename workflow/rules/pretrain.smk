# One pre-training segment per budget, chained: step-B resumes from step-A (the previous budget).
# Resumable state lives in {R}/.state/ (not a declared output), so Snakemake's cleanup of a killed
# job cannot delete it, and a rerun resumes from the newest state there.


rule pretrain:
    input:
        blocks=path_data("blocks", "data-{fraction}"),
        parent=parent_checkpoint,
    output:
        directory(f"{R}/pretrain/{{size}}/{{variant}}/data-{{fraction}}/step-{{step}}"),
    log:
        f"{R}/logs/pretrain/{{size}}/{{variant}}/data-{{fraction}}/step-{{step}}.log",
    benchmark:
        f"{R}/benchmarks/pretrain/{{size}}/{{variant}}/data-{{fraction}}/step-{{step}}.tsv"
    conda:
        ENVS["train"]
    threads: lambda w: size_cfg(w.size)["threads"]
    resources:
        gpu=lambda w: size_cfg(w.size)["num_gpus"] if GPUS else 0,
        mem_mb=lambda w: size_cfg(w.size)["mem_mb"],
        runtime=lambda w: size_cfg(w.size)["runtime"],
    params:
        args=pretrain_args,
        launcher=pretrain_launcher,
        resume=lambda w, input: f"--resume-from {input.parent}" if input.parent else "",
        state=f"{R}/.state/pretrain/{{size}}/{{variant}}/data-{{fraction}}/step-{{step}}",
    shell:
        "OMP_NUM_THREADS={threads} {params.launcher} pretrain --blocks {input.blocks} {params.args} "
        "--until {wildcards.step} {params.resume} --state-dir {params.state} --output {output} "
        ">> {log} 2>&1"
