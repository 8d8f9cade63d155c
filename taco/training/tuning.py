"""Equal tuning budgets: the trials of every arm, the choice of each arm's recipe, and its use by the replicates.

E1 compares how fast two objectives reach a loss; a baseline left at a recipe where a tuned one would not
be is a defect, not a result. Following MLCommons AlgoPerf's external-tuning ruleset (every algorithm gets
the same number of trials from its search space; the best trial counts), config ``pretrain.tuning``
gives every arm (a size's objective on all the data) the same trials:

- **the search space** (``pretrain.tuning.space``): per recipe parameter (``learning_rate``,
  ``warmup_steps``, ``dropout``: :data:`TUNABLE`) a list of values or ``{log_uniform: [lo, hi]}`` /
  ``{uniform: [lo, hi]}``;
- **the trials** (:func:`trial_settings`): ``trials`` points of a Halton sequence (bases 2, 3, 5) with a
  random shift drawn from ``seed`` (Cranley-Patterson rotation), mapped into the space: quasi-random
  search, as AlgoPerf's; *the same settings for every arm*, so the arms differ only in their objective;
- **a trial** is a pre-training run of its own schedule (``max_steps`` = ``horizon``, one budget at the
  horizon, the size's other settings, seed ``seed``), written to ``<results>/tuning/<size>/<objective>/
  trial-<i>/step-<horizon>``;
- **the choice** (``taco tuning-choice``, :func:`choose`): the trial with the lowest validation MLM loss at
  the horizon (``eval.json``; a trial whose loss is not finite is listed and never chosen), written with
  every trial to ``choice.json`` (:data:`CHOICE_KEYS`);
- **the replicates** of the arm read it at run time (``taco pretrain --tuned-recipe choice.json``,
  :func:`apply_choice`): a second stage the DAG knows before any trial runs (the file is an input of the
  replicates' jobs), so ``snakemake -n`` and ``taco plan`` list every job; no Snakemake checkpoint.

Torch-free (the workflow imports it).
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

#: tunable recipe parameters: config key (pretrain.sizes.<size>.<key>) -> argparse name of taco pretrain
TUNABLE: dict[str, str] = {"learning_rate": "lr", "warmup_steps": "warmup_steps", "dropout": "dropout"}
#: the keys of choice.json's chosen setting
CHOICE_KEYS = tuple(TUNABLE)
_PRIMES = (2, 3, 5, 7, 11, 13)


class TuningError(ValueError):
    """A bad search space, trial or choice file; the message names the key or file."""


def _radical_inverse(i: int, base: int) -> float:
    """The i-th point (i >= 1) of the van der Corput sequence in ``base``."""
    out, f = 0.0, 1.0 / base
    while i > 0:
        out += f * (i % base)
        i //= base
        f /= base
    return out


def check_space(space: Mapping[str, Any], where: str = "pretrain.tuning.space") -> list[str]:
    """Problems of a search space, one line each naming the key (empty when it is good)."""
    errors = []
    if not space:
        errors.append(f"{where}: empty; give at least one of {', '.join(TUNABLE)}")
    for key, spec in space.items():
        if key not in TUNABLE:
            errors.append(f"{where}.{key}: not a tunable parameter ({', '.join(TUNABLE)})")
            continue
        if isinstance(spec, list):
            if not spec or not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
                                   for v in spec):
                errors.append(f"{where}.{key}: a list of finite numbers, got {spec!r}")
        elif isinstance(spec, Mapping) and len(spec) == 1 and next(iter(spec)) in ("log_uniform", "uniform"):
            kind, rng = next(iter(spec.items()))
            ok = (isinstance(rng, list) and len(rng) == 2 and all(isinstance(v, (int, float)) for v in rng)
                  and all(math.isfinite(v) for v in rng) and rng[0] < rng[1] and (kind == "uniform" or rng[0] > 0))
            if not ok:
                errors.append(f"{where}.{key}.{kind}: [low, high] with low < high" +
                              (" and low > 0" if kind == "log_uniform" else "") + f", got {rng!r}")
        else:
            errors.append(f"{where}.{key}: a list of values or {{log_uniform: [lo, hi]}} / {{uniform: [lo, hi]}}, "
                          f"got {spec!r}")
    return errors


def trial_settings(space: Mapping[str, Any], trials: int, seed: int) -> list[dict[str, float | int]]:
    """The ``trials`` settings of the search (module docstring): one dict per trial, keys in the space's
    order, ``warmup_steps`` an integer, a log-uniform value rounded to 3 significant digits. Deterministic
    in (space, trials, seed). TuningError for a bad space or ``trials`` < 1."""
    errors = check_space(space)
    if errors:
        raise TuningError("; ".join(errors))
    if trials < 1:
        raise TuningError(f"pretrain.tuning.trials: at least 1, got {trials}")
    keys = list(space)
    rng = random.Random(seed)
    shift = [rng.random() for _ in keys]
    out = []
    for i in range(1, trials + 1):
        setting: dict[str, float | int] = {}
        for d, key in enumerate(keys):
            u = (_radical_inverse(i, _PRIMES[d % len(_PRIMES)]) + shift[d]) % 1.0
            spec = space[key]
            if isinstance(spec, list):
                value: float = spec[min(int(u * len(spec)), len(spec) - 1)]
            else:
                kind, (lo, hi) = next(iter(spec.items()))
                value = (math.exp(math.log(lo) + u * (math.log(hi) - math.log(lo))) if kind == "log_uniform"
                         else lo + u * (hi - lo))
                value = float(f"{value:.3g}")
            setting[key] = int(round(value)) if key == "warmup_steps" else float(value)
        out.append(setting)
    return out


def _trial_record(trial_dir: Path) -> dict[str, Any]:
    """One trial's setting (from its manifest's hash inputs: what it ran with) and its validation MLM loss at
    its budget (eval.json); TuningError naming the file."""
    from taco.manifest import read_manifest

    try:
        m = read_manifest(trial_dir)
    except (FileNotFoundError, ValueError) as exc:
        raise TuningError(str(exc)) from None
    hi = m.get("hash_inputs") or {}
    ev_path = trial_dir / "eval.json"
    try:
        ev = json.loads(ev_path.read_text())
    except (OSError, ValueError) as exc:
        raise TuningError(f"{ev_path}: no readable validation result ({exc})") from None
    loss = ev.get("mlm_loss") if isinstance(ev, Mapping) else None
    loss = float(loss) if isinstance(loss, (int, float)) and not isinstance(loss, bool) else math.nan
    return {"trial": trial_dir.parent.name, "path": str(trial_dir), "step": m.get("step"),
            "setting": {"learning_rate": hi.get("lr"), "warmup_steps": hi.get("warmup_steps"),
                        "dropout": hi.get("dropout")},
            "mlm_loss": loss}


def choose(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The trial with the lowest finite validation MLM loss (the first on a tie): ``{"chosen": <record>,
    "trials": records, "left_out": [trials without a finite loss]}``. TuningError when none has one."""
    finite = [r for r in records if math.isfinite(r["mlm_loss"])]
    if not finite:
        raise TuningError("no trial has a finite validation MLM loss: " + ", ".join(r["path"] for r in records))
    best = min(finite, key=lambda r: r["mlm_loss"])
    return {"chosen": dict(best), "trials": [dict(r) for r in records],
            "left_out": [r["path"] for r in records if not math.isfinite(r["mlm_loss"])]}


