"""Pre-training curves: training loss components over steps and validation MLM loss at each budget.

The command ``taco pretrain-curves``: :func:`taco.report.pretrain_curves.collect` reads the checkpoints'
training logs and ``eval.json`` files, :func:`taco.report.pretrain_curves.figure` draws them (what the panels
show: :mod:`taco.report.pretrain_curves`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from taco.cli_parts import cli_error
from taco.report.pretrain_curves import NAME, collect, figure
from taco.stats.validation_points import EvalFileError


def make(checkpoints: list[str | Path], out_dir: str | Path, label: str = "") -> list[Path]:
    """Collect, plot and write ``pretrain_curves.{png,pdf,csv}`` into ``out_dir``; returns the paths.
    ``label``: the figure's title (:func:`figure`)."""
    from taco.manifest import atomic_write_text
    from taco.report.plotting import save_figure

    train, val = collect(checkpoints)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = save_figure(figure(train, val, label), out, NAME)
    csv = out / f"{NAME}.csv"
    atomic_write_text(csv, val.to_csv(index=False))
    return [*paths, csv]


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``taco pretrain-curves``."""
    from taco.cli_parts import HelpFormatter
    ap = argparse.ArgumentParser(formatter_class=HelpFormatter, prog="taco pretrain-curves", description=__doc__.split("\n")[0])
    ap.add_argument("--checkpoints", nargs="+", required=True, help="budget checkpoint directories")
    ap.add_argument("--output-dir", default="results", help="folder for pretrain_curves.png, .pdf and .csv")
    ap.add_argument("--analysis", help="analysis spec (JSON/YAML): a synthetic corpus puts the synthetic-data "
                                       "label on the figure")
    return ap


def main(argv: list[str] | None = None) -> int:
    """``taco pretrain-curves``; exit 2 on bad input (nothing written in that case)."""
    from taco.stats.analysis_config import AnalysisConfigError, load_analysis
    from taco.report.synthetic_label import synthetic_corpus_label

    args = build_parser().parse_args(argv)
    try:
        label = synthetic_corpus_label(load_analysis(args.analysis)) if args.analysis else ""
        paths = make(args.checkpoints, args.output_dir, label)
    except (FileNotFoundError, EvalFileError, AnalysisConfigError, ValueError) as exc:
        return cli_error("pretrain-curves", exc)
    print(f"taco pretrain-curves: {len(paths)} files -> {args.output_dir}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
