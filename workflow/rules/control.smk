# The no-pre-training control (config pretrain.control: true): for every size with a full-data run,
# the same architecture from random initialisation (`taco init`, step 0, the pre-training seed),
# fine-tuned by the `finetune` rule like every budget checkpoint (taco.workflow.control).


from taco.workflow import control as wctl


rule pretrain_control:
    input:
        blocks=path_data("blocks", "data-" + wctl.CONTROL_FRACTION),
    output:
        directory(wctl.checkpoint(R, "{size}", "{pseed}")),
    log:
        wctl.checkpoint(f"{R}/logs", "{size}", "{pseed}") + ".log",
    conda:
        ENVS["train"]
    threads: 1
    resources:
        mem_mb=4000,
        runtime=30,
        launch=CMD.launch("init", omp=True),
    params:
        args=CMD.args(CMD.pretrain_control_args),
        paths=CMD.paths(CMD.pretrain_control_paths),
    shell:
        "{resources.launch} {params.args} {params.paths} > {log:q} 2>&1"
