"""The no-pre-training control in the workflow (config ``pretrain.control: true``).

Any configuration can ask for it. For every size that has a full-data pre-training run, the
workflow writes ``{results}/pretrain/<size>/control/data-1.0/step-0`` with ``taco init`` (the same
architecture and vocabulary, randomly initialised with the pre-training seed, i.e. the MLM run's
step-0 model), fine-tunes it on every task and seed like a budget checkpoint, and lists it in the
analysis spec (``controls``), so that Table 1 shows it, Figure 5 draws it at step 0 and the claim
"pre-training helps" (final MLM checkpoint against the control) is evaluated.

Pre-training seeds: the config has one (``seed``); where a config lists several (``pretrain.seeds``,
or a run entry's own ``pretrain.runs[].seeds``), a size gets one control per seed of its full-data runs
(:func:`taco.workflow.config.size_seeds`).
Pure Python on plain dicts (no Snakemake, no torch).
"""

from __future__ import annotations

from typing import Any

from taco.families import DEFAULT_FAMILY
from taco.objectives.base import MLM_PROBABILITY_PARAMETER
from taco.registry import CONTROL
from taco.workflow import config as wc

#: the control's "budget": no pre-training step
CONTROL_STEP = 0
CONTROL_FRACTION = "1.0"



def checkpoint(results_dir: str, size: str, pseed: str = "") -> str:
    """Path of the control checkpoint of ``size`` (``pseed``: "" or ``/pretrain-seed-<n>``, as runs)."""
    return f"{results_dir}/pretrain/{size}/{CONTROL}/data-{CONTROL_FRACTION}{pseed}/step-{CONTROL_STEP}"


def checkpoints(config: dict[str, Any]) -> list[str]:
    """Every control checkpoint the config asks for (empty when ``pretrain.control`` is false):
    one per size and pre-training seed."""
    return [checkpoint(config["results_dir"], s, wc.pseed_part(p))
            for s in wc.control_sizes(config) for p in wc.size_seeds(config, s)]


def finetuned_checkpoints(config: dict[str, Any]) -> list[tuple[str, str]]:
    """``(size, checkpoint path)`` of every control that is fine-tuned: one per size and pre-training
    seed kept by ``finetune.pretrain_seeds``."""
    sel = config["finetune"].get("pretrain_seeds", "all")
    keep = lambda p: sel == "all" or (int(config["seed"]) if p is None else p) in {int(x) for x in sel}  # noqa: E731
    return [(size, checkpoint(config["results_dir"], size, wc.pseed_part(p)))
            for size in wc.control_sizes(config) for p in wc.size_seeds(config, size) if keep(p)]


def finetune_targets(config: dict[str, Any], tasks: list[str]) -> list[str]:
    """``metrics.json`` of every (control, task, fine-tuning seed), for the controls of the pre-training
    seeds that are fine-tuned (``finetune.pretrain_seeds``)."""
    return [f"{ckpt.replace('/pretrain/', '/finetune/', 1)}/{task}/seed-{seed}/metrics.json"
            for _, ckpt in finetuned_checkpoints(config) for task in tasks for seed in config["finetune"]["seeds"]]


def init_args(config: dict[str, Any], size: str, pseed: str = "") -> list[str]:
    """``taco init`` options for the control of ``size`` with the pre-training seed of ``pseed``."""
    s = config["pretrain"]["sizes"][size]
    arch = s.get("architecture", DEFAULT_FAMILY)  # written only when not BERT (BERT's command unchanged)
    return ["-m", "taco", "init", "--size", s["preset"], "--size-name", size,
            *(["--architecture", arch] if arch != DEFAULT_FAMILY else []),
            "--seed", str(wc.pretrain_seed_of(config, pseed)),
            MLM_PROBABILITY_PARAMETER.flag, str(MLM_PROBABILITY_PARAMETER.value(config)),
            *wc.glue_probe_words(config, every=False)]
