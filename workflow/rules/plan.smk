# The compute plan (taco.workflow.plan): printed once by the main Snakemake process before any job
# runs (jobs per compute rule, model FLOPs, GPU-hours, disk, time-limit warnings), and written to
# {R}/plan.md and plan.html for the report (with the cost of each table, figure and claim).

if workflow.is_main_process:
    try:
        from taco.workflow.plan.costs import build_plan as _build_plan
        from taco.workflow.plan.render import summary_line as _summary_line

        print(_summary_line(_build_plan(config, with_targets=False)) + f" (details: {R}/plan.md, `taco plan`)",
              file=sys.stderr)
    except Exception as _err:  # the plan is advice: never stop a run because it cannot be made
        print(f"compute plan unavailable: {type(_err).__name__}: {_err}", file=sys.stderr)


localrules:
    plan,


rule plan:
    output:
        md=f"{R}/plan.md",
        html=report_page("plan", "Compute plan", "Compute plan"),
    log:
        f"{R}/logs/report/plan.log",
    params:
        # what plan.md shows, and only that: a setting it does not show (threads, mem_mb, logging,
        # data_threads, gpus) re-plans nothing (taco.workflow.settings.plan_config)
        config=plan_config(config),
    run:
        from taco.workflow.plan.costs import build_plan
        from taco.workflow.plan.render import render_markdown

        write_page(output.md, render_markdown(build_plan(params.config)), log[0])
