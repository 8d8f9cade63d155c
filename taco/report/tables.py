"""The paper's tables from the aggregated runs, each beside the published values.

``taco tables --aggregate-dir results/aggregate --analysis FILE --output-dir results`` writes, for
each of ``table1`` (BERT-small GLUE dev and test), ``table2`` (data efficiency: 25% vs full data,
MNLI / QQP / QNLI / SST-2), ``table3`` (base size, MLM and TACO at each budget), ``table4`` (TACO
beside BERT-NCE and INFOWORD: the paper's numbers cited from Kong et al., ICLR 2020, and this suite's
reimplementations measured at equal steps and data) and ``ablation`` (TACO,
concentrated TACO, MLM, MLM+TP over budgets):

- ``<name>.csv``: long form, one row per table row and column: reproduced mean, SD, median, CI (t
  interval), n_seeds, n_degenerate, ``not_fine_tuned`` (why a column's task was not fine-tuned, else
  empty), the published value and the difference (n/a where unknown), notes;
- ``<name>.md`` and ``<name>.tex``: laid out like the paper, up to four rows per approach: ours (mean
  +- SD over seeds), ours, median (over the same units: encoder papers quote the median of 5
  fine-tuning runs), paper, and the difference; a column not fine-tuned is noted once per table; ``<name>.html``: the Markdown rendered for
  ``snakemake --report`` (:mod:`taco.report.html`).

Units: GLUE points (x100). Published values: ``taco/resources/paper_values.json``, the one place
they live (Table 1 and the Figure 5 averages; the keys ``table2_data_efficiency``, ``table3_base`` and
``table4_bert_nce_infoword`` are null because this project's sources do not give those tables: their
"(paper)" rows say "published values not available to this project", never invented numbers).

Honest labels: with synthetic GLUE-format tasks (analysis spec ``glue_source: synthetic``) every
title says so, Table 1 has no test section and no row compares with the paper; for a size whose model
is not the paper's size it plays (``presets``), the published row stays for reference but no
difference row is printed.
Budgets and sizes come from the analysis spec: a paper budget name is mapped to the step that was
actually run, and the step is shown when it differs from the name.
Rows are built by :mod:`taco.stats.table_data`; this module renders them and writes the files.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from taco.manifest import atomic_write_text
from taco.stats.analysis_config import AnalysisConfig
from taco.stats.aggregate import UNIT
from taco.stats.inference import ci_method_name
from taco.registry import SCORE_KEY_LABELS
from taco.report.synthetic_label import synthetic_label
from taco.stats.table_data import NOT_IN_PAPER, NOT_IN_TASKS, PROBE_COLUMN, PROBE_LABEL, TITLES

NA = "n/a"
#: the label of the row under each "(ours)" row: the median over the same units as the mean
MEDIAN_LABEL = "ours, median"
#: marks a value whose runs started from another task's fine-tuned model (``finetune.mnli_start``)
START_MARK = "†"

#: what a "(paper)" row says when this project has no published value for any of its columns
NOT_AVAILABLE = "published values not available to this project: see docs/paper-facts.md"


def _fmt(x: Any, nd: int = 1, signed: bool = False) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return NA
    x = float(x)
    if round(x, nd) == 0:
        x = 0.0  # no "-0.0"
    return f"{x:+.{nd}f}" if signed else f"{x:.{nd}f}"



# ---------------------------------------------------------------------------------------------
# rendering
# ---------------------------------------------------------------------------------------------
def _avg_header(long: pd.DataFrame, label: str) -> str:
    if label == "GLUE avg (9 scores)":
        return "Avg."
    m = re.search(r": (.*)\)$", label)
    keys = m.group(1).split(", ") if m else []
    return "Avg. (partial: " + ", ".join(SCORE_KEY_LABELS.get(k, k) for k in keys) + ")"


def _not_available_row(section: str, approach: str, headers: Sequence[str]) -> dict[str, str]:
    """A "(paper)" row without any published value: the :data:`NOT_AVAILABLE` sentence in its first
    value column instead of a row of n/a."""
    row = {"Set": section, "Approach": approach}
    for i, h in enumerate(headers):
        row[h] = NOT_AVAILABLE if i == 0 else ""
    return row


def wide_table(long: pd.DataFrame) -> pd.DataFrame:
    """Paper layout: per approach up to three rows (ours mean +- SD with n, paper, difference); one
    column per score key plus the average, all as display strings (``n/a`` where unknown).

    The "(paper)" row of an approach with no published value at all says :data:`NOT_AVAILABLE`
    (and has no difference row); a row the paper does not have (the control) gets neither; with
    synthetic tasks there is no paper or difference row; for a model that is not the paper's size
    the paper row stays for reference and the difference row is left out (``paper_blocker``)."""
    cols = list(dict.fromkeys(long["column"]))
    headers = {c: long[long["column"] == c]["column_label"].iloc[0] for c in cols}
    headers = {c: _avg_header(long, h) if c == "avg" else h for c, h in headers.items()}
    out = []
    for (section, approach), g in long.groupby(["section", "approach"], sort=False):
        g = g.set_index("column")
        kind = g["kind"].iloc[0]
        known = bool(g["paper"].notna().any())
        blocker = next((b for b in g.get("paper_blocker", pd.Series(dtype=str)) if isinstance(b, str) and b), "")
        if kind != "reproduced":  # cited or published-only rows: one row, the known values
            if blocker.startswith("synthetic"):
                continue  # the paper's rows have nothing to stand beside on synthetic tasks
            if not known:
                out.append(_not_available_row(section, approach, [headers[c] for c in cols]))
                continue
            row = {"Set": section, "Approach": approach}
            for c in cols:
                row[headers[c]] = _fmt(g.loc[c]["paper"]) if c in g.index else ""
            out.append(row)
            continue
        ns = sorted({int(n) for n in g["n_seeds"] if n})
        nlab = "n=" + ("/".join(str(n) for n in ns) if ns else "0")
        ours = {"Set": section, "Approach": f"{approach} (ours, {nlab})"}
        median = {"Set": section, "Approach": f"{approach} ({MEDIAN_LABEL}, {nlab})"}
        paper = {"Set": section, "Approach": f"{approach} (paper)"}
        diff = {"Set": section, "Approach": "  difference (ours - paper)"}
        medians = g["median"] if "median" in g else pd.Series(math.nan, index=g.index)
        for c in cols:
            if c not in g.index:  # a column only some sections have (the probe: not on the test set)
                for row in (ours, median, paper, diff):
                    row[headers[c]] = ""
                continue
            r = g.loc[c]
            m, sd = r["mean"], r["std"]
            start = START_MARK if isinstance(r.get("init_from"), str) and r.get("init_from") else ""
            ours[headers[c]] = NA if not math.isfinite(m) else (
                _fmt(m) + (f" ±{sd:.1f}" if math.isfinite(sd) else "") + ("*" if r["n_degenerate"] else "") + start)
            median[headers[c]] = _fmt(medians.loc[c]) + (start if math.isfinite(medians.loc[c]) else "")
            paper[headers[c]] = _fmt(r["paper"])
            diff[headers[c]] = _fmt(r["diff"], signed=True)
        out.append(ours)
        # at 1 or 2 seeds the median is the mean: a row repeating it says nothing (MEDIAN_NOTE says so)
        if any(math.isfinite(float(x)) for x in medians) and max(ns, default=0) >= 3:
            out.append(median)
        if (g["paper_source"] == NOT_IN_PAPER).all() or blocker.startswith("synthetic"):
            continue
        if not known:
            out.append(_not_available_row(section, f"{approach} (paper)", [headers[c] for c in cols]))
        elif blocker:
            out.append(paper)
        else:
            out += [paper, diff]
    return pd.DataFrame(out)


def not_fine_tuned_notes(long: pd.DataFrame) -> tuple[list[str], set[str]]:
    """The table's columns whose task was not fine-tuned, said once per table: one line per reason
    (``QQP, QNLI not fine-tuned (not in tasks); n/a in every row``), and the per-row note texts they
    replace (which :func:`_notes` leaves out). A reason comes from the rows' ``not_fine_tuned`` column
    (:class:`taco.stats.table_data.TableBuilder`: ``not in tasks`` or the analysis spec's
    ``missing_tasks`` reason); columns are named in the table's order."""
    if "not_fine_tuned" not in long:
        return [], set()
    rows = long[long["not_fine_tuned"].fillna("").astype(str) != ""]
    by_reason: dict[str, list[str]] = {}
    for col, why in zip(rows["column"], rows["not_fine_tuned"]):
        label = SCORE_KEY_LABELS.get(col, col)
        if label not in by_reason.setdefault(why, []):
            by_reason[why].append(label)
    lines = [f"{', '.join(cols)} not fine-tuned ({why}): n/a in every row" for why, cols in by_reason.items()]
    replaced = {f"{SCORE_KEY_LABELS.get(c, c)} not fine-tuned ({NOT_IN_TASKS})" if w == NOT_IN_TASKS else
                f"{SCORE_KEY_LABELS.get(c, c)} not fine-tuned: {w}" for c, w in zip(rows["column"], rows["not_fine_tuned"])}
    return lines, replaced


