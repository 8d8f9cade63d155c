"""Figures 2 and 6 of Fu et al. (ACL 2022) from ``dynamics.json`` files (``taco dynamics``).

- ``figure6.png/.pdf`` (paper Section 4, learning dynamics, Figure 6): intra-context similarity,
  inter-context similarity and their gap against pre-training steps, one line per objective (MLM vs
  TACO, plus any other objective among the inputs: concentrated TACO, MLM+TP, ...), with the 95 %
  bootstrap CI as a band. Top row: the last layer ``h``; bottom row: the global part ``g = h - e``.
- ``figure2.png/.pdf`` (paper Section 2.2, Figure 2; the paper's figure is a schematic plus the
  re-trained BERT-small MLM analysis): for MLM only, (a) the anchor alignment at masked positions,
  cos(h_masked, E[original token]), against the random-token baseline; (b) intra- and
  inter-context similarity of ``h`` over steps.

Colours: one per objective, the same as in every other figure (:mod:`taco.report.style`, Okabe-Ito,
colour-blind safe); every line also differs by marker and line style, so the figures survive
greyscale printing. Each figure has one legend, below its panels, over no data. Units: cosine
similarity (unitless). :func:`draw_figure6` / :func:`draw_figure2` return the figures unsaved.

Errors (exit 2, message names the file): an input that is missing, not JSON, or lacks a key;
two inputs for the same (objective, size, fraction, step); no MLM input (figure 2 needs one).
"""

from __future__ import annotations

import os
from collections import defaultdict
from pathlib import Path
from typing import Any

from taco.manifest import read_json_record

from taco.report.plotting import save_figure  # noqa: E402
from taco.report.style import OKABE_ITO, SPARE_COLOURS, OBJECTIVE_STYLE, objective_label  # noqa: E402

#: objective -> (label, colour, marker, linestyle), from the suite-wide style map (taco.report.style)
SERIES_STYLE = {v: (objective_label(v), st["color"], st["marker"], st["linestyle"])
                   for v, st in OBJECTIVE_STYLE.items()}
EXTRA_MARKERS = ["P", "X", "*", "h"]
REQUIRED_KEYS = ("step", "objective", "size", "fraction", "h", "g", "anchor_alignment")
MEASURES = (("intra", "intra-context"), ("inter", "inter-context"), ("gap", "gap (intra - inter)"))
REPRESENTATIONS = (("h", "last layer $h$"), ("g", "global part $g = h - e$"))


class PlotInputError(ValueError):
    """Bad ``dynamics.json`` input; the message names the file."""


def load_records(paths: list[str | os.PathLike]) -> list[dict[str, Any]]:
    """Read and check ``dynamics.json`` files; each record gets ``_path``.

    Raises:
        PlotInputError: a file is missing / not JSON / lacks one of ``REQUIRED_KEYS``, or two files
            describe the same (objective, size, fraction, step).
    """
    records, seen = [], {}
    for p in paths:
        path = Path(p)
        rec = read_json_record(path, REQUIRED_KEYS, PlotInputError, "dynamics.json")
        key = (rec["objective"], rec["size"], rec["fraction"], rec["step"])
        if key in seen:
            raise PlotInputError(f"{path} and {seen[key]}: both are {key} (objective, size, fraction, step)")
        seen[key] = path
        rec["_path"] = str(path)
        records.append(rec)
    return records


def group_records(records: list[dict[str, Any]]) -> dict[tuple, list[dict[str, Any]]]:
    """(objective, size, fraction) -> records sorted by step; groups ordered MLM, TACO, others."""
    groups: dict[tuple, list] = defaultdict(list)
    for r in records:
        groups[(r["objective"], r["size"], r["fraction"])].append(r)
    order = list(SERIES_STYLE)
    keys = sorted(groups, key=lambda k: (order.index(k[0]) if k[0] in order else len(order), str(k)))
    return {k: sorted(groups[k], key=lambda r: r["step"]) for k in keys}


