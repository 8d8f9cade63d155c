"""Pre-training curves: training loss components over steps and validation MLM loss at each budget.

``taco pretrain-curves --checkpoints DIR [DIR ...] --output-dir results`` reads, from every budget
checkpoint of ``taco pretrain`` (and the control of ``taco init``):

- ``train_log.jsonl``: the segment's Trainer log lines (``mlm_loss``, ``tc_loss``, ``tp_loss``:
  means over the logging window, nats; ``step``), concatenated over the budgets of one run;
- ``eval.json``: the validation MLM loss / accuracy (and TC loss) of the checkpoint, on the same
  masks for every objective (:mod:`taco.training.validation`);
- ``manifest.json``: the size, objective, data fraction and step.

and writes ``pretrain_curves.png`` / ``.pdf`` and ``pretrain_curves.csv`` (one row per checkpoint:
size, objective, fraction, pre-training seed, step, validation MLM loss, accuracy, TC loss, GLUE probe averages). The figure has four panels:
(a) training MLM loss and (b) training TC / TP loss over steps (means over the logging window, log
scale with plain tick labels), (c) validation MLM loss and (d) validation TC loss at each budget
(and the control at step 0, when there is one). Replicate runs (pre-training seeds) of one objective are
one line, their mean at each step, with their range as a band of the same colour. One run is one style in every panel: the colour and marker of its objective,
and the line style and marker fill of its data fraction (full data solid with filled markers, the
next fraction dashed with hollow markers, ...). One legend, below the panels, covers no data or title.

Comparability: BERT-NCE and INFOWORD (the objectives with the ``nce`` term) train the MLM head on
in-batch candidates, without a sampling correction; their logged and validation "MLM loss" is the
full softmax of that head, a diagnostic that is not comparable with the MLM loss of the objectives
that train the full softmax. In (a) and (c) their curves are dotted and labelled
:data:`NOT_COMPARABLE`; the CSV's ``comparable`` column is False for them (:func:`mlm_loss_comparable`).
Styles: :mod:`taco.report.style`. Reads JSON only (no torch: the statistics environment runs it).
Errors: a directory without ``manifest.json`` exits 2 naming it.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from taco.manifest import read_manifest  # noqa: E402
from taco.objectives import LOSS_TERMS, OBJECTIVE_SPECS  # noqa: E402
from taco.registry import CONTROL  # noqa: E402
from taco.report.plotting import plain_log_axis  # noqa: E402
from taco.report.style import fraction_styles, objective_label, objective_style  # noqa: E402
from taco.stats.validation_points import GLUE_PROBE_COLUMNS, load_eval  # noqa: E402

NAME = "pretrain_curves"
#: the loss components of a training log line (means over the logging window): ``<term>_loss`` of every
#: term some objective declares (taco.objectives.LOSS_TERMS), so a new objective's term shows with no edit here
COMPONENTS = tuple(f"{t}_loss" for t in LOSS_TERMS)
#: the terms drawn in panel (b): every term but MLM's
AUX_TERMS = tuple(t for t in LOSS_TERMS if t != "mlm")


def aux_panel_title(objectives: Any) -> str:
    """Panel (b)'s title: each non-MLM term that one of ``objectives`` (names) logs and the objectives that
    log it, e.g. "TC (TACO); NCE (BERT-NCE, INFOWORD); DIM (INFOWORD)"."""
    specs = [OBJECTIVE_SPECS[o] for o in dict.fromkeys(objectives) if o in OBJECTIVE_SPECS]
    parts = [f"{t.upper()} ({', '.join(o.label for o in specs if t in o.terms)})"
             for t in AUX_TERMS if any(t in o.terms for o in specs)]
    return "(b) training loss of the other terms" + (": " + "; ".join(parts) if parts else "")
#: the validation frame's columns: the MLM loss and accuracy, ``val_<term>_loss`` for every other loss term
#: (:data:`AUX_TERMS`; empty where the run's objective has no such term), the masked-token count and the GLUE
#: probe's averages (empty without pretrain.glue_probe)
CSV_COLUMNS = ["size", "objective", "fraction", "pretrain_seed", "step", "val_mlm_loss", "val_mlm_accuracy",
               *(f"val_{t}_loss" for t in AUX_TERMS), "n_masked_tokens", "comparable", "checkpoint",
               *GLUE_PROBE_COLUMNS]
#: label suffix of an MLM-loss curve that is not comparable with the others (:func:`mlm_loss_comparable`)
NOT_COMPARABLE = "(not comparable: head trained on in-batch candidates)"


def mlm_loss_comparable(objective: str) -> bool:
    """Whether ``objective``'s (full-softmax) MLM loss compares with MLM's: False for the objectives
    that train the MLM head with InfoNCE over in-batch candidates instead of the full softmax (the
    ``nce`` term: BERT-NCE, INFOWORD; no sampling correction, so the full-softmax loss of that head is
    a diagnostic); True for every other objective and the control."""
    spec = OBJECTIVE_SPECS.get(objective)
    return spec is None or "nce" not in spec.terms


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    out = []
    for line in path.read_text().splitlines():
        line = line.strip()
        if line:
            try:
                out.append(json.loads(line))
            except ValueError:
                continue  # a line cut by a kill: skip it
    return out


def collect(checkpoints: list[str | Path]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(training log, validation) frames from checkpoint directories.

    Training log: one row per (run, step) with ``size``, ``objective``, ``fraction``, ``pretrain_seed`` (the
    manifest's; -1 where it has none), ``step`` and the component columns present (:data:`COMPONENTS`:
    ``mlm_loss``, ``tc_loss``, ...); replicate runs (pre-training seeds) stay apart; a step logged by two segments
    (a resumed segment re-logs nothing, but a rerun may) keeps the last line. Validation: one row per
    checkpoint (``CSV_COLUMNS``). Raises FileNotFoundError naming a directory without a manifest, and
    :class:`~taco.stats.validation_points.EvalFileError` naming a damaged ``eval.json``.
    """
    train_rows: dict[tuple, dict[str, Any]] = {}
    val_rows = []
    for ckpt in map(Path, checkpoints):
        m = read_manifest(ckpt)
        key = (str(m.get("size")), str(m.get("objective")), float(m.get("fraction") or 1.0))
        seed = m.get("pretrain_seed")
        seed = int(seed) if seed is not None else -1  # -1: a manifest from before the field
        for rec in _read_jsonl(ckpt / "train_log.jsonl"):
            if rec.get("event") != "log" or "loss" not in rec or "step" not in rec:
                continue
            row = {"size": key[0], "objective": key[1], "fraction": key[2], "pretrain_seed": seed,
                   "step": int(rec["step"])}
            row.update({c: float(rec[c]) for c in COMPONENTS if rec.get(c) is not None})
            train_rows[(*key, seed, int(rec["step"]))] = row
        ev = m.get("validation") or {}
        eval_file = ckpt / "eval.json"
        if eval_file.is_file():
            ev = load_eval(eval_file)
        if "mlm_loss" in ev:
            val_rows.append({"size": key[0], "objective": key[1], "fraction": key[2], "pretrain_seed": seed,
                             "step": int(m.get("step", 0)),
                             "val_mlm_loss": ev.get("mlm_loss"), "val_mlm_accuracy": ev.get("mlm_accuracy"),
                             **{f"val_{t}_loss": ev.get(f"{t}_loss") for t in AUX_TERMS},
                             "n_masked_tokens": ev.get("n_masked_tokens"),
                             "comparable": mlm_loss_comparable(key[1]), "checkpoint": str(ckpt),
                             **{c: ev.get(c) for c in GLUE_PROBE_COLUMNS}})
    train = pd.DataFrame(list(train_rows.values()))
    if not train.empty:
        train = train.sort_values(["size", "objective", "fraction", "pretrain_seed", "step"]).reset_index(drop=True)
    val = pd.DataFrame(val_rows, columns=CSV_COLUMNS)
    if not val.empty:
        val = val.sort_values(["size", "objective", "fraction", "pretrain_seed", "step"]).reset_index(drop=True)
    return train, val


