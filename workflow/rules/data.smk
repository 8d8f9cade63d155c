# corpus -> tokenizer -> packed blocks (one per data fraction)


def corpus_args():
    c = config["corpus"]
    if c["source"] == "synthetic":
        return f"--source synthetic --num-documents {c['num_documents']} --seed {config['seed']}"
    if c["source"] == "local":
        paths = " ".join(wc.substitute_root(p, config) for p in c["paths"])
        args = f"--source local --paths {paths} --split-by {c['split_by']} --unk-policy {c['unk_policy']}"
        return args + (" --wikitext-detokenize" if c["wikitext_detokenize"] else "")
    specs = " ".join(f"{d['name']}:{d.get('config') or ''}:{d.get('split', 'train')}" for d in c["hub_datasets"])
    return f"--source hub --hub-datasets {specs}"


def tokenizer_args():
    t = config["tokenizer"]
    args = f"--kind {t['kind']}" + (" --lowercase" if t["lowercase"] else " --no-lowercase")
    if t["kind"] == "vocab":
        return args + f" --vocab-file {wc.substitute_root(t['vocab_file'], config)}"
    if t["kind"] == "hub":
        return args + f" --hub-id {t['hub_id']}"
    return args + f" --vocab-size {t['vocab_size']}"


rule corpus:
    output:
        directory(path_data("corpus")),
    params:
        args=corpus_args(),
    log:
        f"{R}/logs/data/corpus.log",
    benchmark:
        f"{R}/benchmarks/data/corpus.tsv"
    shell:
        "{TACO} corpus {params.args} --output {output} > {log} 2>&1"


rule tokenizer:
    input:
        corpus=path_data("corpus"),
    output:
        directory(path_data("tokenizer")),
    params:
        args=tokenizer_args(),
    log:
        f"{R}/logs/data/tokenizer.log",
    shell:
        "{TACO} tokenizer --corpus {input.corpus} {params.args} --output {output} > {log} 2>&1"


rule pack:
    input:
        corpus=path_data("corpus"),
        tokenizer=path_data("tokenizer"),
    output:
        directory(path_data("blocks", "data-{fraction}")),
    params:
        max_len=config["max_seq_length"],
        val=config["validation_blocks"],
        seed=config["seed"],
    log:
        f"{R}/logs/data/pack-data-{{fraction}}.log",
    benchmark:
        f"{R}/benchmarks/data/pack-data-{{fraction}}.tsv"
    shell:
        "{TACO} pack --corpus {input.corpus} --tokenizer {input.tokenizer} "
        "--max-seq-length {params.max_len} --fraction {wildcards.fraction} --seed {params.seed} "
        "--validation-blocks {params.val} --output {output} > {log} 2>&1"
