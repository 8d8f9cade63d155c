# One pre-training segment per budget, chained: step-B resumes from step-A (the previous budget).
# Resumable state lives in {R}/.state/ (not a declared output), so Snakemake's cleanup of a killed
# job cannot delete it, and a rerun resumes from the newest state there.
# params hold what changes the weights; logging, state saving, threads, memory, time and GPU slots
# are resources, so changing them re-runs nothing (taco.workflow.commands).


rule pretrain:
    wildcard_constraints:
        objective="|".join(OBJECTIVES),  # objectives only; the control is written by pretrain_control
    input:
        blocks=path_data("blocks", "data-{fraction}"),
        parent=parent_checkpoint,
        recipe=tuned_recipe,
    output:
        directory(f"{R}/pretrain/{RUN}"),
    log:
        f"{R}/logs/pretrain/{RUN}.log",
    benchmark:
        f"{R}/benchmarks/pretrain/{RUN}.tsv"
    conda:
        ENVS["train"]
    threads: lambda w: size_cfg(w.size)["threads"]
    resources:
        gpu=lambda w: size_cfg(w.size)["num_gpus"] if GPUS else 0,
        nodes=lambda w: size_cfg(w.size)["num_nodes"],  # SLURM's sbatch --nodes (taco.workflow.nodes)
        mem_mb=lambda w: size_cfg(w.size)["mem_mb"],
        runtime=lambda w: size_cfg(w.size)["runtime"],
        launch=CMD.launch("pretrain", omp=True),
        settings=CMD.settings(CMD.pretrain_settings),
    params:
        args=CMD.args(CMD.pretrain_args),
        paths=CMD.paths(CMD.pretrain_paths),
    shell:
        "{resources.launch} {params.args} {resources.settings} {params.paths} >> {log:q} 2>&1"