def _notes(long: pd.DataFrame) -> list[str]:
    """The notes under the table: the not-fine-tuned columns once (:func:`not_fine_tuned_notes`), then
    per approach what else is n/a or special about its row."""
    notes, replaced = not_fine_tuned_notes(long)
    for (approach,), g in long.groupby(["approach"], sort=False):
        ns = sorted(set(n for x in g["note"] if x for n in x.split("; ")) - replaced)
        if ns:
            notes.append(f"{approach}: {'; '.join(ns)}")
    return notes


METRIC_LABELS = {"accuracy": "accuracy", "f1": "F1", "matthews_correlation": "Matthews corr.",
                 "pearson": "Pearson corr.", "spearmanr": "Spearman corr.", "mean": "mean of its metrics",
                 PROBE_COLUMN: "the frozen-feature GLUE probe's average (x100; a linear / ridge probe on the "
                               "checkpoint's mean-pooled features, no fine-tuning; the tasks of "
                               "pretrain.glue_probe, not necessarily the columns' tasks; n = pre-training runs)"}


def column_metrics_note(long: pd.DataFrame) -> str:
    """Which metric each column is (the primary metric of its score key; the average is the plain
    mean of the columns it covers, each in its own metric), e.g. ``QQP = F1``."""
    parts = []
    for col, g in long.groupby("column", sort=False):
        if col == "avg":
            continue
        metric = next((m for m in g["metric"] if isinstance(m, str) and m), "")
        label = PROBE_LABEL if col == PROBE_COLUMN else SCORE_KEY_LABELS.get(col, col)
        parts.append(f"{label} = {METRIC_LABELS.get(metric, metric or 'n/a')}")
    note = "Columns: " + ", ".join(parts)
    if "avg" in set(long["column"]):
        note += "; Avg. = plain mean of the score columns it names, each in its own metric"
    return note + " (every metric of every run is in the aggregate CSVs; choice: docs/metrics.md)."