def apply_choice(args: argparse.Namespace, path: str | Path) -> dict[str, Any]:
    """Set ``args.lr``, ``args.warmup_steps`` and ``args.dropout`` of ``taco pretrain`` from a choice.json
    (``chosen.setting``; a ``null`` dropout keeps the family's own); returns the setting.
    :class:`taco.errors.UsageError` naming the file when it is missing or malformed."""
    from taco.errors import UsageError

    p = Path(path)
    try:
        rec = json.loads(p.read_text())
        setting = rec["chosen"]["setting"]
        lr, warmup, dropout = setting["learning_rate"], setting["warmup_steps"], setting["dropout"]
    except FileNotFoundError:
        raise UsageError(f"--tuned-recipe {p}: no such file (taco tuning-choice writes it)") from None
    except (ValueError, KeyError, TypeError) as exc:
        raise UsageError(f"--tuned-recipe {p}: not a choice of `taco tuning-choice` ({exc!r})") from None
    if not isinstance(lr, (int, float)) or not isinstance(warmup, int) or not (dropout is None or
                                                                                isinstance(dropout, (int, float))):
        raise UsageError(f"--tuned-recipe {p}: chosen.setting needs a number learning_rate, an integer warmup_steps "
                         f"and a number or null dropout, got {setting!r}")
    args.lr, args.warmup_steps, args.dropout = float(lr), int(warmup), None if dropout is None else float(dropout)
    return dict(setting)


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``taco tuning-choice``."""
    from taco.cli_parts import HelpFormatter

    ap = argparse.ArgumentParser(prog="taco tuning-choice", formatter_class=HelpFormatter,
                                 description="the best of an arm's tuning trials (lowest validation MLM loss at "
                                             "the horizon) and every trial, as choice.json")
    ap.add_argument("--trials", nargs="+", required=True, help="the arm's trial checkpoints (taco pretrain)")
    ap.add_argument("--output", required=True, help="choice.json to write")
    return ap


def main(argv: list[str] | None = None) -> int:
    """``taco tuning-choice --trials DIR ... --output choice.json``."""
    from taco.cli_parts import cli_error
    from taco.manifest import atomic_write_text

    args = build_parser().parse_args(argv)
    try:
        result = choose([_trial_record(Path(t)) for t in args.trials])
    except TuningError as exc:
        return cli_error("tuning-choice", exc)
    atomic_write_text(Path(args.output), json.dumps(result, indent=2, sort_keys=True) + "\n")
    c = result["chosen"]
    print(f"taco tuning-choice: {c['trial']} (validation MLM loss {c['mlm_loss']:.4f}; {c['setting']}) of "
          f"{len(result['trials'])} trials -> {args.output}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