def _labels(keys: list[tuple]) -> dict[tuple, str]:
    vary_size = len({k[1] for k in keys}) > 1
    vary_frac = len({k[2] for k in keys}) > 1
    out = {}
    for k in keys:
        label = SERIES_STYLE.get(k[0], (k[0],))[0]
        extra = ([f"{k[1]}"] if vary_size else []) + ([f"data {k[2]:g}"] if vary_frac else [])
        out[k] = label + (f" ({', '.join(extra)})" if extra else "")
    return out


def _styles(keys: list[tuple]) -> dict[tuple, tuple[str, str, str]]:
    """(colour, marker, linestyle) per group: the objective's colour always (taco.report.style); a
    repeated objective (another size or data fraction) keeps its colour and gets another marker and
    line style; an objective without a style gets a colour no objective uses."""
    out, used = {}, defaultdict(int)
    spare = iter(SPARE_COLOURS)
    for k in keys:
        if k[0] in SERIES_STYLE:
            _, c, m, ls = SERIES_STYLE[k[0]]
            if used[k[0]]:
                m, ls = EXTRA_MARKERS[used[k[0]] % len(EXTRA_MARKERS)], ["--", "-.", ":", "-"][used[k[0]] % 4]
        else:
            c = next(spare, list(OKABE_ITO.values())[-1])
            m, ls = EXTRA_MARKERS[len(out) % len(EXTRA_MARKERS)], ["-", "--", "-.", ":"][len(out) % 4]
        used[k[0]] += 1
        out[k] = (c, m, ls)
    return out


def _series(recs, getter):
    import numpy as np

    steps = np.array([r["step"] for r in recs], dtype=float)

    def val(r, key):
        v = getter(r).get(key)
        return np.nan if v is None else float(v)

    mean = np.array([val(r, "mean") for r in recs])
    lo = np.array([val(r, "ci_low") for r in recs])
    hi = np.array([val(r, "ci_high") for r in recs])
    return steps, mean, lo, hi


def _plot_line(ax, recs, getter, colour, marker, ls, label):
    steps, mean, lo, hi = _series(recs, getter)
    ax.plot(steps, mean, color=colour, marker=marker, linestyle=ls, markersize=4, linewidth=1.5, label=label)
    ax.fill_between(steps, lo, hi, color=colour, alpha=0.2, linewidth=0)


def _format_steps(ax, max_step: float):
    from matplotlib.ticker import FuncFormatter

    if max_step >= 10_000:
        ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x / 1000:g}k" if x else "0"))
    ax.set_xlabel("pre-training step")
    ax.grid(True, alpha=0.3)


