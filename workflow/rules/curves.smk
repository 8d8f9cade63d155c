# Pre-training curves: training loss components over steps (each segment's train_log.jsonl) and the
# validation MLM loss of every budget checkpoint and of the control (eval.json), one line per run;
# the steps-to-target speedup of TACO over MLM from the same eval.json files and the GLUE averages
# (taco efficiency: table, figure and the verdicts of claims E1 / E2).


rule pretrain_curves:
    input:
        checkpoints=pretrain_targets() + wctl.checkpoints(config),
        spec=f"{R}/analysis.json",  # a synthetic corpus labels the figure
    output:
        png=report_figure("pretrain_curves", "Figures"),
        pdf=f"{R}/pretrain_curves.pdf",
        csv=f"{R}/pretrain_curves.csv",
    log:
        f"{R}/logs/report/pretrain_curves.log",
    conda:
        ENVS["stats"]
    resources:
        launch=CMD.launch("pretrain_curves"),
    params:
        args=CMD.args(CMD.pretrain_curves_args),
        paths=CMD.paths(CMD.pretrain_curves_paths),
    shell:
        "{resources.launch} {params.args} {params.paths} > {log:q} 2>&1"


rule efficiency:
    input:
        checkpoints=pretrain_targets(),
        per_seed=f"{R}/aggregate/per_seed.csv",
        spec=f"{R}/analysis.json",
        tuning=tuning_choices(),
    output:
        csv=report_csv("efficiency", "Claims"),
        curves=f"{R}/efficiency_curves.csv",
        md=f"{R}/efficiency.md",
        html=report_page("efficiency", "Claims", "Steps-to-target speedups (E1, E2)"),
        png=report_figure("efficiency", "Figures"),
        pdf=f"{R}/efficiency.pdf",
    log:
        f"{R}/logs/report/efficiency.log",
    conda:
        ENVS["stats"]
    resources:
        launch=CMD.launch("efficiency"),
    params:
        args=CMD.args(CMD.efficiency_args),
        paths=CMD.paths(CMD.efficiency_paths),
    shell:
        "{resources.launch} {params.args} {params.paths} > {log:q} 2>&1"
