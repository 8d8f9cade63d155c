# Pre-training curves: training loss components over steps (each segment's train_log.jsonl) and the
# validation MLM loss of every budget checkpoint and of the control (eval.json), one line per variant.


rule pretrain_curves:
    input:
        checkpoints=pretrain_targets() + wctl.checkpoints(config),
    output:
        png=report(
            f"{R}/pretrain_curves.png",
            caption="../report/pretrain_curves.rst",
            category="Figures",
        ),
        pdf=f"{R}/pretrain_curves.pdf",
        csv=f"{R}/pretrain_curves.csv",
    log:
        f"{R}/logs/report/pretrain_curves.log",
    conda:
        ENVS["stats"]
    resources:
        launch=CMD.launch("pretrain_curves"),
    params:
        args=CMD.args("pretrain_curves"),
        paths=CMD.paths("pretrain_curves"),
    shell:
        "{resources.launch} {params.args} {params.paths} > {log:q} 2>&1"
