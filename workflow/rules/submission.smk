# GLUE test-server submissions: one zip per fine-tuned checkpoint and seed, gathered from the test
# predictions that each fine-tuning job wrote (`taco glue-submission`). Tasks not fine-tuned get
# labelled placeholder files; the zip's README.md says which files are real predictions.


def submission_runs(wildcards):
    """metrics.json of every fine-tuned task of one checkpoint and seed (test_predictions.tsv beside it)."""
    run = run_path(wildcards.size, wildcards.variant, wildcards.fraction, wildcards.step)
    return [f"{R}/finetune/{run}/{task}/seed-{wildcards.seed}/metrics.json" for task in TASKS]


def submission_targets():
    """Every submission zip of the grid: fine-tuned budget checkpoint x seed."""
    return [
        f"{R}/glue_submission/{run_path(r.size, r.variant, r.fraction_str, step)}/seed-{seed}.zip"
        for r in RUNS
        for step in wc.finetune_budgets(config, r.size, r.fraction)
        for seed in config["finetune"]["seeds"]
    ]


rule glue_submission:
    input:
        metrics=submission_runs,
    output:
        f"{R}/glue_submission/{RUN}/seed-{{seed}}.zip",
    log:
        f"{R}/logs/glue_submission/{RUN}/seed-{{seed}}.log",
    conda:
        ENVS["stats"]
    resources:
        launch=CMD.launch("glue_submission"),
    params:
        args=CMD.args("glue_submission"),
        paths=CMD.paths("glue_submission"),
    shell:
        "{resources.launch} {params.args} {params.paths} > {log:q} 2>&1"
