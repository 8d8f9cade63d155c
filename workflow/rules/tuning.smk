# Equal tuning budgets (config pretrain.tuning, taco.training.tuning): every arm (a size's objective on all
# the data) runs the same trials, each a pre-training run of its own schedule to the horizon; the arm's
# best trial (tuning_choice) sets the recipe that its replicates read at run time (--tuned-recipe, an
# input of rule pretrain), so the DAG is whole before any trial runs.


rule pretrain_trial:
    wildcard_constraints:
        objective="|".join(OBJECTIVES),
        trial=r"[0-9]+",
    input:
        blocks=path_data("blocks", "data-1.0"),
    output:
        directory(f"{R}/tuning/{{size}}/{{objective}}/trial-{{trial}}/step-{{step}}"),
    log:
        f"{R}/logs/tuning/{{size}}/{{objective}}/trial-{{trial}}/step-{{step}}.log",
    benchmark:
        f"{R}/benchmarks/tuning/{{size}}/{{objective}}/trial-{{trial}}/step-{{step}}.tsv"
    conda:
        ENVS["train"]
    threads: lambda w: size_cfg(w.size)["threads"]
    resources:
        gpu=lambda w: size_cfg(w.size)["num_gpus"] if GPUS else 0,
        nodes=lambda w: size_cfg(w.size)["num_nodes"],  # SLURM's sbatch --nodes (taco.workflow.nodes)
        mem_mb=lambda w: size_cfg(w.size)["mem_mb"],
        runtime=lambda w: size_cfg(w.size)["runtime"],
        launch=CMD.launch("pretrain_trial", omp=True),
        settings=CMD.settings(CMD.trial_settings),
    params:
        args=CMD.args(CMD.trial_args),
        paths=CMD.paths(CMD.trial_paths),
    shell:
        "{resources.launch} {params.args} {resources.settings} {params.paths} >> {log:q} 2>&1"


rule tuning_choice:
    input:
        trials=tuning_trial_dirs,
        recorded=recorded_choice_file,
    output:
        f"{R}/tuning/{{size}}/{{objective}}/choice.json",
    log:
        f"{R}/logs/tuning/{{size}}/{{objective}}/choice.log",
    conda:
        ENVS["stats"]
    resources:
        launch=CMD.launch("tuning_choice"),
    params:
        args=CMD.args(CMD.tuning_choice_args),
        paths=CMD.paths(CMD.tuning_choice_paths),
    shell:
        "{resources.launch} {params.args} {params.paths} > {log:q} 2>&1"