def _run_label(size: str, objective: str, fraction: float, sizes: set[str], fractions: set[float]) -> str:
    lab = objective_label(objective)
    if len(fractions) > 1 and objective != CONTROL:  # the control saw no data
        lab += f", {fraction:.0%} data"
    if len(sizes) > 1:
        lab += f" [{size}]"
    return lab


def run_styles(runs: list[tuple[str, str, float]]) -> dict[tuple[str, str, float], dict[str, Any]]:
    """(size, objective, fraction) -> line style: the objective's colour and marker
    (:data:`taco.report.style.OBJECTIVE_STYLE`), the fraction's line style and marker fill
    (:func:`taco.report.style.fraction_styles`), so two runs of one objective on different data
    fractions never look alike. With one fraction and several sizes (e.g. encoder families,
    ``docs/families.md``) the line style tells the sizes apart instead (:data:`SIZE_LINESTYLES`, in size order)."""
    by_fraction = fraction_styles([r[2] for r in runs])
    sizes = sorted({r[0] for r in runs})
    by_size = len(sizes) > 1 and len({r[2] for r in runs}) == 1
    out = {}
    for run in runs:
        st = objective_style(run[1])
        st.update(by_fraction[run[2]])
        if by_size:
            st["linestyle"] = SIZE_LINESTYLES[sizes.index(run[0]) % len(SIZE_LINESTYLES)]
        out[run] = st
    return out