def capped_sets_note(cfg: AnalysisConfig | None) -> str:
    """What the fine-tuning runs were capped at (analysis spec ``max_train_samples`` /
    ``max_eval_samples``); empty when nothing was capped or the spec does not say."""
    if cfg is None:
        return ""
    from taco.registry import CAP_SAMPLING

    caps = []
    if cfg.max_train_samples:
        caps.append(f"training sets capped at {cfg.max_train_samples} examples per task")
    if cfg.max_eval_samples:
        caps.append(f"dev sets capped at {cfg.max_eval_samples} examples per task (MNLI: per dev set)")
    if not caps:
        return ""
    return ("Capped data: " + "; ".join(caps) + f", each {CAP_SAMPLING}, not the first rows of the file. "
            "The paper used the full sets: these numbers are not comparable with its rows in absolute terms.")


#: with synthetic tasks: there is no GLUE test score to get (no upload advice)
SYNTHETIC_TEST_NOTE = ("Test scores: none. These are dev-set numbers on this suite's SYNTHETIC GLUE-format tasks; "
                       "their test rows are not the GLUE test sets, so the `glue_submission` zips of this run "
                       "cannot be submitted to the GLUE server and nothing here compares with the paper's numbers.")


#: how to obtain test-set numbers (``taco glue-submission``; zips written by the workflow below the results folder)
TEST_SCORES_NOTE = ("Test scores: these are dev-set numbers. For each fine-tuned checkpoint and seed the workflow "
                    "writes a GLUE server submission, `glue_submission/<size>/<objective>/data-<fraction>/step-<step>/"
                    "seed-<seed>.zip` (test-set predictions of every fine-tuned task; its README.md lists which "
                    "files are placeholders for tasks not run); upload it at https://gluebenchmark.com/submit "
                    "for numbers comparable with the paper's test rows.")


