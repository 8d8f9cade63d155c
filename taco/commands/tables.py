"""The paper's tables from the aggregated runs, each beside the published values.

The command ``taco tables``: the tables' data (:func:`taco.report.table_builders.build_tables`) rendered and
written by :func:`taco.report.tables.write_tables` (what each file holds: :mod:`taco.report.tables`).
"""

from __future__ import annotations

import sys

from taco.commands.report_cli import report_main, report_parser
from taco.report.table_builders import build_tables
from taco.report.tables import write_tables


def build_parser():
    """The command line of ``taco tables``."""
    return report_parser("tables", __doc__.split("\n")[0])


def main(argv: list[str] | None = None) -> int:
    """``taco tables``: aggregate CSVs + analysis spec -> table{1,2,3,4}/ablation .csv/.md/.html/.tex."""
    return report_main("tables", __doc__.split("\n")[0],
                       lambda agg, cfg, args: write_tables(build_tables(agg, cfg), args.output_dir, cfg), argv)

if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
