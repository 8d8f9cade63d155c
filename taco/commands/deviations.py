"""Every difference of the run configuration from the paper's setup.

The command ``taco deviations``: reads a run configuration and an analysis spec, finds the differences from the
paper's setup (:func:`taco.deviations.find_deviations`) and writes them as one table
(:func:`taco.report.deviations_page.render_markdown`). Torch-free.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from taco.cli_parts import cli_error
from taco.report.deviations_page import render_markdown
from taco.deviations import DeviationsInputError, check_config, find_deviations


def _read_mapping(path: str | Path, what: str) -> Any:
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"{what} {p}: no such file")
    text = p.read_text()
    try:
        if p.suffix.lower() == ".json":
            return json.loads(text)
        import yaml

        return yaml.safe_load(text)
    except Exception as exc:  # noqa: BLE001 - re-raised naming the file
        raise DeviationsInputError(f"{what} {p}: cannot parse: {exc}") from exc


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``taco deviations``."""
    from taco.cli_parts import HelpFormatter
    ap = argparse.ArgumentParser(formatter_class=HelpFormatter, prog="taco deviations", description=__doc__.split("\n")[0])
    ap.add_argument("--config", required=True, help="resolved run configuration (YAML or JSON)")
    ap.add_argument("--analysis", help="analysis spec (JSON/YAML), for the tasks that could not be run")
    ap.add_argument("--output", default="results/deviations.md",
                    help="the markdown file to write (its HTML rendering goes beside it, .html)")
    return ap


def main(argv: list[str] | None = None) -> int:
    """``taco deviations``: run configuration -> deviations.md and deviations.html. Exit 2 on bad input
    (nothing written)."""
    from taco.report.html import write_markdown_page

    args = build_parser().parse_args(argv)
    try:
        config = _read_mapping(args.config, "run configuration")
        check_config(config, f"run configuration {args.config}")
        spec = _read_mapping(args.analysis, "analysis spec") if args.analysis else None
        if spec is not None and not isinstance(spec, Mapping):
            raise DeviationsInputError(f"analysis spec {args.analysis}: expected a mapping at top level")
        devs = find_deviations(config, spec)
    except (DeviationsInputError, FileNotFoundError) as exc:
        return cli_error("deviations", exc)
    out = Path(args.output)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_markdown_page(out, render_markdown(devs, str(args.config)))  # and <output>.html for the report
    n_conf = sum(d.kind == "configuration" for d in devs)
    print(f"taco deviations: {len(devs) - n_conf} method and {n_conf} configuration differences -> {out}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
