"""``taco deviations``: the command and its page (``deviations.md``): reads a run configuration and an analysis
spec, finds the differences from the paper's setup (:func:`taco.stats.deviations.find_deviations`) and
renders them as one table. Torch-free."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from taco.cli_parts import cli_error
from taco.report.markdown_text import md_code, md_text
from taco.stats.deviations import Deviation, DeviationsInputError, check_config, find_deviations


def _cell(text: str) -> str:
    """A table cell: the row's plain text escaped for Markdown (:func:`md_text`: a configuration's value is
    shown as written, never read as a link, an image or a column separator), on one line."""
    return md_text(text)


def render_markdown(devs: Sequence[Deviation], source: str = "") -> str:
    """deviations.md: the method table, then the configuration table (one row per difference)."""
    lines = ["# Deviations from the paper's setup", "",
             "Each row: the setting, the paper's / official code's value (FUZHIYI/TACO), this run's value, why, "
             "and the expected effect (an expectation, not a measurement)."
             + (f" Run configuration: {md_code(source)}." if source else ""), ""]
    for kind, title in (("method", "Every configuration of this suite"),
                        ("configuration", "What this configuration changes")):
        rows = [d for d in devs if d.kind == kind]
        lines += [f"## {title}", ""]
        if not rows:
            lines += ["None: this configuration runs the paper's recipe.", ""]
            continue
        lines += ["| Setting | Paper / official code | This run | Reason | Expected effect | Config key |",
                  "|---|---|---|---|---|---|"]
        lines += [f"| {_cell(d.topic)} | {_cell(d.paper)} | {_cell(d.here)} | {_cell(d.reason)} | "
                  f"{_cell(d.effect)} | {md_code(d.key) if d.key else ''} |" for d in rows]
        lines.append("")
    return "\n".join(lines)


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
