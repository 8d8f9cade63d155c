"""Helpers for the report tests (tests/test_report_html.py, tests/test_workflow_e2e.py).

- :func:`report_items`: the results a built ``snakemake --report report.html`` embeds (Snakemake 9
  writes them as ``var results = {...};`` in a ``<script id="results">``, each file as a base64
  ``data:`` URI that the report shows in an iframe when it is HTML), with each item's bytes decoded.
- :func:`screenshot`: a headless browser's screenshot of an HTML file: Debian's ``chromium``
  (``apt-get install chromium``, as ``.ci/run`` does), or the browser named by ``$TACO_CHROMIUM``.
  Browser downloads (Playwright and the like) cannot be fetched on the build machines.
- :func:`blank_reason`: why a screenshot counts as blank (None when it shows something).
- :func:`html_tables` / :func:`verdict_table`: the tables of an HTML page as rows of cell texts, and
  the claims page's summary table (header and rows) checked against the verdict words.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
import tempfile
from html.parser import HTMLParser
from pathlib import Path

#: the verdicts a claim can get (taco.stats.claim_rules)
VERDICTS = ("supported", "not supported", "inconclusive", "not decidable", "not run")

#: executables tried in this order when $TACO_CHROMIUM is unset
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def report_items(report_html: str | Path) -> tuple[dict[str, dict], dict[str, dict]]:
    """(results, categories) of a self-contained Snakemake report; every result gets ``content``:
    the decoded bytes of its data URI."""
    text = Path(report_html).read_text()

    def var(name: str, script_id: str) -> dict:
        m = re.search(rf'<script id="{script_id}">\s*var {name} = (.*?);\s*</script>', text, re.S)
        assert m, f"{report_html}: no <script id={script_id!r}> with var {name}"
        return json.loads(m.group(1))

    results = var("results", "results")
    for item in results.values():
        uri = item["data_uri"]
        assert uri.startswith("data:") and ";base64," in uri, f"{item['name']}: not embedded ({uri[:60]})"
        item["content"] = base64.b64decode(uri.split(";base64,", 1)[1])
    return results, var("categories", "categories")


def workflow_description(report_html: str | Path) -> str:
    """The HTML of a Snakemake report's front page (``workflow/report/workflow.rst`` as rendered)."""
    text = Path(report_html).read_text()
    m = re.search(r'var workflow_desc = (.*?);\s*</script>', text, re.S)
    assert m, f"{report_html}: no workflow_desc"
    return json.loads(m.group(1))


def find_browser() -> str | None:
    """The headless browser to use: $TACO_CHROMIUM, else the first of :data:`BROWSERS` on PATH."""
    env = os.environ.get("TACO_CHROMIUM")
    if env:
        return shutil.which(env) or (env if os.access(env, os.X_OK) else None)
    return next((p for p in map(shutil.which, BROWSERS) if p), None)


def browser_missing_reason() -> str:
    return ("no headless browser: install Debian's chromium (`apt-get install chromium`, as .ci/run does) "
            f"or set TACO_CHROMIUM; looked for {', '.join(BROWSERS)} on PATH")


def screenshot(html_file: str | Path, png: str | Path, width: int = 1400, height: int = 1000,
               timeout: int = 180) -> Path:
    """Render ``html_file`` in a headless browser and save a ``width`` x ``height`` PNG at ``png``.

    As root, Chromium refuses to start without ``--no-sandbox``; its profile goes to a temporary
    folder (nothing written to $HOME). Raises RuntimeError (with the browser's output) on failure.
    """
    exe = find_browser()
    if exe is None:
        raise RuntimeError(browser_missing_reason())
    png = Path(png).resolve()
    png.unlink(missing_ok=True)
    with tempfile.TemporaryDirectory(prefix="taco-chromium-") as profile:
        cmd = [exe, "--headless", "--disable-gpu", "--disable-dev-shm-usage", "--hide-scrollbars",
               "--no-first-run", "--no-default-browser-check", f"--user-data-dir={profile}",
               f"--window-size={width},{height}", f"--screenshot={png}", Path(html_file).resolve().as_uri()]
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            cmd.insert(1, "--no-sandbox")
        env = dict(os.environ, HOME=profile)
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    if out.returncode != 0 or not png.is_file():
        raise RuntimeError(f"{' '.join(cmd)} -> exit {out.returncode}, no {png.name}:\n"
                           f"{out.stdout[-2000:]}\n{out.stderr[-4000:]}")
    return png


def blank_reason(png: str | Path, min_colours: int = 8, min_ink: float = 0.005) -> str | None:
    """Why the screenshot ``png`` is blank, or None: it must hold at least ``min_colours`` distinct
    colours and at least a ``min_ink`` fraction of pixels that differ from the most common colour
    (the page's background)."""
    import numpy as np
    from PIL import Image

    with Image.open(png) as im:
        px = np.asarray(im.convert("RGB")).reshape(-1, 3)
    colours, counts = np.unique(px, axis=0, return_counts=True)
    ink = 1.0 - counts.max() / counts.sum()
    if len(colours) < min_colours:
        return f"{png}: {len(colours)} distinct colour(s) (fewer than {min_colours})"
    if ink < min_ink:
        return f"{png}: {ink:.2%} of the pixels differ from the background (less than {min_ink:.1%})"
    return None


class _Tables(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tables: list[list[list[str]]] = []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self.tables.append([])
        elif tag == "tr" and self.tables:
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None and self.tables and self.tables[-1]:
            self.tables[-1][-1].append(" ".join("".join(self._cell).split()))
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def html_tables(page: str | bytes) -> list[list[list[str]]]:
    """Every ``<table>`` of an HTML page: rows (header row first) of cell texts."""
    parser = _Tables()
    parser.feed(page.decode() if isinstance(page, bytes) else page)
    return parser.tables


def verdict_table(page: str | bytes) -> tuple[list[str], list[list[str]]]:
    """The claims page's summary table: (header, rows); asserts it exists, that every row has a
    verdict cell starting with one of :data:`VERDICTS`, and returns it."""
    tables = [t for t in html_tables(page) if t and "verdict" in t[0] and "Claim" in t[0]]
    assert tables, "no <table> with a Claim and a verdict column"
    header, rows = tables[0][0], tables[0][1:]
    assert rows, "the verdict table has no rows"
    col = header.index("verdict")
    for r in rows:
        assert r[col].startswith(VERDICTS), f"verdict cell {r[col]!r} of {r[0]!r}"
    return header, rows
