"""Statistics over fine-tuning runs: per-seed rows, per-cell summaries with confidence intervals, the
GLUE average, and two-cell comparisons (CI of the difference, permutation tests, Holm, effect size).

Confidence intervals (``ci_method``, default ``"t"``): a Student t interval for a mean and a Welch t
interval for a difference of two means (``scipy.stats.ttest_1samp`` / ``ttest_ind(equal_var=False)``
``.confidence_interval``). Their coverage holds at 3-5 seeds (normal data: about 0.90 for nominal
0.90; tests/test_stats.py simulates it), where the BCa bootstrap covers far less (about 0.78 at 3
seeds: it cannot reach beyond the observed values). ``"BCa"``, ``"percentile"`` and ``"basic"`` remain
available as bootstrap intervals (``scipy.stats.bootstrap``) for many seeds.

``taco aggregate --inputs <metrics.json ...> --analysis FILE --output-dir results/aggregate`` writes

- ``per_seed.csv``: one row per run and score key: every metric (0-1, as in metrics.json), the
  primary metric's value in GLUE points (x100), the degenerate flag, ``init_from`` (the task of the
  fine-tuned model the run started from, ``mnli`` with ``finetune.mnli_start``; else empty), the source path;
- ``cells.csv``: per size / objective / fraction / step / score key: n_seeds, seeds, mean, std
  (ddof=1), median, min, max, CI of the mean (``ci_method``), n_degenerate. Cells the spec expects but no
  run produced appear with n_seeds = 0 and a note, never dropped;
- ``glue_average.csv``: the GLUE average per seed (``level = seed``) and per cell with its CI
  (``level = cell``), the score keys it covers and a ``partial`` flag when it covers fewer than
  the paper's nine;
- ``manifest.json``.

Units: everything but the raw metric columns of ``per_seed.csv`` is in GLUE points (x100), as the
paper's tables. Randomness: every bootstrap / permutation call gets its own generator
``np.random.default_rng([seed, crc32(label)])`` so results do not depend on the order of cells.
Source of the average's definition: docs/paper-facts.md / paper_values.json (mean of nine numbers, WNLI excluded).

The intervals and tests (``interval``, ``compare``, ``holm``, ...) are ``taco.stats.inference``,
re-exported here; this module reads metrics.json files and aggregates them into the tables.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from taco.manifest import read_json_record
from taco.registry import AVERAGE_KEYS
from taco.stats.analysis_config import AnalysisConfig
from taco.registry import TASK_SCORE_KEYS
from taco.stats.inference import (
    summarize)


#: unit label written next to every aggregated number
UNIT = "GLUE points (x100)"

CELL_KEYS = ["size", "objective", "fraction", "step"]
REQUIRED_FIELDS = ("task", "seed", "size", "objective", "fraction", "step", "scores")


class InputError(ValueError):
    """A metrics.json file or aggregate directory that breaks the contract; the message names it."""


# ---------------------------------------------------------------------------------------------
# labels
# ---------------------------------------------------------------------------------------------
def average_label(keys: Sequence[str]) -> str:
    """Human label of an average over ``keys``: full (9 scores) or clearly partial."""
    keys = tuple(keys)
    if set(keys) == set(AVERAGE_KEYS) and len(keys) == 9:
        return "GLUE avg (9 scores)"
    return f"partial GLUE avg ({len(keys)} of 9: {', '.join(keys)})"


def fmt_fraction(fraction: float) -> str:
    """``1.0`` -> ``'100%'``, ``0.25`` -> ``'25%'``."""
    return f"{fraction * 100:g}%"


# ---------------------------------------------------------------------------------------------
# reading metrics.json
# ---------------------------------------------------------------------------------------------
#: value given to an undefined metric (``null`` in metrics.json, e.g. the Pearson / Spearman
#: correlation of constant predictions): 0, the correlation of predictions that carry no
#: information about the labels (and MCC's own convention for constant predictions, scikit-learn).
#: The run is flagged degenerate and the tables say so.
UNDEFINED_METRIC_VALUE = 0.0


def _defined(v: Any) -> bool:
    return v is not None and math.isfinite(float(v))


def _metric_value(scores: Mapping[str, float | None], metric: str, path: str, key: str) -> tuple[float, bool]:
    """(value on the 0-1 scale, whether an undefined metric was replaced by
    :data:`UNDEFINED_METRIC_VALUE`); InputError when the metric is absent."""
    if metric == "mean":
        vals = list(scores.values())
        if not vals:
            raise InputError(f"{path}: scores.{key} has no metrics")
        undefined = not all(_defined(v) for v in vals)
        return float(np.mean([float(v) if _defined(v) else UNDEFINED_METRIC_VALUE for v in vals])), undefined
    if metric not in scores:
        raise InputError(f"{path}: scores.{key} has no {metric!r} (the primary metric set for {key} "
                         f"in the analysis spec); it has {sorted(scores)}")
    v = scores[metric]
    return (float(v), False) if _defined(v) else (UNDEFINED_METRIC_VALUE, True)


def load_metrics(paths: Sequence[str | Path]) -> list[dict[str, Any]]:
    """Read metrics.json files (docs/INTERFACES.md contract). Raises :class:`InputError` naming the
    file and field on a missing field or a malformed value, FileNotFoundError on a missing file."""
    out = []
    for p in paths:
        p = Path(p)
        if not p.is_file():
            raise FileNotFoundError(f"metrics file {p}: no such file")
        rec = read_json_record(p, REQUIRED_FIELDS, InputError, "metrics file")
        if not isinstance(rec["scores"], Mapping) or not rec["scores"]:
            raise InputError(f"{p}: field 'scores' must be a non-empty mapping score_key -> metrics")
        for k, ms in rec["scores"].items():
            if not isinstance(ms, Mapping):
                raise InputError(f"{p}: scores.{k} must map metric -> value")
            for m, v in ms.items():  # null = undefined (e.g. correlation of constant predictions)
                if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float))):
                    raise InputError(f"{p}: scores.{k}.{m} is not a number or null: {v!r}")
        rec = dict(rec)
        rec["_path"] = str(p)
        out.append(rec)
    return out


def per_seed_table(records: Sequence[Mapping[str, Any]], cfg: AnalysisConfig) -> pd.DataFrame:
    """One row per run and score key: identifiers, the budget name the step plays, every metric
    (``metric_<name>``, 0-1; nan where undefined), the primary metric name and its value in points
    (x100), the degenerate flag, the source path. An undefined primary metric (``null``) counts as
    :data:`UNDEFINED_METRIC_VALUE` (0) and sets ``undefined_metric`` and ``degenerate``: it never
    stops the aggregation. Duplicate runs (same cell, task, seed) raise InputError."""
    rows = []
    seen: dict[tuple, str] = {}
    role_of = _roles_of(cfg)
    for rec in records:
        path = rec["_path"]
        size, obj = str(rec["size"]), str(rec["objective"])
        frac = round(float(rec["fraction"]), 6)
        step, task, seed = int(rec["step"]), str(rec["task"]), int(rec["seed"])
        pseed = rec.get("pretrain_seed")
        # metrics.json written before replicates existed: the run used the spec's (config's) seed
        pseed = int(pseed) if pseed is not None else int(cfg.seed)
        ident = (size, obj, frac, step, pseed, task, seed)
        if ident in seen:
            raise InputError(f"{path}: duplicate run {ident} (also in {seen[ident]})")
        seen[ident] = path
        degenerate = rec.get("degenerate") or {}
        for key, metrics in rec["scores"].items():
            pm = cfg.primary_metric.get(key, "accuracy")
            value, undefined = _metric_value(metrics, pm, path, key)
            row = {
                "size": size, "role": role_of.get(size, ""), "objective": obj, "fraction": frac,
                "step": step, "budget": cfg.budget_name(size, step) or "", "task": task,
                "pretrain_seed": pseed, "seed": seed, "score_key": key, "primary_metric": pm,
                "value": 100.0 * value,
                "degenerate": bool(degenerate.get(key, False)) or undefined,
                "undefined_metric": undefined,
                "report_rule": rec.get("report_rule", ""), "reported_epoch": rec.get("reported_epoch", ""),
                # the task of the fine-tuned model this run started from (`taco finetune --init-from`), else ""
                "init_from": str((rec.get("init_from") or {}).get("task") or ""),
                "path": path,
            }
            for m, v in metrics.items():
                row[f"metric_{m}"] = float(v) if _defined(v) else math.nan
            rows.append(row)
    cols = ["size", "role", "objective", "fraction", "step", "budget", "task", "pretrain_seed", "seed",
            "score_key", "primary_metric", "value", "degenerate", "undefined_metric", "report_rule",
            "reported_epoch", "init_from", "path"]
    df = pd.DataFrame(rows, columns=cols + sorted({c for r in rows for c in r if c.startswith("metric_")}))
    df = df.sort_values(["size", "objective", "fraction", "step", "score_key", "pretrain_seed", "seed"],
                        kind="stable")
    return df.reset_index(drop=True)


#: ``pretrain_seed`` assumed by :func:`statistical_units` for a table without that column
NO_PRETRAIN_SEED = -1
#: what one sample of a cell is: a fine-tuning run, or a pre-training run (its fine-tuning seeds averaged)
UNIT_FINETUNE = "fine-tuning seed"
UNIT_PRETRAIN = "pre-training run"


def statistical_units(per_seed: pd.DataFrame) -> pd.DataFrame:
    """The per-seed table with one row per statistical unit and score key.

    A cell (size, objective, fraction, step) with runs from two or more pre-training seeds treats
    the pre-training run as the unit: its fine-tuning seeds are nested inside it and averaged
    (``value`` = their mean, ``degenerate``/``undefined_metric`` = any of them), and ``seed`` becomes
    the pre-training seed. A cell with one pre-training run keeps one row per fine-tuning seed, and
    its uncertainty covers fine-tuning only. Adds the columns ``unit`` (:data:`UNIT_FINETUNE` or
    :data:`UNIT_PRETRAIN`) and ``n_finetune_seeds``. Idempotent (a table with ``unit`` is returned
    as is); a table without ``pretrain_seed`` is a single pre-training run per cell.
    """
    if "unit" in per_seed.columns:
        return per_seed
    df = per_seed.copy()
    if "pretrain_seed" not in df.columns:
        df["pretrain_seed"] = NO_PRETRAIN_SEED
    if df.empty:
        return df.assign(unit=pd.Series(dtype=str), n_finetune_seeds=pd.Series(dtype=int))
    n_pre = df.groupby(CELL_KEYS, dropna=False)["pretrain_seed"].transform("nunique")
    single = df[n_pre < 2].assign(unit=UNIT_FINETUNE, n_finetune_seeds=1)
    nested = df[n_pre >= 2]
    if nested.empty:
        return single.reset_index(drop=True)
    group = CELL_KEYS + ["score_key", "pretrain_seed"]
    agg = {c: "first" for c in df.columns if c not in group + ["value", "seed", "degenerate", "undefined_metric"]}
    agg.update(value="mean", degenerate="any", undefined_metric="any", seed="nunique")
    units = nested.groupby(group, as_index=False, dropna=False).agg(agg)
    units = units.rename(columns={"seed": "n_finetune_seeds"})
    units["seed"] = units["pretrain_seed"]
    units["unit"] = UNIT_PRETRAIN
    out = pd.concat([single, units[single.columns]], ignore_index=True)
    return out.sort_values(CELL_KEYS + ["score_key", "seed"], kind="stable").reset_index(drop=True)


def unit_note(sub: pd.DataFrame) -> str:
    """What the uncertainty of a cell's statistics covers, from its rows of :func:`statistical_units`."""
    if sub.empty:
        return ""
    if (sub["unit"] == UNIT_PRETRAIN).any():
        n = int(sub["seed"].nunique())
        k = sorted(set(int(x) for x in sub["n_finetune_seeds"]))
        return (f"unit: pre-training run ({n} runs, {'/'.join(map(str, k))} fine-tuning seeds nested "
                "in each): uncertainty covers pre-training and fine-tuning")
    return "one pre-training run: uncertainty covers fine-tuning seeds only"


