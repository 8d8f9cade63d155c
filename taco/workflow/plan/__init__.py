"""The compute plan of a configuration, before anything runs: ``taco plan`` (:mod:`taco.workflow.plan.command`:
its parser, reading and checking the configuration, ``snakemake -n``'s job table), the numbers
(:mod:`taco.workflow.plan.costs`: jobs, model FLOPs, GPU- and CPU-hours, disk, time limits, what each target
costs; where each number comes from), their inputs (:mod:`taco.workflow.plan.inputs`: device check, vocabulary,
tasks and their sizes) and the Markdown / JSON / one-line output (:mod:`taco.workflow.plan.render`).
"""
