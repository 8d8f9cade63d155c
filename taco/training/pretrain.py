"""``taco pretrain``: one resumable pre-training segment, from a budget (or scratch) to the next budget.

The paper fine-tunes checkpoints taken at many budgets of one pre-training run. A run is executed
as a chain of *segments* ``0 -> A -> B -> ...``: each segment resumes from the previous budget
checkpoint (``--resume-from``) and stops at ``--until``; the learning-rate schedule is always that
of the full run (``--max-steps``), so the chain gives the same weights as one uninterrupted run.

Outputs
-------
``--output`` (the budget checkpoint, a declared workflow output), written atomically
(``<output>.tmp-<pid>`` then rename) and never modified afterwards:

- ``config.json``, ``model.safetensors``, tokenizer files: a plain BERT (``AutoModelForMaskedLM``
  / ``AutoModelForSequenceClassification.from_pretrained(dir)`` load it);
- ``trainer_state/``: optimizer, scheduler, RNG states, ``trainer_state.json`` (global step, hence
  the data position), everything the next segment needs to continue exactly;
- ``train_log.jsonl``: the segment's log lines;
- ``manifest.json``: ``step``, ``tokens_seen``, ``objective``, ``size``, ``fraction``,
  ``config_hash``, ``parent_checkpoint``, ``wall_time_s``, ``code_version``, ``packages``, ...

``--state-dir`` (scratch, *outside* the declared outputs): Trainer checkpoints every
``--save-every`` steps and on SIGTERM, plus ``logs/`` (``train_log.jsonl``, TensorBoard). A rerun of
the same segment resumes from the newest valid state there (a state is valid once its
``taco_state.json`` marker exists and its config hash matches). On SIGTERM (SLURM time limit,
preemption) the segment finishes the current optimizer step, saves a state and exits with status
143, so a retry continues from there. A state also records the parent budget's weights
(``model_sha256`` of its manifest): states that continue another parent (one retrained since) are
ignored.

After the budget checkpoint is written the intermediate scratch checkpoints are removed, but the
final state (step ``--until``) is kept: the budget's files are hard links of it (no extra space on
one file system, a copy otherwise), and the manifest names it (``retained_state``). If Snakemake is
killed (``kill -9``) while the trainer runs on and finishes, the next ``snakemake`` (profile:
``rerun-incomplete``) deletes the budget as incomplete and reruns this command: it finds the final
state of exactly this segment (same config hash, step and parent weights) and, once its export
record (``exported_manifest.json``: the budget's manifest, with config hash, blocks and
``model_sha256``) matches, exports it again without training (event ``reexport`` in
``logs/train_log.jsonl``; a mismatch is logged as ``stale_final_state`` and the segment trains). The next segment, which starts
only once this budget is accepted, removes the retained state of its parent.

Exit status: 0 done; 2 bad input (before any work); 3 non-finite loss; 4 no space left on device
while saving (the path is named, the half-written save removed, earlier states stay valid); 143
interrupted by SIGTERM with a state saved.

Exactness on resume: the data order comes from the Trainer's seedable sampler (seed + epoch) and
its data-position skip; the MLM masking of each batch draws from a generator seeded by
(seed, process, global batch index), so it does not depend on what ran before; dropout and the TC
sampling use the global RNG, which the Trainer restores at the step where the state was saved.

Modules
-------
This module is the command: its parser, :func:`make_segment_plan` (every check before any work, the config
hash) and :func:`main`. The saved states (markers, damaged states, resume lookup, export, the segment
lock, a full disk) are in :mod:`taco.training.pretrain_state`; the Trainer (subclass, segment
callback, training arguments, :func:`run`) in :mod:`taco.training.pretrain_trainer`. Their public
names are re-exported here, so ``taco.training.pretrain.<name>`` keeps working.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from taco.families import DEFAULT_FAMILY, FAMILIES
from taco.training.validation import add_glue_probe_options
from taco.cli_parts import cli_error
from taco.errors import UsageError, is_disk_full
from taco.manifest import (MANIFEST_NAME, ManifestError, read_json_record, read_manifest, sha256_file, sha256_json,
                           sha256_tree)
from taco.objectives import OBJECTIVE_SPECS, OPTIONS, check_options, hashed_options
from taco.registry import OBJECTIVES, PRESETS, PRETRAIN_SCHEDULE
from taco.parameters import check_values
from taco.training.recipe import DEFAULT_PRETRAIN_SEED, RECIPE, RECIPE_AFTER_OBJECTIVE
from taco.training.segment import SegmentArgs, SegmentPlan
from taco.training.pretrain_state import state_dir_of, tensorboard_dir_of
from taco.training.pretrain_state import (
    EXIT_INTERRUPTED,
    KIND,
    TRAINER_STATE_DIR,
    _finished_budget,
    _report_no_space,
    _segment_locked_by_another,
    acquire_segment_lock,
    budget_model_damage,
    missing_training_files,
)
from taco.training.pretrain_trainer import (
    run,
)


# ------------------------------------------------------------------------------------------------
# command line
# ------------------------------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    """The command line of ``taco pretrain`` (objective options from ``taco.objectives``, monitoring
    options from ``taco.training.monitoring``)."""
    from taco.cli_parts import HelpFormatter

    p = argparse.ArgumentParser(
        prog="taco pretrain", formatter_class=HelpFormatter,
        description="Pre-train one segment (scratch or --resume-from budget) up to --until and write the "
        "budget checkpoint --output atomically. Resumable: rerun the same command after a kill.",
    )
    p.add_argument("--blocks", required=True, help="packed blocks directory (taco pack output)")
    p.add_argument("--objective", required=True, help="pre-training objective: " + ", ".join(OBJECTIVES))
    p.add_argument("--size", required=True, choices=PRESETS,
                   help="the model preset (the manifest's size_preset; config pretrain.sizes.<size>.preset)")
    p.add_argument("--size-name", default=None,
                   help="the run's size key, recorded as the manifest's size (a key of config pretrain.sizes; default: --size)")
    p.add_argument("--until", type=int, default=None, help="budget where this segment stops (default max-steps)")
    p.add_argument("--output", required=True, help="budget checkpoint directory to write (must not exist)")
    p.add_argument("--state-dir", default=None,
                   help="resumable scratch state, outside declared outputs (default: <output>.state)")
    p.add_argument("--resume-from", default=None, help="previous budget checkpoint directory")
    p.add_argument("--max-grad-norm", type=float, default=1.0, help="gradient clipping norm (0: none)")
    p.add_argument("--tuned-recipe", default=None,
                   help="choice.json of `taco tuning-choice` (config pretrain.tuning): its learning_rate, "
                        "warmup_steps and dropout replace --lr, --warmup-steps and --dropout (the arm's best trial)")
    recipe = p.add_argument_group("recipe (config pretrain.sizes.<size>.*, pretrain.mlm_probability; "
                                  "taco.training.recipe)")
    for f in (*RECIPE, *RECIPE_AFTER_OBJECTIVE):
        f.add_to(recipe)
    add_objective_options(p)
    p.add_argument("--seed", type=int, default=DEFAULT_PRETRAIN_SEED, help="pre-training seed (initialisation, data order, masks)")
    p.add_argument("--eval-every", type=int, default=0,
                   help="validation MLM loss on the fixed validation blocks and masks every N steps inside the "
                        "segment (log event 'validation', eval.json 'points'); 0: only at the budget. Changes no "
                        "weight (own generators, train mode restored) and is not in the config hash")
    add_glue_probe_options(p, every=True)
    p.add_argument("--fresh-optimizer", action="store_true",
                   help="continue from a state or --resume-from budget that lacks its optimizer/scheduler/RNG "
                        "files with a fresh optimizer (the weights then differ from an uninterrupted run; "
                        "recorded in the manifest). Without it such a state is refused (exit 2)")
    p.add_argument("--torch-compile", action="store_true",
                   help="torch.compile the model (Trainer torch_compile; default off). Not in the config hash")
    p.add_argument("--attn-implementation", default=None,
                   choices=tuple(dict.fromkeys(k for f in FAMILIES.values() for k in f.attention_kernels)),
                   help="attention kernel of the encoder (transformers' attn_implementation); one of the family's "
                        "attention_kernels (taco/families/<name>.py), default its first (sdpa for BERT, RoBERTa and "
                        "ModernBERT). Not in the config hash")
    p.add_argument("--save-every", type=int, default=1000, help="intermediate state every N steps (0: only on "
                   "SIGTERM and at the budget)")
    p.add_argument("--keep-states", type=int, default=2, help="intermediate states kept in --state-dir")
    p.add_argument("--logging-steps", type=int, default=50, help="steps between log lines (changes no result)")
    p.add_argument("--fraction", type=float, default=None,
                   help="data fraction recorded in the manifest (default: from the blocks manifest, else 1.0)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--device", choices=("auto", "cpu"), default="auto", help="cpu forces the CPU")
    from taco.training import monitoring

    monitoring.add_arguments(p, "<state-dir>/logs/tensorboard")
    # testing hook: sleep after every optimizer step (lets a test kill a run mid-way); not for users
    p.add_argument("--debug-step-sleep", type=float, default=0.0, help="testing hook: sleep this many seconds after each optimizer step (lets a test kill a run mid-way); not for users")
    return p


# ------------------------------------------------------------------------------------------------
# plan: everything checked and decided before any work
# ------------------------------------------------------------------------------------------------
def _blocks_fraction(blocks_manifest: dict[str, Any] | None) -> float | None:
    if not blocks_manifest:
        return None
    for where in (blocks_manifest, blocks_manifest.get("parameters", {}) or {}):
        if isinstance(where, dict) and where.get("fraction") is not None:
            return float(where["fraction"])
    return None


def _resolve_precision(precision: str, device: str) -> str:
    import torch

    cuda = torch.cuda.is_available() and device != "cpu"
    if precision == "auto":
        if not cuda:
            return "fp32"
        return "bf16" if torch.cuda.is_bf16_supported() else "fp16"
    if precision == "fp16" and not cuda:
        raise UsageError("--precision fp16 needs a GPU (use fp32 or bf16 on CPU)")
    return precision


@dataclass(frozen=True)
class _Schedule:
    max_steps: int
    warmup_steps: int
    until: int


@dataclass(frozen=True)
class _BlocksInfo:
    seq_len: int
    vocab_size: int
    fraction: float
    manifest_sha256: str | None
    tree_sha256: str  # the blocks' identity in the config hash (manifest hash, else the file tree's)


@dataclass(frozen=True)
class _Parent:
    resume_from: Path | None = None
    start_step: int = 0
    manifest: dict[str, Any] | None = None
    manifest_sha256: str | None = None


def _check_schedule(args: argparse.Namespace) -> _Schedule:
    """Step 1: objective, schedule and batch settings (no file is read but --tuned-recipe's, applied first)."""
    from taco.objectives import get_objective

    if args.tuned_recipe:
        from taco.training.tuning import apply_choice

        apply_choice(args, args.tuned_recipe)

    try:
        objective = get_objective(args.objective)
    except ValueError as exc:
        raise UsageError(f"--objective: {exc}") from None
    size = args.size
    max_steps = args.max_steps if args.max_steps is not None else PRETRAIN_SCHEDULE[size]["max_steps"]
    warmup = args.warmup_steps if args.warmup_steps is not None else PRETRAIN_SCHEDULE[size]["warmup_steps"]
    until = args.until if args.until is not None else max_steps
    recipe = {**{f.name: getattr(args, f.name) for f in (*RECIPE, *RECIPE_AFTER_OBJECTIVE)},
              "max_steps": max_steps, "warmup_steps": warmup}
    errors = check_values((*RECIPE, *RECIPE_AFTER_OBJECTIVE), recipe)
    if errors:
        raise UsageError("; ".join(errors))
    for name, value, minimum in (("--until", until, 1), ("--logging-steps", args.logging_steps, 1),
                                 ("--save-every", args.save_every, 0), ("--keep-states", args.keep_states, 1),
                                 ("--eval-every", args.eval_every, 0)):
        if value < minimum:
            raise UsageError(f"{name} must be >= {minimum}, got {value}")
    _check_glue_probe(args)
    if args.per_device_batch_size < objective.min_device_batch:
        terms = " + ".join(term.upper() for term in objective.terms[1:])
        raise UsageError(f"--per-device-batch-size {args.per_device_batch_size}: objective {args.objective!r}: its "
                         f"{terms} loss draws its negatives from the other sequences of the device batch; it needs >= "
                         f"{objective.min_device_batch} sequences per device batch")
    if until > max_steps:
        raise UsageError(f"--until {until} exceeds --max-steps {max_steps} (budgets must not pass the full run)")
    if warmup >= max_steps:
        print(f"taco pretrain: note: warm-up {warmup} steps >= the schedule's {max_steps} steps (--warmup-steps, "
              "--max-steps): the learning rate never reaches its peak", file=sys.stderr)
    if args.architecture not in objective.architectures:
        raise UsageError(f"--architecture {args.architecture}: objective {args.objective!r} works on "
                         f"{', '.join(objective.architectures)} only (it reaches those models' own modules)")
    kernels = FAMILIES[args.architecture].attention_kernels
    if args.attn_implementation is not None and args.attn_implementation not in kernels:
        raise UsageError(f"--attn-implementation {args.attn_implementation}: the {args.architecture} family runs under "
                         f"{' or '.join(kernels)} (attention_kernels of taco/families/{args.architecture}.py)")
    errors = check_options(_option_values(args), {o.name: o.flag for o in OPTIONS.values()})
    if errors:
        raise UsageError("; ".join(errors))
    return _Schedule(max_steps, warmup, until)


def _inspect_blocks(args: argparse.Namespace) -> _BlocksInfo:
    """Step 2: the packed blocks (a datasets folder with a tokenizer): sequence length, vocabulary,
    one global batch at least, data fraction."""
    blocks = Path(args.blocks)
    if not blocks.is_dir():
        raise FileNotFoundError(f"--blocks {blocks}: no such directory")
    if not (blocks / "tokenizer").is_dir():
        raise FileNotFoundError(f"--blocks {blocks}: no tokenizer/ directory (is it a `taco pack` output?)")
    try:
        blocks_manifest = read_manifest(blocks)
        blocks_manifest_sha = sha256_file(blocks / MANIFEST_NAME)
    except FileNotFoundError:
        blocks_manifest, blocks_manifest_sha = None, None

    from datasets import load_from_disk
    from transformers import AutoTokenizer

    try:
        ds = load_from_disk(str(blocks))
    except Exception as exc:  # noqa: BLE001 - report which file is broken
        raise FileNotFoundError(f"--blocks {blocks}: not a datasets save_to_disk directory ({exc})") from None
    if "train" not in ds or "input_ids" not in ds["train"].column_names:
        raise UsageError(f"--blocks {blocks}: needs a 'train' split with an 'input_ids' column")
    train = ds["train"]
    if len(train) == 0:
        raise UsageError(f"--blocks {blocks}: the train split is empty")
    seq_len = len(train[0]["input_ids"])
    from taco.families.base import MAX_POSITIONS

    if seq_len > MAX_POSITIONS:
        raise UsageError(f"--blocks {blocks}: blocks of {seq_len} tokens, longer than the {MAX_POSITIONS} positions "
                         "every encoder family has (pack with --max-seq-length <= 512)")
    tokenizer = AutoTokenizer.from_pretrained(str(blocks / "tokenizer"))
    vocab_size = len(tokenizer)
    max_id = max(max(row) for row in train.select(range(min(len(train), 64)))["input_ids"])
    if max_id >= vocab_size:
        raise UsageError(f"--blocks {blocks}: token id {max_id} >= tokenizer vocabulary size {vocab_size} "
                         "(tokenizer and blocks disagree)")
    world = int(os.environ.get("WORLD_SIZE", "1"))
    global_batch = args.per_device_batch_size * args.grad_accum * world
    if len(train) < global_batch:
        raise UsageError(f"--blocks {blocks}: {len(train)} training blocks, fewer than one global batch "
                         f"({global_batch})")

    fraction_manifest = _blocks_fraction(blocks_manifest)
    if args.fraction is not None and fraction_manifest is not None and abs(args.fraction - fraction_manifest) > 1e-9:
        raise UsageError(f"--fraction {args.fraction} disagrees with the blocks manifest ({fraction_manifest})")
    fraction = args.fraction if args.fraction is not None else (fraction_manifest if fraction_manifest is not None
                                                                  else 1.0)
    return _BlocksInfo(seq_len, vocab_size, fraction, blocks_manifest_sha,
                       blocks_manifest_sha or sha256_tree(blocks))


def add_objective_options(p: argparse.ArgumentParser) -> None:
    """One ``--<group>-<key>`` flag per objective option declared in ``taco.objectives`` (its type,
    default, choices and help come from the declaration)."""
    groups: dict[str, Any] = {}
    for opt in OPTIONS.values():
        if opt.group not in groups:
            users = [o.name for o in OBJECTIVE_SPECS.values() if opt.group in o.options]
            groups[opt.group] = p.add_argument_group(f"{opt.group} options (objectives: {', '.join(users)})")
        opt.add_to(groups[opt.group], help_suffix="")


def _option_values(args: argparse.Namespace) -> dict[str, Any]:
    """Parameter name -> value of every objective option on the command line (defaults included)."""
    return {name: getattr(args, name) for name in OPTIONS}


def _objective_params(args: argparse.Namespace) -> dict[str, Any]:
    """The model's objective parameters: every option and the MLM selection probability."""
    return {**_option_values(args), "mlm_probability": args.mlm_probability}


def _hashed_objective_params(args: argparse.Namespace) -> dict[str, Any]:
    """The objective options that can change this objective's weights (``taco.objectives.hashed_options``:
    an option of a loss the objective does not use is at its default or absent, so e.g.
    ``--tc-temperature`` never changes an MLM run's config hash, and the hashes of runs made before an
    option existed stay the same), and the MLM selection probability."""
    if args.objective not in OBJECTIVE_SPECS:
        return _objective_params(args)
    return {**hashed_options(args.objective, _option_values(args)), "mlm_probability": args.mlm_probability}


def _hash_inputs(args: argparse.Namespace, sched: _Schedule, info: _BlocksInfo, precision: str) -> dict[str, Any]:
    """Step 3: everything that changes the weights of the full run (not --until, paths, logging, saving,
    validation points, torch.compile or the attention kernel)."""
    return {
        "objective": args.objective, "size": args.size, "objective_params": _hashed_objective_params(args),
        "vocab_size": info.vocab_size, "seq_len": info.seq_len, "max_steps": sched.max_steps,
        "warmup_steps": sched.warmup_steps, "lr": args.lr, "weight_decay": args.weight_decay,
        "max_grad_norm": args.max_grad_norm, "per_device_batch_size": args.per_device_batch_size,
        "grad_accum": args.grad_accum, "world_size": int(os.environ.get("WORLD_SIZE", "1")), "seed": args.seed,
        "precision": precision, "blocks": info.tree_sha256, "scheduler": "linear", "optimizer": "adamw_torch",
        # BERT's hashes stay those of the runs made before the families existed
        **({"architecture": args.architecture} if args.architecture != DEFAULT_FAMILY else {}),
        # and every run's stays that of the runs made before dropout was settable
        **({"dropout": args.dropout} if args.dropout is not None else {}),
        # and of one node: the nodes of a multi-node run (2 x 1 and 1 x 2 are then different runs, though
        # their weights are the same bytes on CPU: tests/test_distributed.py)
        **({"num_nodes": num_nodes()} if num_nodes() > 1 else {}),
    }


def _check_glue_probe(args: argparse.Namespace) -> None:
    """The probe's options before any work (:func:`taco.training.validation.check_glue_probe_options`) and a
    cadence on the validation points; UsageError naming the option."""
    from taco.training.validation import check_glue_probe_options, glue_probe_tasks

    check_glue_probe_options(args)
    every, eval_every = args.glue_probe_every, args.eval_every
    if glue_probe_tasks(args) and (every < 0 or (every and (not eval_every or every % eval_every))):
        raise UsageError(f"--glue-probe-every {every}: must be 0 or a positive multiple of --eval-every ({eval_every})")


def num_nodes() -> int:
    """Nodes of this torchrun job: ``WORLD_SIZE / LOCAL_WORLD_SIZE`` (both set by torch.distributed.run;
    1 for a single process)."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    return max(1, world // max(1, int(os.environ.get("LOCAL_WORLD_SIZE", str(world)))))


def _check_output(args: argparse.Namespace) -> tuple[Path, Path]:
    """Step 4: the budget checkpoint must not exist yet; the state folder lies outside it."""
    output = Path(args.output)
    if output.exists():
        raise FileExistsError(f"--output {output} exists; a finished budget checkpoint is never modified")
    state_dir = state_dir_of(args)
    if state_dir.resolve() == output.resolve() or output.resolve() in state_dir.resolve().parents:
        raise UsageError("--state-dir must be outside --output")
    return output, state_dir


def _check_parent(args: argparse.Namespace, until: int, config_hash: str,
                  hash_inputs: dict[str, Any]) -> _Parent:
    """Step 5: the previous budget checkpoint (``--resume-from``) continues this very run."""
    if not args.resume_from:
        return _Parent()
    resume_from = Path(args.resume_from)
    if not resume_from.is_dir():
        raise FileNotFoundError(f"--resume-from {resume_from}: no such checkpoint directory")
    parent_manifest = read_json_record(resume_from / MANIFEST_NAME, (), UsageError, "budget manifest")
    parent_sha = sha256_file(resume_from / MANIFEST_NAME)
    if parent_manifest.get("kind") != KIND or "step" not in parent_manifest:
        raise UsageError(f"--resume-from {resume_from}: not a `taco pretrain` budget checkpoint")
    damage = budget_model_damage(resume_from, parent_manifest)
    if damage:
        raise UsageError(f"--resume-from {resume_from}: {damage}; refusing to continue from these weights. "
                         "Delete the budget so the workflow writes it again")
    if not (resume_from / TRAINER_STATE_DIR / "trainer_state.json").is_file():
        raise FileNotFoundError(f"--resume-from {resume_from}: no {TRAINER_STATE_DIR}/trainer_state.json "
                                "(incomplete checkpoint)")
    missing = missing_training_files(resume_from / TRAINER_STATE_DIR)
    if missing and not args.fresh_optimizer:
        raise UsageError(f"--resume-from {resume_from}: {TRAINER_STATE_DIR}/{missing[0]} is missing (incomplete "
                         f"checkpoint: {', '.join(missing)}); continuing would silently start a fresh optimizer "
                         "and give other weights than an uninterrupted run. Pass --fresh-optimizer to accept that")
    start_step = int(parent_manifest["step"])
    if until <= start_step:
        raise UsageError(f"budgets must increase: --until {until} <= step {start_step} of --resume-from "
                         f"{resume_from}")
    if parent_manifest.get("config_hash") != config_hash:
        diff = {k: (parent_manifest.get("hash_inputs", {}).get(k), v) for k, v in hash_inputs.items()
                if parent_manifest.get("hash_inputs", {}).get(k) != v}
        raise UsageError(f"--resume-from {resume_from} was trained with different settings (config hash "
                         f"differs; checkpoint vs now: {diff}); a segment must continue the same run")
    return _Parent(resume_from, start_step, parent_manifest, parent_sha)


def make_segment_plan(args: argparse.Namespace) -> SegmentPlan:
    """Validate every input and decide the segment, in five named steps, before any side effect.

    Raises UsageError (bad setting), FileNotFoundError (missing input) or FileExistsError (the
    budget checkpoint exists); the CLI turns each into exit status 2.
    """
    sched = _check_schedule(args)
    from taco.training import monitoring

    # --report-to wandb without wandb, an unwritable TensorBoard folder: exit 2 before any work
    monitoring.check(args, tensorboard_dir_of(args))
    info = _inspect_blocks(args)
    precision = _resolve_precision(args.precision, args.device)
    hash_inputs = _hash_inputs(args, sched, info, precision)
    config_hash = sha256_json(hash_inputs)
    output, state_dir = _check_output(args)
    parent = _check_parent(args, sched.until, config_hash, hash_inputs)
    from taco.training.monitoring import OPTION_NAMES

    # the command line as the manifest records it: monitoring options are not results (a budget's manifest
    # is the same with or without them), nor is the testing hook
    parameters = {k: v for k, v in vars(args).items() if k != "debug_step_sleep" and k not in OPTION_NAMES}
    parameters.update(max_steps=sched.max_steps, warmup_steps=sched.warmup_steps, until=sched.until,
                      precision=precision)
    return SegmentPlan(
        args=SegmentArgs.from_namespace(args, tensorboard_dir_of(args)), parameters=parameters,
        blocks=Path(args.blocks), output=output, state_dir=state_dir, resume_from=parent.resume_from,
        start_step=parent.start_step, until=sched.until, max_steps=sched.max_steps,
        warmup_steps=sched.warmup_steps, precision=precision, fraction=info.fraction,
        size_name=args.size_name or args.size, seq_len=info.seq_len, vocab_size=info.vocab_size,
        objective_params=_hashed_objective_params(args), config_hash=config_hash, hash_inputs=hash_inputs,
        blocks_manifest_sha256=info.manifest_sha256, parent_manifest=parent.manifest,
        parent_manifest_sha256=parent.manifest_sha256,
        parent_lineage=((parent.manifest or {}).get("model_sha256") or parent.manifest_sha256)
        if parent.resume_from else None,
    )


# ------------------------------------------------------------------------------------------------
# the command
# ------------------------------------------------------------------------------------------------
def end_with_launcher() -> bool:
    """Under ``torch.distributed.run``, make this worker end when its launcher (the elastic agent) dies.

    The agent starts each worker in a session of its own, so ``kill -9`` of the agent's process group
    leaves the workers training with no one to rendezvous or restart them, and holding a GPU whose
    slot (``taco gpu-slot``) the agent's death released. ``prctl(PR_SET_PDEATHSIG, SIGKILL)`` (Linux)
    has the kernel kill the worker when its parent exits; the states saved so far stay valid and a
    rerun resumes from the newest. A killed Snakemake or ``gpu-slot`` wrapper does not end the agent,
    so it does not end the workers either. Returns whether the signal was set (False: not under
    torchrun, or not Linux).
    """
    if "TORCHELASTIC_RUN_ID" not in os.environ or not sys.platform.startswith("linux"):
        return False
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(1, signal.SIGKILL, 0, 0, 0) != 0:  # 1 = PR_SET_PDEATHSIG
        return False
    if os.getppid() == 1:  # the agent died before the signal was set
        os._exit(EXIT_INTERRUPTED)
    return True


def main(argv: list[str] | None = None) -> int:
    """``taco pretrain``: plan the segment (exit 2 on bad input), take the segment lock, train and export;
    returns the exit status (see the module docstring)."""
    args = build_parser().parse_args(argv)
    end_with_launcher()
    try:
        try:
            plan = make_segment_plan(args)  # every check before any side effect
        except FileExistsError:
            # the orphan race: a trainer of this very segment (left by a killed Snakemake) may be
            # writing --output right now; wait for it and accept its budget instead of failing
            if not _segment_locked_by_another(args):
                raise
            _lock_handle, _ = acquire_segment_lock(args)
            if _finished_budget(args):
                return 0
            raise
        _lock_handle, waited = acquire_segment_lock(args)
        if waited and _finished_budget(args):
            return 0
    except (UsageError, FileNotFoundError, FileExistsError, ManifestError) as exc:
        return cli_error("pretrain", exc)
    try:
        return run(plan)
    except UsageError as exc:  # a state found unusable once the segment lock is held
        return cli_error("pretrain", exc)
    except Exception as exc:  # noqa: BLE001 - only a full disk is handled, everything else re-raised
        if not is_disk_full(exc):
            raise
        return _report_no_space(plan, exc)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
