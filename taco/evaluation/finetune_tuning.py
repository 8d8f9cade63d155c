"""Equal fine-tuning budgets: the same grid of fine-tuning settings for every checkpoint, the control included.

A pre-trained checkpoint fine-tuned at one fixed learning rate chosen for another is compared unfairly:
config ``finetune.tuning`` gives every checkpoint (every arm, every budget, the no-pre-training control)
the same trials, as ``pretrain.tuning`` does for pre-training (:mod:`taco.training.tuning`):

- **the grid** (``finetune.tuning.space``): per fine-tuning setting (``learning_rate``, ``epochs``,
  ``warmup_steps``: :data:`TUNABLE`) a list of values; the trials are every combination, in the order
  the space lists them (:func:`trial_settings`): a grid, since fine-tuning spaces are small and a grid
  has no draw to repeat;
- **a trial** is ``taco finetune`` of the checkpoint at that setting on every configured task with the
  trials' own seeds (``finetune.tuning.seeds``, never the reported seeds), written to
  ``<results>/finetune_tuning/<run>/trial-<i>/<task>/seed-<seed>/metrics.json``;
- **the choice** (``taco finetune-choice``, :func:`choose`): per task the trial with the highest mean
  primary dev metric over the trials' seeds (the first on a tie), written with every trial's scores to
  ``choice.json``, each choice at the edge of the grid noted (:func:`edge_notes`);
- **the reported runs** (``finetune.seeds``) read it (``taco finetune --tuned-recipe choice.json``): each
  task at its own chosen setting.

The rule is stated on every page that shows it: the setting is chosen **on the dev set** by separate seeds,
as the paper's tables choose on dev (``FACTS.md``: the official scripts fine-tune at one setting; how the
paper chose is not stated). The reported dev scores are then optimistic by the selection among the trials,
equally for every arm. Torch-free (the workflow imports it).
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import re
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["TUNABLE", "FineTuningError", "check_space", "trial_settings", "edge_notes", "choose", "read_choice",
           "main"]

#: tunable fine-tuning settings: key -> (the metrics.json hyperparameters key, type, low bound, low included)
TUNABLE: dict[str, tuple[str, type, float, bool]] = {"learning_rate": ("learning_rate", float, 0.0, False),
                                                     "epochs": ("epochs", int, 1.0, True),
                                                     "warmup_steps": ("warmup_steps", int, 0.0, True)}
FORMAT = 1


class FineTuningError(ValueError):
    """A bad grid, trial or choice file; the message names the key or the file."""


def check_space(space: Any, where: str = "finetune.tuning.space") -> list[str]:
    """Problems of a fine-tuning grid, one line each naming the key (empty when it is good)."""
    if not isinstance(space, Mapping) or not space:
        return [f"{where}: a mapping of at least one of {', '.join(TUNABLE)} to a list of values, got {space!r}"]
    errors = []
    for key, values in space.items():
        if key not in TUNABLE:
            errors.append(f"{where}.{key}: not a tunable fine-tuning setting ({', '.join(TUNABLE)})")
            continue
        _, kind, low, low_in = TUNABLE[key]
        ok_type = (lambda v: isinstance(v, int) and not isinstance(v, bool)) if kind is int else \
            (lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v))
        if not isinstance(values, list) or not values or not all(ok_type(v) for v in values):
            errors.append(f"{where}.{key}: a list of {'integers' if kind is int else 'numbers'}, got {values!r}")
        elif any(v < low or (v == low and not low_in) for v in values):
            errors.append(f"{where}.{key}: every value {'>=' if low_in else '>'} {low:g}, got {values!r}")
        elif len(set(values)) != len(values):
            errors.append(f"{where}.{key}: a value given twice in {values!r} (the same trial twice)")
    return errors


def trial_settings(space: Mapping[str, Sequence[Any]]) -> list[dict[str, Any]]:
    """Every combination of the grid, the first key varying slowest; FineTuningError for a bad grid."""
    errors = check_space(space)
    if errors:
        raise FineTuningError("; ".join(errors))
    keys = list(space)
    return [dict(zip(keys, combo)) for combo in itertools.product(*(space[k] for k in keys))]


def edge_notes(setting: Mapping[str, Any], space: Mapping[str, Sequence[Any]]) -> list[str]:
    """One line per setting whose chosen value is the lowest or highest of a grid list of 2 or more values
    (warm-up 0 is its own bound, not an edge): the optimum may lie outside the grid."""
    notes = []
    for key, values in space.items():
        v = setting.get(key)
        if v is None or len(set(values)) < 2:
            continue
        if v == max(values) or (v == min(values) and not (key == "warmup_steps" and v == 0)):
            notes.append(f"{key} {v:g} is the {'highest' if v == max(values) else 'lowest'} value of its grid "
                         f"{list(values)}: the optimum may lie outside it")
    return notes


def _trial_scores(trial_dir: Path, tasks: Sequence[str] | None) -> dict[str, Any]:
    """``{"setting": ..., "scores": {task: [primary metric per seed]}}`` of one trial folder; FineTuningError
    naming the file for a missing or inconsistent metrics.json."""
    files = sorted(trial_dir.glob("*/seed-*/metrics.json"))
    if not files:
        raise FineTuningError(f"{trial_dir}: no <task>/seed-<seed>/metrics.json (taco finetune writes them)")
    setting: dict[str, Any] | None = None
    scores: dict[str, list[float]] = {}
    seeds: dict[str, list[int]] = {}
    checkpoints: set[str] = set()
    for f in files:
        try:
            m = json.loads(f.read_text())
            task = m["task"]
            hp = m["hyperparameters"]
            primary = m["primary_metric"][task] if task in m["primary_metric"] else next(iter(m["primary_metric"].values()))
            value = m["scores"][task][primary] if task in m["scores"] else None
        except (OSError, ValueError, KeyError, TypeError, StopIteration) as exc:
            raise FineTuningError(f"{f}: not a metrics.json of taco finetune ({exc!r})") from None
        folder_task, folder_seed = f.parent.parent.name, f.parent.name[len("seed-"):]
        if task != folder_task:
            raise FineTuningError(f"{f}: holds task {task!r}, but lies in the folder of task {folder_task!r}")
        if not folder_seed.lstrip("-").isdigit() or ("seed" in m and m["seed"] != int(folder_seed)):
            raise FineTuningError(f"{f}: holds seed {m.get('seed')!r}, but lies in the folder {f.parent.name}")
        seeds.setdefault(task, []).append(int(folder_seed))
        if m.get("checkpoint_manifest_sha256"):
            checkpoints.add(str(m["checkpoint_manifest_sha256"]))
        s = {k: hp.get(TUNABLE[k][0]) for k in TUNABLE}
        if setting is None:
            setting = s
        elif s != setting:
            raise FineTuningError(f"{f}: setting {s} differs from the trial's other runs ({setting})")
        if value is not None and not (isinstance(value, (int, float)) and not isinstance(value, bool)):
            raise FineTuningError(f"{f}: score {value!r} is not a number")
        scores.setdefault(task, []).append(math.nan if value is None else float(value))
    if tasks is not None:
        missing = sorted(set(tasks) - set(scores))
        if missing:
            raise FineTuningError(f"{trial_dir}: no run of task(s) {missing}")
    if len(checkpoints) > 1:
        raise FineTuningError(f"{trial_dir}: its runs fine-tuned different checkpoints (checkpoint_manifest_sha256 "
                              f"{sorted(checkpoints)})")
    return {"trial": trial_dir.name, "path": str(trial_dir), "setting": setting, "scores": scores,
            "seeds": {t: sorted(v) for t, v in seeds.items()}, "checkpoint": next(iter(checkpoints), None)}


def _trial_index(trial: Mapping[str, Any]) -> tuple[float, str]:
    """Sort key of a trial: its index as a number (``trial-10`` after ``trial-2``), then its name."""
    m = re.search(r"(\d+)$", str(trial["trial"]))
    return (int(m.group(1)) if m else math.inf, str(trial["trial"]))


def check_trials(trials: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The trials of one checkpoint, in trial order (by index as a number), after checking that they belong
    together: one checkpoint (``checkpoint_manifest_sha256``, where the records carry it) and the same seeds
    of every task in every trial (the first trial's); FineTuningError naming the trial, the task and what was
    expected and found."""
    ordered = sorted(trials, key=_trial_index)
    ref = ordered[0]
    for tr in ordered[1:]:
        if tr.get("checkpoint") and ref.get("checkpoint") and tr["checkpoint"] != ref["checkpoint"]:
            raise FineTuningError(f"{tr['path']}: a trial of another checkpoint (checkpoint_manifest_sha256 "
                                  f"{tr['checkpoint'][:12]}..., expected {ref['checkpoint'][:12]}... as {ref['path']})")
        for task in sorted(set(ref.get("seeds", {})) | set(tr.get("seeds", {}))):
            want, got = ref.get("seeds", {}).get(task), tr.get("seeds", {}).get(task)
            if want is not None and got is not None and want != got:
                raise FineTuningError(f"{tr['path']}: task {task} has seeds {got}, expected {want} (as "
                                      f"{ref['path']}): every trial runs the same seeds")
    return ordered


