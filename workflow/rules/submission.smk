# GLUE test-server submissions: one job per fine-tuned checkpoint writes a zip per seed, gathered from the test
# predictions that each fine-tuning job wrote (`taco glue-submission`). Tasks not fine-tuned get
# labelled placeholder files; the zip's README.md says which files are real predictions.


rule glue_submission:
    input:
        metrics=submission_runs,
    output:
        [f"{R}/glue_submission/{RUN}/seed-{s}.zip" for s in config["finetune"]["seeds"]],
    log:
        f"{R}/logs/glue_submission/{RUN}.log",
    conda:
        ENVS["stats"]
    resources:
        launch=CMD.launch("glue_submission"),
    params:
        args=CMD.args(CMD.glue_submission_args),
        paths=CMD.paths(CMD.glue_submission_paths),
    shell:
        "{resources.launch} {params.args} {params.paths} > {log:q} 2>&1"
