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
"""

from __future__ import annotations

import argparse
import errno
import json
import os
import re
import shutil
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from taco.manifest import (
    MANIFEST_NAME,
    atomic_directory,
    build_manifest,
    read_manifest,
    sha256_file,
    sha256_json,
    sha256_tree,
    write_manifest,
)
from taco.objectives import LOSS_TERMS, OBJECTIVE_SPECS, OPTIONS, check_options, hashed_options
from taco.registry import OBJECTIVES, PRESETS, PRETRAIN_SCHEDULE

KIND = "pretrain"
TRAINER_STATE_DIR = "trainer_state"
STATE_MARKER = "taco_state.json"
#: in the kept final state: the manifest of the budget exported from it (see _final_state_problem)
EXPORT_RECORD = "exported_manifest.json"
#: files of a Trainer checkpoint that are training state, not the model (go to trainer_state/)
TRAINER_FILES = ("optimizer.pt", "scheduler.pt", "scaler.pt", "trainer_state.json", "training_args.bin")
_TRAINER_FILE_RE = re.compile(r"^(rng_state(_\d+)?\.pth|optimizer.*\.(pt|bin)|scheduler\.pt|scaler\.pt|"
                              r"trainer_state\.json|training_args\.bin)$")
_CKPT_RE = re.compile(r"^checkpoint-(\d+)$")
EXIT_INTERRUPTED = 143  # 128 + SIGTERM: state saved, rerun to continue
EXIT_NONFINITE = 3
EXIT_NO_SPACE = 4  # no space left on device while saving a state or the budget; earlier states stay valid



from taco.errors import UsageError  # noqa: E402,F401  (one definition, re-exported)


# ------------------------------------------------------------------------------------------------
# command line
# ------------------------------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    from taco.cli import HelpFormatter

    p = argparse.ArgumentParser(
        prog="taco pretrain", formatter_class=HelpFormatter,
        description="Pre-train one segment (scratch or --resume-from budget) up to --until and write the "
        "budget checkpoint --output atomically. Resumable: rerun the same command after a kill.",
    )
    p.add_argument("--blocks", required=True, help="packed blocks directory (taco pack output)")
    p.add_argument("--objective", required=True, help="pre-training objective: " + ", ".join(OBJECTIVES))
    p.add_argument("--size", required=True, choices=PRESETS, help="model size preset")
    p.add_argument("--size-name", default=None, help="size label recorded in the manifest (default: --size)")
    p.add_argument("--max-steps", type=int, default=None,
                   help="steps of the FULL run (defines the LR schedule); default 250k small, 500k base")
    p.add_argument("--warmup-steps", type=int, default=None, help="default 2.5k small, 10k base")
    p.add_argument("--until", type=int, default=None, help="budget where this segment stops (default max-steps)")
    p.add_argument("--output", required=True, help="budget checkpoint directory to write (must not exist)")
    p.add_argument("--state-dir", default=None,
                   help="resumable scratch state, outside declared outputs (default: <output>.state)")
    p.add_argument("--resume-from", default=None, help="previous budget checkpoint directory")
    p.add_argument("--per-device-batch-size", type=int, default=8, help="sequences per device batch (micro-batch)")
    p.add_argument("--grad-accum", type=int, default=1,
                   help="micro-batches per optimizer step (global batch = per-device x accum x processes)")
    p.add_argument("--lr", type=float, default=1e-4, help="peak learning rate of AdamW (linear warmup and decay)")
    p.add_argument("--weight-decay", type=float, default=0.01, help="AdamW weight decay")
    p.add_argument("--max-grad-norm", type=float, default=1.0, help="gradient clipping norm (0: none)")
    p.add_argument("--mlm-probability", type=float, default=0.15,
                   help="share of real tokens selected for MLM (80/10/10 corruption)")
    add_objective_options(p)
    p.add_argument("--seed", type=int, default=42, help="pre-training seed (initialisation, data order, masks)")
    p.add_argument("--eval-every", type=int, default=0,
                   help="validation MLM loss on the fixed validation blocks and masks every N steps inside the "
                        "segment (log event 'validation', eval.json 'points'); 0: only at the budget. Changes no "
                        "weight (own generators, train mode restored) and is not in the config hash")
    p.add_argument("--fresh-optimizer", action="store_true",
                   help="continue from a state or --resume-from budget that lacks its optimizer/scheduler/RNG "
                        "files with a fresh optimizer (the weights then differ from an uninterrupted run; "
                        "recorded in the manifest). Without it such a state is refused (exit 2)")
    p.add_argument("--torch-compile", action="store_true",
                   help="torch.compile the model (Trainer torch_compile; default off). Not in the config hash")
    p.add_argument("--attn-implementation", choices=("sdpa", "eager"), default="sdpa",
                   help="attention kernel of BertModel (default sdpa). Not in the config hash")
    p.add_argument("--save-every", type=int, default=1000, help="intermediate state every N steps (0: only on "
                   "SIGTERM and at the budget)")
    p.add_argument("--keep-states", type=int, default=2, help="intermediate states kept in --state-dir")
    p.add_argument("--precision", choices=("auto", "fp32", "bf16", "fp16"), default="auto",
                   help="auto: bf16 on GPUs that support it, else fp16 on GPU, fp32 on CPU")
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
@dataclass
class Plan:
    args: argparse.Namespace
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
    #: identity of the parent's weights (its manifest's model_sha256; None from scratch): the states of
    #: this segment continue exactly that parent
    parent_lineage: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


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
    """Step 1: objective, schedule and batch settings (no file is read)."""
    from taco.model.objectives import get_objective

    try:
        objective = get_objective(args.objective)
    except ValueError as exc:
        raise UsageError(f"--objective: {exc}") from None
    size = args.size
    max_steps = args.max_steps if args.max_steps is not None else PRETRAIN_SCHEDULE[size]["max_steps"]
    warmup = args.warmup_steps if args.warmup_steps is not None else PRETRAIN_SCHEDULE[size]["warmup_steps"]
    until = args.until if args.until is not None else max_steps
    for name, value, minimum in (("--max-steps", max_steps, 1), ("--warmup-steps", warmup, 0),
                                 ("--until", until, 1), ("--per-device-batch-size", args.per_device_batch_size, 1),
                                 ("--grad-accum", args.grad_accum, 1), ("--logging-steps", args.logging_steps, 1),
                                 ("--save-every", args.save_every, 0), ("--keep-states", args.keep_states, 1),
                                 ("--eval-every", getattr(args, "eval_every", 0), 0)):
        if value < minimum:
            raise UsageError(f"{name} must be >= {minimum}, got {value}")
    if args.per_device_batch_size < objective.min_device_batch:
        terms = " + ".join(term.upper() for term in objective.terms[1:])
        raise UsageError(f"--per-device-batch-size {args.per_device_batch_size}: objective {args.objective!r}'s "
                         f"{terms} loss draws its negatives from the other sequences of the device batch; it needs >= "
                         f"{objective.min_device_batch} sequences per device batch")
    if until > max_steps:
        raise UsageError(f"--until {until} exceeds --max-steps {max_steps} (budgets must not pass the full run)")
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
        kw: dict[str, Any] = {"choices": opt.choices} if opt.choices else {"type": opt.type}
        groups[opt.group].add_argument(opt.flag, dest=opt.name, default=opt.default, help=opt.help, **kw)


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
    }


def _check_output(args: argparse.Namespace) -> tuple[Path, Path]:
    """Step 4: the budget checkpoint must not exist yet; the state folder lies outside it."""
    output = Path(args.output)
    if output.exists():
        raise FileExistsError(f"--output {output} exists; a finished budget checkpoint is never modified")
    state_dir = Path(args.state_dir) if args.state_dir else output.with_name(output.name + ".state")
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
    parent_manifest = read_manifest(resume_from)  # FileNotFoundError names the directory
    parent_sha = sha256_file(resume_from / MANIFEST_NAME)
    if parent_manifest.get("kind") != KIND or "step" not in parent_manifest:
        raise UsageError(f"--resume-from {resume_from}: not a `taco pretrain` budget checkpoint")
    if not (resume_from / TRAINER_STATE_DIR / "trainer_state.json").is_file():
        raise FileNotFoundError(f"--resume-from {resume_from}: no {TRAINER_STATE_DIR}/trainer_state.json "
                                "(incomplete checkpoint)")
    missing = missing_training_files(resume_from / TRAINER_STATE_DIR)
    if missing and not getattr(args, "fresh_optimizer", False):
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


def make_plan(args: argparse.Namespace) -> Plan:
    """Validate every input and decide the segment, in five named steps, before any side effect.

    Raises UsageError (bad setting), FileNotFoundError (missing input) or FileExistsError (the
    budget checkpoint exists); the CLI turns each into exit status 2.
    """
    sched = _check_schedule(args)
    from taco.training import monitoring

    monitoring.check(args)  # --report-to wandb without wandb: exit 2 before any work
    info = _inspect_blocks(args)
    precision = _resolve_precision(args.precision, args.device)
    hash_inputs = _hash_inputs(args, sched, info, precision)
    config_hash = sha256_json(hash_inputs)
    output, state_dir = _check_output(args)
    parent = _check_parent(args, sched.until, config_hash, hash_inputs)
    return Plan(
        args=args, blocks=Path(args.blocks), output=output, state_dir=state_dir, resume_from=parent.resume_from,
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
# scratch states
# ------------------------------------------------------------------------------------------------
_ANY = object()


def valid_states(state_dir: Path, config_hash: str, parent_lineage: Any = _ANY,
                 damaged: list[tuple[Path, str]] | None = None) -> list[tuple[int, Path]]:
    """``(step, path)`` of the complete states in ``state_dir`` of this run, ascending by step.

    A state is complete once its ``taco_state.json`` marker exists (written after the Trainer's
    save) with this ``config_hash`` and its own step. Given ``parent_lineage`` (``Plan.parent_lineage``:
    the ``model_sha256`` of the ``--resume-from`` budget, None for a segment from scratch), only
    states that continue that very parent count: a parent retrained since makes them stale. A state
    whose files differ from its marker's record (:func:`state_damage`) is skipped and, given
    ``damaged``, listed there as ``(path, reason)``.
    """
    out = []
    if not state_dir.is_dir():
        return out
    for p in state_dir.iterdir():
        m = _CKPT_RE.match(p.name)
        if not m or not p.is_dir():
            continue
        marker = p / STATE_MARKER
        try:
            info = json.loads(marker.read_text())
        except (OSError, ValueError):
            continue  # written by a killed save: ignore
        if info.get("config_hash") != config_hash or int(info.get("step", -1)) != int(m.group(1)):
            continue
        if parent_lineage is not _ANY and info.get("parent_lineage") != parent_lineage:
            continue
        problem = state_damage(p, info)
        if problem is None and not (p / "trainer_state.json").is_file():
            problem = "trainer_state.json is missing"
        if problem:
            if damaged is not None:
                damaged.append((p, problem))
            continue
        out.append((int(m.group(1)), p))
    return sorted(out)


def missing_training_files(ckpt: Path) -> list[str]:
    """Names of the training-state files a Trainer checkpoint folder ``ckpt`` lacks (empty: complete):
    ``optimizer.pt``, ``scheduler.pt``, ``trainer_state.json`` and an ``rng_state*.pth``. Without them the
    Trainer silently continues with a fresh optimizer, schedule position or random state."""
    missing = [f for f in ("optimizer.pt", "scheduler.pt", "trainer_state.json") if not (ckpt / f).is_file()]
    if not any(ckpt.glob("rng_state*.pth")):
        missing.append("rng_state.pth")
    return missing


def state_damage(ckpt: Path, info: dict[str, Any]) -> str | None:
    """Why the state ``ckpt`` does not hold what its marker ``info`` recorded (None: it does).

    The marker lists every file of the state with its size in bytes (``files``), written after the
    save completed; a file missing or of another size (a truncated ``model.safetensors``, say) makes
    the state unusable. Markers of older versions have no list: only the model's presence is checked.
    """
    files = info.get("files")
    if not isinstance(files, dict):
        return None if any(ckpt.glob("model*.safetensors")) else "no model*.safetensors"
    for name, size in sorted(files.items()):
        f = ckpt / name
        if not f.is_file():
            return f"{name} is missing"
        if f.stat().st_size != int(size):
            return f"{name} has {f.stat().st_size} bytes, {size} when saved (truncated or changed)"
    return None


def _write_marker(ckpt: Path, step: int, config_hash: str, wall_time_s: float, source: str,
                  parent_lineage: str | None = None) -> None:
    tmp = ckpt / (STATE_MARKER + ".tmp")
    files = {f.name: f.stat().st_size for f in sorted(ckpt.iterdir())
             if f.is_file() and f.name not in (STATE_MARKER, STATE_MARKER + ".tmp", EXPORT_RECORD)}
    tmp.write_text(json.dumps({"step": step, "config_hash": config_hash, "segment_wall_time_s": wall_time_s,
                               "source": source, "parent_lineage": parent_lineage, "files": files}, indent=2))
    os.replace(tmp, ckpt / STATE_MARKER)


def _stage_budget(budget: Path, state_dir: Path, step: int, config_hash: str,
                  parent_lineage: str | None = None) -> Path:
    """Copy a budget checkpoint into ``state_dir/checkpoint-<step>`` in the Trainer's layout."""
    target = state_dir / f"checkpoint-{step}"
    if target.exists():
        shutil.rmtree(target)
    tmp = state_dir / f".staging-{step}-{os.getpid()}"
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    for f in budget.iterdir():
        if f.is_file() and f.name not in (MANIFEST_NAME, "train_log.jsonl"):
            shutil.copy2(f, tmp / f.name)
    for f in (budget / TRAINER_STATE_DIR).iterdir():
        if f.is_file():
            shutil.copy2(f, tmp / f.name)
    _write_marker(tmp, step, config_hash, 0.0, f"budget:{budget}", parent_lineage)
    os.replace(tmp, target)
    return target