def choose(trials: Sequence[Mapping[str, Any]], space: Mapping[str, Sequence[Any]] | None = None) -> dict[str, Any]:
    """Per task the trial with the highest mean primary dev metric over its seeds (the first in ``trials``' order on
    a tie: :func:`check_trials` orders them by index; a trial whose mean is not finite is never chosen and is
    listed in ``left_out``). Returns the choice record (module docstring)."""
    tasks = sorted({t for tr in trials for t in tr["scores"]})
    chosen: dict[str, Any] = {}
    left_out: list[dict[str, Any]] = []
    for task in tasks:
        means = []
        for tr in trials:
            vals = tr["scores"].get(task, [])
            mean = sum(vals) / len(vals) if vals else math.nan
            if vals and not math.isfinite(mean):
                left_out.append({"trial": tr["trial"], "task": task, "why": "a seed's dev score is not finite"})
            means.append((mean, tr))
        finite = [(m, tr) for m, tr in means if math.isfinite(m)]
        if not finite:
            raise FineTuningError(f"task {task}: no trial has a finite dev score: " +
                                  ", ".join(tr["path"] for tr in trials))
        best_mean, best = max(finite, key=lambda x: x[0])  # max keeps the first of equals
        chosen[task] = {"trial": best["trial"], "setting": dict(best["setting"]), "dev_mean": best_mean,
                        "at_edge": edge_notes(best["setting"], space) if space else []}
    return {"format": FORMAT, "kind": "finetune_choice",
            "rule": "per task the highest mean primary dev metric over the trials' own seeds",
            "chosen": chosen, "left_out": left_out, "trials": [dict(tr) for tr in trials]}


