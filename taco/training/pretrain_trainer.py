"""The Trainer of a ``taco pretrain`` segment: Trainer subclass, segment callback, training arguments, the run.

Part of ``taco pretrain`` (the command, its plan and ``main``: :mod:`taco.training.pretrain`; the
saved states: :mod:`taco.training.pretrain_state`). :func:`run` trains one segment from its start
point (:func:`taco.training.pretrain_state._start_point`) up to ``--until`` with the learning-rate
schedule of the full run, saves a state on SIGTERM (exit 143), stops on a non-finite loss (exit 3)
and, on rank 0, exports the budget checkpoint. The MLM masking of global batch ``i`` draws from a
generator seeded by (seed, process, i) (:class:`_SeededMaskingCollator`), so it does not depend on
whether the run was resumed. transformers is imported lazily (``taco --help`` stays cheap).
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

from taco.cli_parts import cli_error
from taco.manifest import read_manifest
from taco.objectives import LOSS_TERMS
from taco.training.pretrain_state import (
    _CKPT_RE,
    EXIT_INTERRUPTED,
    EXIT_NONFINITE,
    _clean_stale_tmp,
    _export_and_keep_final_state,
    _start_point,
    _write_marker,
)
from taco.training.segment import SegmentPlan

#: seconds a collective waits for a rank that does not come (a dead node, a hung GPU) before the job fails
#: and its retry resumes from the saved state (transformers' ``ddp_timeout``, default 1,800 s: the torch
#: process group's timeout). Longer than any single-rank pause of a segment (validation and the budget
#: export, which rank 0 does while the others wait, take seconds on a GPU). Changes no result.
DDP_TIMEOUT_S = 600


# ------------------------------------------------------------------------------------------------
# training
# ------------------------------------------------------------------------------------------------
class _SeededMaskingCollator:
    """Wraps ``PreTrainingCollator``: the masking of global batch ``i`` draws from a generator seeded by
    (seed, process, i), so it is the same whether the run was resumed or not."""

    def __init__(self, inner, seed: int, process_index: int = 0):
        self.inner = inner
        self.seed = int(seed)
        self.process_index = int(process_index)
        self.batch_index = 0

    def __call__(self, features):
        import torch

        key = (self.seed * 1_000_003 + self.process_index) * 1_000_000_007 + self.batch_index
        gen = torch.Generator().manual_seed(key % (2**63 - 1))
        self.batch_index += 1
        if hasattr(self.inner, "generator"):
            self.inner.generator = gen
            return self.inner(features)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(key % (2**63 - 1))
            return self.inner(features)


def micro_batches_before(global_step: int, micro_batches_per_epoch: int, grad_accum: int) -> int:
    """Micro-batches this process has drawn before optimizer step ``global_step + 1``.

    The Trainer (transformers ``Trainer._run_epoch``) groups an epoch's ``micro_batches_per_epoch``
    batches into ``ceil(m / grad_accum)`` optimizer steps, the last over the remainder ``m % grad_accum``
    (when non-zero). So after an epoch ended on a partial accumulation, ``global_step x grad_accum``
    overcounts; the count is ``epochs x m + (global_step mod steps_per_epoch) x grad_accum``. Used to
    restore the masking generator's batch index on resume (:class:`_SeededMaskingCollator`).

    Raises ValueError for ``micro_batches_per_epoch < 1`` or ``grad_accum < 1``.
    """
    if micro_batches_per_epoch < 1 or grad_accum < 1:
        raise ValueError(f"need micro_batches_per_epoch >= 1 and grad_accum >= 1, got "
                         f"{micro_batches_per_epoch}, {grad_accum}")
    steps_per_epoch = -(-micro_batches_per_epoch // grad_accum)
    epochs, within = divmod(int(global_step), steps_per_epoch)
    return epochs * micro_batches_per_epoch + within * grad_accum


def _make_trainer_classes():
    """Trainer subclass and segment callback (imported lazily: keeps `taco --help` cheap)."""
    import torch
    from transformers import Trainer, TrainerCallback

    from taco.model.modeling import load_pretraining_model
    from taco.training.runlog import LossComponents, check_finite

    class PretrainTrainer(Trainer):
        """Trainer that checks the loss components before backward and logs them."""

        def __init__(self, *a, tokens_per_step: int = 0, **kw):
            super().__init__(*a, **kw)
            self.components = LossComponents()
            self.tokens_per_step = tokens_per_step

        def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
            """The model's loss, its components checked finite (before backward) and accumulated."""
            outputs = model(**inputs)
            comps = {t: getattr(outputs, f"{t}_loss", None) for t in LOSS_TERMS}
            check_finite(self.state.global_step + 1, outputs.loss, comps)
            self.components.add(comps)
            return (outputs.loss, outputs) if return_outputs else outputs.loss

        def log(self, logs, start_time=None):
            """The Trainer's log line plus the mean loss components and ``tokens_seen``."""
            if "loss" in logs:
                logs.update(self.components.means())
                logs["tokens_seen"] = self.state.global_step * self.tokens_per_step
            super().log(logs, start_time)

        def _load_from_checkpoint(self, resume_from_checkpoint, model=None):
            # strict: every weight of the model must come from the checkpoint
            model = model if model is not None else self.model
            loaded = load_pretraining_model(resume_from_checkpoint)
            model.load_state_dict(loaded.state_dict(), strict=True)
            del loaded

    class SegmentCallback(TrainerCallback):
        """Saves a state at the budget and on SIGTERM, marks complete states, stops the segment."""

        def __init__(self, plan: SegmentPlan, collator: _SeededMaskingCollator, t0: float, wall_before: float,
                     evaluate: Any = None):
            self.plan = plan
            self.evaluate = evaluate  # (step, model) -> None: an in-segment validation point (--eval-every)
            self.collator = collator
            self.t0 = t0
            self.wall_before = wall_before
            self.stop_requested = False
            self.stopped_by_signal = False

        def on_train_begin(self, args, state, control, train_dataloader=None, **kw):
            """Restore the masking generator's batch index at the resumed step."""
            self.collator.batch_index = micro_batches_before(
                state.global_step, len(train_dataloader), args.gradient_accumulation_steps)

        def on_step_end(self, args, state, control, **kw):
            """Validation point (``--eval-every``); save at the budget or after SIGTERM."""
            if self.plan.args.debug_step_sleep:
                time.sleep(self.plan.args.debug_step_sleep)
            every = self.plan.args.eval_every
            if (self.evaluate is not None and every and state.global_step % every == 0
                    and state.global_step < self.plan.until and state.is_world_process_zero):
                self.evaluate(state.global_step, kw["model"])
            if state.global_step >= self.plan.until or self.stop_requested:
                control.should_save = True

        def on_save(self, args, state, control, **kw):
            """Mark the saved state complete (rank 0); stop at the budget or after SIGTERM."""
            ckpt = Path(args.output_dir) / f"checkpoint-{state.global_step}"
            if state.is_world_process_zero and ckpt.is_dir():
                _write_marker(ckpt, state.global_step, self.plan.config_hash,
                              self.wall_before + time.time() - self.t0, "trainer", self.plan.parent_lineage)
            if state.global_step >= self.plan.until or self.stop_requested:
                control.should_training_stop = True
                self.stopped_by_signal = self.stop_requested and state.global_step < self.plan.until

    return PretrainTrainer, SegmentCallback, torch


