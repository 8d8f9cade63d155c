"""HTML pages beside the Markdown pages of the report.

Snakemake's HTML report shows images, HTML and PDF inline and offers everything else (CSV, Markdown)
as a download. Every Markdown page the workflow writes for the report (``table*.md``, ``ablation.md``,
``claims.md``, ``efficiency.md``, ``deviations.md``, ``plan.md``) therefore gets a sibling ``.html``:
the same text rendered by Python-Markdown (tables extension) into a self-contained page with a small
inline stylesheet, no scripts and no external resources (the report embeds it as a data URI in an
iframe). :func:`write_markdown_page` is the one helper every writer of such a page calls.

Raw HTML in the Markdown is not interpreted: a ``<`` in a value (``seed-<seed>``, ``x < y``) is shown
as written. Nor can any text make a page load or run something: :class:`SafeTree` (a Python-Markdown
tree processor) turns every image into its alt text and every link whose scheme is not ``http``,
``https`` or ``mailto`` (``javascript:``, ``data:``, ...) into plain text. Configuration values are
escaped where the pages put them (:mod:`taco.report.markdown_text`); ``\\<`` is read as ``<``, as
CommonMark reads it. Torch-free and pandas-free (the statistics environment and
Snakemake's own process).
"""

from __future__ import annotations

import html
import re
from pathlib import Path

import markdown
from markdown.treeprocessors import Treeprocessor
from markdown.util import AMP_SUBSTITUTE

#: the inline stylesheet of every page: readable tables (borders, zebra rows, a header that stays on
#: screen), wide tables scroll sideways instead of squeezing their columns
STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
       font-size: 14px; line-height: 1.45; color: #1f2328; background: #ffffff; margin: 0;
       padding: 1rem 1.5rem 2rem; }