# ---------------------------------------------------------------------------------------------
# cells and averages
# ---------------------------------------------------------------------------------------------
def key_str(size, obj, frac, step, extra="") -> str:
    """Stable text key of a cell (seeds its bootstrap stream): ``size|objective|fraction|step|extra``."""
    return f"{size}|{obj}|{float(frac):g}|{int(step)}|{extra}"


def expected_cells(cfg: AnalysisConfig) -> list[tuple[str, str, float, int]]:
    """(size, objective, fraction, step) cells the spec says were run (runs x their budgets),
    then the no-pre-training controls (``(size, "control", 1.0, 0)``, spec key ``controls``)."""
    out = []
    for v in cfg.runs:
        for step in cfg.run_steps(v):
            cell = (v.size, v.objective, round(v.fraction, 6), int(step))
            if cell not in out:
                out.append(cell)
    for size in cfg.controls:
        cell = (size, "control", 1.0, 0)
        if cell not in out:
            out.append(cell)
    return out


def _roles_of(cfg: AnalysisConfig) -> dict[str, str]:
    """size -> the paper role(s) it plays (``small``, ``base`` or ``small,base``)."""
    out: dict[str, list[str]] = {}
    for role, size in cfg.roles.items():
        if size is not None:
            out.setdefault(size, []).append(role)
    return {k: ",".join(v) for k, v in out.items()}


