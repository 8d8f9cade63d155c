"""The report's HTML pages: every Markdown page the workflow writes for the report
(tables, claims, efficiency, deviations, plan) has an HTML rendering beside it (taco.report.html),
which ``snakemake --report`` shows inline; the built report itself is checked by
tests/test_workflow_e2e.py."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest

from fixtures_stats import build_aggregate, smoke_spec
from report_pages import (VERDICTS, blank_reason, browser_missing_reason, find_browser, html_tables,
                          screenshot, verdict_table)
from taco.report.html import STYLE, html_path, markdown_to_html, page_title, write_markdown_page

REPO = Path(__file__).resolve().parent.parent
TABLES = ("table1", "table2", "table3", "table4", "ablation")


def test_markdown_page_is_self_contained_and_renders_tables():
    md = ("# Claims **here**\n\nValues in `seed-<seed>` and seed-<seed>; 0 < |t| < W & more.\n\n"
          "| Claim | verdict |\n|---|---|\n| C1: a \\| b | **supported** |\n| <script>x</script> | not run |\n\n"
          "Notes:\n- a note\n- another\n")
    page = markdown_to_html(md)
    assert page.startswith("<!DOCTYPE html>") and '<meta charset="utf-8">' in page
    assert "<title>Claims here</title>" in page and STYLE in page
    # self-contained: no scripts, no external stylesheets, fonts or images
    assert "<script" not in page and "<link" not in page and "src=" not in page and "url(" not in page
    # raw HTML in the text is shown as written, never interpreted
    assert "&lt;script&gt;x&lt;/script&gt;" in page and "seed-&lt;seed&gt;" in page
    assert "0 &lt; |t| &lt; W &amp; more" in page
    tables = html_tables(page)
    assert tables == [[["Claim", "verdict"], ["C1: a | b", "supported"], ["<script>x</script>", "not run"]]]
    assert '<div class="table-wrap"><table>' in page
    assert "<p>Notes:</p>\n<ul>\n<li>a note</li>\n<li>another</li>\n</ul>" in page  # a list, as GitHub reads it
    assert page_title("no heading here") == "TACO reproduction"
    assert markdown_to_html("text", title="T & U").count("<title>T &amp; U</title>") == 1


def test_write_markdown_page_writes_both(tmp_path):
    paths = write_markdown_page(tmp_path / "sub" / "page.md", "## Title\n\nbody\n")
    assert paths == [tmp_path / "sub" / "page.md", tmp_path / "sub" / "page.html"]
    assert paths[0].read_text() == "## Title\n\nbody\n" and "<h2>Title</h2>" in paths[1].read_text()
    assert html_path("x/claims.md") == Path("x/claims.html")
    with pytest.raises(ValueError, match="cannot end in .html"):
        write_markdown_page(tmp_path / "page.html", "# x\n")
    assert not list((tmp_path / "sub").glob(".*tmp*"))  # atomic writes leave no temporary file


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    """claims and tables of a small fixture grid (three seeds), written by the commands."""
    from taco.commands.claims import main as claims_main
    from taco.commands.tables import main as tables_main

    tmp = tmp_path_factory.mktemp("pages")
    agg, spec = build_aggregate(tmp, smoke_spec(n_resamples=99, tasks=["sst2", "rte", "mrpc"]), seeds=[1, 2, 3])
    out = tmp / "results"
    args = ["--aggregate-dir", str(agg), "--analysis", str(spec), "--output-dir", str(out)]
    assert claims_main(args) == 0 and tables_main(args) == 0
    return out


def test_claims_page_holds_the_verdict_table(pages):
    md, page = (pages / "claims.md").read_text(), (pages / "claims.html").read_text()
    header, rows = verdict_table(page)
    assert header[:2] == ["Claim", "A vs B"] and any("CI" in h for h in header)
    claims = [ln for ln in md.splitlines() if re.match(r"\| [A-Z]\d+b?: ", ln)]
    assert len(rows) == len(claims) and {r[0].split(":")[0] for r in rows} >= {"C1", "C2", "C3", "S1"}
    # intervals and notes as on the Markdown page
    ci = next(i for i, h in enumerate(header) if h.endswith("CI"))
    assert all(re.fullmatch(r"\[(-?\d+\.\d\d|n/a), (-?\d+\.\d\d|n/a)\]", r[ci]) for r in rows)
    assert {r[-1].split(" (")[0] for r in rows} <= set(VERDICTS)
    assert "Seeds per arm" in page and "Not checked as claims" in page and "<h2>C1: " in page
    manifest = json.loads((pages / "claims.manifest.json").read_text())
    assert "claims.html" in manifest["outputs"]


def test_every_table_has_its_page(pages):
    for t in TABLES:
        md, page = (pages / f"{t}.md").read_text(), (pages / f"{t}.html").read_text()
        tables = html_tables(page)
        assert len(tables) == 1, t
        head_md = next(ln for ln in md.splitlines() if ln.startswith("| "))
        assert tables[0][0] == [c.strip() for c in head_md.strip("|").split(" | ")], t
        body_md = [ln for ln in md.splitlines() if ln.startswith("| ")][1:]
        assert len(tables[0]) - 1 == len(body_md), t
        assert f"<title>{html.escape(page_title(md))}</title>" in page, t
        if "\nNotes:\n- " in md:
            assert "<p>Notes:</p>\n<ul>\n<li>" in page, t
    assert "table1.html" in json.loads((pages / "tables.manifest.json").read_text())["outputs"]


def test_deviations_and_plan_pages(tmp_path):
    from taco.commands.deviations import main as deviations_main
    from taco.workflow.plan import command as plan, costs as plan_costs, render as plan_render

    from test_deviations import resolved

    cfg = tmp_path / "run_config.json"
    cfg.write_text(json.dumps(resolved("configs/smoke.yaml")))
    assert deviations_main(["--config", str(cfg), "--output", str(tmp_path / "deviations.md")]) == 0
    page = (tmp_path / "deviations.html").read_text()
    tables = html_tables(page)
    assert len(tables) == 2 and tables[0][0][:3] == ["Setting", "Paper / official code", "This run"]
    assert f"<title>{html.escape(page_title((tmp_path / 'deviations.md').read_text()))}</title>" in page
    smoke = plan.load_config([str(REPO / "configs" / "smoke.yaml")])
    md, page = write_markdown_page(tmp_path / "plan.md", plan_render.render_markdown(plan_costs.build_plan(smoke)))
    n_md_tables = len(re.findall(r"^\|[-|: ]+\|$", md.read_text(), re.M))
    assert n_md_tables and len(html_tables(page.read_text())) == n_md_tables


def test_blank_check_tells_blank_from_a_page(tmp_path):
    """The screenshot check itself, on synthetic images: a white image is blank, a page is not."""
    from PIL import Image, ImageDraw

    white = tmp_path / "white.png"
    Image.new("RGB", (200, 100), "white").save(white)
    assert "distinct colour" in blank_reason(white)
    drawn = tmp_path / "drawn.png"
    im = Image.new("RGB", (200, 100), "white")
    ImageDraw.Draw(im).text((10, 10), "supported 1.23 [0.1, 2.3]", fill="black")
    ImageDraw.Draw(im).rectangle((5, 40, 190, 90), outline="gray", fill="#eaeef2")
    im.save(drawn)
    assert blank_reason(drawn) is None


def test_claims_page_screenshot_is_not_blank(pages, tmp_path):
    """A headless Chromium renders claims.html to something visible (skipped without a browser)."""
    if find_browser() is None:
        pytest.skip(browser_missing_reason())
    png = screenshot(pages / "claims.html", tmp_path / "claims.png")
    assert blank_reason(png) is None
    empty = tmp_path / "empty.html"
    empty.write_text("<!DOCTYPE html><html><body></body></html>")
    assert blank_reason(screenshot(empty, tmp_path / "empty.png")) is not None  # the check can fail


# ---------------------------------------------------------------------------------------------
# configuration strings are data: shown as written, never a live link, image or script
# ---------------------------------------------------------------------------------------------
#: configuration values that Markdown would read as a javascript: link, an external image, an
#: escaped underscore, an autolink and an entity
HOSTILE = ["[click me](javascript:alert(2))", "![x](http://evil.example/x.png)", "a\\_b.txt",
           "<http://evil.example/a>", "AT&amp;T"]


def _live(page: str) -> list[str]:
    """Whatever in an HTML page links, loads or runs something: href / src attributes, img tags."""
    return re.findall(r"<img\b[^>]*>|\b(?:href|src)\s*=\s*\"[^\"]*\"", page)


def test_no_page_has_an_unsafe_link_or_an_image():
    """The renderer itself (whatever the Markdown says): javascript:/data: links, obfuscated ones and
    images become text; http(s), mailto and relative links stay."""
    md = ("[a](javascript:alert(1)) [b](JaVaScRiPt:alert(1)) [c](java&#x09;script:alert(1)) "
          "[d][ref] ![e](http://evil.example/e.png) ![f](f.png) [ok](https://example.org/x) [rel](other.html) "
          "<someone@example.org>\n\n| cell |\n|---|\n| [g](data:text/html,hi) ![h](http://evil.example/h.png) |\n\n"
          "[ref]: data:text/html;base64,PHNjcmlwdD4=\n")
    page = markdown_to_html(md)
    live = _live(page)
    assert 'href="https://example.org/x"' in live and 'href="other.html"' in live
    assert sum("mailto" in html.unescape(x) for x in live) == 1
    assert len(live) == 3, live  # nothing else: no javascript:, no data:, no img
    text = html.unescape(re.sub(r"<[^>]+>", "", page))
    for shown in ("a b c d [image: e] [image: f] ok rel", "[image: h]"):
        assert shown in text, shown


def test_configuration_strings_show_as_written_in_deviations(tmp_path):
    from test_deviations import resolved

    from taco.commands.deviations import main

    cfg = resolved("configs/local.yaml", corpus={"paths": HOSTILE, "split_by": "blank_line"},
                   tokenizer={"kind": "hub", "hub_id": "[tok](javascript:alert(3))"})
    (tmp_path / "run_config.json").write_text(json.dumps(cfg))
    source = tmp_path / "run `config`.json"  # a backtick in the path named on the page
    source.write_text(json.dumps(cfg))
    assert main(["--config", str(source), "--output", str(tmp_path / "deviations.md")]) == 0
    page = (tmp_path / "deviations.html").read_text()
    assert _live(page) == []
    cells = [c for t in html_tables(page) for row in t for c in row]
    corpus = next(c for c in cells if c.startswith("local text: "))
    assert corpus == "local text: " + ", ".join(HOSTILE)  # every path as written, in order
    assert "Hub tokenizer [tok](javascript:alert(3))" in cells
    assert f"Run configuration: <code>{html.escape(str(source), quote=False)}</code>" in page


def test_results_dir_shows_as_written_in_the_plan():
    from taco.workflow.plan import command as plan, costs as plan_costs, render as plan_render

    for results_dir in ("results/[x](javascript:alert(1))", "results/a\\_b #", "results/![i](http://e.example/i.png)"):
        cfg = plan.load_config([str(REPO / "configs" / "smoke.yaml")], {"results_dir": results_dir})
        p = plan_costs.build_plan(cfg, device_check=None, with_targets=False)
        page = markdown_to_html(plan_render.render_markdown(p))
        assert _live(page) == []
        shown = p["results_dir"]  # as the configuration resolved it (a path: "//" is one "/")
        assert shown.replace("//", "/") == results_dir.replace("//", "/")
        assert f"<h1>Compute plan: {html.escape(shown, quote=False)}</h1>" in page, results_dir


def test_code_spans_hold_any_value():
    from taco.report.markdown_text import md_code, md_text

    for value in ("plain", "a`b", "``x``", "`lead", "a\\_b|c"):
        page = markdown_to_html(f"| c |\n|---|\n| {md_code(value)} |\n")
        assert html_tables(page) == [[["c"], [value]]], value
    assert md_text("line\none") == "line one"  # never a new row, item or heading


@pytest.mark.parametrize("configfile, synthetic", [("configs/smoke.yaml", True), ("configs/cpu-real.yaml", False),
                                                   ("config.yaml", False)])
def test_report_front_page_says_synthetic_first(configfile, synthetic):
    """``workflow/report/workflow.rst`` rendered as ``snakemake --report`` renders it (Jinja2 with
    ``snakemake.config``, then docutils; snakemake/report/__init__.py): the smoke configuration's front
    page opens with the synthetic-data warning, a real-data one carries none."""
    import yaml
    from docutils.core import publish_parts
    from jinja2 import Environment

    root = Path(__file__).resolve().parents[1]
    config = yaml.safe_load((root / configfile).read_text())

    class Snakemake:  # the object Snakemake hands the template
        pass

    Snakemake.config = config
    # Snakemake's own Environment (trim_blocks, lstrip_blocks: a block tag eats its line's newline)
    env = Environment(trim_blocks=True, lstrip_blocks=True)
    rst = env.from_string((root / "workflow/report/workflow.rst").read_text()).render(snakemake=Snakemake)
    body = publish_parts(rst, writer="html", settings_overrides={"halt_level": 2})["html_body"]
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", body))
    assert ("SYNTHETIC DATA" in text) is synthetic
    if synthetic:
        assert text.strip().startswith("SYNTHETIC DATA") and "a synthetic language and its fine-tuning tasks" in text
    assert "Reproduction of Fu et al." in text
