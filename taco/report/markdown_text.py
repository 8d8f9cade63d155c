"""Putting text from a configuration or a file name into Markdown as text, never as markup.

Markdown gives meaning to ``\\ ` * _ { } [ ] ( ) # + - . ! | < >``: a path like ``a_b_c.txt`` would
turn italic, ``[x](javascript:...)`` into a link. :func:`escape_md` backslash-escapes every one of
them (CommonMark's backslash escapes: any ASCII punctuation may be escaped), so the rendered page
shows the string as written.
"""

from __future__ import annotations

import re

_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~])")


def escape_md(text: object) -> str:
    """``text`` (``str()`` of it) with every Markdown-special character backslash-escaped and newlines
    turned into spaces (a table cell stays one cell). ``escape_md("a_b|[x](y)")`` ->
    ``'a\\_b\\|\\[x\\]\\(y\\)'``."""
    return _SPECIAL.sub(r"\\\1", str(text).replace("\r", " ").replace("\n", " "))
