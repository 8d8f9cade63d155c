"""The efficiency figure (``efficiency.png`` / ``.pdf`` of ``taco efficiency``): per primary, secondary and
other comparison the two arms' curves with the target, per E1 size the speedup as a function of the target,
and the context probe of each E1 size. Rendering only: the rows come from :mod:`taco.stats.efficiency`."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from taco.report.efficiency_page import estimate_text
from taco.stats.claim_rules import NOT_RUN
from taco.stats.speedup import COMPARED, LOSS_FORM, PROBE_FORM, REFERENCE
from taco.stats.speedup_decision import Pair
from taco.report.style import objective_label
from taco.stats.validation_points import PLATEAU_EXIT_GAP


def _probe_sizes(loss: pd.DataFrame | None) -> list[str]:
    if loss is None or loss.empty or "probe_order_gap" not in loss.columns:
        return []
    has = loss[np.isfinite(loss["probe_order_gap"].astype(float))
               & loss["objective"].isin((REFERENCE, COMPARED)) & np.isclose(loss["fraction"].astype(float), 1.0)]
    return sorted(set(has["size"]))


def _probe_panel(ax, loss: pd.DataFrame, size: str) -> None:
    """The context probe of ``size``'s MLM and TACO runs against the step (means over runs): the block
    intact, shuffled, without context, and the unigram line of the same targets."""
    from taco.report.plotting import plain_log_axis, step_number
    from taco.report.style import objective_style

    sub = loss[(loss["size"] == size) & np.isclose(loss["fraction"].astype(float), 1.0)
               & np.isfinite(loss["probe_order_gap"].astype(float))]
    for obj in (REFERENCE, COMPARED):
        g = sub[sub["objective"] == obj].groupby("step")[["probe_intact_loss", "probe_shuffled_loss",
                                                          "probe_no_context_loss"]].mean()
        if g.empty:
            continue
        st = objective_style(obj)
        for col, ls, what in (("probe_intact_loss", "-", "block intact"), ("probe_shuffled_loss", "--",
                                                                            "context shuffled"),
                              ("probe_no_context_loss", ":", "no context")):
            ax.plot(g.index, g[col], color=st["color"], linestyle=ls, linewidth=1.2,
                    label=f"{objective_label(obj)}: {what}")
    uni = float(sub["probe_unigram_loss"].astype(float).mean())
    ax.axhline(uni, color="grey", linewidth=1, linestyle="-.", label=f"unigram of the training tokens ({uni:.2f})")
    ax.set_xscale("log")
    plain_log_axis(ax.xaxis, step_number)
    ax.set_xlabel("pre-training step (log scale)")
    ax.set_ylabel("probe loss (nats)")
    ax.set_title(f"E1 ({size}): context probe, 128 validation blocks, targets all [MASK] (means over runs)\n"
                 f"a run has left the bag-of-words plateau once shuffled - intact > {PLATEAU_EXIT_GAP:g} nats",
                 fontsize=9)
    ax.grid(True, alpha=0.3, which="both")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0)


def _is_step(x: Any) -> bool:
    return isinstance(x, (int, float, np.integer, np.floating)) and math.isfinite(float(x))


def figure(pairs: Sequence[Pair], df: pd.DataFrame, loss: pd.DataFrame | None = None):
    """Per primary/secondary pair a panel of the curves (mean over units, the range over units as a band,
    the target line, T and the mean curve's k* marked), per E1 size the speedup against the target
    (geometric mean with its interval band, each run's own speedup as a thin line), and, where the
    checkpoints carry it, the context probe of each E1 size (``loss``: the validation-point frame of
    :func:`read_checkpoints`); log-step axes."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from taco.report.plotting import plain_log_axis, step_number
    from taco.report.style import objective_style

    listed = [(p, r) for p, r in zip(pairs, df.itertuples()) if r.kind in ("primary", "secondary", "other")]
    # a comparison that was not run gets no empty panel: one line under the figure says which and why
    not_run = [f"{p.claim_id} ({p.size}): not run, {str(r.reason)[:80]}" for p, r in listed if r.verdict == NOT_RUN]
    shown = [(p, r) for p, r in listed if r.verdict != NOT_RUN]
    curves = {}
    for p, r in zip(pairs, df.itertuples()):
        if r.kind == "curve":
            curves.setdefault(p.size, []).append(r)
    probed = _probe_sizes(loss)
    n = max(1, len(shown) + len(curves) + len(probed))
    fig, axes = plt.subplots(n, 1, figsize=(8.5, 3.6 * n), squeeze=False)
    if not shown:
        axes[0, 0].text(0.5, 0.5, "\n".join(["no pair of MLM and TACO curves found", *not_run]), ha="center",
                        va="center", transform=axes[0, 0].transAxes, fontsize=9)
        not_run = []
        axes[0, 0].set_axis_off()
    for ax, (pair, row) in zip(axes[:, 0], shown):
        kind = row.kind if row.kind != "other" else f"other: {objective_label(pair.a_objective)}"
        t_text = f"T = {int(row.target_step)}" if _is_step(row.target_step) else "no target step"
        head = f"{pair.claim_id} ({pair.size}, {kind}, {t_text})"
        for obj, arm in ((REFERENCE, pair.b), (pair.a_objective, pair.a)):
            st = objective_style(obj)
            units = arm.units()
            units = units[np.isfinite(units).all(axis=1)] if units.size else units
            if units.shape[0] == 0:
                continue
            lo, hi = units.min(axis=0), units.max(axis=0)
            band = f"{objective_label(obj)}: range over {units.shape[0]} units"
            if units.shape[0] < 2:  # one unit: no range to draw, only its curve
                pass
            elif arm.steps.size == 1:  # one step: the range as an error bar (a band would be invisible)
                ax.errorbar(arm.steps, arm.mean_curve(), yerr=[arm.mean_curve() - lo, hi - arm.mean_curve()],
                            color=st["color"], alpha=0.5, capsize=4, linestyle="none", label=band)
            else:
                ax.fill_between(arm.steps, lo, hi, color=st["color"], alpha=0.2, linewidth=0, label=band)
            ax.plot(arm.steps, arm.mean_curve(), color=st["color"], marker=st["marker"], linestyle=st["linestyle"],
                    markersize=4, label=f"{objective_label(obj)}: mean")
        if math.isfinite(row.target_value):
            ax.axhline(row.target_value, color="grey", linestyle="--", linewidth=1,
                       label=f"target: {objective_label(REFERENCE)} at T = {int(row.target_step)}")
            ax.axvline(row.target_step, color="grey", linestyle=":", linewidth=1)
        ax.set_xscale("log")
        plain_log_axis(ax.xaxis, step_number)  # 2000, 4000, 250k: not 2x10^3
        ax.set_xlabel("pre-training step (log scale)")
        ax.set_ylabel({LOSS_FORM: "validation MLM loss (nats)", PROBE_FORM: "GLUE probe average (points)"}.get(
            pair.form, "GLUE average (points)"))
        verdict = row.verdict if row.kind == "primary" else f"{row.kind}: {row.verdict}"
        ax.set_title(f"{head}: speedup {estimate_text(row)}, {verdict}", fontsize=9)
        ax.grid(True, alpha=0.3, which="both")
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0)
    for ax, (size, rows) in zip(axes[len(shown):, 0], curves.items()):
        t = np.array([float(r.target_step) for r in rows])
        sp = np.array([float(r.speedup) for r in rows])
        lo = np.array([float(r.speedup_ci_low) for r in rows])
        hi = np.array([float(r.speedup_ci_high) for r in rows])
        per = [[float(x) for x in str(r.unit_speedups).split(";") if x] for r in rows]
        st = objective_style(COMPARED)
        if np.isfinite(lo).any():
            ax.fill_between(t, lo, np.where(np.isfinite(hi), hi, np.nan), color=st["color"], alpha=0.2, linewidth=0,
                            label="interval of the geometric mean")
        for i in range(min(len(p) for p in per) if per else 0):
            ax.plot(t, [p[i] for p in per], color=st["color"], alpha=0.45, linewidth=0.8,
                    label="one pre-training run of A" if i == 0 else None)
        ax.plot(t, sp, color=st["color"], marker=st["marker"], markersize=4, label="geometric mean")
        ax.axhline(1.0, color="grey", linestyle=":", linewidth=1, label="no speedup (1x)")
        ax.set_xscale("log")
        plain_log_axis(ax.xaxis, step_number)
        ax.set_xlabel("target T: B's (MLM's) validation point (log scale)")
        ax.set_ylabel("speedup T / k (x)")
        ax.set_title(f"E1 ({size}): the speedup as a function of the target (descriptive)", fontsize=9)
        ax.grid(True, alpha=0.3, which="both")
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0)
    for ax, size in zip(axes[len(shown) + len(curves):, 0], probed):
        _probe_panel(ax, loss, size)
    if not_run:
        fig.text(0.01, 0.003, "\n".join(not_run), fontsize=7, va="bottom", ha="left")
        fig.tight_layout(rect=(0, (len(not_run) + 0.5) * 0.14 / fig.get_figheight(), 1, 1))  # ~0.14 in a line
    else:
        fig.tight_layout()
    return fig