#: line styles of the sizes when one figure draws several sizes on one data fraction
SIZE_LINESTYLES = ("-", "--", ":", "-.")


def legend_title(runs: list[tuple[str, str, float]]) -> str:
    """What the legend's styles mean: the fraction's line and fill, or the size's line (:func:`run_styles`)."""
    if len({r[0] for r in runs}) > 1 and len({r[2] for r in runs}) == 1:
        return "run (colour, marker: objective;\nline: size)"
    return "run (colour, marker: objective;\nline, fill: data fraction)"


def _panel_empty(ax, text: str) -> None:
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, fontsize=8, wrap=True)


#: the longest line of a panel title (10 pt over one of two panels side by side)
TITLE_CHARS = 70


def _title(ax, text: str) -> None:
    """Title ``ax`` with ``text`` broken into lines of at most :data:`TITLE_CHARS` (a longer line is
    wider than its panel and runs into the legend)."""
    ax.set_title(textwrap.fill(text, TITLE_CHARS), fontsize=10)


def _markevery(n: int) -> int:
    """About eight markers on a training curve of ``n`` logged points."""
    return max(1, n // 8)


def figure(train: pd.DataFrame, val: pd.DataFrame, label: str = ""):
    """The four-panel figure (see the module docstring); a panel says so when it has nothing. ``label``
    (:func:`taco.report.synthetic_label.synthetic_corpus_label`), when given, is the figure's title."""
    fig, axes = plt.subplots(2, 2, figsize=(11.0, 7.4), layout="constrained")
    if label:
        fig.suptitle(label, fontsize=10)
    (ax_tm, ax_ta), (ax_vm, ax_vt) = axes
    runs = set()
    for df in (train, val):
        if not df.empty:
            runs |= set(map(tuple, df[["size", "objective", "fraction"]].drop_duplicates().itertuples(index=False)))
    runs = sorted(runs, key=lambda r: (r[0], -r[2], r[1]))
    sizes = {r[0] for r in runs}
    fractions = {r[2] for r in runs}
    styles = run_styles(runs)
    handles: dict[str, Any] = {}
    replicated: set[tuple] = set()

    def plot(ax, run, g, column, markevery=None, mlm=False, term=""):
        """One line per run: the mean of ``column`` over its replicate runs (pre-training seeds) at each
        step, and with several replicates their range as a band of the same colour."""
        d = g[g[column].notna()].assign(**{column: lambda f: f[column].astype(float)})
        by_step = d.groupby("step")[column]
        x, y, lo, hi = by_step.mean().index, by_step.mean().to_numpy(), by_step.min(), by_step.max()
        if markevery is None:
            markevery = _markevery(len(x))
        st = styles[run]
        if "pretrain_seed" in d and d["pretrain_seed"].nunique() > 1:
            ax.fill_between(x, lo.to_numpy(), hi.to_numpy(), color=st["color"], alpha=0.15, linewidth=0)
            replicated.add(run)
        lab = _run_label(*run, sizes, fractions) + (f" {term}" if term else "")
        linestyle = st["linestyle"]
        if mlm and not mlm_loss_comparable(run[1]):  # an MLM-loss curve of BERT-NCE / INFOWORD
            lab, linestyle = f"{lab} {NOT_COMPARABLE}", ":"
        (line,) = ax.plot(x, y, color=st["color"], linestyle=linestyle, marker=st["marker"],
                          markerfacecolor=st["markerfacecolor"], markeredgecolor=st["color"], markersize=5,
                          markevery=markevery, linewidth=1.3, label=lab)
        handles.setdefault(lab, line)

    if train.empty:
        _panel_empty(ax_tm, "no training log lines found")
        _panel_empty(ax_ta, "no training log lines found")
    else:
        have_aux = False
        for run, g in train.groupby(["size", "objective", "fraction"], sort=True):
            if "mlm_loss" in g and g["mlm_loss"].notna().any():
                plot(ax_tm, run, g, "mlm_loss", mlm=True)
            logged = [t for t in AUX_TERMS if f"{t}_loss" in g and g[f"{t}_loss"].notna().any()]
            for t in logged:
                # a run with several terms (INFOWORD: NCE and DIM) names each line's term
                plot(ax_ta, run, g, f"{t}_loss", term=t.upper() if len(logged) > 1 else "")
                have_aux = True
        for ax in (ax_tm, ax_ta):
            if ax.get_lines():
                ax.set_yscale("log")
                plain_log_axis(ax.yaxis)
        if not have_aux:
            _panel_empty(ax_ta, "no loss term but MLM's logged (no objective here adds one)")
    _title(ax_tm, "(a) training MLM loss")
    _title(ax_ta, aux_panel_title(train["objective"] if "objective" in train else ()))
    for ax in (ax_tm, ax_ta):
        ax.set_ylabel("nats, mean over the logging window (log scale)", fontsize=8)
    if val.empty:
        _panel_empty(ax_vm, "no eval.json found")
        _panel_empty(ax_vt, "no eval.json found")
    else:
        have_aux = False
        for run, g in val.groupby(["size", "objective", "fraction"], sort=True):
            plot(ax_vm, run, g, "val_mlm_loss", markevery=1, mlm=True)
            kept = [t for t in AUX_TERMS if g[f"val_{t}_loss"].notna().any()]
            for t in kept:
                plot(ax_vt, run, g, f"val_{t}_loss", markevery=1, term=t.upper() if len(kept) > 1 else "")
                have_aux = True
        if not have_aux:
            _panel_empty(ax_vt, "no validation loss but MLM's (no objective here adds a term)")
    has_control = any(r[1] == CONTROL for r in runs)
    _title(ax_vm, "(c) validation MLM loss at each budget" + (" (control at step 0)" if has_control else ""))
    _title(ax_vt, "(d) validation loss of the other terms at each budget")
    for ax in (ax_vm, ax_vt):
        ax.set_ylabel("nats, same blocks and masks for every objective", fontsize=8)
    for ax in axes.flat:
        ax.set_xlabel("pre-training step")
        ax.grid(True, alpha=0.3, which="both")
    if handles:
        # below the panels, in columns: right of them a legend as tall as the figure ran into the
        # long title of panel (b) (constrained layout does not keep a title wider than its axes clear of it)
        title = legend_title(runs) + ("\nline: mean over pre-training runs; band: their range" if replicated else "")
        fig.legend(list(handles.values()), list(handles.keys()), loc="outside lower center", fontsize=8,
                   ncol=2 if len(handles) > 3 else len(handles), title=title, title_fontsize=8,
                   frameon=False)
    return fig
