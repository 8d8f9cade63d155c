# corpus -> tokenizer -> packed blocks (one per data fraction)


rule corpus:
    output:
        directory(path_data("corpus")),
    log:
        f"{R}/logs/data/corpus.log",
    benchmark:
        f"{R}/benchmarks/data/corpus.tsv"
    conda:
        ENVS["data"]
    params:
        taco=TACO,
        args=corpus_args(),
    shell:
        "{params.taco} corpus {params.args} --output {output} > {log} 2>&1"


rule tokenizer:
    input:
        corpus=path_data("corpus"),
    output:
        directory(path_data("tokenizer")),
    log:
        f"{R}/logs/data/tokenizer.log",
    conda:
        ENVS["data"]
    params:
        taco=TACO,
        args=tokenizer_args(),
    shell:
        "{params.taco} tokenizer --corpus {input.corpus} {params.args} --output {output} > {log} 2>&1"


rule pack:
    input:
        corpus=path_data("corpus"),
        tokenizer=path_data("tokenizer"),
    output:
        directory(path_data("blocks", "data-{fraction}")),
    log:
        f"{R}/logs/data/pack-data-{{fraction}}.log",
    benchmark:
        f"{R}/benchmarks/data/pack-data-{{fraction}}.tsv"
    conda:
        ENVS["data"]
    params:
        taco=TACO,
        max_len=config["max_seq_length"],
        val=config["validation_blocks"],
        seed=config["seed"],
    shell:
        "{params.taco} pack --corpus {input.corpus} --tokenizer {input.tokenizer} "
        "--max-seq-length {params.max_len} --fraction {wildcards.fraction} --seed {params.seed} "
        "--validation-blocks {params.val} --output {output} > {log} 2>&1"
