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
  replicates' jobs), so ``snakemake -n`` and ``taco plan`` list every job; no Snakemake checkpoint;
- **a recorded choice** (``pretrain.tuning.recorded``, ``taco tuning-choice --recorded``, :func:`read_recorded`):
  a choice.json kept in a record stands in for the arm's trials on a machine that no longer has them, once
  checked to hold exactly the trials this configuration draws and to choose its best one.

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
#: the values each tunable parameter may take: (low, high, low included, high included)
BOUNDS: dict[str, tuple[float, float, bool, bool]] = {"learning_rate": (0.0, math.inf, False, False),
                                                      "warmup_steps": (0.0, math.inf, True, False),
                                                      "dropout": (0.0, 1.0, True, False)}
#: a choice within this fraction of a range's end (in log space for log_uniform) lies at the edge
EDGE_FRACTION = 0.1


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


def _out_of_bounds(key: str, value: float) -> bool:
    lo, hi, lo_in, hi_in = BOUNDS[key]
    return not ((value > lo or (lo_in and value == lo)) and (value < hi or (hi_in and value == hi)))


def _bounds_text(key: str) -> str:
    lo, hi, lo_in, hi_in = BOUNDS[key]
    return f"{'[' if lo_in else '('}{lo:g}, {hi:g}{']' if hi_in else ')'}"


def check_space(space: Mapping[str, Any], where: str = "pretrain.tuning.space",
                horizon: int | None = None) -> list[str]:
    """Problems of a search space, one line each naming the key (empty when it is good): each value within
    its parameter's :data:`BOUNDS` (a learning rate > 0, a dropout in [0, 1), warmup steps >= 0 and, given
    ``horizon``, below the trials' horizon)."""
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
            elif any(_out_of_bounds(key, v) for v in spec):
                errors.append(f"{where}.{key}: every value in {_bounds_text(key)}, got {spec!r}")
            elif key == "warmup_steps" and horizon is not None and max(spec) >= horizon:
                errors.append(f"{where}.{key}: every value below the trials' horizon ({horizon} steps: "
                              f"pretrain.tuning.horizon), got {spec!r}")
        elif isinstance(spec, Mapping) and len(spec) == 1 and next(iter(spec)) in ("log_uniform", "uniform"):
            kind, rng = next(iter(spec.items()))
            ok = (isinstance(rng, list) and len(rng) == 2 and all(isinstance(v, (int, float)) for v in rng)
                  and all(math.isfinite(v) for v in rng) and rng[0] < rng[1] and (kind == "uniform" or rng[0] > 0))
            if not ok:
                errors.append(f"{where}.{key}.{kind}: [low, high] with low < high" +
                              (" and low > 0" if kind == "log_uniform" else "") + f", got {rng!r}")
            elif any(_out_of_bounds(key, v) for v in rng):
                errors.append(f"{where}.{key}.{kind}: both ends in {_bounds_text(key)}, got {rng!r}")
            elif key == "warmup_steps" and horizon is not None and rng[1] >= horizon:
                errors.append(f"{where}.{key}.{kind}: below the trials' horizon ({horizon} steps: "
                              f"pretrain.tuning.horizon), got {rng!r}")
        else:
            errors.append(f"{where}.{key}: a list of values or {{log_uniform: [lo, hi]}} / {{uniform: [lo, hi]}}, "
                          f"got {spec!r}")
    return errors


def check_spaces(spaces: Mapping[str, Any], where: str = "--tuning-spaces") -> list[str]:
    """Problems of a mapping size -> search space (each checked by :func:`check_space` under
    ``<where>.<size>``), one line each; empty when every space is good."""
    errors = []
    for size, space in spaces.items():
        if not isinstance(space, Mapping):
            errors.append(f"{where}.{size}: a search space (a JSON object), got {space!r}")
            continue
        errors += check_space(space, f"{where}.{size}")
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
    grid = math.prod(len(space[k]) for k in keys) if all(isinstance(space[k], list) for k in keys) else math.inf
    out: list[dict[str, float | int]] = []
    seen: set[tuple] = set()
    i = 0
    while len(out) < trials:
        i += 1
        setting = _halton_setting(space, keys, shift, i)
        point = tuple(setting.values())
        # a repeat is skipped while unused points remain (a list-only space; a continuous one never repeats
        # but by rounding): the sequence's next point is taken instead
        if point in seen and len(seen) < grid and i < 1000 * trials:
            continue
        seen.add(point)
        out.append(setting)
    return out


def _halton_setting(space: Mapping[str, Any], keys: list[str], shift: list[float], i: int) -> dict[str, float | int]:
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
    return setting


