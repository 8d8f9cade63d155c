"""Launching a job, below the domain: the fork server that imports torch and transformers once per run and
forks every local job from it (:mod:`taco.launch.forkserver`: client, ``start``/``stop``;
:mod:`taco.launch.forkserver_server`; :mod:`taco.launch.forkserver_protocol`) and the GPU slots of a local
multi-GPU box (:mod:`taco.launch.gpuslots`, ``taco gpu-slot``). It knows no objective, model or
configuration: the workflow (:mod:`taco.workflow.commands`) puts these words in front of a job's command.
The multi-node launcher stays :mod:`taco.workflow.nodes`: its module path is in the commands of finished
multi-node runs (Snakemake's ``params``, a rerun trigger).
"""
