"""The saved state of a ``taco pretrain`` segment: scratch states, markers, resume lookup, export, locking.

Part of ``taco pretrain`` (the command, its plan and ``main``: :mod:`taco.training.pretrain`; the
Trainer: :mod:`taco.training.pretrain_trainer`). What lives here:

- the layout constants (``STATE_MARKER``, ``EXPORT_RECORD``, ``TRAINER_STATE_DIR``, ...) and the exit
  statuses of the command (``EXIT_INTERRUPTED``, ``EXIT_NONFINITE``; ``EXIT_NO_SPACE`` is shared, in :mod:`taco.errors`);
- scratch states in ``--state-dir``: a Trainer checkpoint ``checkpoint-<step>`` is valid once its
  ``taco_state.json`` marker (config hash, step, parent lineage, file sizes) is written
  (:func:`valid_states`, :func:`state_damage`, :func:`missing_training_files`), a parent budget is
  staged in the Trainer's layout, and :func:`_start_point` picks where a segment resumes;
- the export of the final state as the budget checkpoint (:func:`export_budget`), its export record
  and the retained final state;
- the segment lock (:func:`acquire_segment_lock`), so two trainers never share one state folder;
- a full disk while saving (:func:`taco.errors.is_disk_full`, exit ``taco.errors.EXIT_NO_SPACE``).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from taco.cli_parts import cli_error
from taco.errors import EXIT_NO_SPACE, UsageError
from taco.manifest import (
    MANIFEST_NAME,
    atomic_directory,
    build_manifest,
    read_manifest,
    sha256_file,
    write_manifest,
)
from taco.training.segment import SegmentPlan


KIND = "pretrain"


def state_dir_of(args: argparse.Namespace) -> Path:
    """The segment's resumable state folder: ``--state-dir``, else ``<output>.state`` beside ``--output``."""
    output = Path(args.output)
    return Path(args.state_dir) if args.state_dir else output.with_name(output.name + ".state")


def tensorboard_dir_of(args: argparse.Namespace) -> Path:
    """The segment's TensorBoard folder: ``--tensorboard-dir``, else ``<state-dir>/logs/tensorboard``."""
    tb = getattr(args, "tensorboard_dir", None)
    return Path(tb) if tb else state_dir_of(args) / "logs" / "tensorboard"


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


# ------------------------------------------------------------------------------------------------
# scratch states
# ------------------------------------------------------------------------------------------------
_ANY = object()


def valid_states(state_dir: Path, config_hash: str, parent_lineage: Any = _ANY,
                 damaged: list[tuple[Path, str]] | None = None) -> list[tuple[int, Path]]:
    """``(step, path)`` of the complete states in ``state_dir`` of this run, ascending by step.

    A state is complete once its ``taco_state.json`` marker exists (written after the Trainer's
    save) with this ``config_hash`` and its own step. Given ``parent_lineage`` (``SegmentPlan.parent_lineage``:
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


def budget_model_damage(budget: Path, manifest: dict[str, Any]) -> str | None:
    """Why the weights of the budget checkpoint ``budget`` are not those its ``manifest`` recorded
    (None: they are).

    The manifest's ``model_sha256`` (written by :func:`export_budget`) is compared with the sha256 of
    ``model.safetensors`` (a flipped bit, a truncated or replaced file); a manifest without it (older
    budgets, sharded weights) only has the headers of its ``model*.safetensors`` files parsed.
    Returns a sentence naming the file.
    """
    if manifest.get("model_sha256"):
        from taco.manifest import ManifestError, check_model_sha256

        try:
            check_model_sha256(budget, manifest)
        except ManifestError as exc:
            return str(exc)
        return None
    from safetensors import SafetensorError, safe_open

    files = sorted(budget.glob("model*.safetensors"))
    if not files:
        return f"{budget} has no model*.safetensors"
    for model in files:
        try:
            with safe_open(str(model), framework="pt") as fh:
                fh.keys()
        except (SafetensorError, OSError) as exc:
            return f"{model} is not a readable safetensors file ({exc})"
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


def _start_point(plan: SegmentPlan, state_dir: Path, runlog: Any, rank: int) -> tuple[Path | None, float]:
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


# ------------------------------------------------------------------------------------------------
# export: the final state becomes the budget checkpoint
# ------------------------------------------------------------------------------------------------
def _export_and_keep_final_state(plan: SegmentPlan, state_dir: Path, t0: float, wall_before: float) -> None:
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


def _final_state_problem(plan: SegmentPlan, ckpt: Path) -> str | None:
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


def _drop_retained_parent_state(plan: SegmentPlan) -> None:
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


def export_budget(plan: SegmentPlan, ckpt: Path, t0: float, wall_before: float) -> None:
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
        inputs = {"blocks": str(plan.blocks), "blocks_manifest_sha256": plan.blocks_manifest_sha256}
        if plan.resume_from is not None:
            inputs["parent_manifest_sha256"] = plan.parent_manifest_sha256
        from taco.training.validation import validate_checkpoint

        # held-out MLM loss/accuracy (and TC loss) with the fixed validation masks -> eval.json
        validation = validate_checkpoint(tmp, plan.blocks, plan.until, mlm_probability=a.mlm_probability,
                                         device=a.device)
        points = validation_points(plan.state_dir / "logs", plan.start_step, plan.until)
        if "skipped" not in validation:
            from taco.training.validation import budget_glue_probe, write_eval

            # the frozen-feature GLUE probe at the budget (taco pretrain --glue-probe-tasks), beside the loss
            probed = budget_glue_probe(tmp, a.glue_probe)
            validation.update(probed)
            if points or probed:
                write_eval(tmp, {k: v for k, v in validation.items() if k != "step"} | (
                    {"points": points} if points else {}), plan.until)
        manifest = build_manifest(
            KIND, plan.parameters, inputs,
            step=plan.until,
            validation=validation,
            tokens_seen=plan.until * tokens_per_step,
            objective=a.objective,
            objective_params=plan.objective_params,
            pretrain_seed=a.seed,
            size=plan.size_name,
            size_preset=a.size,
            architecture=a.architecture,
            fraction=plan.fraction,
            config_hash=plan.config_hash,
            hash_inputs=plan.hash_inputs,
            parent_checkpoint=str(plan.resume_from) if plan.resume_from else None,
            parent_step=plan.start_step,
            # the parent's weights this segment continued: a parent budget rebuilt later can be
            # compared with it (docs/reruns.md)
            parent_model_sha256=(plan.parent_manifest or {}).get("model_sha256"),
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


# ------------------------------------------------------------------------------------------------
# the segment lock, a full disk
# ------------------------------------------------------------------------------------------------
def _segment_locked_by_another(args: argparse.Namespace) -> bool:
    """Whether another process holds this segment's lock now (without creating anything)."""
    import fcntl

    state_dir = state_dir_of(args)
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
    state_dir = state_dir_of(args)
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


def _report_no_space(plan: SegmentPlan, exc: BaseException) -> int:
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
    return cli_error("pretrain", f"no space left on device (ENOSPC) while saving {where}; the incomplete save "
                     f"was removed; {resume}. Free space and rerun the same command.", EXIT_NO_SPACE)