def task_of(score_key: str) -> str:
    """GLUE task of a score key (``mnli_mm`` -> ``mnli``)."""
    for task, keys in TASK_SCORE_KEYS.items():
        if score_key in keys:
            return task
    return score_key


def _all_cells(per_seed: pd.DataFrame, cfg: AnalysisConfig) -> list[tuple[tuple, bool]]:
    exp = expected_cells(cfg)
    obs = sorted({(r.size, r.objective, round(float(r.fraction), 6), int(r.step))
                  for r in per_seed[CELL_KEYS].itertuples(index=False)})
    cells = [(c, True) for c in exp] + [(c, False) for c in obs if c not in set(exp)]
    return sorted(dict(cells).items(), key=lambda kv: (kv[0][0], kv[0][1], -kv[0][2], kv[0][3]))


def cell_table(per_seed: pd.DataFrame, cfg: AnalysisConfig) -> pd.DataFrame:
    """Per-cell statistics of the primary metric, in points: one row per (size, objective, fraction,
    step, score key) over the spec's expected grid and every observed cell. Missing ones have
    n_seeds = 0 and a note; degenerate runs are counted (``n_degenerate``) and kept in the stats."""
    role_of = _roles_of(cfg)
    per_seed = statistical_units(per_seed)
    rows = []
    for (size, obj, frac, step), in_spec in _all_cells(per_seed, cfg):
        sub = per_seed[(per_seed["size"] == size) & (per_seed["objective"] == obj)
                       & np.isclose(per_seed["fraction"].astype(float), frac) & (per_seed["step"] == step)]
        cell_unit = unit_note(sub)
        keys = list(cfg.score_keys) + sorted(set(sub["score_key"]) - set(cfg.score_keys))
        for key in keys:
            s = sub[sub["score_key"] == key].sort_values("seed")
            summ = summarize(s["value"].tolist(), confidence_level=cfg.confidence_level,
                             n_resamples=cfg.n_resamples, method=cfg.ci_method, seed=cfg.seed,
                             label=key_str(size, obj, frac, step, key))
            note = []
            if summ["n"] == 0:
                reason = cfg.missing_tasks.get(task_of(key))
                note.append(f"task not fine-tuned: {reason}" if reason else "no runs (n/a)" if in_spec else "")
            elif cfg.seeds is not None and not (s["unit"] == UNIT_PRETRAIN).any():
                absent = [x for x in cfg.seeds if x not in set(s["seed"].tolist())]
                if absent:
                    note.append("missing seeds: " + ";".join(map(str, absent)))
            if summ["n"]:
                note.append(cell_unit)
            if not in_spec:
                note.append("not in analysis spec")
            if key not in cfg.score_keys:
                note.append("task not in analysis spec")
            if int(s["degenerate"].sum()):
                note.append(f"{int(s['degenerate'].sum())} degenerate run(s) kept")
            n_undef = int(s["undefined_metric"].sum()) if "undefined_metric" in s else 0
            if n_undef:
                note.append(f"{n_undef} run(s) with an undefined {cfg.primary_metric.get(key, 'accuracy')} "
                            "(constant predictions) counted as 0")
            rows.append({
                "size": size, "role": role_of.get(size, ""), "objective": obj, "fraction": frac,
                "step": step, "budget": cfg.budget_name(size, step) or "", "score_key": key,
                "primary_metric": cfg.primary_metric.get(key, "accuracy"), "unit": UNIT,
                "n_seeds": summ["n"], "seeds": ";".join(str(x) for x in s["seed"].tolist()),
                **{k: summ[k] for k in ("mean", "std", "median", "min", "max", "ci_low", "ci_high", "ci_method")},
                "confidence_level": cfg.confidence_level, "n_degenerate": int(s["degenerate"].sum()),
                "n_undefined": n_undef, "in_spec": in_spec, "note": "; ".join(n for n in note if n),
            })
    return pd.DataFrame(rows)


