"""Pre-training curves: training loss components over steps and validation MLM loss at each budget.

``taco pretrain-curves --checkpoints DIR [DIR ...] --output-dir results`` reads, from every budget
checkpoint of ``taco pretrain`` (and the control of ``taco init``):

- ``train_log.jsonl``: the segment's Trainer log lines (``mlm_loss``, ``tc_loss``, ``tp_loss``:
  means over the logging window, nats; ``step``), concatenated over the budgets of one run;
- ``eval.json``: the validation MLM loss / accuracy (and TC loss) of the checkpoint, on the same
  masks for every variant (:mod:`taco.training.validation`);
- ``manifest.json``: the size, variant (``objective``), data fraction and step.

and writes ``pretrain_curves.png`` / ``.pdf`` (left: training loss components over steps, one
colour per variant, MLM solid, TC dashed, TP dotted; right: validation MLM loss at each budget,
the control at step 0, validation TC loss dashed where measured) and ``pretrain_curves.csv`` (one
row per checkpoint: size, variant, fraction, step, validation MLM loss, accuracy, TC loss).
Styles: :mod:`taco.report.style`. Reads JSON only (no torch: the statistics environment runs it).
Errors: a directory without ``manifest.json`` exits 2 naming it.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from taco.manifest import read_manifest  # noqa: E402
from taco.report.style import variant_label, variant_style  # noqa: E402

NAME = "pretrain_curves"
COMPONENT_STYLE = {"mlm_loss": "-", "tc_loss": "--", "tp_loss": ":"}
CSV_COLUMNS = ["size", "variant", "fraction", "step", "val_mlm_loss", "val_mlm_accuracy", "val_tc_loss",
               "n_masked_tokens", "checkpoint"]


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

    Training log: one row per (run, step) with ``size``, ``variant``, ``fraction``, ``step`` and the
    component columns present (``mlm_loss``, ``tc_loss``, ``tp_loss``); a step logged by two segments
    (a resumed segment re-logs nothing, but a rerun may) keeps the last line. Validation: one row per
    checkpoint (``CSV_COLUMNS``). Raises FileNotFoundError naming a directory without a manifest.
    """
    train_rows: dict[tuple, dict[str, Any]] = {}
    val_rows = []
    for ckpt in map(Path, checkpoints):
        m = read_manifest(ckpt)
        key = (str(m.get("size")), str(m.get("objective")), float(m.get("fraction") or 1.0))
        for rec in _read_jsonl(ckpt / "train_log.jsonl"):
            if rec.get("event") != "log" or "loss" not in rec or "step" not in rec:
                continue
            row = {"size": key[0], "variant": key[1], "fraction": key[2], "step": int(rec["step"])}
            row.update({c: float(rec[c]) for c in COMPONENT_STYLE if rec.get(c) is not None})
            train_rows[(*key, int(rec["step"]))] = row
        ev = m.get("validation") or {}
        eval_file = ckpt / "eval.json"
        if eval_file.is_file():
            ev = json.loads(eval_file.read_text())
        if "mlm_loss" in ev:
            val_rows.append({"size": key[0], "variant": key[1], "fraction": key[2], "step": int(m.get("step", 0)),
                             "val_mlm_loss": ev.get("mlm_loss"), "val_mlm_accuracy": ev.get("mlm_accuracy"),
                             "val_tc_loss": ev.get("tc_loss"), "n_masked_tokens": ev.get("n_masked_tokens"),
                             "checkpoint": str(ckpt)})
    train = pd.DataFrame(list(train_rows.values()))
    if not train.empty:
        train = train.sort_values(["size", "variant", "fraction", "step"]).reset_index(drop=True)
    val = pd.DataFrame(val_rows, columns=CSV_COLUMNS)
    if not val.empty:
        val = val.sort_values(["size", "variant", "fraction", "step"]).reset_index(drop=True)
    return train, val


def _run_label(size: str, variant: str, fraction: float, sizes: set[str], fractions: set[float]) -> str:
    lab = variant_label(variant)
    if len(fractions) > 1 and not math.isclose(fraction, 1.0):
        lab += f" ({fraction:.0%} data)"
    if len(sizes) > 1:
        lab += f" [{size}]"
    return lab