main { max-width: 110rem; }
h1 { font-size: 1.5rem; border-bottom: 1px solid #d0d7de; padding-bottom: .3rem; }
h2 { font-size: 1.2rem; margin-top: 1.6rem; border-bottom: 1px solid #d8dee4; padding-bottom: .2rem; }
h3 { font-size: 1.05rem; }
.table-wrap { overflow-x: auto; margin: .6rem 0 1rem; }
table { border-collapse: collapse; font-size: 13px; }
th, td { border: 1px solid #d0d7de; padding: .3rem .55rem; vertical-align: top; text-align: left; }
th { background: #eaeef2; position: sticky; top: 0; }
tbody tr:nth-child(even) { background: #f6f8fa; }
code { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 12px;
       background: #eff1f3; padding: .1rem .25rem; border-radius: 3px; }
strong { color: #0b2e59; }
ul { padding-left: 1.4rem; }
a { color: #0969da; }
""".strip()

_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$")
_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+\S")


def _lists_after_paragraphs(markdown_text: str) -> str:
    """A blank line before a list that directly follows a paragraph line ("Notes:" then "- ..."):
    GitHub's Markdown reads such lines as a list, Python-Markdown needs the blank line."""
    out: list[str] = []
    fenced = False
    for line in markdown_text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        prev = out[-1] if out else ""
        if (not fenced and _LIST_ITEM.match(line) and prev.strip() and not _LIST_ITEM.match(prev)
                and not prev.startswith((" ", "\t", "|", "#"))):
            out.append("")
        out.append(line)
    return "\n".join(out) + ("\n" if markdown_text.endswith("\n") else "")


def page_title(markdown_text: str, default: str = "TACO reproduction") -> str:
    """The text of the first Markdown heading (``#`` .. ``######``), else ``default``."""
    for line in markdown_text.splitlines():
        m = _HEADING.match(line)
        if m:
            return m.group(1).replace("**", "").replace("`", "")
    return default


#: the link schemes a page may hold; any other (``javascript:``, ``data:``, ``vbscript:``, ``file:``)
#: makes the link plain text. A link without a scheme (``#anchor``, ``other.html``) is kept.
SAFE_SCHEMES = ("http", "https", "mailto")
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*):")
_IGNORED_IN_URL = re.compile(r"[\x00-\x20\x7f]+")  # browsers skip these inside a scheme ("java\tscript:")


def safe_href(href: str) -> bool:
    """Whether a link target may stay a link: no scheme, or one of :data:`SAFE_SCHEMES` (decided on
    the target as a browser reads it: entities decoded, whitespace and control characters dropped)."""
    target = _IGNORED_IN_URL.sub("", html.unescape(href.replace(AMP_SUBSTITUTE, "&")))
    m = _SCHEME.match(target)
    return m is None or m.group(1).lower() in SAFE_SCHEMES


class SafeTree(Treeprocessor):
    """After the inline patterns: every ``img`` becomes a ``span`` with its alt text (a page loads
    nothing), every ``a`` whose ``href`` fails :func:`safe_href` a ``span`` with its text; the
    attributes of both go (no ``src``, ``href``, ``title``)."""

    def run(self, root):
        for el in root.iter():
            if el.tag == "img":
                alt = el.get("alt") or ""
                el.tag, el.text = "span", (f"[image: {alt}]" if alt else "[image]")
                el.attrib.clear()
            elif el.tag == "a" and not safe_href(el.get("href") or ""):
                el.tag = "span"
                el.attrib.clear()
        return None


def markdown_body(markdown_text: str) -> str:
    """The Markdown rendered to an HTML fragment: tables (with ``\\|`` for a literal bar), lists (also
    right after a paragraph line, as GitHub reads them), emphasis, code spans; raw HTML is escaped,
    not passed through; no image and no link of a scheme outside :data:`SAFE_SCHEMES` (the
    :class:`SafeTree`); every table is wrapped in a ``div.table-wrap`` so a wide one scrolls."""
    md = markdown.Markdown(extensions=["tables", "sane_lists"], output_format="html")
    # no raw HTML: the text is data (configuration values, reasons), shown as written
    md.preprocessors.deregister("html_block")
    md.inlinePatterns.deregister("html")
    if "<" not in md.ESCAPED_CHARS:  # CommonMark's \<: a value's "<http://...>" is no autolink
        md.ESCAPED_CHARS.append("<")
    # after "inline" (20) and before "prettify" (10): every link and image exists by then
    md.treeprocessors.register(SafeTree(md), "safe_tree", 15)
    body = md.convert(_lists_after_paragraphs(markdown_text))
    return body.replace("<table>", '<div class="table-wrap"><table>').replace("</table>", "</table></div>")


def markdown_to_html(markdown_text: str, title: str | None = None) -> str:
    """A complete, self-contained HTML page (UTF-8, inline CSS, no scripts) of ``markdown_text``;
    its ``<title>`` is ``title`` or the first heading."""
    t = html.escape(title if title is not None else page_title(markdown_text))
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
            f"<title>{t}</title>\n<style>\n{STYLE}\n</style>\n</head>\n<body>\n<main>\n"
            f"{markdown_body(markdown_text)}\n</main>\n</body>\n</html>\n")


def html_path(markdown_path: str | Path) -> Path:
    """The HTML page beside a Markdown page: ``claims.md`` -> ``claims.html``. A path that already
    ends in ``.html`` is refused (the page would overwrite its own source)."""
    p = Path(markdown_path)
    if p.suffix.lower() in (".html", ".htm"):
        raise ValueError(f"{p}: a Markdown page cannot end in {p.suffix} (its HTML page goes beside it)")
    return p.with_suffix(".html")


def write_markdown_page(markdown_path: str | Path, markdown_text: str, title: str | None = None) -> list[Path]:
    """Write ``markdown_text`` to ``markdown_path`` and its HTML rendering beside it (``.html``), each
    atomically; returns both paths (Markdown first)."""
    from taco.manifest import atomic_write_text

    page = html_path(markdown_path)  # refused before anything is written
    rendered = markdown_to_html(markdown_text, title)
    return [atomic_write_text(markdown_path, markdown_text), atomic_write_text(page, rendered)]
