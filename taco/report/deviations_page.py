"""The deviations page (``deviations.md``): the differences of a run configuration from the paper's setup
(:func:`taco.deviations.find_deviations`, plain-text rows) rendered as two tables, every cell escaped for
Markdown. The command is :mod:`taco.commands.deviations`. Torch-free."""

from __future__ import annotations

from collections.abc import Sequence

from taco.report.markdown_text import md_code, md_text
from taco.deviations import Deviation


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
