"""``taco claims-definitions PATH [--check]``: write ``docs/claims.md`` from the claims' declarations
(:func:`taco.report.claims_definitions.definitions_page`), or, with ``--check``, exit 1 naming the command when
the file differs (``tests/test_claims_definitions.py`` runs the check). Torch-free.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from taco.cli_parts import HelpFormatter
from taco.report.claims_definitions import REGENERATE, definitions_page


def build_parser() -> argparse.ArgumentParser:
    """The command's options."""
    p = argparse.ArgumentParser(prog="taco claims-definitions", formatter_class=HelpFormatter,
                                description="docs/claims.md from the claims' declarations (CLAIMS, CLAIM_KINDS, E1-E3)")
    p.add_argument("output", type=Path, help="where the page goes (docs/claims.md)")
    p.add_argument("--check", action="store_true", help="compare instead of writing; exit 1 when it differs")
    return p


def main(argv: list[str] | None = None) -> int:
    """Write the page to ``PATH`` (``--check``: compare instead; exit 1 when it differs or is absent)."""
    a = build_parser().parse_args(argv)
    page = definitions_page()
    if a.check:
        if not a.output.is_file() or a.output.read_text(encoding="utf-8") != page:
            print(f"{a.output} is out of date with the claims' declarations: run `{REGENERATE}`", file=sys.stderr)
            return 1
        return 0
    a.output.write_text(page, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
