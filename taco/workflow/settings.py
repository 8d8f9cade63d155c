"""Settings that change no result (how and where jobs run: threads, memory, time, GPU slots, logging, monitoring,
the fork server) and the configurations that leave them out: ``run_config.json`` and the one ``plan.md`` is
made from. ``taco.workflow.commands`` passes these settings as resources or paths, never as params, so
changing one re-runs nothing (``tests/test_rerun.py``). Pure Python."""

from __future__ import annotations

from typing import Any

#: Settings that change no result: how and where jobs run (``taco.workflow.commands`` passes them as
#: resources or paths, never as params). ``*`` stands for every key of a mapping (each size).
#: ``monitoring``: where training curves go (TensorBoard, W&B).
NO_RESULT_SETTINGS: tuple[str, ...] = (
    "pretrain.logging_steps", "pretrain.sizes.*.save_every", "pretrain.sizes.*.threads",
    "pretrain.sizes.*.mem_mb", "pretrain.sizes.*.runtime", "finetune.threads", "finetune.mem_mb",
    "finetune.runtime", "finetune.num_gpus", "finetune.seeds_per_job", "finetune.tasks_per_job", "data_threads",
    "gpus", "gpu_lock_dir", "monitoring", "fork_server",
)


#: Of those, what ``plan.md`` shows (``taco.workflow.plan.command``): jobs per rule (one per seed or one per
#: task), each rule's ``runtime`` beside the longest job, and the CPU-only note (no GPU per job).
PLAN_SHOWS: tuple[str, ...] = (
    "pretrain.sizes.*.runtime", "finetune.runtime", "finetune.num_gpus", "finetune.seeds_per_job",
    "finetune.tasks_per_job",
)



def without_settings(config: dict[str, Any], keys: tuple[str, ...] | list[str]) -> dict[str, Any]:
    """A deep copy of ``config`` without the dotted ``keys`` (``*`` matches every key of a mapping);
    keys that are absent are skipped."""
    import copy

    out = copy.deepcopy(config)

    def drop(node: Any, parts: list[str]) -> None:
        if not isinstance(node, dict):
            return
        head, rest = parts[0], parts[1:]
        for k in (list(node) if head == "*" else [head]):
            if k not in node:
                continue
            if rest:
                drop(node[k], rest)
            else:
                del node[k]

    for key in keys:
        drop(out, key.split("."))
    return out



def run_config(config: dict[str, Any]) -> dict[str, Any]:
    """What ``run_config.json`` holds: the resolved configuration without :data:`NO_RESULT_SETTINGS`
    (``taco deviations`` compares the rest with the paper's setup; none of those is a deviation). The
    ``run_config`` rule's only param, so that changing how jobs run rewrites neither it nor
    ``deviations.md``."""
    return without_settings(config, NO_RESULT_SETTINGS)



def plan_config(config: dict[str, Any]) -> dict[str, Any]:
    """What ``plan.md`` is made from: the configuration without the :data:`NO_RESULT_SETTINGS` that it
    does not show (all but :data:`PLAN_SHOWS`). The ``plan`` rule's param and the config it renders."""
    return without_settings(config, tuple(k for k in NO_RESULT_SETTINGS if k not in PLAN_SHOWS))
