"""The paper's claims, checked on the reproduced numbers.

``taco claims --aggregate-dir results/aggregate --analysis FILE --output-dir results [--efficiency CSV]``
writes ``claims.csv`` (one ``level = claim`` row per claim, plus ``level = task`` rows per score key),
``claims.md`` (a summary table with verdicts, then per claim its rule, test, reason and details) and
``claims.html``, the same page rendered for ``snakemake --report`` (:mod:`taco.report.html`). The claims and
their evaluation are :mod:`taco.stats.claims`, the page :mod:`taco.report.claims_page`; with
``--efficiency`` the steps-to-target claims of ``taco efficiency`` (E1-E3) are rows of the same table and page
(:mod:`taco.stats.efficiency_claims`).
"""

from __future__ import annotations

import sys
from pathlib import Path

from taco.manifest import atomic_write_text
from taco.report.claims_page import render_markdown
from taco.commands.report_cli import report_main, report_parser
from taco.report.html import write_markdown_page
from taco.stats.claims import evaluate_claims
from taco.stats.efficiency_claims import STEPS_TO_TARGET


def _write_claims(agg, cfg, args) -> list[Path]:
    import pandas as pd

    eff = None
    if getattr(args, "efficiency", None):  # the steps-to-target claims E1-E3, read before anything is written
        from taco.stats.efficiency import read_table

        eff = read_table(args.efficiency)
    df = evaluate_claims(agg, cfg)
    if eff is not None:  # one claim system: E1-E3 are rows of the same table (taco.stats.efficiency_claims)
        from taco.stats.efficiency_claims import claim_rows  # noqa: PLC0415 (only with --efficiency)

        steps = claim_rows(eff, cfg)
        if not steps.empty:
            df = pd.concat([df, steps], ignore_index=True)
    out = Path(args.output_dir)
    atomic_write_text(out / "claims.csv", df.to_csv(index=False, float_format="%.6g"))
    pages = write_markdown_page(out / "claims.md", render_markdown(df, cfg))  # claims.md and claims.html
    for r in df[df["level"] == "claim"].itertuples():
        print(f"{r.claim_id}" + (f" ({r.size})" if r.kind == STEPS_TO_TARGET else "") + f": {r.verdict}")
    return [out / "claims.csv", *pages]


def _add_efficiency(ap) -> None:
    ap.add_argument("--efficiency", help="efficiency.csv of `taco efficiency`: its claims (E1-E3) become rows "
                                         "of claims.csv and claims.md")


def build_parser():
    """The command line of ``taco claims``."""
    return report_parser("claims", __doc__.split("\n")[0], _add_efficiency)


def main(argv: list[str] | None = None) -> int:
    """``taco claims``: aggregate CSVs + analysis spec (+ efficiency.csv) -> claims.csv, claims.md, claims.html."""
    return report_main("claims", __doc__.split("\n")[0], _write_claims, argv, add_arguments=_add_efficiency)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