#: what the median row is (encoder papers quote the median of 5 fine-tuning runs)
MEDIAN_NOTE = ("ours, median = the median over the same runs as the mean (the number encoder papers quote, \"median of 5\"; "
               "shown from 3 runs: at 1 or 2 it equals the mean)")


def start_note(long: pd.DataFrame) -> str:
    """What :data:`START_MARK` means, naming the columns it marks; "" when no run of the table started from
    another task's fine-tuned model (``finetune.mnli_start`` off)."""
    if "init_from" not in long:
        return ""
    rows = long[long["init_from"].fillna("").astype(str) != ""]
    if rows.empty:
        return ""
    cols = ", ".join(dict.fromkeys(SCORE_KEY_LABELS.get(c, c) for c in rows["column"]))
    src = ", ".join(sorted({t.upper() for x in rows["init_from"] for t in str(x).split(";")}))
    return (f"{START_MARK} = started from the {src} fine-tuned model of the same checkpoint and seed (its encoder, a "
            f"new head; finetune.mnli_start), as MosaicBERT and ModernBERT evaluate, not from the pre-trained "
            f"checkpoint as the paper's scripts do: {cols}. The averages include these columns.")


def render_markdown(long: pd.DataFrame, title: str, cfg: AnalysisConfig | None = None) -> str:
    """Markdown: title, the wide table, which metric each column is, whether the fine-tuning sets
    were capped (from ``cfg``), and the notes (what is n/a and why)."""
    w = wide_table(long)
    head = list(w.columns)
    from taco.report.markdown_text import md_cell

    # every cell and header may hold configuration strings (budget names, objective labels): escaped, so a name
    # like "<img ...>" or "[x](javascript:...)" shows as written and is never live HTML or a link
    lines = [f"## {md_cell(title)}", "", "| " + " | ".join(md_cell(h) for h in head) + " |",
             "|" + "|".join("---" for _ in head) + "|"]
    for _, r in w.iterrows():
        lines.append("| " + " | ".join(md_cell(r[h]) for h in head) + " |")
    ci = (f"{cfg.confidence_level * 100:g}% CI in the CSV: {ci_method_name(cfg.ci_method)}" if cfg is not None
          else f"CI in the CSV: {ci_method_name('t')}")
    lines += ["", f"Values in {UNIT}; ours = mean ±SD over fine-tuning seeds ({ci}); {MEDIAN_NOTE}; "
              "`*` = includes degenerate runs (constant predictions; an undefined correlation counts as 0); "
              "n/a = not run or not published (never invented).", "", column_metrics_note(long),
              "", SYNTHETIC_TEST_NOTE if cfg is not None and cfg.synthetic_tasks else TEST_SCORES_NOTE]
    start = start_note(long)
    if start:
        lines += ["", start]
    blockers = sorted({b for b in long.get("paper_blocker", pd.Series(dtype=str)) if isinstance(b, str) and b})
    if blockers:
        lines += ["", "No difference against the paper is printed: " + "; ".join(blockers) + "."]
    capped = capped_sets_note(cfg)
    if capped:
        lines += ["", capped]
    notes = _notes(long)
    if notes:
        lines += ["", "Notes:"] + [f"- {md_cell(n)}" for n in notes]
    return "\n".join(lines) + "\n"


