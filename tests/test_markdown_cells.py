"""Fault sweep IV, item 11: configuration strings reached the Markdown tables unescaped (a budget name
`<img src=x onerror=alert(1)>` raw in table4.md, `[x](javascript:alert(2))` a live link in ablation.md)."""

from __future__ import annotations

import pytest

from taco.report.html import markdown_to_html
from taco.report.markdown_text import md_cell


@pytest.mark.parametrize("name", ["<img src=x onerror=alert(1)>", "[x](javascript:alert(2))", "a | b", "x\n# heading"])
def test_a_hostile_name_in_a_table_cell_renders_as_text(name):
    page = markdown_to_html(f"| approach |\n|---|\n| {md_cell(name)} (ours) |\n")
    assert "<img" not in page and 'href="javascript' not in page and "<h1" not in page
    assert page.count("<td>") == 1  # one cell: the pipe did not open a column


def test_a_plain_budget_name_reads_as_written():
    assert md_cell("TACO-250k [step 60]") == "TACO-250k [step 60]"