def read_choice(path: str | Path, task: str) -> dict[str, Any]:
    """The chosen setting of ``task`` in a choice.json of :func:`choose` (``learning_rate``, ``epochs``,
    ``warmup_steps``); :class:`taco.errors.UsageError` naming the file when it is missing, malformed or
    has no choice for the task."""
    from taco.errors import UsageError

    p = Path(path)
    try:
        rec = json.loads(p.read_text())
        setting = rec["chosen"][task]["setting"]
    except FileNotFoundError:
        raise UsageError(f"--tuned-recipe {p}: no such file (taco finetune-choice writes it)") from None
    except KeyError:
        raise UsageError(f"--tuned-recipe {p}: no choice for task {task!r}") from None
    except (ValueError, TypeError) as exc:
        raise UsageError(f"--tuned-recipe {p}: not a choice of `taco finetune-choice` ({exc!r})") from None
    errors = check_space({k: [v] for k, v in setting.items() if k in TUNABLE}, f"--tuned-recipe {p}: {task}")
    if errors or set(setting) - set(TUNABLE):
        raise UsageError("; ".join(errors) or f"--tuned-recipe {p}: {task}: unknown setting(s) "
                         f"{sorted(set(setting) - set(TUNABLE))}")
    return dict(setting)


def build_parser() -> argparse.ArgumentParser:
    from taco.cli_parts import HelpFormatter

    ap = argparse.ArgumentParser(prog="taco finetune-choice", formatter_class=HelpFormatter,
                                 description="per task the best of a checkpoint's fine-tuning trials (highest mean "
                                             "primary dev metric over the trials' seeds), as choice.json")
    ap.add_argument("--trials", nargs="+", required=True,
                    help="the checkpoint's trial folders (trial-<i>/<task>/seed-<seed>/metrics.json)")
    ap.add_argument("--tasks", nargs="+", default=None, help="tasks every trial must hold (default: what they hold)")
    ap.add_argument("--space", default=None, help="the grid as JSON (config finetune.tuning.space): a choice at its "
                    "edge is noted")
    ap.add_argument("--output", required=True, help="choice.json to write")
    return ap


def main(argv: list[str] | None = None) -> int:
    """``taco finetune-choice --trials DIR ... --output choice.json``."""
    from taco.cli_parts import cli_error, json_mapping_option
    from taco.manifest import atomic_write_json

    args = build_parser().parse_args(argv)
    try:
        space = json_mapping_option("--space", args.space, check_space)
        trials = check_trials([_trial_scores(Path(t), args.tasks) for t in args.trials])
        result = choose(trials, space)
    except ValueError as exc:  # FineTuningError included
        return cli_error("finetune-choice", exc)
    atomic_write_json(Path(args.output), result, sort_keys=True)
    for task, c in result["chosen"].items():
        print(f"taco finetune-choice: {task}: {c['trial']} {c['setting']} (dev mean {c['dev_mean']:.4f}) of "
              f"{len(trials)} trials")
        for note in c["at_edge"]:
            print(f"taco finetune-choice: note: {task}: {note}")
    for lo in result["left_out"]:
        print(f"taco finetune-choice: note: {lo['task']}: {lo['trial']} left out ({lo['why']})")
    print(f"taco finetune-choice: -> {args.output}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
