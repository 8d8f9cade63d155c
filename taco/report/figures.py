"""The paper's figures from the aggregated runs (matplotlib, Agg backend; PNG and PDF).

``taco figures --aggregate-dir results/aggregate --analysis FILE --output-dir results`` writes

- ``figure5.png/.pdf``: average GLUE dev score vs pre-training steps for TACO and MLM (BERT-small
  role, full data), mean with its CI (t interval by default) as a band, seeds as faint dots, and the published
  Figure 5 points overlaid (hollow markers; MLM-250k also as a dashed line, as in the paper);
- ``ablation.png/.pdf``: the four objectives (TACO, concentrated TACO, MLM, MLM+TP) vs steps;
- ``data_efficiency.png/.pdf``: MLM and TACO on full vs reduced data, one panel per Table 2 score
  key plus their average, CIs as error bars.

The figures plot exactly the numbers of the tables (:mod:`taco.stats.table_data` builds both). The x axis is
the pre-training step actually run; when the analysis spec maps the paper's budget names to other
steps (a smoke run), the top axis names the paper budget each step plays, and a published point
is drawn only at a budget that was run (the others are listed in the figure's footnote).
Colours: one per objective for every figure (:mod:`taco.report.style`, Okabe-Ito, colour-blind safe),
with distinct markers and line styles as well; in the data-efficiency figure the reduced fraction
is dashed with hollow markers. Every legend lies outside the axes (right of them, or below the
panels), so it covers no data (``tests/test_figures.py`` checks each plotted point), and no text
runs into another or off the saved image (titles as suptitles over a constrained layout, footnotes
under the x label, long titles and labels on two lines; checked by ``tests/figure_text.py``).
Units: GLUE points (x100).

Honest labels: with synthetic GLUE-format tasks (analysis spec ``glue_source: synthetic``) every
title and y axis says so; the published Figure 5 points are drawn only beside runs that may be
compared with them (real GLUE, the model of the paper's size: ``AnalysisConfig.paper_comparison_blocker``),
and the footnote says why they are absent otherwise.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from taco.stats.analysis_config import AnalysisConfig  # noqa: E402
from taco.stats.aggregate import UNIT, fmt_fraction  # noqa: E402


def _ci_short(cfg) -> str:
    """The interval's method in a figure's few words (analysis ``ci_method``)."""
    return "t CI" if cfg.ci_method == "t" else f"{cfg.ci_method} bootstrap CI"
from taco.report.plotting import save_figure  # noqa: E402
from taco.report.style import OBJECTIVE_STYLE, fraction_styles  # noqa: E402
from taco.registry import SCORE_KEY_LABELS, OBJECTIVE_LABELS
from taco.stats.table_data import build_ablation, build_table2, control_average, load_paper_values
from taco.registry import CONTROL  # noqa: E402
from taco.paper import COMPARISON, TABLE2_KEYS  # noqa: E402

FIGURES = ("figure5", "ablation", "data_efficiency")


def _steps_frame(long: pd.DataFrame, column: str) -> pd.DataFrame:
    """Rows of a long table for one column whose step was run, with numeric step."""
    d = long[(long["column"] == column) & (long["step"].astype(str) != "")].copy()
    d["step"] = d["step"].astype(int)
    return d.sort_values("step")


#: the range of a GLUE score in points (x100): MCC and Spearman reach -100, the rest 0; a band or bar is
#: clipped to it, and with fewer than MIN_BAND_SEEDS seeds none is drawn (the per-seed points show them)
SCORE_RANGE = (-100.0, 100.0)
MIN_BAND_SEEDS = 3


def _plot_series(ax, d: pd.DataFrame, label: str, style: Mapping[str, Any], band: bool = True,
                 xoffset: float = 0.0) -> bool:
    """Mean line with CI band (or error bars when ``band`` is False), the band clipped to
    :data:`SCORE_RANGE` and left out where a point rests on fewer than :data:`MIN_BAND_SEEDS` seeds (a t
    interval of 2 seeds spans most of the score range). Returns whether anything was drawn."""
    d = d[np.isfinite(d["mean"].astype(float))]
    if d.empty:
        return False
    x = d["step"].to_numpy(float) + xoffset
    y = d["mean"].to_numpy(float)
    lo = np.clip(d["ci_low"].to_numpy(float), *SCORE_RANGE)
    hi = np.clip(d["ci_high"].to_numpy(float), *SCORE_RANGE)
    ok = np.isfinite(lo) & np.isfinite(hi)
    for col in ("n_seeds", "n"):
        if col in d.columns:
            ok &= d[col].to_numpy(float) >= MIN_BAND_SEEDS
            break
    if band:
        ax.plot(x, y, label=label, markersize=6, **style)
        if ok.any():
            ax.fill_between(x[ok], lo[ok], hi[ok], color=style["color"], alpha=0.2, linewidth=0)
    else:
        yerr = np.vstack([np.where(ok, y - lo, 0.0), np.where(ok, hi - y, 0.0)])
        ax.errorbar(x, y, yerr=yerr, label=label, capsize=3, markersize=6, **style)
    return True


def _seed_dots(ax, per_seed_avg: pd.DataFrame, size: str, objective: str, fraction: float, color: str) -> None:
    g = per_seed_avg[(per_seed_avg["level"] == "seed") & (per_seed_avg["size"] == size)
                     & (per_seed_avg["objective"] == objective)
                     & np.isclose(per_seed_avg["fraction"].astype(float), fraction)]
    g = g[np.isfinite(g["mean"].astype(float))]
    if not g.empty:
        ax.scatter(g["step"].astype(float), g["mean"].astype(float), s=10, color=color, alpha=0.35,
                   linewidths=0, zorder=1)


def _budget_axis(ax, cfg: AnalysisConfig, size: str | None) -> None:
    """Top axis naming the paper budget each run step plays (only when some step differs)."""
    if not size:
        return
    names = cfg.budget_names.get(size, {})
    from taco.stats.analysis_config import budget_steps_from_name

    if all(budget_steps_from_name(n) == s for n, s in names.items()):
        return
    top = ax.secondary_xaxis("top")
    top.set_xticks(list(names.values()), labels=list(names.keys()), fontsize=7)
    top.set_xlabel("paper budget this step plays", fontsize=8)


def score_label(cfg: AnalysisConfig, what: str = "average") -> str:
    """The y-axis label: ``average GLUE dev score (GLUE points (x100))``, or with synthetic tasks
    ``average dev score (...)`` and a second line ``on SYNTHETIC GLUE-format tasks`` (one line would
    be taller than the axes and run into the title and the footnote)."""
    if cfg.synthetic_tasks:
        return f"{what} dev score ({UNIT})\non SYNTHETIC GLUE-format tasks".strip()
    return f"{what} GLUE dev score ({UNIT})" if what else f"dev score ({UNIT})"


def titled(cfg: AnalysisConfig, title: str) -> str:
    """``title`` with the synthetic-data label appended when the tasks are synthetic."""
    from taco.report.synthetic_label import synthetic_label

    label = synthetic_label(cfg)
    return f"{title}\n{label}" if label else title


#: the longest footnote line of a one-panel figure (7 pt text on a 6.4 inch wide figure)
FOOTNOTE_CHARS = 100


def _finish(fig, ax, title: str, footnote: str = "") -> None:
    """Title the figure (``suptitle``: above the top axis and wider than the axes if need be, where
    an axes title would run into the y label) and put ``footnote`` below the x label, starting at
    the axes' left edge (so it cannot meet the y label); ``bbox_inches="tight"`` grows the canvas to
    include both."""
    fig.suptitle(title, fontsize=10)
    ax.grid(True, alpha=0.3)
    if footnote:  # lines of at most FOOTNOTE_CHARS: the constrained layout keeps it on the canvas
        footnote = "\n".join(textwrap.fill(line, FOOTNOTE_CHARS) for line in footnote.split("\n"))
        ax.annotate(footnote, xy=(0.0, 0.0), xycoords=("axes fraction", ax.xaxis.label),
                    xytext=(0, -6), textcoords="offset points", fontsize=7, ha="left", va="top")


def _empty(ax, msg: str) -> None:
    ax.text(0.5, 0.5, msg, ha="center", va="center", transform=ax.transAxes, fontsize=9)


def figure5(agg: Mapping[str, pd.DataFrame], cfg: AnalysisConfig, paper_values: Mapping[str, Any],
            long: pd.DataFrame | None = None):
    """Figure 5: average GLUE dev vs steps, TACO and MLM (small role, full data), published points
    overlaid. ``long``: the ablation table (:func:`taco.stats.table_data.build_ablation`) if already built."""
    long = build_ablation(agg, cfg, paper_values) if long is None else long
    d = _steps_frame(long, "avg")
    size = cfg.roles.get("small")
    fig, ax = plt.subplots(figsize=(7.2, 5.4), layout="constrained")
    drawn = False
    avg_label = d["column_label"].iloc[0] if not d.empty else ""
    partial = avg_label.startswith("partial")
    if not np.isfinite(d[d["objective"].isin(COMPARISON)]["mean"].astype(float)).any():
        plt.close(fig)
        return placeholder_figure("Figure 5", f"no TACO or MLM run of the small role (size {size!r}) on full "
                                              "data has a GLUE average (see ablation.md)")
    for obj in reversed(COMPARISON):  # TACO's curve first
        s = d[d["objective"] == obj]
        drawn |= _plot_series(ax, s, f"{OBJECTIVE_LABELS[obj]} (ours{', partial avg' if partial else ''}, mean, "
                                     f"{int(cfg.confidence_level * 100)}% CI with >= {MIN_BAND_SEEDS} seeds)", OBJECTIVE_STYLE[obj])
        if size:
            _seed_dots(ax, agg["glue_average"], size, obj, 1.0, OBJECTIVE_STYLE[obj]["color"])
    ctrl = control_average(agg, cfg, size)
    if ctrl is not None and np.isfinite(ctrl["mean"]):  # the no-pre-training control, at step 0
        st = OBJECTIVE_STYLE[CONTROL]
        _plot_series(ax, pd.DataFrame([{"step": 0, "mean": ctrl["mean"], "ci_low": ctrl["ci_low"],
                                        "ci_high": ctrl["ci_high"]}]),
                     f"{OBJECTIVE_LABELS[CONTROL]} (control: random init, mean, CI)", st, band=False)
        ax.axhline(ctrl["mean"], color=st["color"], linestyle=":", linewidth=0.8, alpha=0.6)
        _seed_dots(ax, agg["glue_average"], size, CONTROL, 1.0, st["color"])
        drawn = True
    blocker = cfg.paper_comparison_blocker(size, "small")
    fig5 = {} if blocker else paper_values.get("figure5_small_dev_avg_read_from_pixels") or {}
    unplaced = []
    for obj, key in (("taco", "TACO"), ("mlm", "MLM")):
        pts = fig5.get(key) or {}
        xs, ys, names = [], [], []
        for budget, v in pts.items():
            step = cfg.budget_step(size, budget)
            if step is None:
                unplaced.append(f"{key}-{budget}")
                continue
            xs.append(step)
            ys.append(100.0 * v)
            names.append(budget)
        if xs:
            st = OBJECTIVE_STYLE[obj]
            ax.scatter(xs, ys, marker=st["marker"] if st["marker"] != "x" else "X", s=70,
                       facecolors="none", edgecolors=st["color"], linewidths=1.2, zorder=3,
                       label=f"{OBJECTIVE_LABELS[obj]} (paper, Figure 5)")
            if obj == "mlm":
                ref = xs.index(max(xs))  # the paper's MLM-250k level, as its Figure 5 draws it
                ax.axhline(ys[ref], color=st["color"], linestyle="--", linewidth=1, alpha=0.8,
                           label=f"{OBJECTIVE_LABELS[obj]}-{names[ref]} level (paper, dashed)")
            drawn = True
    if not drawn:
        _empty(ax, "no TACO / MLM runs of the small role")
    ax.set_xlabel("pre-training steps")
    ax.set_ylabel(score_label(cfg))
    _budget_axis(ax, cfg, size)
    foot = []
    if blocker:
        foot.append(f"The paper's Figure 5 points are not drawn, because {blocker[0].lower() + blocker[1:]}.")
    if partial:
        covered = avg_label[avg_label.find("(") + 1:avg_label.rfind(")")] if "(" in avg_label else avg_label
        n_of, _, keys = covered.partition(": ")
        foot.append(f"Our average covers {n_of} GLUE scores ({keys}), the published points all 9, so the two are "
                    "not directly comparable." if keys else f"Ours is a {avg_label}, the published points average "
                    "all 9 scores, so the two are not directly comparable.")
    if unplaced:
        foot.append("Published points at budgets not run here are not drawn (" + ", ".join(unplaced) + ").")
    foot = "\n".join(foot)
    if drawn:  # below the figure, in two columns: the plot keeps the figure's width and no point is covered
        fig.legend(*ax.get_legend_handles_labels(), fontsize=7, loc="outside lower center", ncol=2, frameon=False)
    _finish(fig, ax, titled(cfg, f"Figure 5: average {'score' if cfg.synthetic_tasks else 'GLUE'} vs pre-training "
                                f"steps (size {size!r}, full data)"), foot)
    return fig


def ablation_figure(agg: Mapping[str, pd.DataFrame], cfg: AnalysisConfig, paper_values: Mapping[str, Any],
                    long: pd.DataFrame | None = None):
    """Ablation: average GLUE of TACO, concentrated TACO, MLM, MLM+TP vs steps, with CI bands."""
    long = build_ablation(agg, cfg, paper_values) if long is None else long
    d = _steps_frame(long, "avg")
    fig, ax = plt.subplots(figsize=(6.4, 4.6), layout="constrained")
    drawn = False
    missing = []
    for obj in ("taco", "taco_concentrated", "mlm", "mlm_tp"):
        ok = _plot_series(ax, d[d["objective"] == obj], OBJECTIVE_LABELS[obj], OBJECTIVE_STYLE[obj])
        drawn |= ok
        if not ok:
            missing.append(OBJECTIVE_LABELS[obj])
    if not drawn:
        plt.close(fig)
        return placeholder_figure("Ablation", "no TACO, concentrated TACO, MLM or MLM+TP run of the small role "
                                              "has a GLUE average (see ablation.md)")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0)  # right of the data
    ax.set_xlabel("pre-training steps")
    ax.set_ylabel(score_label(cfg))
    _budget_axis(ax, cfg, cfg.roles.get("small"))
    label = d["column_label"].iloc[0] if not d.empty else ""
    foot = (f"mean over seeds, band: {int(cfg.confidence_level * 100)}% {_ci_short(cfg)} (drawn with >= "
            f"{MIN_BAND_SEEDS} seeds); {label}")
    if missing:
        foot += "; not run: " + ", ".join(missing)
    _finish(fig, ax, titled(cfg, "Ablation: objectives vs pre-training steps (small role, full data)"), foot)
    return fig


def placeholder_figure(title: str, reason: str):
    """A clearly labelled image for a figure with nothing to show (the workflow declares the file,
    so it must exist): the title and "not run in this configuration" with the reason."""
    fig, ax = plt.subplots(figsize=(6.4, 2.4))
    ax.set_axis_off()
    ax.text(0.5, 0.62, f"{title}:\nnot run in this configuration", ha="center", va="center",
            transform=ax.transAxes, fontsize=11, weight="bold")
    ax.text(0.5, 0.22, reason, ha="center", va="center", transform=ax.transAxes, fontsize=8, wrap=True)
    return fig


#: the longest line of a data-efficiency panel's title (9 pt text over a 3.7 inch wide panel)
PANEL_TITLE_CHARS = 48

DATA_EFFICIENCY_ARMS = (("mlm", 1.0), ("mlm", None), ("taco", 1.0), ("taco", None))


def data_efficiency_panels(long: pd.DataFrame, cfg: AnalysisConfig) -> list[tuple[str, str]]:
    """(column, panel title) of the panels with something to show: a Table 2 score key where some
    reduced-data arm has a number, and the average only when it covers two or more scores (its
    title names them)."""
    red = cfg.reduced_fraction
    have = long[np.isfinite(long["mean"].astype(float))
                & np.isclose(long["fraction"].astype(float), red)]
    panels = [(k, SCORE_KEY_LABELS.get(k, k)) for k in TABLE2_KEYS if k in set(have["column"])]
    covered = [k for k in TABLE2_KEYS if k in cfg.score_keys]
    if "avg" in set(have["column"]) and len(covered) >= 2:
        panels.append(("avg", "average of " + ", ".join(SCORE_KEY_LABELS.get(k, k) for k in covered)
                       + (f" ({len(covered)} of the {len(TABLE2_KEYS)} Table 2 scores)"
                          if len(covered) < len(TABLE2_KEYS) else "")))
    return panels


def data_efficiency_figure(agg: Mapping[str, pd.DataFrame], cfg: AnalysisConfig,
                           paper_values: Mapping[str, Any]):
    """Data efficiency: MLM and TACO, full vs reduced data, one panel per Table 2 score key with a
    reduced-data result and their average (titled with the scores it covers; drawn only when it
    covers two or more). With no reduced-data result at all, a placeholder saying so."""
    long = build_table2(agg, cfg, paper_values)
    red = cfg.reduced_fraction
    panels = data_efficiency_panels(long, cfg)
    if not panels:
        return placeholder_figure(
            "Data efficiency", f"no MLM / TACO run on {fmt_fraction(red)} of the data has a fine-tuning "
            "result for MNLI, QQP, QNLI or SST-2 (see table2.md)")
    ncol = min(3, len(panels))
    nrow = math.ceil(len(panels) / ncol)
    fig, axes = plt.subplots(nrow, ncol, figsize=(3.7 * ncol, 3.4 * nrow + 0.6), squeeze=False,
                             layout="constrained")
    handles = {}
    run = long[long["step"].astype(str) != ""]
    budgets = sorted({(int(r.step), r.budget) for r in run.itertuples()}) or [(0, "250k")]
    pos = {step: i for i, (step, _) in enumerate(budgets)}
    by_fraction = fraction_styles([1.0, red])
    for ax, (col, title) in zip(axes.flat, panels):
        d = _steps_frame(long, col)
        d["step"] = d["step"].map(pos).astype(float)  # evenly spaced budgets, labelled with steps
        for j, (obj, frac) in enumerate(DATA_EFFICIENCY_ARMS):
            frac = red if frac is None else frac
            s = d[(d["objective"] == obj) & np.isclose(d["fraction"].astype(float), frac)]
            st = dict(OBJECTIVE_STYLE[obj])
            st.update(by_fraction[frac])  # the objective's colour; reduced data dashed with hollow markers
            _plot_series(ax, s, f"{OBJECTIVE_LABELS[obj]}, {fmt_fraction(frac)} data", st, band=False,
                         xoffset=(j - 1.5) * 0.12)
        ax.set_title(textwrap.fill(title, PANEL_TITLE_CHARS), fontsize=9)  # no wider than its panel
        ax.grid(True, alpha=0.3, axis="y")
        ax.set_xticks(range(len(budgets)), [f"{b}\n(step {st})" if b else f"step {st}" for st, b in budgets])
        ax.set_xlim(-0.6, len(budgets) - 0.4)
        for h, l in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(l, h)
    for ax in list(axes.flat)[len(panels):]:
        ax.remove()  # no empty panels
    for ax in axes.flat:
        if ax.figure is not None:  # removed panels have none
            ax.set_xlabel("pre-training budget (steps run)", fontsize=8)
    fig.supylabel(score_label(cfg, ""), fontsize=9)  # one for every row: a label per row is taller than it
    if handles:  # below the panels (constrained layout makes room): over no data
        fig.legend(list(handles.values()), list(handles.keys()), loc="outside lower center", ncol=4, fontsize=8)
    # the bars are drawn only where a point rests on MIN_BAND_SEEDS seeds or more (_plot_series): say which
    shown = long[long["column"].isin([c for c, _ in panels]) & np.isfinite(long["mean"].astype(float))]
    seeds = shown["n_seeds"].astype(float) if "n_seeds" in shown.columns else pd.Series(dtype=float)
    bars = (f"bars: {int(cfg.confidence_level * 100)}% {_ci_short(cfg)}" if (seeds >= MIN_BAND_SEEDS).any() else
            f"no bars: every point rests on fewer than {MIN_BAND_SEEDS} seeds")
    fig.suptitle(titled(cfg, f"Data efficiency: {fmt_fraction(red)} vs full pre-training data "
                             f"(small role; {bars})"), fontsize=10)
    return fig


def make_figures(agg: Mapping[str, pd.DataFrame], cfg: AnalysisConfig, out_dir: str | Path,
                 paper_values: Mapping[str, Any] | None = None, dpi: int = 150) -> list[Path]:
    """Draw and save every figure into ``out_dir`` (PNG at ``dpi``, and PDF); returns the paths."""
    pv = paper_values if paper_values is not None else load_paper_values()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    with plt.rc_context({"pdf.fonttype": 42, "svg.hashsalt": "taco", "font.size": 9}):
        abl = build_ablation(agg, cfg, pv)
        written += save_figure(figure5(agg, cfg, pv, abl), out, "figure5", dpi)
        written += save_figure(ablation_figure(agg, cfg, pv, abl), out, "ablation", dpi)
        written += save_figure(data_efficiency_figure(agg, cfg, pv), out, "data_efficiency", dpi)
    return written