def draw_figure6(records: list[dict[str, Any]], label: str = ""):
    """Figure 6 as a matplotlib figure: intra, inter, gap vs steps for every objective (rows h and g);
    one legend below the panels; ``label`` (the synthetic-corpus label) as the title's second line."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups = group_records(records)
    labels, styles = _labels(list(groups)), _styles(list(groups))
    max_step = max(r["step"] for r in records)
    fig, axes = plt.subplots(2, 3, figsize=(12, 7), sharex=True, squeeze=False, layout="constrained")
    for i, (rep, rep_label) in enumerate(REPRESENTATIONS):
        for j, (measure, m_label) in enumerate(MEASURES):
            ax = axes[i][j]
            for key, recs in groups.items():
                _plot_line(ax, recs, lambda r, rep=rep, m=measure: r[rep][m], *styles[key], labels[key])
            ax.set_title(f"{m_label}, {rep_label}", fontsize=10)
            ax.set_ylabel("cosine similarity")
            _format_steps(ax, max_step)
            if i == 0:
                ax.set_xlabel("")
    handles, labs = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labs, loc="outside lower center", ncol=min(len(labs), 5), frameon=False)
    fig.suptitle("Learning dynamics: intra- and inter-context similarity (bands: 95% bootstrap CI over blocks)"
                 + (f"\n{label}" if label else ""), fontsize=11)
    return fig


def figure6(records: list[dict[str, Any]], out_dir: str | os.PathLike, dpi: int = 200,
            label: str = "") -> list[Path]:
    """Figure 6 (:func:`draw_figure6`); writes figure6.png/.pdf."""
    return save_figure(draw_figure6(records, label), Path(out_dir), "figure6", dpi)


def figure2(records: list[dict[str, Any]], out_dir: str | os.PathLike, objective: str = "mlm",
            dpi: int = 200, label: str = "") -> list[Path]:
    """Figure 2 (:func:`draw_figure2`); writes figure2.png/.pdf.

    Raises:
        PlotInputError: no record of ``objective`` among the inputs.
    """
    return save_figure(draw_figure2(records, objective, label), Path(out_dir), "figure2", dpi)


def draw_figure2(records: list[dict[str, Any]], objective: str = "mlm", label: str = ""):
    """Figure 2 as a matplotlib figure: MLM's anchor alignment vs the random baseline, and its h
    similarities, vs steps; one legend below the panels; ``label`` (the synthetic-corpus label) as the
    title's second line.

    Raises:
        PlotInputError: no record of ``objective`` among the inputs.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    mlm = require_objective(records, objective)
    groups = group_records(mlm)
    labels = _labels(list(groups))
    line_styles = ["-", "--", ":", "-."]
    max_step = max(r["step"] for r in mlm)
    # the objective's own colour for its measurements, a colour no objective uses for the baselines
    own = SERIES_STYLE.get(objective, (None, list(OKABE_ITO.values())[-1]))[1]
    fig, (ax_a, ax_b) = plt.subplots(1, 2, figsize=(10, 4.6), layout="constrained")
    for gi, (key, recs) in enumerate(groups.items()):
        ls = line_styles[gi % len(line_styles)]
        suffix = f" [{labels[key]}]" if len(groups) > 1 else ""
        _plot_line(ax_a, recs, lambda r: r["anchor_alignment"]["aligned"], own, "o", ls,
                   "masked state vs its token's embedding (anchor)" + suffix)
        _plot_line(ax_a, recs, lambda r: r["anchor_alignment"]["random_baseline"], SPARE_COLOURS[0], "s", ls,
                   "masked state vs a random token's embedding" + suffix)
        _plot_line(ax_b, recs, lambda r: r["h"]["intra"], own, "^", ls, "intra-context" + suffix)
        _plot_line(ax_b, recs, lambda r: r["h"]["inter"], SPARE_COLOURS[0], "v", ls, "inter-context" + suffix)
    ax_a.set_title("(a) anchor alignment at masked positions", fontsize=10)
    ax_b.set_title("(b) similarity of last-layer representations", fontsize=10)
    handles, labs = [], []
    for ax in (ax_a, ax_b):
        ax.set_ylabel("cosine similarity")
        _format_steps(ax, max_step)
        h, lab = ax.get_legend_handles_labels()
        handles += h
        labs += [f"({'a' if ax is ax_a else 'b'}) {x}" for x in lab]
    # one legend below both panels: inside them it would cover a curve
    fig.legend(handles, labs, loc="outside lower center", ncol=2, fontsize=8, frameon=False)
    name = SERIES_STYLE.get(objective, (objective,))[0]
    fig.suptitle(f"{name} learning dynamics (bands: 95% bootstrap CI over blocks)" + (f"\n{label}" if label else ""),
                 fontsize=11)
    return fig


def require_objective(records: list[dict[str, Any]], objective: str) -> list[dict[str, Any]]:
    """The records of ``objective``; PlotInputError (listing what there is) if there are none."""
    chosen = [r for r in records if r["objective"] == objective]
    if not chosen:
        raise PlotInputError(
            f"no dynamics.json with objective {objective!r} among the {len(records)} input(s) "
            f"(objectives: {', '.join(sorted({str(r['objective']) for r in records}))}); "
            "figure 2 needs MLM checkpoints")
    return chosen
