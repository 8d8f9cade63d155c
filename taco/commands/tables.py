"""The paper's tables from the aggregated runs, each beside the published values.

The command ``taco tables``: the tables' data (:func:`taco.stats.table_data.build_tables`) rendered and
written by :func:`taco.report.tables.write_tables` (what each file holds: :mod:`taco.report.tables`).
"""

from __future__ import annotations

import sys

from taco.commands.report_cli import report_main, report_parser
from taco.stats.table_data import build_tables, probe_values
from taco.report.tables import write_tables


def _add_arguments(ap) -> None:
    ap.add_argument("--pretrain-curves", metavar="CSV",
                    help="pretrain_curves.csv of `taco pretrain-curves`: with the GLUE probe's averages in it "
                         "(pretrain.glue_probe), every reproduced row gets the frozen-feature probe column")


def build_parser():
    """The command line of ``taco tables``."""
    return report_parser("tables", __doc__.split("\n")[0], _add_arguments)


def _produce(agg, cfg, args):
    """Read ``--pretrain-curves`` (FileNotFoundError / ValueError name the file), build and write the tables."""
    import pandas as pd

    probe = None
    if args.pretrain_curves:
        probe = probe_values(pd.read_csv(args.pretrain_curves), args.pretrain_curves)
    return write_tables(build_tables(agg, cfg, probe=probe), args.output_dir, cfg)


def main(argv: list[str] | None = None) -> int:
    """``taco tables``: aggregate CSVs + analysis spec (+ ``--pretrain-curves``) -> table{1,2,3,4}/ablation
    .csv/.md/.html/.tex."""
    return report_main("tables", __doc__.split("\n")[0], _produce, argv, _add_arguments)

if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