def _tex_escape(s: str) -> str:
    rep = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
           "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}", "±": r"$\pm$",
           START_MARK: r"$^\dagger$"}
    return "".join(rep.get(ch, ch) for ch in str(s))


def render_latex(long: pd.DataFrame, title: str) -> str:
    """LaTeX (booktabs) table in the paper's layout, with a caption naming units, the metric of each
    column (:func:`column_metrics_note`) and n/a."""
    w = wide_table(long)
    head = list(w.columns)
    lines = [r"\begin{table}[t]", r"\centering", r"\small",
             r"\begin{tabular}{ll" + "r" * (len(head) - 2) + "}", r"\toprule",
             " & ".join(_tex_escape(h) for h in head) + r" \\", r"\midrule"]
    prev = None
    for i, r in w.iterrows():
        if prev is not None and r["Set"] != prev:
            lines.append(r"\midrule")
        prev = r["Set"]
        lines.append(" & ".join(_tex_escape(r[h]) for h in head) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}",
              r"\caption{" + _tex_escape(title) + ". " + _tex_escape(
                  f"{UNIT}; ours: mean ±SD over seeds; {MEDIAN_NOTE}; n/a: not run or not published. "
                  + column_metrics_note(long) + (" " + start_note(long) if start_note(long) else "")) + "}",
              r"\end{table}"]
    return "\n".join(lines) + "\n"


#: the paper's model size behind each table (its role in the analysis spec)
TABLE_ROLES = {"table1": "small", "table2": "small", "table3": "base", "table4": "base", "ablation": "small"}


def table_title(name: str, long: pd.DataFrame, cfg: AnalysisConfig | None = None) -> str:
    """The table's title; says which configured size played the paper's size when they differ, and
    (``cfg`` with synthetic tasks) that the tasks are synthetic."""
    sizes = sorted({str(x) for x in long.get("size", pd.Series(dtype=str)) if x})
    role = TABLE_ROLES[name]
    title = TITLES[name]
    synthetic = synthetic_label(cfg)
    if synthetic:
        title = title.replace(" on GLUE", " on synthetic GLUE-format tasks")
    if "section" in long and "test" not in set(long["section"]):  # no test rows here (synthetic tasks)
        title = title.replace("; test published only", "")
    if sizes and sizes != [role]:
        title += f" [size run: {', '.join(sizes)}, in the role of BERT-{role}]"
    return f"{title} - {synthetic}" if synthetic else title


def write_tables(tables: Mapping[str, pd.DataFrame], out_dir: str | Path,
                 cfg: AnalysisConfig | None = None) -> list[Path]:
    """Write ``<name>.csv``, ``.md`` (and its ``.html`` rendering for the report), ``.tex`` for each
    table into ``out_dir`` (atomic per file); ``cfg`` adds the capped-sets note to the ``.md`` files."""
    from taco.report.html import write_markdown_page

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, df in tables.items():
        title = table_title(name, df, cfg)
        written.append(atomic_write_text(out / f"{name}.csv", df.to_csv(index=False, float_format="%.6g")))
        written += write_markdown_page(out / f"{name}.md", render_markdown(df, title, cfg))
        written.append(atomic_write_text(out / f"{name}.tex", render_latex(df, title)))
    return written
