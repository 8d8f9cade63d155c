"""Steps-to-target speedups with intervals that cover, and the decision of "A reaches B's level at T in fewer steps".

``taco efficiency --checkpoints DIR [DIR ...] [--aggregate-dir DIR] [--analysis FILE] [--step-times FILE]
--output-dir D`` writes ``efficiency.csv``, ``efficiency.md`` (and ``efficiency.html``, the page for
``snakemake --report``) and ``efficiency.png`` / ``.pdf`` into ``D``. ``taco efficiency --calibrate``
prints the method's simulated coverage and level (no inputs needed).

**The method** (:mod:`taco.stats.speedup`): A = TACO (the subject), B = MLM (the baseline), one model size and data fraction, a
target step T. The target is B's mean value at T over its units; every unit of A gets the step k_u at
which its own curve reaches it (linear in log-step; censored units extrapolated along their end
segment, at most a factor 2); the speedup is the geometric mean of T / k_u; its interval is a t
interval on log speedups with B's target uncertainty propagated (delta method, Welch-Satterthwaite
degrees of freedom). *Supported* when the interval's lower bound exceeds the margin m
(``analysis.efficiency_margin``, default 1.2), *not supported* when its upper bound is below m,
*inconclusive* otherwise. Coverage and level are measured by simulation
(:mod:`taco.stats.speedup_simulation`): the page prints them for the run's own counts and spreads.

Rows of ``efficiency.csv`` (``kind``):

- ``E1``, ``validation_mlm_loss`` (nats, lower is better): the validation MLM loss on the fixed
  validation blocks and masks of every budget checkpoint and in-segment point (``eval.json``). Unit:
  the pre-training run. ``primary``: T = the largest budget both arms reached (the claim's verdict);
  ``secondary``: each smaller common budget (interval and rule outcome, not the claim's verdict);
  ``curve``: every validation point of B from its first budget to T as the target (descriptive: the
  speedup as a function of the target, with its interval; A may cross after T, so slow-downs are
  numbers below 1); ``other``: an objective that no paper table names (``taco.paper.TABLE_OBJECTIVES``),
  run at the size on all the data, as A against MLM at T (its own largest budget shared with MLM; the
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

This module wires the command: the table's data (curves, pairs, verdicts, ``efficiency.csv``'s reader) is
:mod:`taco.stats.efficiency`, the page :mod:`taco.report.efficiency_page`, the figure
:mod:`taco.report.efficiency_figure`. Reads JSON and CSV only (torch-free).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

from taco.cli_parts import cli_error
from taco.report.efficiency_page import estimate_text, render_markdown, rows_of_kind, tuning_section
from taco.stats.aggregate import average_keys
from taco.stats.analysis_config import AnalysisConfig, AnalysisConfigError, load_analysis
from taco.stats.efficiency import (CALIBRATION_REPS, build_pairs, calibration_rows, evaluate, glue_rows, read_checkpoints,
                                   read_choices, read_curves, read_step_times, record_diagnostic)
from taco.stats.validation_points import EvalFileError

NAME = "efficiency"
#: the most simulated experiments per row (10,000 is the default; the Monte Carlo error at 100,000 is ~0.0007)
MAX_CALIBRATION_REPS = 100_000

def _progress(done: int, total: int, pair, seconds_left: float) -> None:
    """One line per decided row on stderr: which row, and an estimate of the time left."""
    print(f"taco efficiency: {done}/{total} {pair.claim_id} {pair.size} {pair.form} T={pair.target_step} "
          f"({pair.kind}) decided; about {seconds_left:.0f} s left", file=sys.stderr, flush=True)


def read_inputs(checkpoints: Sequence[str | Path] | None, curves: str | Path | None):
    """The validation curves of ``checkpoints``, of ``curves`` (an ``efficiency_curves.csv``), or of both: a
    record's curves combined with new runs (issue 64.4: recorded seeds beside re-run ones). ValueError naming
    the run when a pre-training run (size, objective, fraction, pretrain seed) is in both: which one counts
    cannot be guessed."""
    if curves is None:
        return read_checkpoints(checkpoints or [])
    loss, fps, notes = read_curves(curves)
    if not checkpoints:
        return loss, fps, notes
    new, new_fps, new_notes = read_checkpoints(checkpoints)
    key = ["size", "objective", "fraction", "pretrain_seed"]
    both = pd.merge(loss[key].drop_duplicates(), new[key].drop_duplicates(), on=key)
    if len(both):
        r = both.iloc[0]
        raise ValueError(f"--curves {curves} and --checkpoints both hold the run {r['size']}/{r['objective']}/"
                         f"data-{r['fraction']}/pretrain seed {int(r['pretrain_seed'])} ({len(both)} run(s) in both): "
                         "give each pre-training run once")
    return pd.concat([loss, new], ignore_index=True), {**fps, **new_fps}, notes + new_notes


def make(checkpoints: Sequence[str | Path] | None, out_dir: str | Path, cfg: AnalysisConfig,
         aggregate_dir: str | Path | None = None, step_times: str | Path | None = None, *,
         curves: str | Path | None = None, calibration_reps: int = CALIBRATION_REPS,
         tuning: Sequence[str | Path] | None = None, manifest: dict | None = None,
         tuning_spaces: dict[str, dict] | None = None) -> list[Path]:
    """Read, evaluate and write ``efficiency.{csv,md,html,png,pdf}``, ``efficiency_curves.csv`` and (given
    ``manifest``: its parameters) ``efficiency.manifest.json`` into ``out_dir``; returns the paths. The
    validation curves come from ``checkpoints``, or, to rerun the check from a results folder, from ``curves``
    (an ``efficiency_curves.csv``), or from both (:func:`read_inputs`). Every input is read and checked before anything is written, and the
    files are written as one set (:class:`taco.output_set.OutputSet`): a full disk or a read-only folder
    leaves the earlier set whole (OutputSetError naming the folder). ``tuning_spaces`` maps each tuned size
    to its search space (:func:`taco.workflow.tuning_grid.tuning_space`): a choice at its edge is noted;
    ValueError for a choice whose size has none."""
    from taco.manifest import build_manifest
    from taco.output_set import OutputSet
    from taco.report.efficiency_figure import figure
    from taco.report.html import html_path, markdown_to_html
    from taco.report.plotting import write_figure

    t0 = time.time()
    loss, fps, notes = read_inputs(checkpoints, curves)
    choices = read_choices(tuning or [])
    wall = read_step_times(step_times) if step_times else math.nan
    glue = None
    if aggregate_dir is not None:
        per_seed_path = Path(aggregate_dir) / "per_seed.csv"
        if not per_seed_path.is_file():
            raise FileNotFoundError(f"aggregate directory {aggregate_dir}: missing per_seed.csv (run `taco aggregate`)")
        glue = glue_rows(pd.read_csv(per_seed_path), average_keys(cfg))
    pairs = build_pairs(loss, glue, cfg, fps)
    if calibration_reps:
        n = sum(p.kind in ("primary", "secondary", "other") for p in pairs)
        print(f"taco efficiency: deciding {n} rows, each by a calibrated test of {calibration_reps:,} simulated "
              "experiments at the margin, at 1x and at the paper's factor (seconds to a minute a row)",
              file=sys.stderr, flush=True)
    df = evaluate(pairs, cfg, wall, calibration_reps, progress=_progress)
    calib = calibration_rows(pairs, df, cfg)
    df = record_diagnostic(df, calib)
    families = dict(zip(loss["size"], loss["architecture"])) if not loss.empty else {}
    edges = None
    if tuning_spaces is not None:
        from taco.training.tuning import edge_notes

        size_of = {arm: arm.split("/")[0] for arm, _ in choices}  # read_choices names an arm <size>/<objective>
        missing = sorted(set(size_of.values()) - set(tuning_spaces))
        if missing:
            raise ValueError(f"--tuning-spaces: no search space for size {', '.join(missing)} of --tuning "
                             f"(given: {', '.join(sorted(tuning_spaces)) or 'none'})")
        edges = {arm: edge_notes(rec["chosen"]["setting"], tuning_spaces[size_of[arm]]) for arm, rec in choices}
        for arm, lines in edges.items():
            for line in lines:
                print(f"taco efficiency: note: tuning of {arm}: {line}")
    page = render_markdown(df, cfg, calib, notes, families) + tuning_section(choices, edges)
    out = Path(out_dir)
    with OutputSet(out) as files:
        paths = [files.text(f"{NAME}.csv", df.to_csv(index=False, float_format="%.6g")),
                 files.text(f"{NAME}_curves.csv", loss.to_csv(index=False)),  # full precision: a rerun decides alike
                 files.text(f"{NAME}.md", page),
                 files.text(html_path(out / f"{NAME}.md").name, markdown_to_html(page))]
        fig = figure(pairs, df, loss)
        for ext in ("png", "pdf"):
            paths.append(files.write(f"{NAME}.{ext}", lambda p, ext=ext: write_figure(fig, p, ext)))
        import matplotlib.pyplot as plt

        plt.close(fig)
        if manifest is not None:
            man = build_manifest(NAME, manifest, inputs={str(c): "" for c in (checkpoints or [curves])},
                                 outputs=[p.name for p in paths], wall_time_s=round(time.time() - t0, 3))
            files.text(f"{NAME}.manifest.json", json.dumps(man, indent=2, default=str) + "\n")
    for r in rows_of_kind(df, "primary", "secondary").itertuples():
        print(f"{r.claim_id} {r.size} {r.form} {r.kind} T={r.target_step}: speedup {estimate_text(r)} -> {r.verdict}")
    return paths


def print_calibration(run_counts: Sequence[tuple[int, int]], reps: int, level: float,
                      user: Mapping[str, float] | None = None, inner: int = 200) -> None:
    """``taco efficiency --calibrate``: the checked scenarios, the edge, the known limits and (with ``user``) a
    scenario of the user's spreads, each at the given run counts, as a table on stdout: the calibrated
    test's coverage and false verdicts (the verdict users get; ``reps`` // 10 experiments of ``inner`` null
    draws; "not decid.": the share the flat-target check withholds, :mod:`taco.stats.crossing_fragility`)
    beside the descriptive t interval's (``reps`` experiments)."""
    from taco.stats.speedup_calibration import simulate_calibrated
    from taco.stats.speedup_simulation import EDGES, LIMITS, SCENARIOS, calibration_table

    models = {**SCENARIOS}
    if user:
        from dataclasses import replace

        models["yours: " + ", ".join(f"{k} {v:g}" for k, v in user.items())] = replace(
            SCENARIOS["loss: cpu-real T=4000 spreads"], sd_b=user["sd_b"], sd_log_a=user["sd_log_a"],
            speedup=user["margin"])
    outer = max(reps // 10, 100)
    alpha = (1 - level) / 2
    print(f"nominal: coverage {level:.0%}, false verdicts at the margin {alpha:.3g}; calibrated test: {outer} "
          f"experiments x {inner} null draws per row; t interval (descriptive): {reps} experiments "
          "(taco.stats.speedup_calibration, taco.stats.speedup_simulation)")
    print(f"{'scenario':44s} {'A/B':>5s} | {'calibrated: coverage':>20s} {'supported':>10s} {'not supp.':>10s} "
          f"{'not decid.':>10s} | {'t: coverage':>11s} {'supported':>10s}")
    for name, table in (("checked", models), ("edge (near the level)", EDGES), ("known limit (not met)", LIMITS)):
        print(f"-- {name}")
        for r in calibration_table(table, run_counts, reps=reps, level=level):
            c = simulate_calibrated(table[r["scenario"]], r["n_b"], r["n_a"], reps=outer, inner=inner, alpha=alpha)
            print(f"{r['scenario']:44s} {r['n_a']}/{r['n_b']:<3d} | {c['coverage']:20.3f} {c['supported']:10.3f} "
                  f"{c['not_supported']:10.3f} {c['not_decidable']:10.3f} | {r['coverage']:11.3f} "
                  f"{r['supported']:10.3f}")


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``taco efficiency``."""
    from taco.cli_parts import HelpFormatter
    ap = argparse.ArgumentParser(formatter_class=HelpFormatter, prog="taco efficiency", description=__doc__.split("\n")[0])
    ap.add_argument("--checkpoints", nargs="+", help="budget checkpoint directories (taco pretrain); required "
                    "unless --curves or --calibrate")
    ap.add_argument("--curves", help="an efficiency_curves.csv (written beside efficiency.csv): the check rerun "
                    "from a results folder; with --checkpoints, a record's runs combined with new ones (a run "
                    "given in both is refused)")
    ap.add_argument("--calibration-reps", type=int, default=CALIBRATION_REPS, help="simulated experiments of "
                    "each row's calibrated test (0: decide by the t rule alone)")
    ap.add_argument("--tuning", nargs="+", default=None, help="choice.json files of `taco tuning-choice` (config "
                    "pretrain.tuning): the page lists every arm's trials and chosen setting")
    ap.add_argument("--tuning-spaces", default=None, help="each tuned size's search space as one JSON object, "
                    "size -> space (config pretrain.tuning.space or pretrain.sizes.<size>.tuning_space): a choice "
                    "at its space's edge is noted on the page")
    ap.add_argument("--aggregate-dir", help="output folder of `taco aggregate` (adds the GLUE-average form)")
    ap.add_argument("--analysis", help="analysis spec (JSON/YAML); default: the paper's grid")
    ap.add_argument("--step-times", help="JSON of benchmarks/step_time.py (one step of each objective measured side "
                    "by side): adds the wall-clock speedup beside the model-FLOPs one")
    ap.add_argument("--output-dir", default="results", help="folder for efficiency.csv, .md, .png and .pdf")
    ap.add_argument("--calibrate", action="store_true", help="print the method's simulated coverage and level "
                    "(the checked scenarios and the known limits) and exit")
    ap.add_argument("--runs", type=int, nargs="+", default=[3, 5], help="--calibrate: units per arm to simulate")
    ap.add_argument("--reps", type=int, default=4000, help="--calibrate: simulated experiments per row")
    ap.add_argument("--sd-b", type=float, help="--calibrate: your B's SD at T (nats) for a scenario of your own")
    ap.add_argument("--sd-log-a", type=float, help="--calibrate: your A's SD of log speedups (with --sd-b)")
    return ap


def main(argv: list[str] | None = None) -> int:
    """``taco efficiency``: checkpoints (+ aggregate) -> efficiency.{csv,md,png,pdf} + manifest."""
    from taco.cli_parts import json_mapping_option
    from taco.errors import EXIT_NO_SPACE
    from taco.output_set import OutputSetError
    from taco.training.tuning import check_spaces

    ap = build_parser()
    args = ap.parse_args(argv)
    t0 = time.time()
    try:
        cfg = load_analysis(args.analysis)
        if args.calibrate:
            user = None
            if args.sd_b is not None or args.sd_log_a is not None:
                if args.sd_b is None or args.sd_log_a is None:
                    raise ValueError("--sd-b and --sd-log-a go together")
                user = {"sd_b": args.sd_b, "sd_log_a": args.sd_log_a, "margin": cfg.efficiency_margin}
            if any(n < 2 for n in args.runs):
                raise ValueError(f"--runs: at least 2 units per arm, got {args.runs}")
            print_calibration([(n, n) for n in args.runs], args.reps, round(1 - 2 * cfg.alpha, 12), user)
            return 0
        if not args.checkpoints and not args.curves:
            raise ValueError("--checkpoints or --curves is required (or --calibrate)")
        if not 0 <= args.calibration_reps <= MAX_CALIBRATION_REPS:
            raise ValueError(f"--calibration-reps must be in [0, {MAX_CALIBRATION_REPS:,}] (each row's test costs "
                             f"about 1 s per 10,000 draws), got {args.calibration_reps:,}")
        paths = make(args.checkpoints, args.output_dir, cfg, args.aggregate_dir, args.step_times,
                     curves=args.curves, calibration_reps=args.calibration_reps, tuning=args.tuning,
                     tuning_spaces=json_mapping_option("--tuning-spaces", args.tuning_spaces, check_spaces),
                     manifest={"analysis": cfg.to_dict(), "aggregate_dir": args.aggregate_dir,
                               "step_times": args.step_times})
    except OutputSetError as exc:
        return cli_error("efficiency", exc, EXIT_NO_SPACE if exc.no_space else 2)
    except (AnalysisConfigError, FileNotFoundError, EvalFileError, ValueError) as exc:
        return cli_error("efficiency", exc)
    print(f"taco efficiency: {len(paths)} files and the manifest -> {args.output_dir} "
          f"({time.time() - t0:.1f} s)")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