def _training_arguments(plan: SegmentPlan, output_dir: Path):
    from transformers import TrainingArguments

    a = plan.args
    kwargs: dict[str, Any] = dict(
        output_dir=str(output_dir),
        max_steps=plan.max_steps,
        per_device_train_batch_size=a.per_device_batch_size,
        gradient_accumulation_steps=a.grad_accum,
        learning_rate=a.lr,
        weight_decay=a.weight_decay,
        adam_beta1=0.9, adam_beta2=0.999, adam_epsilon=1e-8,
        max_grad_norm=a.max_grad_norm,
        lr_scheduler_type="linear",
        warmup_steps=plan.warmup_steps,
        optim="adamw_torch",
        seed=a.seed,
        data_seed=a.seed,
        bf16=plan.precision == "bf16",
        fp16=plan.precision == "fp16",
        logging_strategy="steps",
        logging_steps=a.logging_steps,
        logging_first_step=True,
        save_strategy="steps" if a.save_every > 0 else "no",
        save_steps=a.save_every if a.save_every > 0 else 500,
        save_total_limit=a.keep_states,
        eval_strategy="no",
        report_to="none",
        torch_compile=a.torch_compile,
        disable_tqdm=a.no_progress,
        dataloader_drop_last=True,
        dataloader_num_workers=0,  # the masking generator is per batch index (see _SeededMaskingCollator)
        remove_unused_columns=False,
        use_cpu=a.device == "cpu",
        ddp_timeout=DDP_TIMEOUT_S,
    )
    return TrainingArguments(**kwargs)