def _clean_stale_tmp(output: Path) -> None:
    for p in output.parent.glob(output.name + ".tmp-*"):
        try:
            pid = int(p.name.rsplit("-", 1)[1])
            os.kill(pid, 0)
        except (ValueError, ProcessLookupError):
            shutil.rmtree(p, ignore_errors=True)
        except PermissionError:
            pass


# ------------------------------------------------------------------------------------------------
# training
# ------------------------------------------------------------------------------------------------
class _SeededMaskingCollator:
    """Wraps ``TacoCollator``: the masking of global batch ``i`` draws from a generator seeded by
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
    """Trainer subclass and control callback (imported lazily: keeps `taco --help` cheap)."""
    import torch
    from transformers import Trainer, TrainerCallback

    from taco.model.modeling import TacoForPreTraining
    from taco.training.runlog import LossComponents, check_finite

    class PretrainTrainer(Trainer):
        """Trainer that checks the loss components before backward and logs them."""

        def __init__(self, *a, tokens_per_step: int = 0, **kw):
            super().__init__(*a, **kw)
            self.components = LossComponents()
            self.tokens_per_step = tokens_per_step

        def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
            outputs = model(**inputs)
            comps = {t: getattr(outputs, f"{t}_loss", None) for t in LOSS_TERMS}
            check_finite(self.state.global_step + 1, outputs.loss, comps)
            self.components.add(comps)
            return (outputs.loss, outputs) if return_outputs else outputs.loss

        def log(self, logs, start_time=None):
            if "loss" in logs:
                logs.update(self.components.means())
                logs["tokens_seen"] = self.state.global_step * self.tokens_per_step
            super().log(logs, start_time)

        def _load_from_checkpoint(self, resume_from_checkpoint, model=None):
            # strict: every weight of the model must come from the checkpoint
            model = model if model is not None else self.model
            loaded = TacoForPreTraining.from_pretrained(resume_from_checkpoint)
            model.load_state_dict(loaded.state_dict(), strict=True)
            del loaded

    class SegmentControl(TrainerCallback):
        """Saves a state at the budget and on SIGTERM, marks complete states, stops the segment."""

        def __init__(self, plan: Plan, collator: _SeededMaskingCollator, t0: float, wall_before: float,
                     evaluate: Any = None):
            self.plan = plan
            self.evaluate = evaluate  # (step, model) -> None: an in-segment validation point (--eval-every)
            self.collator = collator
            self.t0 = t0
            self.wall_before = wall_before
            self.stop_requested = False
            self.stopped_by_signal = False

        def on_train_begin(self, args, state, control, train_dataloader=None, **kw):
            self.collator.batch_index = micro_batches_before(
                state.global_step, len(train_dataloader), args.gradient_accumulation_steps)

        def on_step_end(self, args, state, control, **kw):
            if self.plan.args.debug_step_sleep:
                time.sleep(self.plan.args.debug_step_sleep)
            every = getattr(self.plan.args, "eval_every", 0)
            if (self.evaluate is not None and every and state.global_step % every == 0
                    and state.global_step < self.plan.until and state.is_world_process_zero):
                self.evaluate(state.global_step, kw["model"])
            if state.global_step >= self.plan.until or self.stop_requested:
                control.should_save = True

        def on_save(self, args, state, control, **kw):
            ckpt = Path(args.output_dir) / f"checkpoint-{state.global_step}"
            if state.is_world_process_zero and ckpt.is_dir():
                _write_marker(ckpt, state.global_step, self.plan.config_hash,
                              self.wall_before + time.time() - self.t0, "trainer", self.plan.parent_lineage)
            if state.global_step >= self.plan.until or self.stop_requested:
                control.should_training_stop = True
                self.stopped_by_signal = self.stop_requested and state.global_step < self.plan.until

    return PretrainTrainer, SegmentControl, torch


def _training_arguments(plan: Plan, output_dir: Path):
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
        torch_compile=bool(getattr(a, "torch_compile", False)),
        disable_tqdm=a.no_progress,
        dataloader_drop_last=True,
        dataloader_num_workers=0,  # the masking generator is per batch index (see _SeededMaskingCollator)
        remove_unused_columns=False,
        use_cpu=a.device == "cpu",
    )
    return TrainingArguments(**kwargs)


def run(plan: Plan) -> int:
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


def _monitor(plan: Plan, rank: int):
    """The segment's :class:`taco.training.monitoring.Monitor`: TensorBoard in ``--tensorboard-dir``
    (default ``<state-dir>/logs/tensorboard``), W&B as one run per pre-training run (its id from the
    run's folder, the parent of ``--output``, and the config hash: every segment continues it)."""
    from taco.training.monitoring import DEFAULT_WANDB_PROJECT, Monitor, run_id

    a = plan.args
    report_to = tuple(getattr(a, "report_to", ("tensorboard",)))
    tb_dir = getattr(a, "tensorboard_dir", None) or plan.state_dir / "logs" / "tensorboard"
    return Monitor(report_to, tb_dir if "tensorboard" in report_to else None,
                   wandb_project=getattr(a, "wandb_project", DEFAULT_WANDB_PROJECT),
                   wandb_dir=getattr(a, "wandb_dir", None),
                   wandb_name=f"pretrain {plan.size_name} {a.objective} data-{plan.fraction:g} seed-{a.seed}",
                   wandb_id=run_id("pretrain", plan.output.resolve().parent, plan.config_hash),
                   wandb_group=f"{plan.size_name}/{a.objective}", wandb_job_type="pretrain",
                   wandb_config={**plan.hash_inputs, "size_name": plan.size_name, "fraction": plan.fraction,
                                 "config_hash": plan.config_hash},
                   enabled=rank == 0)


def _run(plan: Plan, runlog: Any, rank: int, t0: float) -> int:
    """:func:`run` once the log is open."""
    from datasets import load_from_disk
    from transformers import AutoTokenizer, set_seed

    from taco.model.collator import TacoCollator
    from taco.model.modeling import TacoForPreTraining, bert_config
    from taco.training.runlog import NonFiniteLossError, ProgressCallback

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
        if control_cb is not None:
            control_cb.stop_requested = True
        print("taco pretrain: SIGTERM received; saving a state at the end of this step", file=sys.stderr,
              flush=True)

    control_cb = None
    old_handler = signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        if current_step < plan.until:
            tokenizer = AutoTokenizer.from_pretrained(str(plan.blocks / "tokenizer"))
            train = load_from_disk(str(plan.blocks))["train"].select_columns(["input_ids"])
            set_seed(a.seed)
            config = bert_config(a.size, plan.vocab_size, attn_implementation=a.attn_implementation)
            model = TacoForPreTraining(config, objective=a.objective, **plan.objective_params)
            targs = _training_arguments(plan, state_dir)
            inner = TacoCollator(tokenizer, mlm_probability=a.mlm_probability, objective=a.objective,
                                 objective_params=plan.objective_params)
            collator = _SeededMaskingCollator(inner, a.seed, targs.process_index)
            PretrainTrainer, SegmentControl, _ = _make_trainer_classes()
            control_cb = SegmentControl(plan, collator, t0, wall_before,
                                        evaluate=_validation_point(plan, tokenizer, runlog))
            control_cb.stop_requested = stop["requested"]
            tokens_per_step = a.per_device_batch_size * a.grad_accum * targs.world_size * plan.seq_len
            runlog.tokens_per_step = tokens_per_step
            trainer = PretrainTrainer(
                model=model, args=targs, train_dataset=train, data_collator=collator,
                processing_class=tokenizer, tokens_per_step=tokens_per_step,
                callbacks=[control_cb, runlog, ProgressCallback(f"pretrain {a.objective}", plan.until)],
            )
            try:
                trainer.train(resume_from_checkpoint=str(resume_ckpt) if resume_ckpt else None)
            except NonFiniteLossError as exc:
                runlog.write_event({"event": "nonfinite_loss", "step": exc.step, "component": exc.component,
                                    "values": exc.values})
                runlog.close()
                print(f"taco pretrain: error: {exc}", file=sys.stderr)
                return EXIT_NONFINITE
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
    runlog.monitor.log({f"validation/{k}": validation.get(k) for k in ("mlm_loss", "mlm_accuracy", "tc_loss")},
                       plan.until)
    print(f"taco pretrain: wrote {plan.output} (step {plan.until})", file=sys.stderr)
    return 0


def _validation_point(plan: Plan, tokenizer: Any, runlog: Any):
    """The in-segment validation of ``--eval-every``: ``evaluate(step, model)`` computes the validation
    MLM loss on the fixed blocks and masks (:func:`taco.training.validation.evaluate_validation`, own
    generators, dropout off, train mode restored) inside ``torch.random.fork_rng``, so no training
    random generator moves and the weights are those of a run without it; writes the log event
    ``validation`` (step, mlm_loss, mlm_accuracy, tc_loss). Blocks without a validation split: no-op."""
    import torch

    from taco.training.validation import evaluate_validation

    def evaluate(step: int, model: Any) -> None:
        devices = [torch.cuda.current_device()] if torch.cuda.is_available() and plan.args.device != "cpu" else []
        with torch.random.fork_rng(devices=devices):
            try:
                result = evaluate_validation(model, plan.blocks, tokenizer, mlm_probability=plan.args.mlm_probability)
            except ValueError:
                return
        runlog.write_event({"event": "validation", "step": int(step), **{k: result[k] for k in
                            ("mlm_loss", "mlm_accuracy", "tc_loss", "n_blocks", "mask_seed")}})

    return evaluate


def validation_points(log_dir: Path, after: int, before: int) -> list[dict[str, Any]]:
    """In-segment validation points (``validation`` events of ``log_dir/train_log.jsonl``) with
    ``after < step < before``, one per step (the last logged; a step evaluated again after a resume
    gives the same numbers), ascending by step."""
    from taco.training.runlog import read_log

    points: dict[int, dict[str, Any]] = {}
    if not (log_dir / "train_log.jsonl").is_file():
        return []
    for rec in read_log(log_dir):
        if rec.get("event") == "validation" and after < int(rec.get("step", -1)) < before:
            points[int(rec["step"])] = {k: v for k, v in rec.items() if k not in ("event", "time", "until")}
    return [points[k] for k in sorted(points)]


def _start_point(plan: Plan, state_dir: Path, runlog: Any, rank: int) -> tuple[Path | None, float]:
    """Where the segment starts: the newest valid scratch state of this run past the resume point
    (a kept final state only if it matches its export record), else the staged parent budget, else
    nothing (step 0). Returns ``(checkpoint or None, segment wall time already spent, s)``."""
    damaged: list[tuple[Path, str]] = []
    states = [(s, p) for s, p in valid_states(state_dir, plan.config_hash, plan.parent_lineage, damaged)
              if plan.start_step < s <= plan.until]
    for path, reason in damaged:
        runlog.write_event({"event": "damaged_state", "path": str(path), "reason": reason})
        print(f"taco pretrain: skipping the damaged state {path} ({reason}); falling back to "
              f"{states[-1][1] if states else plan.resume_from or 'the start of the segment'}", file=sys.stderr)
    if states and states[-1][0] == plan.until:  # a kept final state: exported before?
        problem = _final_state_problem(plan, states[-1][1])
        if problem:
            runlog.write_event({"event": "stale_final_state", "step": plan.until, "path": str(states[-1][1]),
                                "reason": problem})
            print(f"taco pretrain: the kept final state {states[-1][1]} does not match its export record "
                  f"({problem}); training the segment again", file=sys.stderr)
            if rank == 0:
                shutil.rmtree(states[-1][1], ignore_errors=True)
            states = states[:-1]
    resume_ckpt: Path | None = None
    wall_before = 0.0
    if states:
        step, resume_ckpt = states[-1]
        missing = missing_training_files(resume_ckpt)
        if missing and not plan.args.fresh_optimizer:
            raise UsageError(f"state {resume_ckpt} lacks {', '.join(missing)}: resuming it would silently start "
                             "a fresh optimizer/schedule/random state and give other weights than an "
                             "uninterrupted run. Remove it to fall back to an earlier state, or pass "
                             "--fresh-optimizer to accept that")
        wall_before = float(json.loads((resume_ckpt / STATE_MARKER).read_text()).get("segment_wall_time_s", 0.0))
        runlog.write_event({"event": "resume_state", "step": step, "path": str(resume_ckpt)})
        if step == plan.until:
            runlog.write_event({"event": "reexport", "step": step, "path": str(resume_ckpt)})
            print(f"taco pretrain: the final state of this segment is in {resume_ckpt} (step {step}, same "
                  "settings and parent): exporting it again, no training", file=sys.stderr)
        else:
            print(f"taco pretrain: resuming from intermediate state {resume_ckpt} (step {step})", file=sys.stderr)
    elif plan.resume_from is not None:
        if rank == 0:
            resume_ckpt = _stage_budget(plan.resume_from, state_dir, plan.start_step, plan.config_hash,
                                        plan.parent_lineage)
            runlog.write_event({"event": "resume_budget", "step": plan.start_step, "path": str(plan.resume_from)})
        else:  # torchrun: rank 0 stages the budget; the others wait for its marker
            resume_ckpt = state_dir / f"checkpoint-{plan.start_step}"
            deadline = time.time() + 1800
            while not (resume_ckpt / STATE_MARKER).is_file():
                if time.time() > deadline:
                    raise RuntimeError(f"rank {rank}: {resume_ckpt} was not staged by rank 0")
                time.sleep(1.0)
    return resume_ckpt, wall_before


def _export_and_keep_final_state(plan: Plan, state_dir: Path, t0: float, wall_before: float) -> None:
    """Rank 0: write the budget checkpoint from the final state, record the export, and drop the
    intermediate states (the final one stays, hard-linked, so a deleted budget is exported again)."""
    final = [(s, p) for s, p in valid_states(state_dir, plan.config_hash, plan.parent_lineage)
             if s == plan.until]
    if not final:
        raise RuntimeError(f"no complete state at step {plan.until} in {state_dir}")
    final_ckpt = final[-1][1]
    export_budget(plan, final_ckpt, t0, wall_before)
    # the export record: the budget's manifest, checked before the state is ever exported again
    record_tmp = final_ckpt / (EXPORT_RECORD + ".tmp")
    record_tmp.unlink(missing_ok=True)
    _link_or_copy(plan.output / MANIFEST_NAME, record_tmp)
    os.replace(record_tmp, final_ckpt / EXPORT_RECORD)
    # the budget is the new resume point: drop the intermediate scratch checkpoints (keep logs/) but
    # keep the final one (hard links of the budget's files, no extra space): if Snakemake is killed
    # now and deletes the budget as incomplete, the next run exports it again instead of training
    for p in state_dir.glob("checkpoint-*"):
        if p != final_ckpt:
            shutil.rmtree(p, ignore_errors=True)
    _drop_retained_parent_state(plan)


def _link_or_copy(src: Path, dest: Path) -> None:
    """Hard-link ``src`` to ``dest`` (same file system), else copy it."""
    try:
        os.link(src, dest)
    except OSError:
        shutil.copy2(src, dest)


def _final_state_problem(plan: Plan, ckpt: Path) -> str | None:
    """Why the kept final state ``ckpt`` must not be exported again (None: it may).

    A state that was never exported (the run was killed between the last save and the export)
    has no record and is exported as usual. Otherwise its record, the manifest of the budget it
    produced, must name this segment (config hash, step, blocks) and the weights' sha256 must
    still be that of the record (a file changed or damaged since is caught here).
    """
    record_path = ckpt / EXPORT_RECORD
    if not record_path.is_file():
        return None
    try:
        record = json.loads(record_path.read_text())
    except (OSError, ValueError) as exc:
        return f"unreadable {EXPORT_RECORD}: {exc}"
    expected = {"config_hash": plan.config_hash, "step": plan.until,
                "blocks_manifest_sha256": plan.blocks_manifest_sha256}
    found = {"config_hash": record.get("config_hash"), "step": record.get("step"),
             "blocks_manifest_sha256": (record.get("inputs") or {}).get("blocks_manifest_sha256")}
    diff = {k: (found[k], v) for k, v in expected.items() if found[k] != v}
    if diff:
        return f"record vs now: {diff}"
    model = ckpt / "model.safetensors"
    if record.get("model_sha256") and (not model.is_file() or sha256_file(model) != record["model_sha256"]):
        return "model.safetensors differs from the exported weights (model_sha256)"
    missing = [f for f in ("optimizer.pt", "scheduler.pt", "trainer_state.json") if not (ckpt / f).is_file()]
    if missing:
        return f"missing {', '.join(missing)}"
    return None


def _drop_retained_parent_state(plan: Plan) -> None:
    """Remove the final state the parent segment kept (``retained_state`` in its manifest).

    This segment was scheduled only after the parent budget had been accepted as finished, so its
    retained state is no longer needed. Only a folder whose marker names the parent's step and this
    run's config hash is removed.
    """
    retained = (plan.parent_manifest or {}).get("retained_state")
    if not retained:
        return
    path = Path(retained)
    try:
        info = json.loads((path / STATE_MARKER).read_text())
    except (OSError, ValueError):
        return
    if info.get("config_hash") == plan.config_hash and int(info.get("step", -1)) == plan.start_step:
        shutil.rmtree(path, ignore_errors=True)


def export_budget(plan: Plan, ckpt: Path, t0: float, wall_before: float) -> None:
    """Write the budget checkpoint ``plan.output`` atomically from the Trainer checkpoint ``ckpt``."""
    a = plan.args
    marker = json.loads((ckpt / STATE_MARKER).read_text())
    seg_wall = float(marker.get("segment_wall_time_s", wall_before + time.time() - t0))
    world = int(plan.hash_inputs["world_size"])
    tokens_per_step = a.per_device_batch_size * a.grad_accum * world * plan.seq_len
    parent_total = float((plan.parent_manifest or {}).get("total_wall_time_s", 0.0))
    with atomic_directory(plan.output) as tmp:
        (tmp / TRAINER_STATE_DIR).mkdir()
        for f in sorted(ckpt.iterdir()):
            if not f.is_file() or f.name in (STATE_MARKER, EXPORT_RECORD):
                continue
            dest = tmp / TRAINER_STATE_DIR / f.name if _TRAINER_FILE_RE.match(f.name) else tmp / f.name
            _link_or_copy(f, dest)
        log = plan.state_dir / "logs" / "train_log.jsonl"
        if log.is_file():
            shutil.copy2(log, tmp / "train_log.jsonl")
        from taco.training.monitoring import OPTION_NAMES

        # monitoring options are not results: a budget's manifest is the same with or without them
        parameters = {k: v for k, v in vars(a).items() if k != "debug_step_sleep" and k not in OPTION_NAMES}
        parameters.update(max_steps=plan.max_steps, warmup_steps=plan.warmup_steps, until=plan.until,
                          precision=plan.precision)
        inputs = {"blocks": str(plan.blocks), "blocks_manifest_sha256": plan.blocks_manifest_sha256}
        if plan.resume_from is not None:
            inputs["parent_manifest_sha256"] = plan.parent_manifest_sha256
        from taco.training.validation import validate_checkpoint

        # held-out MLM loss/accuracy (and TC loss) with the fixed validation masks -> eval.json
        validation = validate_checkpoint(tmp, plan.blocks, plan.until, mlm_probability=a.mlm_probability,
                                         device=a.device)
        points = validation_points(plan.state_dir / "logs", plan.start_step, plan.until)
        if points and "skipped" not in validation:
            from taco.training.validation import write_eval

            write_eval(tmp, {k: v for k, v in validation.items() if k != "step"} | {"points": points}, plan.until)
        manifest = build_manifest(
            KIND, parameters, inputs,
            step=plan.until,
            validation=validation,
            tokens_seen=plan.until * tokens_per_step,
            objective=a.objective,
            objective_params=plan.objective_params,
            pretrain_seed=a.seed,
            size=plan.size_name,
            size_preset=a.size,
            fraction=plan.fraction,
            config_hash=plan.config_hash,
            hash_inputs=plan.hash_inputs,
            parent_checkpoint=str(plan.resume_from) if plan.resume_from else None,
            parent_step=plan.start_step,
            max_steps=plan.max_steps,
            seq_len=plan.seq_len,
            global_batch_size=a.per_device_batch_size * a.grad_accum * world,
            wall_time_s=round(seg_wall, 3),
            total_wall_time_s=round(parent_total + seg_wall, 3),
            retained_state=str(ckpt.resolve()),
            fresh_optimizer=bool(getattr(a, "fresh_optimizer", False)),
            model_sha256=sha256_file(tmp / "model.safetensors") if (tmp / "model.safetensors").is_file() else None,
        )
        write_manifest(tmp, manifest)


def _segment_locked_by_another(args: argparse.Namespace) -> bool:
    """Whether another process holds this segment's lock now (without creating anything)."""
    import fcntl

    output = Path(args.output)
    state_dir = Path(args.state_dir) if args.state_dir else output.with_name(output.name + ".state")
    lock = state_dir / ".lock"
    if not lock.is_file():
        return False
    with open(lock, "a+") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(fh, fcntl.LOCK_UN)
    return False


def _finished_budget(args: argparse.Namespace) -> bool:
    """Whether ``--output`` is a complete budget of step ``--until`` (written by the process we waited for)."""
    if not (Path(args.output) / MANIFEST_NAME).is_file():
        return False
    done = read_manifest(args.output)
    if args.until is None or int(done.get("step", -1)) != int(args.until):
        return False
    print(f"taco pretrain: {args.output} was finished by the other process (step {args.until})", file=sys.stderr)
    return True


def acquire_segment_lock(args: argparse.Namespace) -> tuple[Any, bool]:
    """Exclusive lock on the segment's state folder, so two trainers never share one.

    A second ``taco pretrain`` of the same segment (e.g. a rerun while an orphan of a killed
    Snakemake still trains) waits for the first to finish instead of racing it. Returns (the open
    lock file, whether it had to wait). Only rank 0 of a distributed run takes the lock.
    """
    import fcntl

    if int(os.environ.get("RANK", "0")) != 0:
        return None, False
    output = Path(args.output)
    state_dir = Path(args.state_dir) if args.state_dir else output.with_name(output.name + ".state")
    state_dir.mkdir(parents=True, exist_ok=True)
    fh = open(state_dir / ".lock", "a+")
    try:
        fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return fh, False
    except BlockingIOError:
        print(f"taco pretrain: another process is training this segment ({state_dir} is locked); "
              "waiting for it to finish", file=sys.stderr, flush=True)
        fcntl.flock(fh, fcntl.LOCK_EX)
        return fh, True


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
    args = build_parser().parse_args(argv)
    end_with_launcher()
    try:
        try:
            plan = make_plan(args)  # every check before any side effect
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
    except (UsageError, FileNotFoundError, FileExistsError) as exc:
        print(f"taco pretrain: error: {exc}", file=sys.stderr)
        return 2
    try:
        return run(plan)
    except UsageError as exc:  # a state found unusable once the segment lock is held
        print(f"taco pretrain: error: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:  # noqa: BLE001 - only a full disk is handled, everything else re-raised
        if not is_disk_full(exc):
            raise
        return _report_no_space(plan, exc)


#: how the writers of a state report a full disk when they do not raise OSError(ENOSPC): torch.save's
#: zip writer ("[enforce fail at inline_container.cc] . unexpected pos ..."/"file write failed"),
#: safetensors ("IoError(Os { code: 28, kind: StorageFull ...})")
_DISK_FULL_TEXT = ("no space left on device", "storagefull", "os error 28", "code: 28", "unexpected pos",
                   "file write failed", "enospc")


def is_disk_full(exc: BaseException) -> bool:
    """Whether ``exc`` (or an exception it was raised from) means the disk filled up while writing.

    True for ``OSError`` with ``errno.ENOSPC`` and for the errors torch.save and safetensors raise
    instead (matched on their text, see ``_DISK_FULL_TEXT``; measured on a 10 MB tmpfs).
    """
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, OSError) and exc.errno == errno.ENOSPC:
            return True
        text = str(exc).lower()
        if any(t in text for t in _DISK_FULL_TEXT):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def _report_no_space(plan: Plan, exc: BaseException) -> int:
    """A save ran out of disk space (ENOSPC): remove what it left half-written, name the path, keep
    the earlier states (their markers were written after complete saves, so they stay valid)."""
    partial = [p for p in sorted(plan.state_dir.glob("checkpoint-*")) + sorted(plan.state_dir.glob(".staging-*"))
               + sorted(plan.state_dir.glob("tmp-checkpoint-*"))
               if p.is_dir() and not (p / STATE_MARKER).is_file()]
    where = getattr(exc, "filename", None) or (partial[-1] if partial else plan.output)
    if int(os.environ.get("RANK", "0")) == 0:
        for p in partial:
            shutil.rmtree(p, ignore_errors=True)
    kept = valid_states(plan.state_dir, plan.config_hash, plan.parent_lineage)
    resume = (f"the newest complete state, {kept[-1][1]} (step {kept[-1][0]}), stays valid" if kept else
              f"no complete state of this segment yet; a rerun starts from "
              f"{plan.resume_from or 'scratch'}")
    print(f"taco pretrain: error: no space left on device (ENOSPC) while saving {where}; the incomplete save "
          f"was removed; {resume}. Free space and rerun the same command.", file=sys.stderr)
    return EXIT_NO_SPACE


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