def figure(train: pd.DataFrame, val: pd.DataFrame):
    """The two-panel figure (see the module docstring); panels say so when they have nothing."""
    fig, (ax_t, ax_v) = plt.subplots(1, 2, figsize=(11.0, 4.2))
    runs = set()
    for df in (train, val):
        if not df.empty:
            runs |= set(map(tuple, df[["size", "variant", "fraction"]].drop_duplicates().itertuples(index=False)))
    sizes = {r[0] for r in runs}
    fractions = {r[2] for r in runs}
    if train.empty:
        ax_t.text(0.5, 0.5, "no training log lines found", ha="center", va="center", transform=ax_t.transAxes)
    else:
        for (size, variant, frac), g in train.groupby(["size", "variant", "fraction"], sort=True):
            st = variant_style(variant)
            lab = _run_label(size, variant, frac, sizes, fractions)
            for comp, ls in COMPONENT_STYLE.items():
                if comp in g and g[comp].notna().any():
                    d = g[g[comp].notna()]
                    ax_t.plot(d["step"], d[comp], color=st["color"], linestyle=ls, linewidth=1.2,
                              label=f"{lab}: {comp.replace('_loss', '').upper()} loss")
        ax_t.set_yscale("log")
        ax_t.legend(fontsize=7)
    ax_t.set_xlabel("pre-training step")
    ax_t.set_ylabel("training loss (nats, mean over the logging window)")
    ax_t.set_title("Training loss components", fontsize=10)
    ax_t.grid(True, alpha=0.3)
    if val.empty:
        ax_v.text(0.5, 0.5, "no eval.json found", ha="center", va="center", transform=ax_v.transAxes)
    else:
        for (size, variant, frac), g in val.groupby(["size", "variant", "fraction"], sort=True):
            st = variant_style(variant)
            lab = _run_label(size, variant, frac, sizes, fractions)
            ax_v.plot(g["step"], g["val_mlm_loss"].astype(float), label=f"{lab}: MLM", markersize=6, **st)
            tc = g[g["val_tc_loss"].notna()]
            if not tc.empty:
                ax_v.plot(tc["step"], tc["val_tc_loss"].astype(float), color=st["color"], marker=st["marker"],
                          linestyle="--", markerfacecolor="none", label=f"{lab}: TC")
        ax_v.legend(fontsize=7)
    ax_v.set_xlabel("pre-training step (budget checkpoints; the control at 0)")
    ax_v.set_ylabel("validation loss (nats, same masks for every variant)")
    ax_v.set_title("Validation loss at each budget", fontsize=10)
    ax_v.grid(True, alpha=0.3)
    fig.tight_layout()
    return fig


def make(checkpoints: list[str | Path], out_dir: str | Path) -> list[Path]:
    """Collect, plot and write ``pretrain_curves.{png,pdf,csv}`` into ``out_dir``; returns the paths."""
    from taco.manifest import atomic_write_text
    from taco.report.figures import save

    train, val = collect(checkpoints)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = save(figure(train, val), out, NAME)
    csv = out / f"{NAME}.csv"
    atomic_write_text(csv, val.to_csv(index=False))
    return [*paths, csv]


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``taco pretrain-curves``."""
    from taco.cli import HelpFormatter
    ap = argparse.ArgumentParser(formatter_class=HelpFormatter, prog="taco pretrain-curves", description=__doc__.split("\n")[0])
    ap.add_argument("--checkpoints", nargs="+", required=True, help="budget checkpoint directories")
    ap.add_argument("--output-dir", default="results", help="folder for pretrain_curves.png, .pdf and .csv")
    return ap


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        paths = make(args.checkpoints, args.output_dir)
    except FileNotFoundError as exc:
        print(f"taco pretrain-curves: error: {exc}", file=sys.stderr)
        return 2
    print(f"taco pretrain-curves: {len(paths)} files -> {args.output_dir}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
