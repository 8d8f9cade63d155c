"""The plan of one ``taco pretrain`` segment: everything checked and decided before any work
(:func:`taco.training.pretrain.make_segment_plan` builds it), read by the saved-state handling
(:mod:`taco.training.pretrain_state`) and the Trainer setup (:mod:`taco.training.pretrain_trainer`).
Its own module so that those two import it without importing the command.

What a segment reads from the command line is :class:`SegmentArgs`, typed, one field per setting; the
command line itself is kept only as the record written into the budget's manifest
(``SegmentPlan.parameters``)."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from taco.training.validation import GlueProbeOptions


@dataclass(frozen=True)
class SegmentArgs:
    """The settings a pre-training segment trains with, typed (built from ``taco pretrain``'s flags by
    :meth:`from_namespace`; each flag is declared once: the recipe in :mod:`taco.training.recipe`, the
    objective options with their objective, the monitoring options in :mod:`taco.training.monitoring`, the
    probe's in :func:`taco.training.validation.add_glue_probe_options`, the rest in
    :func:`taco.training.pretrain.build_parser`). The schedule (max steps, warmup, budget), precision and
    objective parameters are decided by the plan and live on :class:`SegmentPlan`.

    Attributes:
        objective: the pre-training objective's name (``taco.objectives``).
        size: the model preset (``taco.registry.PRESETS``).
        architecture: the encoder family (``taco.families``).
        dropout: the encoder's dropout; None: the family's own.
        attn_implementation: transformers' attention kernel; None: the family's first.
        mlm_probability: the share of tokens masked (0-1).
        lr: AdamW's peak learning rate.
        weight_decay: AdamW's weight decay.
        max_grad_norm: gradient clipping norm (0: none).
        per_device_batch_size: sequences per device micro-batch.
        grad_accum: micro-batches per optimizer step.
        seed: the pre-training seed (initialisation, data order, masks).
        device: ``auto`` or ``cpu``.
        torch_compile: ``torch.compile`` the model (Trainer's ``torch_compile``).
        logging_steps: optimizer steps between log lines.
        save_every: optimizer steps between intermediate states (0: only on SIGTERM and at the budget).
        keep_states: intermediate states kept in the state folder.
        no_progress: no progress bar.
        fresh_optimizer: accept a state without optimizer/scheduler/RNG files.
        eval_every: optimizer steps between validation points inside the segment (0: only at the budget).
        glue_probe: the frozen-feature GLUE probe's options (no task: no probe).
        glue_probe_every: optimizer steps between probes inside the segment (a multiple of ``eval_every``;
            ``--glue-probe-every 0`` resolves to ``eval_every``, and to 1 where that is 0 too).
        report_to: where the curves go (``tensorboard``, ``wandb``).
        tensorboard_dir: the TensorBoard folder (``--tensorboard-dir``, else ``<state-dir>/logs/tensorboard``).
        wandb_project / wandb_dir: the W&B project and local folder (None: W&B's default).
        debug_step_sleep: testing hook, seconds slept after each optimizer step.
    """

    objective: str
    size: str
    architecture: str
    dropout: float | None
    attn_implementation: str | None
    mlm_probability: float
    lr: float
    weight_decay: float
    max_grad_norm: float
    per_device_batch_size: int
    grad_accum: int
    seed: int
    device: str
    torch_compile: bool
    logging_steps: int
    save_every: int
    keep_states: int
    no_progress: bool
    fresh_optimizer: bool
    eval_every: int
    glue_probe: GlueProbeOptions
    glue_probe_every: int
    report_to: tuple[str, ...]
    tensorboard_dir: Path
    wandb_project: str
    wandb_dir: str | None
    debug_step_sleep: float

    @classmethod
    def from_namespace(cls, args: argparse.Namespace, tensorboard_dir: Path) -> "SegmentArgs":
        """The settings of a parsed ``taco pretrain`` command line (after ``--tuned-recipe`` was applied)
        with its resolved TensorBoard folder. AttributeError names a flag the parser lacks."""
        glue_probe = GlueProbeOptions.from_args(args)
        plain = {f: getattr(args, f) for f in cls.__dataclass_fields__
                 if f not in ("glue_probe", "glue_probe_every", "tensorboard_dir", "report_to")}
        return cls(**plain, glue_probe=glue_probe,
                   glue_probe_every=args.glue_probe_every or args.eval_every or 1,
                   report_to=tuple(args.report_to), tensorboard_dir=Path(tensorboard_dir))


@dataclass
class SegmentPlan:
    """One segment, decided.

    Attributes:
        args: the settings it trains with (:class:`SegmentArgs`).
        parameters: the command line as the budget's manifest records it (``vars`` of the parsed flags
            without the monitoring options and the testing hook, the schedule's resolved values added).
        blocks / output / state_dir / resume_from: the packed blocks, the budget checkpoint to write, the
            resumable state folder, the parent budget (None from scratch).
        start_step / until / max_steps / warmup_steps: optimizer steps: the parent's budget (0 from
            scratch), this budget, the full schedule's length and its warmup.
        precision: ``fp32``, ``bf16`` or ``fp16`` (resolved from ``auto``).
        fraction / size_name / seq_len / vocab_size: from the blocks and the run's size key.
        objective_params: the objective's options as hashed (``taco.objectives.hashed_options``).
        config_hash / hash_inputs: the run's identity and what it is computed from.
        blocks_manifest_sha256 / parent_manifest / parent_manifest_sha256: the inputs' identities.
        parent_lineage: identity of the parent's weights (its manifest's ``model_sha256``; None from
            scratch): the states of this segment continue exactly that parent.
    """

    args: SegmentArgs
    parameters: dict[str, Any]
    blocks: Path
    output: Path
    state_dir: Path
    resume_from: Path | None
    start_step: int
    until: int
    max_steps: int
    warmup_steps: int
    precision: str
    fraction: float
    size_name: str
    seq_len: int
    vocab_size: int
    objective_params: dict[str, Any]
    config_hash: str
    hash_inputs: dict[str, Any]
    blocks_manifest_sha256: str | None
    parent_manifest: dict[str, Any] | None = None
    parent_manifest_sha256: str | None = None
    parent_lineage: str | None = None
