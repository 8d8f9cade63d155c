# Tables, figures and claims beside the published values, marked for `snakemake --report`: the
# tables, claims and deviations as HTML pages (report_page, common.smk), the figures as images, the
# long-form CSVs as downloads (report_csv).

AGG = {
    "per_seed": f"{R}/aggregate/per_seed.csv",
    "cells": f"{R}/aggregate/cells.csv",
    "average": f"{R}/aggregate/glue_average.csv",
    "spec": f"{R}/analysis.json",
}


rule tables:
    input:
        **AGG,
        # the frozen-feature GLUE probe column (pretrain.glue_probe; curves.smk writes the CSV)
        **({"curves": f"{R}/pretrain_curves.csv"} if wc.glue_probe_words(config) else {}),
    output:
        **{t: report_csv(t, "Tables") for t in REPORT_TABLES},
        **{f"{t}_html": report_page(t, "Tables", REPORT_TABLE_LABELS[t]) for t in REPORT_TABLES},
        markdown=[f"{R}/{t}.md" for t in REPORT_TABLES],
        latex=[f"{R}/{t}.tex" for t in REPORT_TABLES],
    log:
        f"{R}/logs/report/tables.log",
    conda:
        ENVS["stats"]
    resources:
        launch=CMD.launch("tables"),
    params:
        args=CMD.args(CMD.tables_args),
        paths=CMD.paths(CMD.tables_paths),
    shell:
        "{resources.launch} {params.args} {params.paths} > {log:q} 2>&1"


rule figures:
    input:
        **AGG,
    output:
        **{f: report_figure(f, "Figures") for f in REPORT_FIGURES},
        pdf=[f"{R}/{f}.pdf" for f in REPORT_FIGURES],
    log:
        f"{R}/logs/report/figures.log",
    conda:
        ENVS["stats"]
    resources:
        launch=CMD.launch("figures"),
    params:
        args=CMD.args(CMD.figures_args),
        paths=CMD.paths(CMD.figures_paths),
    shell:
        "{resources.launch} {params.args} {params.paths} > {log:q} 2>&1"


rule claims:
    input:
        **AGG,
        efficiency=f"{R}/efficiency.csv",  # the steps-to-target claims E1-E3, rows of claims.csv (curves.smk)
    output:
        csv=report_csv("claims", "Claims"),
        md=f"{R}/claims.md",
        html=report_page("claims", "Claims", "Claims: verdicts, intervals, notes"),
    log:
        f"{R}/logs/report/claims.log",
    conda:
        ENVS["stats"]
    resources:
        launch=CMD.launch("claims"),
    params:
        args=CMD.args(CMD.claims_args),
        paths=CMD.paths(CMD.claims_paths),
    shell:
        "{resources.launch} {params.args} {params.paths} > {log:q} 2>&1"


rule dynamics_figures:
    input:
        dynamics=dynamics_targets(),
        spec=AGG["spec"],  # a synthetic corpus labels both figures
    output:
        **{f: report_figure(f, "Learning dynamics") for f in DYNAMICS_FIGURES},
        pdf=[f"{R}/{f}.pdf" for f in DYNAMICS_FIGURES],
    log:
        f"{R}/logs/report/dynamics_figures.log",
    conda:
        ENVS["stats"]
    resources:
        launch=CMD.launch("dynamics_figures"),
    params:
        args=CMD.args(CMD.dynamics_figures_args),
        paths=CMD.paths(CMD.dynamics_figures_paths),
    shell:
        "{resources.launch} {params.args} {params.paths} > {log:q} 2>&1"


# The run configuration as Snakemake resolved it (files merged, schema defaults filled in), without
# the settings that change no result (threads, memory, time, logging, GPU slots): what `taco deviations`
# compares with the paper's setup. Rewritten when a setting it holds changes (taco.workflow.settings.run_config).
localrules:
    run_config,


rule run_config:
    output:
        f"{R}/run_config.json",
    log:
        f"{R}/logs/report/run_config.log",
    params:
        config=run_config(config),
    run:
        write_json(output[0], params.config, log[0])


rule deviations:
    input:
        config=f"{R}/run_config.json",
        spec=f"{R}/analysis.json",
    output:
        md=f"{R}/deviations.md",
        html=report_page("deviations", "Deviations", "Deviations from the paper's setup"),
    log:
        f"{R}/logs/report/deviations.log",
    conda:
        ENVS["stats"]
    resources:
        launch=CMD.launch("deviations"),
    params:
        args=CMD.args(CMD.deviations_args),
        paths=CMD.paths(CMD.deviations_paths),
    shell:
        "{resources.launch} {params.args} {params.paths} > {log:q} 2>&1"
