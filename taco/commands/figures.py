"""The paper's figures from the aggregated runs (matplotlib, Agg backend; PNG and PDF).

The command ``taco figures``: :func:`taco.report.figures.make_figures` draws and writes them (what each figure
shows: :mod:`taco.report.figures`).
"""

from __future__ import annotations

import sys

from taco.commands.report_cli import report_main, report_parser
from taco.report.figures import make_figures


def _add_arguments(ap) -> None:
    ap.add_argument("--dpi", type=int, default=150, help="PNG resolution")


def build_parser():
    """The command line of ``taco figures``."""
    return report_parser("figures", __doc__.split("\n")[0], _add_arguments)


def main(argv: list[str] | None = None) -> int:
    """``taco figures``: aggregate CSVs + analysis spec -> figure5, ablation, data_efficiency (PNG, PDF)."""
    return report_main(
        "figures", __doc__.split("\n")[0],
        lambda agg, cfg, args: make_figures(agg, cfg, args.output_dir, dpi=args.dpi), argv,
        add_arguments=_add_arguments,
    )

if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
