# corpus -> tokenizer -> packed blocks (one per data fraction). Command lines: taco.workflow.commands.


rule corpus:
    output:
        directory(path_data("corpus")),
    log:
        f"{R}/logs/data/corpus.log",
    benchmark:
        f"{R}/benchmarks/data/corpus.tsv"
    conda:
        ENVS["data"]
    threads: config["data_threads"]
    resources:
        launch=CMD.launch("corpus"),
        settings=CMD.settings(CMD.corpus_settings),
    params:
        args=CMD.args(CMD.corpus_args),
        paths=CMD.paths(CMD.corpus_paths),
    shell:
        "{resources.launch} {params.args} {resources.settings} {params.paths} > {log:q} 2>&1"


rule tokenizer:
    input:
        corpus=path_data("corpus"),
    output:
        directory(path_data("tokenizer")),
    log:
        f"{R}/logs/data/tokenizer.log",
    conda:
        ENVS["data"]
    threads: config["data_threads"]
    resources:
        launch=CMD.launch("tokenizer"),
        settings=CMD.settings(CMD.tokenizer_settings),
    params:
        args=CMD.args(CMD.tokenizer_args),
        paths=CMD.paths(CMD.tokenizer_paths),
    shell:
        "{resources.launch} {params.args} {resources.settings} {params.paths} > {log:q} 2>&1"


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
    threads: config["data_threads"]
    resources:
        launch=CMD.launch("pack"),
        settings=CMD.settings(CMD.pack_settings),
    params:
        args=CMD.args(CMD.pack_args),
        paths=CMD.paths(CMD.pack_paths),
    shell:
        "{resources.launch} {params.args} {resources.settings} {params.paths} > {log:q} 2>&1"
