# Statistics over fine-tuning runs, and the learning-dynamics measurements per checkpoint.


localrules:
    analysis_spec,
    aggregate_inputs,


rule analysis_spec:
    output:
        f"{R}/analysis.json",
    log:
        f"{R}/logs/analysis/analysis_spec.log",
    params:
        spec=ANALYSIS_SPEC,
    run:
        write_json(output[0], params.spec, log[0])


# The metrics.json files, one per line: the paper's grid has ~3000, more than one command line holds.
rule aggregate_inputs:
    input:
        finetune_targets(),
    output:
        f"{R}/aggregate_inputs.txt",
    log:
        f"{R}/logs/analysis/aggregate_inputs.log",
    run:
        write_lines(output[0], list(input), log[0])


rule aggregate:
    input:
        metrics_list=f"{R}/aggregate_inputs.txt",
        spec=f"{R}/analysis.json",
    output:
        per_seed=f"{R}/aggregate/per_seed.csv",
        cells=f"{R}/aggregate/cells.csv",
        average=f"{R}/aggregate/glue_average.csv",
    log:
        f"{R}/logs/analysis/aggregate.log",
    conda:
        ENVS["stats"]
    resources:
        launch=CMD.launch("aggregate"),
    params:
        args=CMD.args(CMD.aggregate_args),
        paths=CMD.paths(CMD.aggregate_paths),
    shell:
        "{resources.launch} {params.args} {params.paths} > {log:q} 2>&1"


rule dynamics:
    input:
        checkpoint=f"{R}/pretrain/{RUN}",
        blocks=path_data("blocks", "data-1.0"),
    output:
        f"{R}/dynamics/{RUN}/dynamics.json",
    log:
        f"{R}/logs/dynamics/{RUN}.log",
    benchmark:
        f"{R}/benchmarks/dynamics/{RUN}.tsv"
    conda:
        ENVS["train"]
    threads: 2
    resources:
        gpu=0,
        mem_mb=8000,
        runtime=60,
        launch=CMD.launch("dynamics", omp=True),
    params:
        args=CMD.args(CMD.dynamics_args),
        paths=CMD.paths(CMD.dynamics_paths),
    shell:
        "{resources.launch} {params.args} {params.paths} > {log:q} 2>&1"
