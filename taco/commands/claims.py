"""The paper's claims, checked on the reproduced numbers.

``taco claims --aggregate-dir results/aggregate --analysis FILE --output-dir results [--efficiency CSV]``
writes ``claims.csv`` (one ``level = claim`` row per claim, plus ``level = task`` rows per score key),
``claims.md`` (a summary table with verdicts, then per claim its rule, test, reason and details) and
``claims.html``, the same page rendered for ``snakemake --report`` (:mod:`taco.report.html`). The claims and
their evaluation are :mod:`taco.stats.claims`, the page :mod:`taco.report.claims_page`; with
``--efficiency`` the steps-to-target claims of ``taco efficiency`` are added to the page.
"""

from __future__ import annotations

import sys
from pathlib import Path

from taco.manifest import atomic_write_text
from taco.report.claims_page import render_markdown
from taco.commands.report_cli import report_main, report_parser
from taco.report.html import write_markdown_page
from taco.stats.claims import evaluate_claims


def _write_claims(agg, cfg, args) -> list[Path]:
    eff = None
    if getattr(args, "efficiency", None):  # the steps-to-target claims E1 / E2, read before anything is written
        from taco.stats.efficiency import read_table

        eff = read_table(args.efficiency)
    df = evaluate_claims(agg, cfg)
    out = Path(args.output_dir)
    atomic_write_text(out / "claims.csv", df.to_csv(index=False, float_format="%.6g"))
    md = render_markdown(df, cfg)
    if eff is not None:
        from taco.report.efficiency_page import claims_section

        md += claims_section(eff, cfg.alpha, cfg.efficiency_margin)
        for r in eff.itertuples():
            print(f"{r.claim_id} ({r.size}): {r.verdict}")
    pages = write_markdown_page(out / "claims.md", md)  # claims.md and claims.html (the report's page)
    for r in df[df["level"] == "claim"].itertuples():
        print(f"{r.claim_id}: {r.verdict}")
    return [out / "claims.csv", *pages]


def _add_efficiency(ap) -> None:
    ap.add_argument("--efficiency", help="efficiency.csv of `taco efficiency`: its claims (E1, E2) are added "
                                         "to claims.md")


def build_parser():
    """The command line of ``taco claims``."""
    return report_parser("claims", __doc__.split("\n")[0], _add_efficiency)


def main(argv: list[str] | None = None) -> int:
    """``taco claims``: aggregate CSVs + analysis spec (+ efficiency.csv) -> claims.csv, claims.md, claims.html."""
    return report_main("claims", __doc__.split("\n")[0], _write_claims, argv, add_arguments=_add_efficiency)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
