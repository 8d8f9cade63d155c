"""The efficiency table of ``taco efficiency`` as data: its validation curves read from the checkpoints (or
from ``efficiency_curves.csv``), the pairs of arms it compares (E1 on the validation MLM loss, E2/E3 on the
GLUE average), each pair's speedup and verdict (:mod:`taco.stats.speedup_decision`), the calibration check
of each row and ``efficiency.csv``'s reader. No Markdown and no plotting: :mod:`taco.commands.efficiency`
wires it to the page (:mod:`taco.report.efficiency_page`) and the figure (:mod:`taco.report.efficiency_figure`);
the method is described there and in ``docs/efficiency.md``.

``efficiency.csv`` carries ``format_version`` (:data:`FORMAT_VERSION`); :func:`read_table` refuses an
older file with a message naming it. Reads JSON and CSV only (torch-free).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from taco.families import DEFAULT_FAMILY
from taco.manifest import read_manifest
from taco.objectives import OBJECTIVE_SPECS
from taco.paper import TABLE_OBJECTIVES
from taco.registry import OBJECTIVE_LABELS
from taco.stats.analysis_config import AnalysisConfig
from taco.stats.speedup import (
    COMPARED,
    GLUE_FORM,
    HIGHER,
    LOSS_FORM,
    LOWER,
    PROBE_FORM,
    REFERENCE,
    ArmCurves,
    arm_curves,
)
from taco.stats.speedup_decision import Pair, evaluate_pair
from taco.stats.validation_points import (
    GLUE_PROBE_COLUMNS,
    PLATEAU_EXIT_GAP,
    PROBE_COLUMNS,
    glue_probe_points,
    load_eval,
    parse_eval,
    probe_points,
)

#: the claim each E1 row decides (its ``title``); E2/E3 rows name the paper's budgets instead
CLAIM_TEXT = {
    "E1": "A (TACO) reaches B's (MLM's) validation MLM loss at T in fewer steps",
}
#: the probe row of E1 (issue 51.3): the frozen-feature GLUE probe average instead of the loss
PROBE_TEXT = ("A (TACO) reaches B's (MLM's) frozen-feature GLUE probe average (mean-pooled features) at T in fewer "
              "steps (a secondary row: E1 is decided on the loss)")
#: version of efficiency.csv's columns; 4: A is the claim's subject (TACO) and B its baseline (MLM), as on the
#: claims page (3 had them the other way round; 3: the calibrated test, units left out, plateau exits; 2: per-unit
#: speedups, margin, kinds; 1: the mean-curve bootstrap)
FORMAT_VERSION = 4
#: inner draws of the calibrated test of each primary, secondary and other row (taco efficiency --calibration-reps)
CALIBRATION_REPS = 10_000
#: role -> (claim id, paper budget of B = the target T, paper budget where A matches it, the paper's speedup);
#: Sec. 5 / Tables 1 and 3: TACO-50k matches MLM-250k (small), TACO-250k matches MLM-500k (base)
PAPER_SPEEDUP: dict[str, tuple[str, str, str, float]] = {"small": ("E2", "250k", "50k", 5.0),
                                                         "base": ("E3", "500k", "250k", 2.0)}


def paper_claim_text(role: str, size: str | None = None) -> str:
    """The title of the paper's own steps-to-target claim of ``role`` (E2 small, E3 base; :data:`PAPER_SPEEDUP`),
    naming the size that plays the role where given (efficiency.csv ``title``; docs/claims.md without it)."""
    _, t_name, a_name, paper = PAPER_SPEEDUP[role]
    played = f"BERT-{role}'s role: {size}; " if size else f"BERT-{role}; "
    return (f"A (TACO) reaches B's (MLM's) GLUE average at {t_name} in fewer steps ({played}the paper: "
            f"TACO-{a_name} matches MLM-{t_name}, {paper:g}x)")


#: fine-tuning seed recorded for a curve without fine-tuning (the validation loss)
NO_FINETUNE = -1

CSV_COLUMNS = [
    "format_version", "claim_id", "kind", "form", "unit_of_value", "better", "size", "fraction", "a", "b",
    "target_step", "target_budget", "target_value", "status", "speedup", "estimate_bound", "ci_level",
    "speedup_ci_low", "speedup_ci_high", "log_speedup_se", "df", "margin", "p_at_least_margin", "verdict",
    "reason", "n_units_a", "n_units_b", "n_runs_a", "n_runs_b", "unit", "unit_k", "unit_speedups",
    "n_right_censored", "n_left_censored", "mean_curve_k", "mean_curve_speedup", "model_flops_per_step_a",
    "model_flops_per_step_b", "model_flops_speedup", "model_flops_ci_low", "model_flops_ci_high",
    "wall_time_ratio", "wall_speedup", "paper_speedup", "mean_a_at_t", "mean_b_at_t", "welch_p_a_better",
    "sd_run_a", "sd_run_b", "sd_seed_a", "sd_seed_b", "t_statistic", "calibrated_p_supported",
    "calibrated_p_not_supported", "critical_value", "calibration_mc_error", "calibration_reps", "berger_boos",
    "calibrated_ci_low", "calibrated_ci_high", "t_rule_verdict", "left_out", "plateau_exit_a", "plateau_exit_b",
    "regime", "calibrated_level", "calibrated_coverage", "interval_note", "curve_steps", "title",
    "calibrated_p_faster", "paper_factor", "calibrated_p_paper_factor", "fragile", "target_shift", "crossing_move",
    "unit_k_shifted",
]
#: columns added within format 3 (issue 51) and 4 (issue 64: the flat-target check,
#: taco.stats.crossing_fragility): absent from older files, read as empty
OPTIONAL_COLUMNS = ("calibrated_p_faster", "paper_factor", "calibrated_p_paper_factor", "fragile", "target_shift",
                    "crossing_move", "unit_k_shifted")
TEXT_COLUMNS = ("claim_id", "kind", "form", "unit_of_value", "better", "size", "a", "b", "target_budget", "status",
                "estimate_bound", "verdict", "reason", "unit", "unit_k", "unit_speedups", "interval_note",
                "curve_steps", "title", "t_rule_verdict", "left_out", "plateau_exit_a", "plateau_exit_b", "regime",
                "unit_k_shifted")
#: efficiency_curves.csv: every run's validation points (the inputs of E1; ``taco efficiency --curves`` reads
#: them back), with the context probe's losses and the GLUE probe's averages where the run has them
CURVE_COLUMNS = ["size", "objective", "fraction", "pretrain_seed", "seed", "step", "value", "budget", "architecture",
                 "flops_per_step", *PROBE_COLUMNS, *GLUE_PROBE_COLUMNS]
#: curve columns added later (issue 51.3): absent from older files, read as empty
OPTIONAL_CURVE_COLUMNS = GLUE_PROBE_COLUMNS


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
        glue = glue_probe_points(ev, step) if isinstance(ev, Mapping) else {}
        notes += why
        for s, v in points:
            rows[(size, obj, frac, run, s)] = {
                "size": size, "objective": obj, "fraction": frac, "pretrain_seed": run, "seed": NO_FINETUNE,
                "step": s, "value": v, "budget": s == step,
                "architecture": str(m.get("architecture") or DEFAULT_FAMILY), "flops_per_step": f,
                **{k: probes.get(s, {}).get(k, math.nan) for k in PROBE_COLUMNS},
                **{k: glue.get(s, {}).get(k, math.nan) for k in GLUE_PROBE_COLUMNS}}
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
    for c in OPTIONAL_CURVE_COLUMNS:
        if c not in df.columns:
            df[c] = math.nan
    missing = [c for c in CURVE_COLUMNS if c not in df.columns]
    if missing:
        raise ValueError(f"{p}: missing column(s) {', '.join(missing)} (written by another version? rerun "
                         "`taco efficiency --checkpoints ...`)")
    _check_curve_rows(p, df)
    df["budget"] = df["budget"].astype(str).str.lower().isin(("true", "1"))
    fps = {(str(r.size), str(r.objective)): float(r.flops_per_step) for r in df.itertuples()
           if math.isfinite(float(r.flops_per_step))}
    return df[CURVE_COLUMNS], fps, []


def _check_curve_rows(p: Path, df: pd.DataFrame) -> None:
    """Every row of a curves file as :func:`read_checkpoints` writes it, or ValueError naming the file, the
    row (its line in the file: header = line 1), the column and the value: numbers where numbers belong
    (a repeated header, "5.x", "lots" or a truncated last row are named), a non-negative loss, a positive
    integer step, a known objective, and no conflicting duplicate of a (run, step) point."""
    if df.empty:
        raise ValueError(f"{p}: no rows (written by taco efficiency with at least one validation point)")
    import csv

    with open(p, newline="", encoding="utf-8", errors="replace") as fh:
        rows = list(csv.reader(fh))
    width = len(rows[0])
    for n, row in enumerate(rows[1:], start=2):
        if row and len(row) != width:
            raise ValueError(f"{p}: line {n} has {len(row)} of the header's {width} fields (a truncated or "
                             "damaged file)")
    numeric = {"fraction": "a number in (0, 1]", "pretrain_seed": "an integer", "seed": "an integer",
               "step": "a positive integer", "value": "a loss >= 0 or empty", "flops_per_step": "a number or empty",
               **{c: "a number or empty" for c in (*PROBE_COLUMNS, *GLUE_PROBE_COLUMNS)}}
    for col, what in numeric.items():
        values = pd.to_numeric(df[col], errors="coerce")
        bad = values.isna() & df[col].notna()
        if col in ("fraction", "pretrain_seed", "seed", "step"):
            bad |= df[col].isna()
        if col in ("pretrain_seed", "seed", "step"):
            bad |= values.notna() & (values != values.round())
        if col == "step":
            bad |= values <= 0
        if col == "fraction":
            bad |= (values <= 0) | (values > 1)
        if col == "value":
            bad |= values < 0
        if bad.any():
            i = int(bad.to_numpy().nonzero()[0][0])
            raise ValueError(f"{p}: line {i + 2}, column {col}: {str(df[col].iloc[i])!r} is not {what}")
        df[col] = values
    unknown = sorted(set(df["objective"].astype(str)) - set(OBJECTIVE_SPECS))
    if unknown:
        i = int((df["objective"].astype(str) == unknown[0]).to_numpy().nonzero()[0][0])
        raise ValueError(f"{p}: line {i + 2}, column objective: unknown objective {unknown[0]!r} "
                         f"(known: {', '.join(sorted(OBJECTIVE_SPECS))})")
    key = ["size", "objective", "fraction", "pretrain_seed", "seed", "step"]
    dup = df.duplicated(key, keep=False)
    if dup.any():
        groups = df[dup].groupby(key, dropna=False)["value"].nunique(dropna=False)
        conflict = groups[groups > 1]
        if len(conflict):
            k = conflict.index[0]
            lines = [int(j) + 2 for j in df.index[(df[key] == pd.Series(k, index=key)).all(axis=1)]]
            point = ", ".join(f"{c} {v.item() if hasattr(v, 'item') else v}" for c, v in zip(key, k))
            raise ValueError(f"{p}: lines {', '.join(map(str, lines))}: the point ({point}) is given twice with "
                             "different losses; which one counts cannot be guessed")


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
        t_b = float(rec["objectives"][REFERENCE]["step_s_median"])
        t_a = float(rec["objectives"][COMPARED]["step_s_median"])
    except FileNotFoundError:
        raise ValueError(f"{p}: no such step-time file (benchmarks/step_time.py writes it)") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"{p}: not valid JSON ({exc})") from None
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"{p}: expected objectives.{REFERENCE}.step_s_median and objectives.{COMPARED}."
                         f"step_s_median (benchmarks/step_time.py's format): {exc!r}") from None
    if not (t_b > 0 and t_a > 0):
        raise ValueError(f"{p}: step times must be > 0 seconds, got {t_b} and {t_a}")
    return t_b / t_a


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
    b = _arm(loss, size, REFERENCE, 1.0)
    out = []
    for obj in others:
        a = _arm(loss, size, obj, 1.0)
        if not b.runs or not a.runs:
            continue
        budgets = sorted(_budget_steps(loss, size, REFERENCE) & _budget_steps(loss, size, obj) & set(b.steps.tolist()))
        t = budgets[-1] if budgets else None
        out.append(Pair("E1", LOSS_FORM, size, 1.0, b, a, t, LOWER, "nats",
                        target_budget=(cfg.budget_name(size, t) or "") if t is not None else "",
                        flops_per_step=(fps.get((size, REFERENCE), math.nan), fps.get((size, obj), math.nan)),
                        note="" if budgets else "no budget that both arms reached", kind="other", a_objective=obj,
                        title=f"{OBJECTIVE_LABELS.get(obj, obj)} reaches MLM's validation loss in fewer steps (an objective "
                              "the paper does not have: the rule's outcome, no claim of the paper)"))
    return out


def _probe_frame(loss: pd.DataFrame) -> pd.DataFrame:
    """The GLUE probe's points as curve rows: ``value`` = the mean-pool probe average x100 (points), rows
    without a probe left out."""
    sub = loss[np.isfinite(loss["glue_probe_mean"].astype(float))]
    return sub.assign(value=100.0 * sub["glue_probe_mean"].astype(float))


def _probe_pairs(loss: pd.DataFrame, size: str, budgets: Sequence[int], name: Any,
                 fp: tuple[float, float]) -> list[Pair]:
    """E1's probe row of ``size`` (issue 51.3: TACO reaches MLM's frozen-feature GLUE probe average at T in fewer
    steps; a secondary row, decided by the same calibrated test): T is the largest common budget at which
    every run of both arms has the probe; none when the runs were not probed."""
    frame = _probe_frame(loss)
    if frame.empty:
        return []
    b, a = _arm(frame, size, REFERENCE, 1.0), _arm(frame, size, COMPARED, 1.0)
    if not b.runs or not a.runs:
        return []
    common = [s for s in budgets if s in set(b.steps.tolist()) and s in set(a.steps.tolist())]
    if not common:
        return [Pair("E1", PROBE_FORM, size, 1.0, b, a, None, HIGHER, "probe points (x100)", flops_per_step=fp,
                     kind="secondary", title=PROBE_TEXT, note="no budget at which both arms were probed")]
    t = common[-1]
    return [Pair("E1", PROBE_FORM, size, 1.0, b, a, t, HIGHER, "probe points (x100)", target_budget=name(t),
                 flops_per_step=fp, kind="secondary", title=PROBE_TEXT)]


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
        b, a = _arm(loss, size, REFERENCE, 1.0), _arm(loss, size, COMPARED, 1.0)
        if not b.runs or not a.runs:
            continue
        fp = (fps.get((size, REFERENCE), math.nan), fps.get((size, COMPARED), math.nan))
        exits = {"exit_b": plateau_exits(loss, size, REFERENCE, 1.0), "exit_a": plateau_exits(loss, size, COMPARED, 1.0)}
        grid = set(b.steps.tolist())
        budgets = sorted(_budget_steps(loss, size, REFERENCE) & _budget_steps(loss, size, COMPARED) & grid)
        if not budgets:
            pairs.append(Pair("E1", LOSS_FORM, size, 1.0, b, a, None, LOWER, "nats", flops_per_step=fp,
                              note="no budget that both arms reached", title=CLAIM_TEXT["E1"]))
            continue
        t = budgets[-1]
        name = lambda s: cfg.budget_name(size, s) or ""  # noqa: E731
        a_budgets = _budget_steps(loss, size, COMPARED)
        b_budgets = _budget_steps(loss, size, REFERENCE)
        t_run = max(a_budgets | b_budgets)
        if t_run > t:  # the primary row stays at the run's T: never decided at another step (fault sweep V.5)
            short = [f"{OBJECTIVE_LABELS.get(o, o)} has no budget point at T = {t_run} (its budgets: "
                     f"{', '.join(map(str, sorted(bs)))})" for o, bs in ((REFERENCE, b_budgets), (COMPARED, a_budgets))
                     if t_run not in bs]
            pairs.append(Pair("E1", LOSS_FORM, size, 1.0, b, a, t_run, LOWER, "nats", target_budget=name(t_run),
                              flops_per_step=fp, title=CLAIM_TEXT["E1"], missing="; ".join(short)
                              + f"; the rows at {', '.join(map(str, budgets))} are secondary", **exits))
        for s in budgets if t_run > t else []:
            pairs.append(Pair("E1", LOSS_FORM, size, 1.0, b, a, s, LOWER, "nats", target_budget=name(s),
                              flops_per_step=fp, kind="secondary", title=CLAIM_TEXT["E1"], **exits))
        if t_run == t:
            pairs.append(Pair("E1", LOSS_FORM, size, 1.0, b, a, t, LOWER, "nats", target_budget=name(t),
                              flops_per_step=fp, title=CLAIM_TEXT["E1"], **exits))
        for s in budgets[:-1] if t_run == t else []:
            pairs.append(Pair("E1", LOSS_FORM, size, 1.0, b, a, s, LOWER, "nats", target_budget=name(s),
                              flops_per_step=fp, kind="secondary", title=CLAIM_TEXT["E1"], **exits))
        for s in sorted(x for x in grid if budgets[0] <= x <= t):
            pairs.append(Pair("E1", LOSS_FORM, size, 1.0, b, a, s, LOWER, "nats", target_budget=name(s),
                              flops_per_step=fp, kind="curve", title=CLAIM_TEXT["E1"], **exits))
        pairs += _probe_pairs(loss, size, budgets, name, fp)
    if glue is not None:
        for role, (cid, t_name, a_name, paper) in PAPER_SPEEDUP.items():
            size = cfg.roles.get(role)
            if size is None:
                continue
            t = cfg.budget_step(size, t_name)
            b, a = _arm(glue, size, REFERENCE, 1.0), _arm(glue, size, COMPARED, 1.0)
            title = paper_claim_text(role, size)
            note = "" if t is not None else f"no step plays the paper's {t_name} for {size} (analysis.budget_names)"
            pairs.append(Pair(cid, GLUE_FORM, size, 1.0, b, a, t, HIGHER, "GLUE points (x100)", target_budget=t_name,
                              paper_speedup=paper, note=note, title=title,
                              flops_per_step=(fps.get((size, REFERENCE), math.nan), fps.get((size, COMPARED), math.nan))))
    return pairs


def evaluate(pairs: Sequence[Pair], cfg: AnalysisConfig, wall_time_ratio: float = math.nan,
             calibration_reps: int = CALIBRATION_REPS, progress: Any = None) -> pd.DataFrame:
    """The efficiency table: one row per pair (``CSV_COLUMNS``); the verdicts by the calibrated test with
    ``calibration_reps`` inner draws (0: the t rule's). ``progress``: called after each calibrated row as
    ``progress(done, total, pair, seconds_left)`` (the command prints it: a row's tests take seconds to minutes)."""
    import time

    rows = []
    calibrated = {id(p) for p in pairs if calibration_reps and p.kind in ("primary", "secondary", "other")}
    done, t0 = 0, time.monotonic()
    for p in pairs:
        row = evaluate_pair(p, alpha=cfg.alpha, margin=cfg.efficiency_margin, columns=CSV_COLUMNS,
                            calibration_reps=calibration_reps, seed=cfg.seed)
        # the paper's own numbers tested as stated, beside the margin: "faster at all" (> 1x) and the paper's
        # factor (5x small, 2x base: the row's own for E2/E3, the size's role's for E1), by the same test
        roles = {v: k for k, v in cfg.roles.items() if v}
        factor = p.paper_speedup if p.paper_speedup and math.isfinite(p.paper_speedup) else (
            PAPER_SPEEDUP[roles[p.size]][3] if p.size in roles and roles[p.size] in PAPER_SPEEDUP else math.nan)
        row["paper_factor"] = factor
        for col, m in (("calibrated_p_faster", 1.0), ("calibrated_p_paper_factor", factor)):
            row[col] = math.nan
            if calibration_reps and p.kind in ("primary", "secondary") and math.isfinite(m) and \
                    math.isfinite(row.get("calibrated_p_supported", math.nan)):
                other = evaluate_pair(p, alpha=cfg.alpha, margin=m, columns=CSV_COLUMNS,
                                      calibration_reps=calibration_reps, seed=cfg.seed)
                row[col] = other["calibrated_p_supported"]
        row["format_version"] = FORMAT_VERSION
        row["wall_time_ratio"] = wall_time_ratio
        row["wall_speedup"] = row["speedup"] * wall_time_ratio
        rows.append(row)
        if progress is not None and id(p) in calibrated:
            done += 1
            progress(done, len(calibrated), p, (time.monotonic() - t0) / done * (len(calibrated) - done))
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
    if "format_version" in df.columns:
        versions = pd.to_numeric(df["format_version"], errors="coerce")
        bad = versions.isna() | (versions != versions.round())
        if bad.any():
            i = int(bad.to_numpy().nonzero()[0][0])
            raise EfficiencyTableError(f"{p}: line {i + 2}, column format_version: {str(df['format_version'].iloc[i])!r} "
                                       f"is not a format number (this taco reads format {FORMAT_VERSION})")
        found = sorted(set(versions.astype(int)))
    else:
        found = [1]
    if found != [FORMAT_VERSION]:
        raise EfficiencyTableError(
            f"{p}: efficiency table of format {', '.join(map(str, found)) or '?'}, this taco reads format "
            f"{FORMAT_VERSION} (columns changed: docs/INTERFACES.md); rerun `taco efficiency` (snakemake re-runs "
            "the efficiency rule when its code changes: `snakemake -R efficiency`)")
    for c in OPTIONAL_COLUMNS:
        if c not in df.columns:
            df[c] = math.nan
    missing = [c for c in CSV_COLUMNS if c not in df.columns]
    if missing:
        raise EfficiencyTableError(f"{p}: missing column(s) {', '.join(missing)}")
    for c in TEXT_COLUMNS:
        df[c] = df[c].fillna("")
    return df


def calibration_rows(pairs: Sequence[Pair], df: pd.DataFrame, cfg: AnalysisConfig, *,
                     reps: int = 2000) -> list[dict[str, Any]]:
    """The t rule's simulated coverage and false-"supported" rate at the margin for each primary row
    with an interval (a diagnostic of the descriptive t interval): B's observed mean curve, its unit counts, A's grid and the observed spreads
    (:func:`taco.stats.speedup_simulation.model_like`), ``reps`` simulated experiments; ``row`` is the
    index of the row in ``df``."""
    from taco.stats.speedup_simulation import model_like, simulate

    out = []
    for i, (pair, r) in enumerate(zip(pairs, df.itertuples())):
        if r.kind != "primary" or not math.isfinite(r.log_speedup_se):
            continue
        sd_b = float(np.std(pair.b.at(int(r.target_step)), ddof=1))
        logs = np.log([float(x) for x in str(r.unit_speedups).split(";") if x])
        sd_log_a = float(np.std(logs, ddof=1)) if logs.size >= 2 else 0.0
        model = model_like(pair.b.steps, pair.b.mean_curve(), pair.a.steps, int(r.target_step), pair.better, sd_b,
                           sd_log_a, speedup=cfg.efficiency_margin)
        sim = simulate(model, int(r.n_units_b), int(r.n_units_a), reps=reps, level=float(r.ci_level), seed=cfg.seed)
        out.append({"row": i, "claim_id": r.claim_id, "size": r.size, "n_b": int(r.n_units_b),
                    "n_a": int(r.n_units_a), "sd_b": sd_b, "sd_log_a": sd_log_a, **sim})
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