def run(plan: SegmentPlan) -> int:
    """Train the segment and write the budget checkpoint; returns the exit status."""
    from taco.training.runlog import RunLogCallback

    t0 = time.time()
    rank = int(os.environ.get("RANK", "0"))  # torchrun / accelerate launch: one process per GPU
    state_dir = plan.state_dir
    state_dir.mkdir(parents=True, exist_ok=True)
    if rank == 0:
        _clean_stale_tmp(plan.output)
    monitor = _monitor(plan, rank)
    runlog = RunLogCallback(state_dir / "logs", extra={"until": plan.until}, monitor=monitor)
    runlog._is_world_zero = rank == 0
    try:
        return _run(plan, runlog, rank, t0)
    finally:
        runlog.close()


def _monitor(plan: SegmentPlan, rank: int):
    """The segment's :class:`taco.training.monitoring.Monitor`: TensorBoard in ``--tensorboard-dir``
    (default ``<state-dir>/logs/tensorboard``), W&B as one run per pre-training run (its id from the
    run's folder, the parent of ``--output``, and the config hash: every segment continues it)."""
    from taco.training.monitoring import Monitor, run_id

    a = plan.args
    return Monitor(a.report_to, a.tensorboard_dir if "tensorboard" in a.report_to else None,
                   wandb_project=a.wandb_project, wandb_dir=a.wandb_dir,
                   wandb_name=f"pretrain {plan.size_name} {a.objective} data-{plan.fraction:g} seed-{a.seed}",
                   wandb_id=run_id("pretrain", plan.output.resolve().parent, plan.config_hash),
                   wandb_group=f"{plan.size_name}/{a.objective}", wandb_job_type="pretrain",
                   wandb_config={**plan.hash_inputs, "size_name": plan.size_name, "fraction": plan.fraction,
                                 "config_hash": plan.config_hash},
                   enabled=rank == 0)


