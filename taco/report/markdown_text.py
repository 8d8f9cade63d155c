"""Text from a configuration (paths, names, ``results_dir``) placed into a Markdown page as written.

A value such as ``[click me](javascript:alert(2))``, ``![x](http://evil.example/x.png)``,
``a\\_b.txt`` or ``<http://x>`` is data, not Markdown: every writer of a report page passes it
through :func:`md_text` (running text, table cells, headings) or :func:`md_code` (a code span)
where it is put into the page. :mod:`taco.report.html` renders the escapes (it also reads ``\\<``
and ``\\&``, as CommonMark does) and, whatever the text, allows no ``javascript:``/``data:`` link
and no image in the HTML page.

Torch-free and pandas-free (Snakemake's own process renders the plan page).
"""

from __future__ import annotations

import re

#: the characters :func:`md_text` escapes with a backslash: those that start emphasis, code, links,
#: images, autolinks, headings' closing hashes and table cells (Python-Markdown and CommonMark read
#: each ``\\c`` as the character itself)
MARKDOWN_SPECIAL = "\\`*_[]<>#|!"

_SPECIAL_RE = re.compile("([" + re.escape(MARKDOWN_SPECIAL) + "])")
_NEWLINES_RE = re.compile(r"[\r\n]+")
#: an ``&`` that starts an entity (``&amp;``, ``&#106;``): Markdown would show the character it names
_ENTITY_AMP_RE = re.compile(r"&(?=#?[A-Za-z0-9]+;)")


def md_text(value: object) -> str:
    """``str(value)`` escaped so that Markdown shows it as written, on one line: each character of
    :data:`MARKDOWN_SPECIAL` gets a backslash, an ``&`` that starts an entity is written ``&amp;``
    (a backslash does not stop an entity), line breaks become a space (a value never starts a new
    table row, list item or heading). Example: ``a\\_b.txt`` is written ``a\\\\\\_b.txt``."""
    text = _SPECIAL_RE.sub(r"\\\1", _NEWLINES_RE.sub(" ", str(value)))
    return _ENTITY_AMP_RE.sub("&amp;", text)


def md_code(value: object) -> str:
    """``str(value)`` as a Markdown code span shown as written, on one line: fenced by one backtick
    more than its longest run of backticks (padded with a space where it starts or ends with one);
    inside a code span backslashes and every other character are literal."""
    text = _NEWLINES_RE.sub(" ", str(value))
    runs = [len(m) for m in re.findall(r"`+", text)]
    fence = "`" * (max(runs, default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def md_cell(value: object) -> str:
    """``str(value)`` made safe for a Markdown table cell while its raw text stays readable (tables people also
    read as plain text): ``<``/``>``/``&`` become entities (no raw HTML), ``](`` becomes ``]\\(`` (no link),
    ``|`` is escaped (no new column), line breaks become a space. Brackets, underscores and stars stay as written
    (use :func:`md_text` where every Markdown character must be shown literally)."""
    text = _NEWLINES_RE.sub(" ", str(value)).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return text.replace("](", "]\\(").replace("|", "\\|")