def edge_notes(setting: Mapping[str, Any], space: Mapping[str, Any]) -> list[str]:
    """One line per parameter whose chosen value lies at the edge of its search space: the end value of a
    list (unless the end is the parameter's own bound, such as dropout 0), or within :data:`EDGE_FRACTION`
    of a range's end (in log space for ``log_uniform``). A choice at the edge says the optimum may lie
    outside the space: widen it (and raise the trial count, the same for every arm)."""
    notes = []
    for key, spec in space.items():
        value = setting.get(key)
        if key not in TUNABLE or not isinstance(value, (int, float)):
            continue
        if isinstance(spec, list):
            if len(set(spec)) < 2:
                continue
            lo_end, hi_end = min(spec), max(spec)
            at_lo = value == lo_end and lo_end != BOUNDS[key][0]
            at_hi = value == hi_end
        else:
            kind, (lo, hi) = next(iter(spec.items()))
            f = (lambda v: math.log(v)) if kind == "log_uniform" else (lambda v: v)
            pos = (f(value) - f(lo)) / (f(hi) - f(lo)) if value > 0 or kind == "uniform" else 0.0
            at_lo = pos <= EDGE_FRACTION and lo != BOUNDS[key][0]
            at_hi = pos >= 1 - EDGE_FRACTION
        if at_lo or at_hi:
            where = "lowest" if at_lo else "highest"
            notes.append(f"{key} {value:g} lies at the {where} edge of its search space {spec}: the optimum may lie "
                         "outside it; widen the space (and raise the trial count, the same for every arm)")
    return notes


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
    if not isinstance(ev, Mapping) or "mlm_loss" not in ev:
        raise TuningError(f"{ev_path}: no mlm_loss (a validation result of taco pretrain has one)")
    loss = ev["mlm_loss"]
    if loss is None:  # a non-finite loss is written as null (strict JSON): a diverged trial, listed, never chosen
        loss = math.nan
    elif isinstance(loss, bool) or not isinstance(loss, (int, float)):
        raise TuningError(f"{ev_path}: mlm_loss {loss!r} is not a number")
    if ev.get("step") != m.get("step"):
        raise TuningError(f"{ev_path}: step {ev.get('step')!r}, but {trial_dir / 'manifest.json'} says step "
                          f"{m.get('step')!r}: the validation result is not this checkpoint's")
    return {"trial": trial_dir.parent.name, "path": str(trial_dir), "step": m.get("step"),
            "objective": m.get("objective"), "max_steps": hi.get("max_steps", m.get("max_steps")),
            "setting": {"learning_rate": hi.get("lr"), "warmup_steps": hi.get("warmup_steps"),
                        "dropout": hi.get("dropout")},
            "mlm_loss": loss}


