# Statistics over fine-tuning runs, and the learning-dynamics measurements per checkpoint.


localrules:
    analysis_spec,


rule analysis_spec:
    output:
        f"{R}/analysis.json",
    params:
        spec=wc.analysis_spec(config, TASKS, MISSING_TASKS),
    log:
        f"{R}/logs/analysis/analysis_spec.log",
    run:
        with open(output[0], "w") as fh:
            json.dump(params.spec, fh, indent=2, sort_keys=True)
        with open(log[0], "w") as fh:
            fh.write(f"wrote {output[0]}\n")


rule aggregate:
    input:
        metrics=finetune_targets(),
        spec=f"{R}/analysis.json",
    output:
        per_seed=f"{R}/aggregate/per_seed.csv",
        cells=f"{R}/aggregate/cells.csv",
        average=f"{R}/aggregate/glue_average.csv",
    params:
        outdir=f"{R}/aggregate",
        listing=f"{R}/aggregate/inputs.txt",
    log:
        f"{R}/logs/analysis/aggregate.log",
    run:
        os.makedirs(params.outdir, exist_ok=True)
        with open(params.listing, "w") as fh:
            fh.write("\n".join(input.metrics) + "\n")
        shell(
            "{TACO} aggregate --inputs-from {params.listing} --analysis {input.spec} "
            "--output-dir {params.outdir} > {log} 2>&1"
        )


rule dynamics:
    input:
        checkpoint=f"{R}/pretrain/{{size}}/{{variant}}/data-{{fraction}}/step-{{step}}",
        blocks=path_data("blocks", "data-1.0"),
    output:
        f"{R}/dynamics/{{size}}/{{variant}}/data-{{fraction}}/step-{{step}}/dynamics.json",
    params:
        num_blocks=config["dynamics"]["num_blocks"],
        max_pairs=config["dynamics"]["max_pairs"],
        seed=config["seed"],
    threads: 2
    resources:
        gpu=0,
        mem_mb=8000,
        runtime=60,
    log:
        f"{R}/logs/dynamics/{{size}}/{{variant}}/data-{{fraction}}/step-{{step}}.log",
    benchmark:
        f"{R}/benchmarks/dynamics/{{size}}/{{variant}}/data-{{fraction}}/step-{{step}}.tsv"
    shell:
        "OMP_NUM_THREADS={threads} {TACO} dynamics --checkpoint {input.checkpoint} --blocks {input.blocks} "
        "--num-blocks {params.num_blocks} --max-pairs {params.max_pairs} --seed {params.seed} "
        "--output {output} > {log} 2>&1"