def average_keys(cfg: AnalysisConfig) -> tuple[str, ...]:
    """Score keys of the GLUE average for this spec: the nine paper keys the configured tasks cover,
    in the paper's order (WNLI never counts)."""
    have = set(cfg.score_keys)
    return tuple(k for k in AVERAGE_KEYS if k in have)


def seed_averages(per_seed: pd.DataFrame, keys: Sequence[str], cells: Iterable[tuple] | None = None) -> pd.DataFrame:
    """Per-seed average of the primary metric (points) over ``keys`` for each cell and seed.

    A seed missing any of ``keys`` gets ``average = nan`` and ``missing_keys`` listing them (it is
    shown, not dropped). ``cells`` (size, objective, fraction, step) restricts / orders the output.
    Columns: size, objective, fraction, step, seed, average, n_keys, missing_keys, degenerate_keys.
    The seeds are the statistical units of :func:`statistical_units` (pre-training seeds in a cell
    with replicated pre-training).
    """
    keys = tuple(keys)
    per_seed = statistical_units(per_seed)
    rows = []
    groups = per_seed.groupby(CELL_KEYS + ["seed"], sort=True)
    for (size, obj, frac, step, seed), g in groups:
        if cells is not None and (size, obj, round(float(frac), 6), int(step)) not in set(cells):
            continue
        vals = g.set_index("score_key")["value"]
        deg = g.set_index("score_key")["degenerate"]
        missing = [k for k in keys if k not in vals.index]
        avg = float(np.mean([vals[k] for k in keys])) if not missing and keys else math.nan
        rows.append({"size": size, "objective": obj, "fraction": round(float(frac), 6), "step": int(step),
                     "seed": int(seed), "average": avg, "n_keys": len(keys) - len(missing),
                     "missing_keys": ";".join(missing),
                     "degenerate_keys": ";".join(k for k in keys if k in deg.index and bool(deg[k]))})
    return pd.DataFrame(rows, columns=CELL_KEYS + ["seed", "average", "n_keys", "missing_keys", "degenerate_keys"])


