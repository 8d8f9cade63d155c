"""Steps-to-target speedups with intervals that cover, and the decision of "B reaches A's level at T in fewer steps".

``taco efficiency --checkpoints DIR [DIR ...] [--aggregate-dir DIR] [--analysis FILE] [--step-times FILE]
--output-dir D`` writes ``efficiency.csv``, ``efficiency.md`` (and ``efficiency.html``, the page for
``snakemake --report``) and ``efficiency.png`` / ``.pdf`` into ``D``. ``taco efficiency --calibrate``
prints the method's simulated coverage and level (no inputs needed).

**The method** (:mod:`taco.stats.speedup`): A = MLM, B = TACO, one model size and data fraction, a
target step T. The target is A's mean value at T over its units; every unit of B gets the step k_u at
which its own curve reaches it (linear in log-step; censored units extrapolated along their end
segment, at most a factor 2); the speedup is the geometric mean of T / k_u; its interval is a t
interval on log speedups with A's target uncertainty propagated (delta method, Welch-Satterthwaite
degrees of freedom). *Supported* when the interval's lower bound exceeds the margin m
(``analysis.efficiency_margin``, default 1.2), *not supported* when its upper bound is below m,
*inconclusive* otherwise. Coverage and level are measured by simulation
(:mod:`taco.stats.speedup_simulation`): the page prints them for the run's own counts and spreads.

Rows of ``efficiency.csv`` (``kind``):

- ``E1``, ``validation_mlm_loss`` (nats, lower is better): the validation MLM loss on the fixed
  validation blocks and masks of every budget checkpoint and in-segment point (``eval.json``). Unit:
  the pre-training run. ``primary``: T = the largest budget both arms reached (the claim's verdict);
  ``secondary``: each smaller common budget (interval and rule outcome, not the claim's verdict);
  ``curve``: every validation point of A from its first budget to T as the target (descriptive: the
  speedup as a function of the target, with its interval; B may cross after T, so slow-downs are
  numbers below 1); ``other``: an objective that no paper table names (``taco.paper.TABLE_OBJECTIVES``),
  run at the size on all the data, as B against MLM at T (its own largest budget shared with MLM; the
  rule's outcome is printed, it is no claim of the paper).
- ``E2`` (BERT-small's role) and ``E3`` (BERT-base's), ``glue_average`` (GLUE points x100, higher is
  better): the per-seed GLUE average of the fine-tuned budgets (``per_seed.csv`` of ``taco
  aggregate``); T = the step that plays the paper's ``250k`` (``500k`` for base), the paper's speedup
  (5x: TACO-50k matches MLM-250k; 2x for base) beside. Units: pre-training runs (fine-tuning seeds
  averaged) where both arms have at least 2 fine-tuned runs, else fine-tuning seeds of the one run,
  and the interval then covers fine-tuning variance only (the note says so).

**Compute.** ``model_flops_speedup``: the step speedup times F_A / F_B, model FLOPs per step from the
checkpoints' manifests (:mod:`taco.flops`: the matrix products of the training step, the TC
term counted). With ``--step-times`` (a JSON of ``benchmarks/step_time.py``: one optimizer step of each
objective measured side by side at the configuration's shapes), ``wall_speedup`` = speedup x t_A / t_B.

``efficiency.csv`` carries ``format_version`` (:data:`FORMAT_VERSION`); :func:`read_table` refuses an
older file with a message naming it. Reads JSON and CSV only (torch-free).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from taco.families import DEFAULT_FAMILY
from taco.report.efficiency_markdown import CLAIM_TEXT, estimate_text, render_markdown, rows_of_kind, tuning_section
from taco.cli_parts import cli_error
from taco.manifest import read_manifest
from taco.objectives import OBJECTIVE_SPECS
from taco.paper import TABLE_OBJECTIVES
from taco.stats.analysis_config import AnalysisConfig, AnalysisConfigError, load_analysis
from taco.stats.speedup import COMPARED, GLUE_FORM, HIGHER, LOSS_FORM, LOWER, REFERENCE, ArmCurves, arm_curves
from taco.stats.speedup_decision import Pair, evaluate_pair
from taco.stats.aggregate import average_keys
from taco.report.style import objective_label
from taco.stats.validation_points import (PLATEAU_EXIT_GAP, PROBE_COLUMNS, EvalFileError, load_eval, parse_eval,
                                           probe_points)

NAME = "efficiency"
#: version of efficiency.csv's columns; 3: the calibrated test, units left out, plateau exits (2: per-unit
#: speedups, margin, kinds; 1: the mean-curve bootstrap)
FORMAT_VERSION = 3
#: inner draws of the calibrated test of each primary, secondary and other row (taco efficiency --calibration-reps)
CALIBRATION_REPS = 10_000
#: role -> (claim id, paper budget of A = the target T, paper budget where B matches it, the paper's speedup);
#: Sec. 5 / Tables 1 and 3: TACO-50k matches MLM-250k (small), TACO-250k matches MLM-500k (base)
PAPER_SPEEDUP: dict[str, tuple[str, str, str, float]] = {"small": ("E2", "250k", "50k", 5.0),
                                                         "base": ("E3", "500k", "250k", 2.0)}
#: fine-tuning seed recorded for a curve without fine-tuning (the validation loss)
NO_FINETUNE = -1

CSV_COLUMNS = [
    "format_version", "claim_id", "kind", "form", "unit_of_value", "better", "size", "fraction", "a", "b",
    "target_step", "target_budget", "target_value", "status", "speedup", "estimate_bound", "ci_level",
    "speedup_ci_low", "speedup_ci_high", "log_speedup_se", "df", "margin", "p_at_least_margin", "verdict",
    "reason", "n_units_a", "n_units_b", "n_runs_a", "n_runs_b", "unit", "unit_k", "unit_speedups",
    "n_right_censored", "n_left_censored", "mean_curve_k", "mean_curve_speedup", "model_flops_per_step_a",
    "model_flops_per_step_b", "model_flops_speedup", "model_flops_ci_low", "model_flops_ci_high",
    "wall_time_ratio", "wall_speedup", "paper_speedup", "mean_a_at_t", "mean_b_at_t", "welch_p_b_better",
    "sd_run_a", "sd_run_b", "sd_seed_a", "sd_seed_b", "t_statistic", "calibrated_p_supported",
    "calibrated_p_not_supported", "critical_value", "calibration_mc_error", "calibration_reps", "berger_boos",
    "calibrated_ci_low", "calibrated_ci_high", "t_rule_verdict", "left_out", "plateau_exit_a", "plateau_exit_b",
    "regime", "calibrated_level", "calibrated_coverage", "interval_note", "curve_steps", "title",
]
TEXT_COLUMNS = ("claim_id", "kind", "form", "unit_of_value", "better", "size", "a", "b", "target_budget", "status",
                "estimate_bound", "verdict", "reason", "unit", "unit_k", "unit_speedups", "interval_note",
                "curve_steps", "title", "t_rule_verdict", "left_out", "plateau_exit_a", "plateau_exit_b", "regime")
#: efficiency_curves.csv: every run's validation points (the inputs of E1; ``taco efficiency --curves`` reads
#: them back), with the context probe's losses where the run has them
CURVE_COLUMNS = ["size", "objective", "fraction", "pretrain_seed", "seed", "step", "value", "budget", "architecture",
                 "flops_per_step", *PROBE_COLUMNS]


class EfficiencyTableError(ValueError):
    """An efficiency.csv this version cannot read (older format, missing columns); names the file."""


# ---------------------------------------------------------------------------------------------
# reading the inputs
# ---------------------------------------------------------------------------------------------
def flops_per_step(manifest: Mapping[str, Any]) -> float:
    """Model FLOPs of one pre-training step of a checkpoint (:func:`taco.flops.
    pretrain_flops_per_token` x seq_len x global batch), from its manifest; nan when a field is missing."""
    from taco.flops import pretrain_flops_per_token

    try:
        hi = manifest.get("hash_inputs") or {}
        op = manifest.get("objective_params") or {}
        seq_len = int(manifest["seq_len"])
        per_token = pretrain_flops_per_token(
            str(manifest["size_preset"]), seq_len, str(manifest["objective"]),
            vocab_size=int(hi["vocab_size"]), options=op,
            architecture=str(manifest.get("architecture") or DEFAULT_FAMILY))
        return per_token * seq_len * int(manifest["global_batch_size"])
    except (KeyError, TypeError, ValueError):
        return math.nan


def read_checkpoints(checkpoints: Sequence[str | Path]) -> tuple[pd.DataFrame, dict[tuple[str, str], float], list[str]]:
    """Validation-loss rows (:data:`CURVE_COLUMNS`: value in nats; pretrain_seed from the manifest, seed =
    :data:`NO_FINETUNE`, budget: the checkpoint's own step, not an in-segment point; architecture: the
    encoder family, ``bert`` for manifests written before the families existed; the context probe's
    losses, nan where a point has none), FLOPs per step by (size, objective), and notes (points left out).

    The control (step 0) is skipped. A step measured twice in one run (a rerun) keeps the last.
    FileNotFoundError names a directory without a manifest; :class:`EvalFileError` a damaged eval.json.
    """
    rows: dict[tuple, dict[str, Any]] = {}
    fps: dict[tuple[str, str], float] = {}
    notes: list[str] = []
    for ckpt in map(Path, checkpoints):
        m = read_manifest(ckpt)
        step = int(m.get("step") or 0)
        if step <= 0 or m.get("objective") in (None, "control"):
            continue
        size, obj = str(m.get("size")), str(m.get("objective"))
        frac, run = round(float(m.get("fraction") or 1.0), 6), int(m.get("pretrain_seed") or 0)
        f = flops_per_step(m)
        if math.isfinite(f):
            fps[(size, obj)] = f
        if (ckpt / "eval.json").is_file():
            ev = load_eval(ckpt / "eval.json")
            source = str(ckpt / "eval.json")
        else:
            ev, source = m.get("validation") or {}, f"{ckpt}/manifest.json (validation)"
        points, why = parse_eval(ev, source, step)
        probes = probe_points(ev, step) if isinstance(ev, Mapping) else {}
        notes += why
        for s, v in points:
            rows[(size, obj, frac, run, s)] = {
                "size": size, "objective": obj, "fraction": frac, "pretrain_seed": run, "seed": NO_FINETUNE,
                "step": s, "value": v, "budget": s == step,
                "architecture": str(m.get("architecture") or DEFAULT_FAMILY), "flops_per_step": f,
                **{k: probes.get(s, {}).get(k, math.nan) for k in PROBE_COLUMNS}}
    return pd.DataFrame(list(rows.values()), columns=CURVE_COLUMNS), fps, notes


def read_curves(path: str | Path) -> tuple[pd.DataFrame, dict[tuple[str, str], float], list[str]]:
    """:func:`read_checkpoints`' result from an ``efficiency_curves.csv`` (``taco efficiency --curves``: the
    check rerun from a results folder). FileNotFoundError / ValueError name the file and what is wrong."""
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"{p}: no such curves file (taco efficiency writes efficiency_curves.csv)")
    try:
        df = pd.read_csv(p, dtype={"size": str, "objective": str, "architecture": str})
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise ValueError(f"{p}: not a readable CSV ({exc})") from None
    missing = [c for c in CURVE_COLUMNS if c not in df.columns]
    if missing:
        raise ValueError(f"{p}: missing column(s) {', '.join(missing)} (written by another version? rerun "
                         "`taco efficiency --checkpoints ...`)")
    df["budget"] = df["budget"].astype(str).str.lower().isin(("true", "1"))
    fps = {(str(r.size), str(r.objective)): float(r.flops_per_step) for r in df.itertuples()
           if math.isfinite(float(r.flops_per_step))}
    return df[CURVE_COLUMNS], fps, []


def read_choices(paths: Sequence[str | Path]) -> list[tuple[str, dict[str, Any]]]:
    """(``<size>/<objective>``, choice) of each choice.json of ``taco tuning-choice`` (its folder names the
    arm); ValueError naming a file that is missing or not a choice."""
    out = []
    for p in map(Path, paths):
        try:
            rec = json.loads(p.read_text())
            rec["chosen"]["setting"], rec["trials"]
        except FileNotFoundError:
            raise ValueError(f"{p}: no such tuning choice (taco tuning-choice writes it)") from None
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"{p}: not a choice of `taco tuning-choice` ({exc!r})") from None
        out.append((f"{p.parent.parent.name}/{p.parent.name}", rec))
    return out


def plateau_exits(loss: pd.DataFrame, size: str, obj: str, frac: float) -> dict[int, float]:
    """Per pre-training run of (size, objective, fraction): the first validation step whose context-probe
    order gap exceeds :data:`PLATEAU_EXIT_GAP` (inf when none of its probed points does); runs without a
    probed point are absent."""
    sub = loss[(loss["size"] == size) & (loss["objective"] == obj) & np.isclose(loss["fraction"].astype(float), frac)
               & np.isfinite(loss["probe_order_gap"].astype(float))]
    out: dict[int, float] = {}
    for run, g in sub.groupby("pretrain_seed"):
        past = g[g["probe_order_gap"].astype(float) > PLATEAU_EXIT_GAP]["step"]
        out[int(run)] = float(past.min()) if len(past) else math.inf
    return out


def glue_rows(per_seed: pd.DataFrame, keys: Sequence[str]) -> pd.DataFrame:
    """Per-(run, fine-tuning seed) GLUE average in points over ``keys`` from ``per_seed.csv`` rows:
    ``size, objective, fraction, pretrain_seed, seed, step, value``; a seed missing a key is left out."""
    cols = ["size", "objective", "fraction", "pretrain_seed", "seed", "step", "value"]
    if per_seed.empty or not keys:
        return pd.DataFrame(columns=cols)
    df = per_seed[per_seed["score_key"].isin(keys)].copy()
    if "pretrain_seed" not in df.columns:
        df["pretrain_seed"] = 0
    g = df.groupby(["size", "objective", "fraction", "pretrain_seed", "seed", "step"])["value"]
    out = pd.DataFrame({"value": g.mean(), "n": g.count()}).reset_index()
    out = out[out["n"] == len(keys)]
    out["fraction"] = out["fraction"].astype(float).round(6)
    return out[cols].reset_index(drop=True)


def read_step_times(path: str | Path) -> float:
    """t_A / t_B (seconds per optimizer step of MLM over TACO's) from ``benchmarks/step_time.py``'s JSON
    (``objectives.<name>.step_s_median``); ValueError naming the file and the missing key."""
    p = Path(path)
    try:
        rec = json.loads(p.read_text())
        t_a = float(rec["objectives"][REFERENCE]["step_s_median"])
        t_b = float(rec["objectives"][COMPARED]["step_s_median"])
    except FileNotFoundError:
        raise ValueError(f"{p}: no such step-time file (benchmarks/step_time.py writes it)") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"{p}: not valid JSON ({exc})") from None
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"{p}: expected objectives.{REFERENCE}.step_s_median and objectives.{COMPARED}."
                         f"step_s_median (benchmarks/step_time.py's format): {exc!r}") from None
    if not (t_a > 0 and t_b > 0):
        raise ValueError(f"{p}: step times must be > 0 seconds, got {t_a} and {t_b}")
    return t_a / t_b


def _arm(df: pd.DataFrame, size: str, obj: str, frac: float) -> ArmCurves:
    if df.empty:
        return ArmCurves(np.empty(0, dtype=int), [], [])
    sub = df[(df["size"] == size) & (df["objective"] == obj) & np.isclose(df["fraction"].astype(float), frac)]
    return arm_curves(sub)


def _budget_steps(loss: pd.DataFrame, size: str, obj: str) -> set[int]:
    sub = loss[(loss["size"] == size) & (loss["objective"] == obj) & loss["budget"].astype(bool)
               & np.isclose(loss["fraction"].astype(float), 1.0)]
    return set(sub["step"].astype(int))


def _other_pairs(loss: pd.DataFrame, size: str, cfg: AnalysisConfig,
                 fps: Mapping[tuple[str, str], float]) -> list[Pair]:
    """E1's ``other`` rows of ``size``: each objective no paper table names against MLM at their largest
    common budget (full data)."""
    full = loss[(loss["size"] == size) & np.isclose(loss["fraction"].astype(float), 1.0)]
    others = [o for o in OBJECTIVE_SPECS if o in set(full["objective"]) and o not in TABLE_OBJECTIVES]
    a = _arm(loss, size, REFERENCE, 1.0)
    out = []
    for obj in others:
        b = _arm(loss, size, obj, 1.0)
        if not a.runs or not b.runs:
            continue
        budgets = sorted(_budget_steps(loss, size, REFERENCE) & _budget_steps(loss, size, obj) & set(a.steps.tolist()))
        t = budgets[-1] if budgets else None
        out.append(Pair("E1", LOSS_FORM, size, 1.0, a, b, t, LOWER, "nats",
                        target_budget=(cfg.budget_name(size, t) or "") if t is not None else "",
                        flops_per_step=(fps.get((size, REFERENCE), math.nan), fps.get((size, obj), math.nan)),
                        note="" if budgets else "no budget that both arms reached", kind="other", b_objective=obj,
                        title=f"{objective_label(obj)} reaches MLM's validation loss in fewer steps (an objective "
                              "the paper does not have: the rule's outcome, no claim of the paper)"))
    return out


def build_pairs(loss: pd.DataFrame, glue: pd.DataFrame | None, cfg: AnalysisConfig,
                fps: Mapping[tuple[str, str], float]) -> list[Pair]:
    """The comparisons of the run (module docstring): per size with MLM and TACO on all the data, E1's
    primary, secondary and curve rows, and an ``other`` row for each objective no paper table names;
    with the aggregate, E2 / E3 for each role that is run."""
    pairs: list[Pair] = []
    sizes = sorted(set(loss["size"])) if not loss.empty else []
    for size in sizes:
        pairs += _other_pairs(loss, size, cfg, fps)
    for size in sizes:
        a, b = _arm(loss, size, REFERENCE, 1.0), _arm(loss, size, COMPARED, 1.0)
        if not a.runs or not b.runs:
            continue
        fp = (fps.get((size, REFERENCE), math.nan), fps.get((size, COMPARED), math.nan))
        exits = {"exit_a": plateau_exits(loss, size, REFERENCE, 1.0), "exit_b": plateau_exits(loss, size, COMPARED, 1.0)}
        grid = set(a.steps.tolist())
        budgets = sorted(_budget_steps(loss, size, REFERENCE) & _budget_steps(loss, size, COMPARED) & grid)
        if not budgets:
            pairs.append(Pair("E1", LOSS_FORM, size, 1.0, a, b, None, LOWER, "nats", flops_per_step=fp,
                              note="no budget that both arms reached", title=CLAIM_TEXT["E1"]))
            continue
        t = budgets[-1]
        name = lambda s: cfg.budget_name(size, s) or ""  # noqa: E731
        b_budgets = _budget_steps(loss, size, COMPARED)
        moved = (f"T = {t}, not {max(b_budgets)}: MLM reached only {t} (a short MLM run moves T)"
                 if b_budgets and max(b_budgets) > t else "")
        pairs.append(Pair("E1", LOSS_FORM, size, 1.0, a, b, t, LOWER, "nats", target_budget=name(t),
                          flops_per_step=fp, title=CLAIM_TEXT["E1"], note=moved, **exits))
        for s in budgets[:-1]:
            pairs.append(Pair("E1", LOSS_FORM, size, 1.0, a, b, s, LOWER, "nats", target_budget=name(s),
                              flops_per_step=fp, kind="secondary", title=CLAIM_TEXT["E1"], **exits))
        for s in sorted(x for x in grid if budgets[0] <= x <= t):
            pairs.append(Pair("E1", LOSS_FORM, size, 1.0, a, b, s, LOWER, "nats", target_budget=name(s),
                              flops_per_step=fp, kind="curve", title=CLAIM_TEXT["E1"], **exits))
    if glue is not None:
        for role, (cid, t_name, b_name, paper) in PAPER_SPEEDUP.items():
            size = cfg.roles.get(role)
            if size is None:
                continue
            t = cfg.budget_step(size, t_name)
            a, b = _arm(glue, size, REFERENCE, 1.0), _arm(glue, size, COMPARED, 1.0)
            title = (f"B (TACO) reaches A's (MLM's) GLUE average at {t_name} in fewer steps (BERT-{role}'s role: "
                     f"{size}; the paper: TACO-{b_name} matches MLM-{t_name}, {paper:g}x)")
            note = "" if t is not None else f"no step plays the paper's {t_name} for {size} (analysis.budget_names)"
            pairs.append(Pair(cid, GLUE_FORM, size, 1.0, a, b, t, HIGHER, "GLUE points (x100)", target_budget=t_name,
                              paper_speedup=paper, note=note, title=title,
                              flops_per_step=(fps.get((size, REFERENCE), math.nan), fps.get((size, COMPARED), math.nan))))
    return pairs


def evaluate(pairs: Sequence[Pair], cfg: AnalysisConfig, wall_time_ratio: float = math.nan,
             calibration_reps: int = CALIBRATION_REPS) -> pd.DataFrame:
    """The efficiency table: one row per pair (``CSV_COLUMNS``); the verdicts by the calibrated test with
    ``calibration_reps`` inner draws (0: the t rule's)."""
    rows = []
    for p in pairs:
        row = evaluate_pair(p, alpha=cfg.alpha, margin=cfg.efficiency_margin, columns=CSV_COLUMNS,
                            calibration_reps=calibration_reps, seed=cfg.seed)
        row["format_version"] = FORMAT_VERSION
        row["wall_time_ratio"] = wall_time_ratio
        row["wall_speedup"] = row["speedup"] * wall_time_ratio
        rows.append(row)
    return pd.DataFrame(rows, columns=CSV_COLUMNS)



def read_table(path: str | Path) -> pd.DataFrame:
    """``efficiency.csv`` as written by :func:`make`; FileNotFoundError names a missing file,
    :class:`EfficiencyTableError` one of another format version (rerun ``taco efficiency``)."""
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"{p}: no efficiency table (run `taco efficiency` first)")
    try:
        df = pd.read_csv(p, dtype={c: str for c in TEXT_COLUMNS})
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise EfficiencyTableError(f"{p}: not a readable CSV ({exc})") from None
    found = sorted(set(df["format_version"].dropna().astype(int))) if "format_version" in df.columns else [1]
    if found != [FORMAT_VERSION]:
        raise EfficiencyTableError(
            f"{p}: efficiency table of format {', '.join(map(str, found)) or '?'}, this taco reads format "
            f"{FORMAT_VERSION} (columns changed: docs/INTERFACES.md); rerun `taco efficiency` (snakemake re-runs "
            "the efficiency rule when its code changes: `snakemake -R efficiency`)")
    missing = [c for c in CSV_COLUMNS if c not in df.columns]
    if missing:
        raise EfficiencyTableError(f"{p}: missing column(s) {', '.join(missing)}")
    for c in TEXT_COLUMNS:
        df[c] = df[c].fillna("")
    return df


def calibration_rows(pairs: Sequence[Pair], df: pd.DataFrame, cfg: AnalysisConfig, *,
                     reps: int = 2000) -> list[dict[str, Any]]:
    """The t rule's simulated coverage and false-"supported" rate at the margin for each primary row
    with an interval (a diagnostic of the descriptive t interval): A's observed mean curve, its unit counts, B's grid and the observed spreads
    (:func:`taco.stats.speedup_simulation.model_like`), ``reps`` simulated experiments; ``row`` is the
    index of the row in ``df``."""
    from taco.stats.speedup_simulation import model_like, simulate

    out = []
    for i, (pair, r) in enumerate(zip(pairs, df.itertuples())):
        if r.kind != "primary" or not math.isfinite(r.log_speedup_se):
            continue
        sd_a = float(np.std(pair.a.at(int(r.target_step)), ddof=1))
        logs = np.log([float(x) for x in str(r.unit_speedups).split(";") if x])
        sd_log_b = float(np.std(logs, ddof=1)) if logs.size >= 2 else 0.0
        model = model_like(pair.a.steps, pair.a.mean_curve(), pair.b.steps, int(r.target_step), pair.better, sd_a,
                           sd_log_b, speedup=cfg.efficiency_margin)
        sim = simulate(model, int(r.n_units_a), int(r.n_units_b), reps=reps, level=float(r.ci_level), seed=cfg.seed)
        out.append({"row": i, "claim_id": r.claim_id, "size": r.size, "n_a": int(r.n_units_a),
                    "n_b": int(r.n_units_b), "sd_a": sd_a, "sd_log_b": sd_log_b, **sim})
    return out


def record_diagnostic(df: pd.DataFrame, calibration: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """Record the t rule's simulated false-"supported" rate and coverage at each primary row's own settings
    (:func:`calibration_rows`) in ``calibrated_level`` / ``calibrated_coverage``: a diagnostic of the
    descriptive t interval, never a veto (the verdict is the calibrated test's)."""
    df = df.copy()
    for c in calibration:
        df.loc[c["row"], "calibrated_level"] = c["supported"]
        df.loc[c["row"], "calibrated_coverage"] = c["coverage"]
    return df


def make(checkpoints: Sequence[str | Path] | None, out_dir: str | Path, cfg: AnalysisConfig,
         aggregate_dir: str | Path | None = None, step_times: str | Path | None = None, *,
         curves: str | Path | None = None, calibration_reps: int = CALIBRATION_REPS,
         tuning: Sequence[str | Path] | None = None) -> list[Path]:
    """Read, evaluate and write ``efficiency.{csv,md,html,png,pdf}`` and ``efficiency_curves.csv`` into
    ``out_dir``; returns the paths. The validation curves come from ``checkpoints`` or, to rerun the check
    from a results folder, from ``curves`` (an ``efficiency_curves.csv``). Every input is read and checked
    before anything is written."""
    from taco.manifest import atomic_write_text
    from taco.report.efficiency_figure import figure
    from taco.report.figures import save
    from taco.report.html import write_markdown_page

    loss, fps, notes = read_curves(curves) if curves is not None else read_checkpoints(checkpoints or [])
    choices = read_choices(tuning or [])
    wall = read_step_times(step_times) if step_times else math.nan
    glue = None
    if aggregate_dir is not None:
        per_seed_path = Path(aggregate_dir) / "per_seed.csv"
        if not per_seed_path.is_file():
            raise FileNotFoundError(f"aggregate directory {aggregate_dir}: missing per_seed.csv (run `taco aggregate`)")
        glue = glue_rows(pd.read_csv(per_seed_path), average_keys(cfg))
    pairs = build_pairs(loss, glue, cfg, fps)
    df = evaluate(pairs, cfg, wall, calibration_reps)
    calib = calibration_rows(pairs, df, cfg)
    df = record_diagnostic(df, calib)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out / f"{NAME}.csv", df.to_csv(index=False, float_format="%.6g"))
    atomic_write_text(out / f"{NAME}_curves.csv", loss.to_csv(index=False))  # full precision: a rerun decides alike
    families = dict(zip(loss["size"], loss["architecture"])) if not loss.empty else {}
    page = render_markdown(df, cfg, calib, notes, families) + tuning_section(choices)
    pages = write_markdown_page(out / f"{NAME}.md", page)  # .md and .html
    paths = save(figure(pairs, df, loss), out, NAME)
    for r in rows_of_kind(df, "primary", "secondary").itertuples():
        print(f"{r.claim_id} {r.size} {r.form} {r.kind} T={r.target_step}: speedup {estimate_text(r)} -> {r.verdict}")
    return [out / f"{NAME}.csv", out / f"{NAME}_curves.csv", *pages, *paths]


def print_calibration(run_counts: Sequence[tuple[int, int]], reps: int, level: float,
                      user: Mapping[str, float] | None = None, inner: int = 200) -> None:
    """``taco efficiency --calibrate``: the checked scenarios, the edge, the known limits and (with ``user``) a
    scenario of the user's spreads, each at the given run counts, as a table on stdout: the calibrated
    test's coverage and false verdicts (the verdict users get; ``reps`` // 10 experiments of ``inner`` null
    draws) beside the descriptive t interval's (``reps`` experiments)."""
    from taco.stats.speedup_calibration import simulate_calibrated
    from taco.stats.speedup_simulation import EDGES, LIMITS, SCENARIOS, calibration_table

    models = {**SCENARIOS}
    if user:
        from dataclasses import replace

        models["yours: " + ", ".join(f"{k} {v:g}" for k, v in user.items())] = replace(
            SCENARIOS["loss: cpu-real T=4000 spreads"], sd_a=user["sd_a"], sd_log_b=user["sd_log_b"],
            speedup=user["margin"])
    outer = max(reps // 10, 100)
    alpha = (1 - level) / 2
    print(f"nominal: coverage {level:.0%}, false verdicts at the margin {alpha:.3g}; calibrated test: {outer} "
          f"experiments x {inner} null draws per row; t interval (descriptive): {reps} experiments "
          "(taco.stats.speedup_calibration, taco.stats.speedup_simulation)")
    print(f"{'scenario':44s} {'A/B':>5s} | {'calibrated: coverage':>20s} {'supported':>10s} {'not supp.':>10s} | "
          f"{'t: coverage':>11s} {'supported':>10s}")
    for name, table in (("checked", models), ("edge (near the level)", EDGES), ("known limit (not met)", LIMITS)):
        print(f"-- {name}")
        for r in calibration_table(table, run_counts, reps=reps, level=level):
            c = simulate_calibrated(table[r["scenario"]], r["n_a"], r["n_b"], reps=outer, inner=inner, alpha=alpha)
            print(f"{r['scenario']:44s} {r['n_a']}/{r['n_b']:<3d} | {c['coverage']:20.3f} {c['supported']:10.3f} "
                  f"{c['not_supported']:10.3f} | {r['coverage']:11.3f} {r['supported']:10.3f}")


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``taco efficiency``."""
    from taco.cli_parts import HelpFormatter
    ap = argparse.ArgumentParser(formatter_class=HelpFormatter, prog="taco efficiency", description=__doc__.split("\n")[0])
    ap.add_argument("--checkpoints", nargs="+", help="budget checkpoint directories (taco pretrain); required "
                    "unless --curves or --calibrate")
    ap.add_argument("--curves", help="an efficiency_curves.csv (written beside efficiency.csv) instead of "
                    "--checkpoints: the check rerun from a results folder")
    ap.add_argument("--calibration-reps", type=int, default=CALIBRATION_REPS, help="simulated experiments of "
                    "each row's calibrated test (0: decide by the t rule alone)")
    ap.add_argument("--tuning", nargs="+", default=None, help="choice.json files of `taco tuning-choice` (config "
                    "pretrain.tuning): the page lists every arm's trials and chosen setting")
    ap.add_argument("--aggregate-dir", help="output folder of `taco aggregate` (adds the GLUE-average form)")
    ap.add_argument("--analysis", help="analysis spec (JSON/YAML); default: the paper's grid")
    ap.add_argument("--step-times", help="JSON of benchmarks/step_time.py (one step of each objective measured side "
                    "by side): adds the wall-clock speedup beside the model-FLOPs one")
    ap.add_argument("--output-dir", default="results", help="folder for efficiency.csv, .md, .png and .pdf")
    ap.add_argument("--calibrate", action="store_true", help="print the method's simulated coverage and level "
                    "(the checked scenarios and the known limits) and exit")
    ap.add_argument("--runs", type=int, nargs="+", default=[3, 5], help="--calibrate: units per arm to simulate")
    ap.add_argument("--reps", type=int, default=4000, help="--calibrate: simulated experiments per row")
    ap.add_argument("--sd-a", type=float, help="--calibrate: your A's SD at T (nats) for a scenario of your own")
    ap.add_argument("--sd-log-b", type=float, help="--calibrate: your B's SD of log speedups (with --sd-a)")
    return ap


def main(argv: list[str] | None = None) -> int:
    """``taco efficiency``: checkpoints (+ aggregate) -> efficiency.{csv,md,png,pdf} + manifest."""
    from taco.manifest import atomic_write_text, build_manifest

    ap = build_parser()
    args = ap.parse_args(argv)
    t0 = time.time()
    try:
        cfg = load_analysis(args.analysis)
        if args.calibrate:
            user = None
            if args.sd_a is not None or args.sd_log_b is not None:
                if args.sd_a is None or args.sd_log_b is None:
                    raise ValueError("--sd-a and --sd-log-b go together")
                user = {"sd_a": args.sd_a, "sd_log_b": args.sd_log_b, "margin": cfg.efficiency_margin}
            if any(n < 2 for n in args.runs):
                raise ValueError(f"--runs: at least 2 units per arm, got {args.runs}")
            print_calibration([(n, n) for n in args.runs], args.reps, round(1 - 2 * cfg.alpha, 12), user)
            return 0
        if not args.checkpoints and not args.curves:
            raise ValueError("--checkpoints or --curves is required (or --calibrate)")
        if args.checkpoints and args.curves:
            raise ValueError("give --checkpoints or --curves, not both")
        if args.calibration_reps < 0:
            raise ValueError(f"--calibration-reps must be >= 0, got {args.calibration_reps}")
        paths = make(args.checkpoints, args.output_dir, cfg, args.aggregate_dir, args.step_times,
                     curves=args.curves, calibration_reps=args.calibration_reps, tuning=args.tuning)
    except (AnalysisConfigError, FileNotFoundError, EvalFileError, ValueError) as exc:
        return cli_error("efficiency", exc)
    man = build_manifest(NAME, {"analysis": cfg.to_dict(), "aggregate_dir": args.aggregate_dir,
                                "step_times": args.step_times},
                         inputs={str(c): "" for c in (args.checkpoints or [args.curves])},
                         outputs=[p.name for p in paths], wall_time_s=round(time.time() - t0, 3))
    atomic_write_text(Path(args.output_dir) / f"{NAME}.manifest.json", json.dumps(man, indent=2, default=str) + "\n")
    print(f"taco efficiency: {len(paths)} files -> {args.output_dir}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
