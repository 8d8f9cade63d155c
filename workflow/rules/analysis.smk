# Statistics over fine-tuning runs, and the learning-dynamics measurements per checkpoint.


localrules:
    analysis_spec,


rule analysis_spec:
    output:
        f"{R}/analysis.json",
    log:
        f"{R}/logs/analysis/analysis_spec.log",
    params:
        spec=wc.analysis_spec(config, TASKS, MISSING_TASKS),
    run:
        write_json(output[0], params.spec, log[0])


rule aggregate:
    input:
        metrics=finetune_targets(),
        spec=f"{R}/analysis.json",
    output:
        per_seed=f"{R}/aggregate/per_seed.csv",
        cells=f"{R}/aggregate/cells.csv",
        average=f"{R}/aggregate/glue_average.csv",
    log:
        f"{R}/logs/analysis/aggregate.log",
    conda:
        ENVS["stats"]
    params:
        taco=TACO,
        outdir=lambda w, output: os.path.dirname(output.cells),
    shell:
        "{params.taco} aggregate --inputs {input.metrics} --analysis {input.spec} "
        "--output-dir {params.outdir} > {log} 2>&1"


rule dynamics:
    input:
        checkpoint=f"{R}/pretrain/{{size}}/{{variant}}/data-{{fraction}}/step-{{step}}",
        blocks=path_data("blocks", "data-1.0"),
    output:
        f"{R}/dynamics/{{size}}/{{variant}}/data-{{fraction}}/step-{{step}}/dynamics.json",
    log:
        f"{R}/logs/dynamics/{{size}}/{{variant}}/data-{{fraction}}/step-{{step}}.log",
    benchmark:
        f"{R}/benchmarks/dynamics/{{size}}/{{variant}}/data-{{fraction}}/step-{{step}}.tsv"
    conda:
        ENVS["train"]
    threads: 2
    resources:
        gpu=0,
        mem_mb=8000,
        runtime=60,
    params:
        taco=TACO,
        num_blocks=config["dynamics"]["num_blocks"],
        max_pairs=config["dynamics"]["max_pairs"],
        seed=config["seed"],
    shell:
        "OMP_NUM_THREADS={threads} {params.taco} dynamics --checkpoint {input.checkpoint} --blocks {input.blocks} "
        "--num-blocks {params.num_blocks} --max-pairs {params.max_pairs} --seed {params.seed} "
        "--output {output} > {log} 2>&1"