def choose(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The trial with the lowest finite validation MLM loss (the first on a tie): ``{"chosen": <record>,
    "trials": records, "left_out": [trials without a finite loss]}``. TuningError when none has one."""
    for field, what in (("objective", "objectives"), ("step", "horizons"), ("max_steps", "schedules")):
        values = {r.get(field) for r in records}
        if len(values) > 1:
            raise TuningError(f"the trials hold {len(values)} {what} ({', '.join(sorted(map(str, values)))}): one "
                              "arm's trials share objective and horizon; " +
                              ", ".join(f"{r['path']}: {r.get(field)}" for r in records))
    finite = [r for r in records if math.isfinite(r["mlm_loss"])]
    if not finite:
        raise TuningError("no trial has a finite validation MLM loss: " + ", ".join(r["path"] for r in records))
    best = min(finite, key=lambda r: r["mlm_loss"])
    return {"chosen": dict(best), "trials": [dict(r) for r in records],
            "left_out": [r["path"] for r in records if not math.isfinite(r["mlm_loss"])]}


def check_recorded(record: Any, where: str, settings: Sequence[Mapping[str, Any]] | None = None,
                   horizon: int | None = None, objective: str | None = None) -> dict[str, Any]:
    """A recorded choice.json (of ``taco tuning-choice``, kept in a record) as a choice this run may use instead
    of running the arm's trials again: its trials are well formed and its ``chosen`` is what :func:`choose`
    picks from them; with ``settings`` (:func:`trial_settings` of this configuration), ``horizon`` and
    ``objective``, its trials are exactly those, in order, each of ``objective`` at step ``horizon`` of a
    ``horizon``-step schedule. Returns the choice (its trials' null losses read as NaN). TuningError naming
    ``where`` (the file or config key) and the first trial that differs."""
    if not isinstance(record, Mapping) or not isinstance(record.get("trials"), list) or not record["trials"]:
        raise TuningError(f"{where}: not a choice of `taco tuning-choice` (no list of trials)")
    trials: list[dict[str, Any]] = []
    for i, t in enumerate(record["trials"]):
        missing = [k for k in ("trial", "step", "max_steps", "objective", "setting", "mlm_loss")
                   if not isinstance(t, Mapping) or k not in t]
        try:
            if missing:
                raise KeyError(", ".join(missing))
            row = {**t, "setting": {k: t["setting"][k] for k in CHOICE_KEYS},
                   "mlm_loss": math.nan if t["mlm_loss"] is None else float(t["mlm_loss"])}
        except (KeyError, TypeError, ValueError) as exc:
            raise TuningError(f"{where}: trial {i} is not a trial record of `taco tuning-choice` (missing or "
                              f"bad: {exc})") from None
        trials.append(row)
    choice = choose(trials)
    chosen = record.get("chosen")
    recorded_best = chosen.get("trial") if isinstance(chosen, Mapping) else None
    if recorded_best != choice["chosen"]["trial"]:
        raise TuningError(f"{where}: chosen is {recorded_best!r}, but the lowest validation MLM loss of its trials "
                          f"is {choice['chosen']['trial']!r}'s: the file was edited or is not a choice")
    if settings is not None:
        if len(settings) != len(trials):
            raise TuningError(f"{where}: {len(trials)} trials, but this configuration draws {len(settings)} "
                              "(pretrain.tuning.trials)")
        for t, want in zip(trials, settings):
            got = t["setting"]
            same = all(got[k] == want[k] if got[k] is None or want[k] is None
                       else math.isclose(float(got[k]), float(want[k]), rel_tol=1e-9) for k in want)
            if not same:
                raise TuningError(f"{where}: {t['trial']} ran {got}, but this configuration's trial draws "
                                  f"{dict(want)} (pretrain.tuning: space, trials and seed must be the record's)")
    for field, want_value in (("objective", objective), ("step", horizon), ("max_steps", horizon)):
        if want_value is not None and trials[0][field] != want_value:
            raise TuningError(f"{where}: its trials have {field} {trials[0][field]!r}, but this arm's is {want_value!r}"
                              + (" (pretrain.tuning.horizon)" if field != "objective" else ""))
    return choice


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
    bad = lambda v: isinstance(v, bool)  # noqa: E731 (JSON true is an int in Python)
    if (bad(lr) or bad(warmup) or bad(dropout) or not isinstance(lr, (int, float)) or not isinstance(warmup, int)
            or not (dropout is None or isinstance(dropout, (int, float)))):
        raise UsageError(f"--tuned-recipe {p}: chosen.setting needs a number learning_rate, an integer warmup_steps "
                         f"and a number or null dropout, got {setting!r}")
    args.lr, args.warmup_steps, args.dropout = float(lr), int(warmup), None if dropout is None else float(dropout)
    return dict(setting)


def read_recorded(path: str | Path, settings: Sequence[Mapping[str, Any]] | None = None,
                  horizon: int | None = None, objective: str | None = None, where: str | None = None) -> dict[str, Any]:
    """A recorded choice.json read and checked (:func:`check_recorded`, naming ``where`` or the file), with
    ``recorded_from``: the file it came from. TuningError for a missing or unreadable file."""
    p = Path(path)
    label = f"{where} ({p})" if where else str(p)
    try:
        record = json.loads(p.read_text())
    except OSError as exc:
        raise TuningError(f"{label}: no readable recorded choice ({exc.strerror or exc})") from None
    except ValueError as exc:
        raise TuningError(f"{label}: not JSON ({exc})") from None
    choice = check_recorded(record, label, settings, horizon, objective)
    choice["recorded_from"] = str(path)
    return choice


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``taco tuning-choice``."""
    from taco.cli_parts import HelpFormatter

    ap = argparse.ArgumentParser(prog="taco tuning-choice", formatter_class=HelpFormatter,
                                 description="the best of an arm's tuning trials (lowest validation MLM loss at "
                                             "the horizon) and every trial, as choice.json")
    source = ap.add_mutually_exclusive_group(required=True)
    source.add_argument("--trials", nargs="+", help="the arm's trial checkpoints (taco pretrain)")
    source.add_argument("--recorded", help="a choice.json kept from an earlier run of the same trials (config "
                        "pretrain.tuning.recorded): checked (its choice is its best trial) and written to --output "
                        "with recorded_from, instead of reading trial checkpoints")
    ap.add_argument("--output", required=True, help="choice.json to write")
    ap.add_argument("--space", default=None, help="the search space as JSON (config pretrain.tuning.space): a "
                    "choice at its edge is noted on stdout and in choice.json's at_edge")
    return ap


def main(argv: list[str] | None = None) -> int:
    """``taco tuning-choice --trials DIR ... --output choice.json`` (or ``--recorded FILE``)."""
    from taco.cli_parts import cli_error, json_mapping_option
    from taco.manifest import atomic_write_text

    args = build_parser().parse_args(argv)
    try:
        space = json_mapping_option("--space", args.space, check_space)
        if args.recorded:
            result = read_recorded(args.recorded)
        else:
            result = choose([_trial_record(Path(t)) for t in args.trials])
        if space is not None:
            result["at_edge"] = edge_notes(result["chosen"]["setting"], space)
    except ValueError as exc:  # TuningError included
        return cli_error("tuning-choice", exc)
    atomic_write_text(Path(args.output), json.dumps(result, indent=2, sort_keys=True) + "\n")
    c = result["chosen"]
    print(f"taco tuning-choice: {c['trial']} (validation MLM loss {c['mlm_loss']:.4f}; {c['setting']}) of "
          f"{len(result['trials'])} trials -> {args.output}")
    for note in result.get("at_edge", []):
        print(f"taco tuning-choice: note: {note}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