def glue_average_table(per_seed: pd.DataFrame, cfg: AnalysisConfig,
                       keys: Sequence[str] | None = None) -> pd.DataFrame:
    """The GLUE average per seed (``level='seed'``) and per cell with its CI (``level='cell'``),
    over ``keys`` (default :func:`average_keys`). Every cell of the grid gets a cell row (n/a when
    no seed has all keys); ``covered_keys`` and ``partial`` say what the average covers."""
    keys = tuple(keys) if keys is not None else average_keys(cfg)
    role_of = _roles_of(cfg)
    label = average_label(keys)
    partial = tuple(keys) != AVERAGE_KEYS
    per_seed = statistical_units(per_seed)
    seeds = seed_averages(per_seed, keys)
    rows = []
    for (size, obj, frac, step), in_spec in _all_cells(per_seed, cfg):
        s = seeds[(seeds["size"] == size) & (seeds["objective"] == obj)
                  & np.isclose(seeds["fraction"].astype(float), frac) & (seeds["step"] == step)]
        common = {"size": size, "role": role_of.get(size, ""), "objective": obj, "fraction": frac,
                  "step": step, "budget": cfg.budget_name(size, step) or "", "label": label,
                  "covered_keys": ";".join(keys), "partial": partial, "unit": UNIT}
        for r in s.itertuples(index=False):
            rows.append({**common, "level": "seed", "seed": r.seed, "n_seeds": 1 if math.isfinite(r.average) else 0,
                         "seeds": str(r.seed), "mean": r.average,
                         "n_degenerate": int(bool(r.degenerate_keys)),
                         "note": (f"missing {r.missing_keys}: average n/a" if r.missing_keys else "")
                         + (f"; degenerate: {r.degenerate_keys}" if r.degenerate_keys else "")})
        complete = s[np.isfinite(s["average"].astype(float))]
        summ = summarize(complete["average"].tolist(), confidence_level=cfg.confidence_level,
                         n_resamples=cfg.n_resamples, method=cfg.ci_method, seed=cfg.seed,
                         label=key_str(size, obj, frac, step, "avg|" + ";".join(keys)))
        note = []
        if summ["n"] == 0:
            note.append("no seed with every covered key (n/a)")
        else:
            note.append(unit_note(per_seed[(per_seed["size"] == size) & (per_seed["objective"] == obj)
                                           & np.isclose(per_seed["fraction"].astype(float), frac)
                                           & (per_seed["step"] == step)]))
        if len(complete) < len(s):
            note.append(f"{len(s) - len(complete)} seed(s) incomplete, excluded from the mean")
        if not in_spec:
            note.append("not in analysis spec")
        ndeg = int((complete["degenerate_keys"] != "").sum())
        if ndeg:
            note.append(f"{ndeg} seed(s) with a degenerate run kept")
        rows.append({**common, "level": "cell", "seed": "", "n_seeds": summ["n"],
                     "seeds": ";".join(str(x) for x in complete["seed"].tolist()),
                     **{k: summ[k] for k in ("mean", "std", "median", "min", "max", "ci_low", "ci_high", "ci_method")},
                     "confidence_level": cfg.confidence_level, "n_degenerate": ndeg,
                     "note": "; ".join(note)})
    cols = ["level", "size", "role", "objective", "fraction", "step", "budget", "seed", "label",
            "covered_keys", "partial", "unit", "n_seeds", "seeds", "mean", "std", "median", "min", "max",
            "ci_low", "ci_high", "ci_method", "confidence_level", "n_degenerate", "note"]
    return pd.DataFrame(rows, columns=cols)


