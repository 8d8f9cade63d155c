"""Figures 2 and 6 of Fu et al. (ACL 2022) from ``dynamics.json`` files (``taco dynamics``).

The command ``taco dynamics-figures``: the figures are drawn by :mod:`taco.report.dynamics_figures`.
"""

from __future__ import annotations

import argparse
import sys

from taco.cli_parts import cli_error
from taco.report.dynamics_figures import PlotInputError, require_objective, figure2, figure6, load_records


def build_parser() -> argparse.ArgumentParser:
    from taco.cli_parts import HelpFormatter
    p = argparse.ArgumentParser(formatter_class=HelpFormatter, prog="taco dynamics-figures", description=__doc__.split("\n\n")[0])
    p.add_argument("--inputs", nargs="+", required=True, help="dynamics.json files (any order)")
    p.add_argument("--output-dir", default="results", help="where figure6/figure2 .png/.pdf go")
    p.add_argument("--figure2-objective", default="mlm", help="objective shown in figure 2 (default mlm)")
    p.add_argument("--dpi", type=int, default=200, help="PNG resolution (default 200)")
    p.add_argument("--analysis", help="analysis spec (JSON/YAML): a synthetic corpus puts the synthetic-data "
                                      "label on both figures")
    return p


def main(argv: list[str] | None = None) -> int:
    """``taco dynamics-figures``; exit 2 on bad input (nothing written in that case)."""
    from taco.stats.analysis_config import AnalysisConfigError, load_analysis
    from taco.report.synthetic_label import synthetic_corpus_label

    args = build_parser().parse_args(argv)
    try:
        label = synthetic_corpus_label(load_analysis(args.analysis)) if args.analysis else ""
        records = load_records(args.inputs)
        require_objective(records, args.figure2_objective)  # fail before writing anything
        written = (figure6(records, args.output_dir, args.dpi, label)
                   + figure2(records, args.output_dir, args.figure2_objective, args.dpi, label))
    except (PlotInputError, AnalysisConfigError, FileNotFoundError) as exc:
        return cli_error("dynamics-figures", exc)
    print("taco dynamics-figures: wrote " + ", ".join(str(p) for p in written))
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