def _run(plan: SegmentPlan, runlog: Any, rank: int, t0: float) -> int:
    """:func:`run` once the log is open."""
    from datasets import load_from_disk
    from transformers import AutoTokenizer, set_seed

    from taco.model.collator import PreTrainingCollator
    from taco.families import get_family
    from taco.model.configs import encoder_config, special_token_ids
    from taco.model.modeling import pretraining_model_class
    from taco.training.runlog import VALIDATION_KEYS, NonFiniteLossError, ProgressCallback

    a = plan.args
    state_dir = plan.state_dir
    resume_ckpt, wall_before = _start_point(plan, state_dir, runlog, rank)
    current_step = int(_CKPT_RE.match(resume_ckpt.name).group(1)) if resume_ckpt else 0
    # the curve goes on from here: events a killed attempt (or an earlier run in this folder) logged
    # past this step are hidden in TensorBoard
    runlog.monitor.purge_step = current_step + 1

    # SIGTERM: finish the current step, save a state, exit 143
    stop = {"requested": False}

    def _on_sigterm(signum, frame):
        stop["requested"] = True
        if segment_cb is not None:
            segment_cb.stop_requested = True
        print("taco pretrain: SIGTERM received; saving a state at the end of this step", file=sys.stderr,
              flush=True)

    segment_cb = None
    old_handler = signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        if current_step < plan.until:
            tokenizer = AutoTokenizer.from_pretrained(str(plan.blocks / "tokenizer"))
            train = load_from_disk(str(plan.blocks))["train"].select_columns(["input_ids"])
            set_seed(a.seed)
            from taco.model.configs import dropout_overrides

            extra = dropout_overrides(a.architecture, a.dropout) if a.dropout is not None else {}
            config = encoder_config(a.size, plan.vocab_size, a.architecture, special_token_ids(tokenizer),
                                    attn_implementation=a.attn_implementation or get_family(a.architecture).attention_kernels[0],
                                    **extra)
            model = pretraining_model_class(a.architecture)(config, objective=a.objective, **plan.objective_params)
            targs = _training_arguments(plan, state_dir)
            inner = PreTrainingCollator(tokenizer, mlm_probability=a.mlm_probability, objective=a.objective,
                                 objective_params=plan.objective_params)
            collator = _SeededMaskingCollator(inner, a.seed, targs.process_index)
            PretrainTrainer, SegmentCallback, _ = _make_trainer_classes()
            segment_cb = SegmentCallback(plan, collator, t0, wall_before,
                                         evaluate=_validation_point(plan, tokenizer, runlog))
            segment_cb.stop_requested = stop["requested"]
            tokens_per_step = a.per_device_batch_size * a.grad_accum * targs.world_size * plan.seq_len
            runlog.tokens_per_step = tokens_per_step
            trainer = PretrainTrainer(
                model=model, args=targs, train_dataset=train, data_collator=collator,
                processing_class=tokenizer, tokens_per_step=tokens_per_step,
                callbacks=[segment_cb, runlog, ProgressCallback(f"pretrain {a.objective}", plan.until)],
            )
            try:
                trainer.train(resume_from_checkpoint=str(resume_ckpt) if resume_ckpt else None)
            except NonFiniteLossError as exc:
                runlog.write_event({"event": "nonfinite_loss", "step": exc.step, "component": exc.component,
                                    "values": exc.values})
                runlog.close()
                return cli_error("pretrain", exc, EXIT_NONFINITE)
            current_step = trainer.state.global_step
            if current_step < plan.until:
                if stop["requested"]:
                    runlog.write_event({"event": "interrupted", "step": current_step})
                    print(f"taco pretrain: interrupted at step {current_step}; state saved in {state_dir}; "
                          "rerun the same command to continue", file=sys.stderr)
                    return EXIT_INTERRUPTED
                raise RuntimeError(f"training stopped at step {current_step} before --until {plan.until}")
        elif stop["requested"]:
            return EXIT_INTERRUPTED
    finally:
        signal.signal(signal.SIGTERM, old_handler)

    if rank != 0:  # rank 0 writes the budget checkpoint
        return 0
    _export_and_keep_final_state(plan, state_dir, t0, wall_before)
    validation = read_manifest(plan.output).get("validation") or {}
    runlog.monitor.log({f"validation/{k}": validation.get(k) for k in VALIDATION_KEYS if k in validation}, plan.until)
    print(f"taco pretrain: wrote {plan.output} (step {plan.until})", file=sys.stderr)
    return 0


def _validation_point(plan: SegmentPlan, tokenizer: Any, runlog: Any):
    """The in-segment validation of ``--eval-every``: ``evaluate(step, model)`` computes the validation
    MLM loss on the fixed blocks and masks (:func:`taco.training.validation.evaluate_validation`, own
    generators, dropout off, train mode restored) inside ``torch.random.fork_rng``, so no training
    random generator moves and the weights are those of a run without it; writes the log event
    ``validation`` (step, :data:`taco.training.runlog.VALIDATION_KEYS`: MLM loss and accuracy and every loss term's ``<term>_loss``, and the context probe's keys; with ``--glue-probe-tasks``, at every
    ``--glue-probe-every``-th step, the frozen-feature GLUE probe's keys, :func:`taco.training.validation.glue_probe`).
    Blocks without a validation split: no-op."""
    import torch

    from taco.training.context_probe import PROBE_KEYS
    from taco.training.runlog import VALIDATION_KEYS
    from taco.training.validation import evaluate_validation, glue_probe

    probe = plan.args.glue_probe
    probe_every = plan.args.glue_probe_every

    def evaluate(step: int, model: Any) -> None:
        devices = [torch.cuda.current_device()] if torch.cuda.is_available() and plan.args.device != "cpu" else []
        with torch.random.fork_rng(devices=devices):
            try:
                result = evaluate_validation(model, plan.blocks, tokenizer, mlm_probability=plan.args.mlm_probability)
            except ValueError:
                return
        keys = (*VALIDATION_KEYS, "n_blocks", "mask_seed", *PROBE_KEYS)
        event = {"event": "validation", "step": int(step), **{k: result[k] for k in keys if k in result}}
        if probe.tasks and int(step) % probe_every == 0:
            event.update(glue_probe(model, tokenizer, probe))
        runlog.write_event(event)

    return evaluate
