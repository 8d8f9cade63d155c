"""Steps-to-target speedups with intervals, and the decision of "B reaches A's level at T in fewer steps".

``taco efficiency --checkpoints DIR [DIR ...] [--aggregate-dir DIR] [--analysis FILE] --output-dir D``
writes ``efficiency.csv``, ``efficiency.md`` (and ``efficiency.html``, the page for ``snakemake --report``)
and ``efficiency.png`` / ``.pdf`` into ``D``.

**The speedup.** For a reference arm A (``mlm``), an arm B (``taco``) of one model size and data
fraction, and a target budget T (steps): the target is A's mean value at T; k* is the step at which
B's *mean curve* (mean over its statistical units at every step they share) reaches the target, by
linear interpolation in log-step between the two points of B that bracket it (``ln k`` linear in the
value between them). The speedup is T / k* (dimensionless; > 1: B needs fewer steps). When B's
first point already reaches the target, k* is at most that step and the speedup at least T / step
(status ``already beats at first point``, the speedup printed as ``>= T/step``); when no point of B
reaches it, the speedup is below T / last step (status ``never reaches``). Steps <= 0 (the
no-pre-training control) are not on a log axis and are left out.

Two kinds of curve, each a row of the table:

- ``validation_mlm_loss`` (nats, lower is better): the validation MLM loss on the fixed validation
  blocks and masks (:mod:`taco.training.validation`) of every budget checkpoint of a run, plus the
  points measured inside a segment (``eval.json`` key ``points``: a list of ``{"step", "mlm_loss"}``;
  read when present). T is the last budget both arms reached. The unit is the pre-training run.
- ``glue_average`` (GLUE points x100, higher is better): the per-seed GLUE average of the fine-tuned
  budgets (``taco aggregate``'s ``per_seed.csv``, over the spec's average keys), the paper's form:
  T is the step that plays the paper's ``250k`` for the small role (``500k`` for base), and the
  paper's speedup (5x: TACO-50k matches MLM-250k; 2x for base) is printed beside. Units as in
  :func:`taco.report.stats.statistical_units`: pre-training runs (their fine-tuning seeds nested and
  averaged) when an arm has two or more, else fine-tuning seeds (then the interval covers
  fine-tuning only, and the note says so).

**The interval.** A bootstrap over the units, each arm resampled on its own (A's target moves with
its resample): pre-training runs drawn with replacement and, inside each drawn run, its fine-tuning
seeds drawn with replacement (two-stage bootstrap of nested data, Davison & Hinkley 1997, Sec. 3.8);
``n_resamples`` draws, generator ``rng_for(seed, label)``. The interval is the percentile interval at
level 1 - 2 alpha (90% for alpha = 0.05) of T / k*, taken as order statistics (``never reaches``
counts as speedup 0, ``already beats`` as infinity: both are ordered correctly without a value).
With fewer than two units in an arm there is no interval, and the reason is printed. Percentile
intervals under-cover at 3-5 units (docs: DESIGN pitfalls); the note says how many units made it.

**Compute.** The same ratio in training FLOPs with the TC term counted: FLOPs of A's T steps over
FLOPs of B's k* steps, FLOPs per step = ``pretrain_flops_per_token`` (:mod:`taco.workflow.flops`,
pure Python) x ``seq_len`` x global batch, all read from the checkpoints' manifests. Since the
per-step FLOPs are constants, the compute speedup and its interval are the step speedup and its
interval times F_A / F_B.

**The decision** (claims ``E1`` validation loss, ``E2`` GLUE average), at alpha = 1 -
``confidence_level`` of the analysis spec:

- *supported* when the per-unit values at T are better for B by the one-sided exact permutation test
  (``scipy.stats.permutation_test``, difference of means, every partition when they fit in
  ``n_resamples``: 1 / C(n_A + n_B, n_A) = 1/20 at the extreme for 3 vs 3) with p <= alpha, and the
  lower bound of the speedup's 1 - 2 alpha interval exceeds 1;
- *not supported* when A is better at T by the same test (p <= alpha) or the interval's upper bound
  is below 1;
- *inconclusive* otherwise, including every arm with a single unit (no test, no interval).

Variance components at T (the SD of the pre-training run and of the fine-tuning seed, one-way
random-effects ANOVA with the unbalanced n0 of Searle et al. 1992, Sec. 3.6; the run component
truncated at 0) are reported where both exist (GLUE curves of replicated pre-training); for the
validation loss only the run SD exists.

Reads JSON and CSV only (torch-free: the statistics environment runs it). The computation of one
comparison (crossing, curves, interval, tests, verdict) is ``taco.report.speedup``, re-exported
here; this module reads the inputs, builds the comparisons and writes the table, page and figure.
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

from taco.cli import cli_error
from taco.manifest import read_manifest
from taco.report.analysis_config import AnalysisConfig, AnalysisConfigError, load_analysis
from taco.report.speedup import (  # noqa: F401  (re-exported: taco.report.efficiency.<name>)
    ALREADY, COMPARED, CSV_COLUMNS, GLUE_FORM, HIGHER, INCONCLUSIVE, LOSS_FORM, LOWER, NEVER, NO_CURVE, NOT_RUN,
    NOT_SUPPORTED, REACHED, REFERENCE, SUPPORTED, ArmCurves, Crossing, Pair, _fmt_bound, _order_stat_interval,
    _reaches, _unit_label, arm_curves, bootstrap_speedups, crossing_step, decide, evaluate_pair, one_sided_p,
    variance_components)
from taco.report.stats import average_keys

NAME = "efficiency"
#: role -> (paper budget of A = the target T, paper budget where B matches it, the paper's speedup);
#: Sec. 5 / Tables 1 and 3: TACO-50k matches MLM-250k (small), TACO-250k matches MLM-500k (base)
PAPER_SPEEDUP: dict[str, tuple[str, str, float]] = {"small": ("250k", "50k", 5.0), "base": ("500k", "250k", 2.0)}
#: fine-tuning seed recorded for a curve without fine-tuning (the validation loss)
NO_FINETUNE = -1


# ---------------------------------------------------------------------------------------------
# reading the inputs
# ---------------------------------------------------------------------------------------------
def eval_points(ev: Mapping[str, Any], step: int | None = None) -> list[tuple[int, float]]:
    """(step, validation MLM loss in nats) of one ``eval.json``: the in-segment ``points`` (a list of
    ``{"step", "mlm_loss"}``, when present) and the checkpoint's own point (``step``, ``mlm_loss``;
    ``step`` overrides a missing one). Points without a finite loss are skipped."""
    out: dict[int, float] = {}
    for p in ev.get("points") or []:
        if isinstance(p, Mapping) and p.get("step") is not None and p.get("mlm_loss") is not None:
            out[int(p["step"])] = float(p["mlm_loss"])
    s = ev.get("step", step)
    if s is not None and ev.get("mlm_loss") is not None:
        out[int(s)] = float(ev["mlm_loss"])
    return sorted((k, v) for k, v in out.items() if math.isfinite(v))


def flops_per_step(manifest: Mapping[str, Any]) -> float:
    """Training FLOPs of one pre-training step of a checkpoint (:func:`taco.workflow.flops.
    pretrain_flops_per_token` x seq_len x global batch), from its manifest; nan when a field is missing."""
    from taco.workflow.flops import pretrain_flops_per_token

    try:
        hi = manifest.get("hash_inputs") or {}
        op = manifest.get("objective_params") or {}
        seq_len = int(manifest["seq_len"])
        per_token = pretrain_flops_per_token(
            str(manifest["size_preset"]), seq_len, str(manifest["objective"]),
            vocab_size=int(hi["vocab_size"]), negatives=int(op.get("tc_num_negatives", 50)))
        return per_token * seq_len * int(manifest["global_batch_size"])
    except (KeyError, TypeError, ValueError):
        return math.nan


def read_checkpoints(checkpoints: Sequence[str | Path]) -> tuple[pd.DataFrame, dict[tuple[str, str], float]]:
    """Validation-loss rows ``size, objective, fraction, run, seed, step, value`` (value in nats; run =
    the manifest's ``pretrain_seed``, seed = :data:`NO_FINETUNE`) from budget checkpoint directories,
    and FLOPs per step by (size, objective). The control (step 0) is skipped. A step measured twice
    in one run (a rerun) keeps the last. FileNotFoundError names a directory without a manifest."""
    rows: dict[tuple, dict[str, Any]] = {}
    fps: dict[tuple[str, str], float] = {}
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
        ev = m.get("validation") or {}
        if (ckpt / "eval.json").is_file():
            ev = json.loads((ckpt / "eval.json").read_text())
        for s, v in eval_points(ev, step):
            rows[(size, obj, frac, run, s)] = {"size": size, "objective": obj, "fraction": frac, "run": run,
                                                "seed": NO_FINETUNE, "step": s, "value": v}
    cols = ["size", "objective", "fraction", "run", "seed", "step", "value"]
    return pd.DataFrame(list(rows.values()), columns=cols), fps


def glue_rows(per_seed: pd.DataFrame, keys: Sequence[str]) -> pd.DataFrame:
    """Per-(run, fine-tuning seed) GLUE average in points over ``keys`` from ``per_seed.csv`` rows:
    ``size, objective, fraction, run, seed, step, value``; a seed missing a key is left out."""
    cols = ["size", "objective", "fraction", "run", "seed", "step", "value"]
    if per_seed.empty or not keys:
        return pd.DataFrame(columns=cols)
    df = per_seed[per_seed["score_key"].isin(keys)].copy()
    if "pretrain_seed" not in df.columns:
        df["pretrain_seed"] = 0
    g = df.groupby(["size", "objective", "fraction", "pretrain_seed", "seed", "step"])["value"]
    out = pd.DataFrame({"value": g.mean(), "n": g.count()}).reset_index()
    out = out[out["n"] == len(keys)].rename(columns={"pretrain_seed": "run"})
    out["fraction"] = out["fraction"].astype(float).round(6)
    return out[cols].reset_index(drop=True)


def _arm(df: pd.DataFrame, size: str, obj: str, frac: float) -> ArmCurves:
    if df.empty:
        return ArmCurves(np.empty(0, dtype=int), [], [])
    sub = df[(df["size"] == size) & (df["objective"] == obj) & np.isclose(df["fraction"].astype(float), frac)]
    return arm_curves(sub)


def build_pairs(loss: pd.DataFrame, glue: pd.DataFrame | None, cfg: AnalysisConfig,
                fps: Mapping[tuple[str, str], float]) -> list[Pair]:
    """The comparisons of the run: per size with both MLM and TACO on all the data, the validation loss
    (E1; T = the last step both reached) and, with the aggregate, the GLUE average of the paper's form
    for each role (E2, T = the role's ``250k`` / ``500k`` step)."""
    pairs: list[Pair] = []
    sizes = sorted(set(loss["size"])) if not loss.empty else []
    for size in sizes:
        a, b = _arm(loss, size, REFERENCE, 1.0), _arm(loss, size, COMPARED, 1.0)
        if not a.runs or not b.runs:
            continue
        common = sorted(set(a.steps.tolist()) & set(b.steps.tolist()))
        t = int(common[-1]) if common else (int(a.steps[-1]) if a.steps.size else None)
        pairs.append(Pair("E1", LOSS_FORM, size, 1.0, a, b, t, LOWER, "nats",
                          target_budget=cfg.budget_name(size, t) or "" if t is not None else "",
                          flops_per_step=(fps.get((size, REFERENCE), math.nan), fps.get((size, COMPARED), math.nan))))
    if glue is not None:
        for role, (t_name, b_name, paper) in PAPER_SPEEDUP.items():
            size = cfg.roles.get(role)
            if size is None:
                continue
            t = cfg.budget_step(size, t_name)
            a, b = _arm(glue, size, REFERENCE, 1.0), _arm(glue, size, COMPARED, 1.0)
            note = f"paper: TACO-{b_name} matches MLM-{t_name} ({paper:g}x, Sec. 5)"
            if t is None:
                note = f"not run: no step plays the paper's {t_name} for {size} (analysis.budget_names); " + note
            pairs.append(Pair("E2", GLUE_FORM, size, 1.0, a, b, t, HIGHER, "GLUE points (x100)",
                              target_budget=t_name, paper_speedup=paper, note=note,
                              flops_per_step=(fps.get((size, REFERENCE), math.nan), fps.get((size, COMPARED), math.nan))))
    return pairs


def evaluate(pairs: Sequence[Pair], cfg: AnalysisConfig) -> pd.DataFrame:
    """The efficiency table: one row per pair (``CSV_COLUMNS``)."""
    rows = [evaluate_pair(p, alpha=cfg.alpha, n_resamples=cfg.n_resamples, seed=cfg.seed) for p in pairs]
    return pd.DataFrame(rows, columns=CSV_COLUMNS)


# ---------------------------------------------------------------------------------------------
# outputs
# ---------------------------------------------------------------------------------------------
def _f(x: Any, nd: int = 3) -> str:
    if isinstance(x, (int, float)) and x == math.inf:
        return "inf"
    return "n/a" if not isinstance(x, (int, float)) or not math.isfinite(x) else f"{x:.{nd}g}"


def rule_text(alpha: float) -> str:
    """The decision rule in words (claims page)."""
    lvl = f"{(1 - 2 * alpha) * 100:g}%"
    return (f"supported when the per-unit values at T are better for B by the one-sided exact permutation test "
            f"(p <= {alpha}) and the lower bound of the speedup's {lvl} bootstrap interval exceeds 1; not supported "
            f"when A is better at T by the same test (p <= {alpha}) or the interval's upper bound is below 1; "
            "inconclusive otherwise (always with one unit per arm: no test, no interval)")


CLAIM_TEXT = {
    "E1": "B (TACO) reaches A's (MLM's) validation MLM loss at T in fewer steps",
    "E2": "B (TACO) reaches A's (MLM's) GLUE average at T in fewer steps (the paper: TACO-50k matches MLM-250k, 5x)",
}


def render_markdown(df: pd.DataFrame, cfg: AnalysisConfig) -> str:
    """efficiency.md: the table, the rule, and per row the verdict with its reason and notes."""
    lvl = f"{(1 - 2 * cfg.alpha) * 100:g}%"
    lines = ["# Steps-to-target speedups (TACO against MLM)", "",
             "k*: the step at which B's mean curve reaches A's mean value at the target step T (linear in "
             "log-step between B's points); speedup = T / k*; compute speedup = FLOPs of A's T steps / FLOPs "
             f"of B's k* steps (TC term counted). Interval: {lvl} percentile bootstrap over the statistical "
             "units, each arm resampled on its own.", "",
             f"| claim | size | curve | T | target | k* | speedup [{lvl}] | compute speedup [{lvl}] | paper | "
             "n units (A/B) | mean A / B at T | p (B better / A better) | SD run A/B | SD seed A/B | verdict |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in df.itertuples():
        kstar = _f(r.k_star, 4) if r.status == REACHED else r.status
        lines.append(
            f"| {r.claim_id} | {r.size} | {r.form} ({r.unit_of_value}) | {r.target_step if r.target_step == r.target_step else 'n/a'}"
            f"{' (' + r.target_budget + ')' if r.target_budget else ''} | {_f(r.target_value, 4)} | {kstar} | "
            f"{_f(r.speedup)} [{_f(r.speedup_ci_low)}, {_f(r.speedup_ci_high)}] | "
            f"{_f(r.compute_speedup)} [{_f(r.compute_ci_low)}, {_f(r.compute_ci_high)}] | {_f(r.paper_speedup)} | "
            f"{r.n_units_a}/{r.n_units_b} | {_f(r.mean_a_at_t, 4)} / {_f(r.mean_b_at_t, 4)} | "
            f"{_f(r.p_b_better)} / {_f(r.p_a_better)} | {_f(r.sd_run_a)}/{_f(r.sd_run_b)} | "
            f"{_f(r.sd_seed_a)}/{_f(r.sd_seed_b)} | **{r.verdict}** |")
    lines += ["", f"Rule (alpha = {cfg.alpha}): " + rule_text(cfg.alpha) + ".", ""]
    for r in df.itertuples():
        lines += [f"## {r.claim_id} ({r.size}): {CLAIM_TEXT.get(r.claim_id, '')}", "",
                  f"- Verdict: **{r.verdict}** - {r.reason}",
                  f"- Curve steps of B: {r.curve_steps or 'none'}; unit: {r.unit}",
                  f"- Interval: {r.interval_note or 'n/a'}", ""]
    return "\n".join(lines)


def claims_section(df: pd.DataFrame, alpha: float) -> str:
    """The steps-to-target claims (E1, E2) as a section of the claims page (``taco claims --efficiency``):
    one row per claim with the speedup, its interval, the tests at T and the verdict, then the rule."""
    lvl = f"{(1 - 2 * alpha) * 100:g}%"
    lines = ["", "## Steps-to-target claims (taco efficiency)", "",
             f"| Claim | size | curve | T | k* | speedup [{lvl}] | compute speedup | paper | n units (A/B) | "
             "p (B better / A better) | verdict |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in df.itertuples():
        kstar = _f(r.k_star, 4) if r.status == REACHED else r.status
        t = int(r.target_step) if isinstance(r.target_step, (int, float)) and math.isfinite(r.target_step) else "n/a"
        lines.append(f"| {r.claim_id}: {CLAIM_TEXT.get(r.claim_id, '')} | {r.size} | {r.form} | {t} | {kstar} | "
                     f"{_f(r.speedup)} [{_f(r.speedup_ci_low)}, {_f(r.speedup_ci_high)}] | {_f(r.compute_speedup)} | "
                     f"{_f(r.paper_speedup)} | {r.n_units_a}/{r.n_units_b} | {_f(r.p_b_better)} / {_f(r.p_a_better)} | "
                     f"**{r.verdict}** |")
    lines += ["", f"Rule: {rule_text(alpha)}. Details, intervals and the figure: efficiency.md / efficiency.png.", ""]
    lines += [f"- {r.claim_id} ({r.size}): **{r.verdict}** - {r.reason}" for r in df.itertuples()]
    return "\n".join(lines) + "\n"


def read_table(path: str | Path) -> pd.DataFrame:
    """``efficiency.csv`` as written by :func:`make` (FileNotFoundError naming a missing file)."""
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"{p}: no efficiency table (run `taco efficiency` first)")
    df = pd.read_csv(p, dtype={"target_budget": str, "reason": str, "interval_note": str, "curve_steps": str})
    for c in ("target_budget", "reason", "interval_note", "curve_steps", "status"):
        df[c] = df[c].fillna("")
    return df


def figure(pairs: Sequence[Pair], df: pd.DataFrame):
    """One panel per pair: mean curves (lines), the replicate range (band: min to max over units), the
    target line at A's value at T, T and k* marked; log-step axis; the legend outside the data."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from taco.report.plotting import plain_log_axis, step_number
    from taco.report.style import objective_label, objective_style

    n = max(1, len(pairs))
    fig, axes = plt.subplots(n, 1, figsize=(7.5, 3.4 * n), squeeze=False)
    if not pairs:
        axes[0, 0].text(0.5, 0.5, "no pair of MLM and TACO curves found", ha="center", va="center",
                        transform=axes[0, 0].transAxes)
    for ax, pair, row in zip(axes[:, 0], pairs, df.itertuples()):
        for obj, arm in ((REFERENCE, pair.a), (COMPARED, pair.b)):
            if not arm.runs:
                continue
            st = objective_style(obj)
            units = arm.units()
            lo, hi = units.min(axis=0), units.max(axis=0)
            band = f"{objective_label(obj)}: range over {units.shape[0]} units"
            if arm.steps.size == 1:  # one step: the range as an error bar (a band would be invisible)
                ax.errorbar(arm.steps, arm.mean_curve(), yerr=[arm.mean_curve() - lo, hi - arm.mean_curve()],
                            color=st["color"], alpha=0.5, capsize=4, linestyle="none", label=band)
            else:
                ax.fill_between(arm.steps, lo, hi, color=st["color"], alpha=0.2, linewidth=0, label=band)
            ax.plot(arm.steps, arm.mean_curve(), color=st["color"], marker=st["marker"], linestyle=st["linestyle"],
                    markersize=4, label=f"{objective_label(obj)}: mean")
        if math.isfinite(row.target_value):
            ax.axhline(row.target_value, color="grey", linestyle="--", linewidth=1,
                       label=f"target: {objective_label(REFERENCE)} at T = {row.target_step}")
            ax.axvline(row.target_step, color="grey", linestyle=":", linewidth=1)
        if row.status == REACHED:
            ax.plot([row.k_star], [row.target_value], marker="*", markersize=13, color="black", linestyle="none",
                    label=f"k* = {row.k_star:.4g} (speedup {row.speedup:.3g})")
        ax.set_xscale("log")
        plain_log_axis(ax.xaxis, step_number)  # 2000, 4000, 250k: not 2x10^3
        ax.set_xlabel("pre-training step (log scale)")
        ax.set_ylabel(f"{'validation MLM loss' if pair.form == LOSS_FORM else 'GLUE average'} ({pair.unit_of_value})")
        ax.set_title(f"{pair.claim_id} ({pair.size}): {row.verdict}", fontsize=10)
        ax.grid(True, alpha=0.3, which="both")
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0)
    fig.tight_layout()
    return fig


def make(checkpoints: Sequence[str | Path], out_dir: str | Path, cfg: AnalysisConfig,
         aggregate_dir: str | Path | None = None) -> list[Path]:
    """Read, evaluate and write ``efficiency.{csv,md,html,png,pdf}`` into ``out_dir``; returns the paths."""
    from taco.manifest import atomic_write_text
    from taco.report.figures import save
    from taco.report.html import write_markdown_page

    loss, fps = read_checkpoints(checkpoints)
    glue = None
    if aggregate_dir is not None:
        per_seed_path = Path(aggregate_dir) / "per_seed.csv"
        if not per_seed_path.is_file():
            raise FileNotFoundError(f"aggregate directory {aggregate_dir}: missing per_seed.csv (run `taco aggregate`)")
        glue = glue_rows(pd.read_csv(per_seed_path), average_keys(cfg))
    pairs = build_pairs(loss, glue, cfg, fps)
    df = evaluate(pairs, cfg)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out / f"{NAME}.csv", df.to_csv(index=False, float_format="%.6g"))
    pages = write_markdown_page(out / f"{NAME}.md", render_markdown(df, cfg))  # .md and the report's .html
    paths = save(figure(pairs, df), out, NAME)
    for r in df.itertuples():
        print(f"{r.claim_id} {r.size} {r.form}: speedup {_f(r.speedup)} [{_f(r.speedup_ci_low)}, "
              f"{_f(r.speedup_ci_high)}] -> {r.verdict}")
    return [out / f"{NAME}.csv", *pages, *paths]


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``taco efficiency``."""
    from taco.cli import HelpFormatter
    ap = argparse.ArgumentParser(formatter_class=HelpFormatter, prog="taco efficiency", description=__doc__.split("\n")[0])
    ap.add_argument("--checkpoints", nargs="+", required=True, help="budget checkpoint directories (taco pretrain)")
    ap.add_argument("--aggregate-dir", help="output folder of `taco aggregate` (adds the GLUE-average form)")
    ap.add_argument("--analysis", help="analysis spec (JSON/YAML); default: the paper's grid")
    ap.add_argument("--output-dir", default="results", help="folder for efficiency.csv, .md, .png and .pdf")
    return ap


def main(argv: list[str] | None = None) -> int:
    """``taco efficiency``: checkpoints (+ aggregate) -> efficiency.{csv,md,png,pdf} + manifest."""
    from taco.manifest import atomic_write_text, build_manifest

    args = build_parser().parse_args(argv)
    t0 = time.time()
    try:
        cfg = load_analysis(args.analysis)
        paths = make(args.checkpoints, args.output_dir, cfg, args.aggregate_dir)
    except (AnalysisConfigError, FileNotFoundError, ValueError) as exc:
        return cli_error("efficiency", exc)
    man = build_manifest(NAME, {"analysis": cfg.to_dict(), "aggregate_dir": args.aggregate_dir},
                         inputs={str(c): "" for c in args.checkpoints},
                         outputs=[p.name for p in paths], wall_time_s=round(time.time() - t0, 3))
    atomic_write_text(Path(args.output_dir) / f"{NAME}.manifest.json", json.dumps(man, indent=2, default=str) + "\n")
    print(f"taco efficiency: {len(paths)} files -> {args.output_dir}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