def aggregate(paths: Sequence[str | Path], cfg: AnalysisConfig) -> dict[str, pd.DataFrame]:
    """Read metrics.json files and return ``{'per_seed', 'cells', 'glue_average'}`` DataFrames."""
    per_seed = per_seed_table(load_metrics(paths), cfg)
    return {"per_seed": per_seed, "cells": cell_table(per_seed, cfg),
            "glue_average": glue_average_table(per_seed, cfg)}


AGGREGATE_FILES = ("per_seed.csv", "cells.csv", "glue_average.csv")


def read_aggregate(directory: str | Path) -> dict[str, pd.DataFrame]:
    """Read the CSVs ``taco aggregate`` wrote. Raises FileNotFoundError naming a missing file."""
    d = Path(directory)
    out = {}
    for name in AGGREGATE_FILES:
        p = d / name
        if not p.is_file():
            raise FileNotFoundError(f"aggregate directory {d}: missing {name} (run `taco aggregate` first)")
        df = pd.read_csv(p, keep_default_na=True, dtype={"seeds": str, "note": str, "budget": str,
                                                          "role": str, "seed": str, "covered_keys": str,
                                                          "init_from": str})
        for c in ("note", "budget", "role", "seeds", "covered_keys", "missing_keys", "seed", "init_from"):
            if c in df.columns:
                df[c] = df[c].fillna("")
        out[name[:-4]] = df
    out["per_seed"]["seed"] = out["per_seed"]["seed"].astype(int)
    return out
