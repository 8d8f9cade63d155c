"""The paper's tables from the aggregated runs, each beside the published values.

``taco tables --aggregate-dir results/aggregate --analysis FILE --output-dir results`` writes, for
each of ``table1`` (BERT-small GLUE dev and test), ``table2`` (data efficiency: 25% vs full data,
MNLI / QQP / QNLI / SST-2), ``table3`` (base size, MLM and TACO at each budget), ``table4`` (TACO
beside BERT-NCE and INFOWORD: the paper's numbers cited from Kong et al., ICLR 2020, and this suite's
reimplementations measured at equal steps and data) and ``ablation`` (TACO,
concentrated TACO, MLM, MLM+TP over budgets):

- ``<name>.csv``: long form, one row per table row and column: reproduced mean, SD, CI (t interval),
  n_seeds, n_degenerate, the published value and the difference (n/a where unknown), notes;
- ``<name>.md`` and ``<name>.tex``: laid out like the paper, three rows per approach: ours (mean
  +- SD over seeds), paper, and the difference; ``<name>.html``: the Markdown rendered for
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
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from taco.registry import CONTROL, OBJECTIVE_LABELS, OBJECTIVE_SPECS, SCORE_KEY_LABELS, TABLE4_OBJECTIVES
from taco.report.cli import atomic_write_text, report_main, report_parser
from taco.report.analysis_config import AnalysisConfig
from taco.report.stats import (
    GLUE_AVERAGE_KEYS,
    UNIT,
    key_str,
    average_keys,
    average_label,
    ci_method_name,
    fmt_fraction,
    seed_averages,
    summarize,
)

NA = "n/a"

#: column headers as the paper prints them
KEY_LABELS = SCORE_KEY_LABELS
OBJ_LABELS = OBJECTIVE_LABELS
#: the four largest GLUE tasks, the columns of the paper's Table 2
TABLE2_KEYS = ("mnli_m", "mnli_mm", "qqp", "qnli", "sst2")
TABLES = ("table1", "table2", "table3", "table4", "ablation")
KONG_2020 = "Kong et al., ICLR 2020 (cited by the paper; numbers not in paper_values.json)"
#: what a "(paper)" row says when this project has no published value for any of its columns
NOT_AVAILABLE = "published values not available to this project: see docs/paper-facts.md"
#: ``paper_source`` of a row the paper does not have (the no-pre-training control)
NOT_IN_PAPER = "not in the paper"


def load_paper_values() -> dict[str, Any]:
    """The published values packaged in ``taco/resources/paper_values.json`` (importlib.resources)."""
    return json.loads(resources.files("taco").joinpath("resources/paper_values.json").read_text())


def budget_steps_from_name(name: str) -> int | None:
    """``'250k'`` -> 250000, ``'1M'`` -> 1000000; None if the name is not of that form."""
    m = re.fullmatch(r"(\d+(?:\.\d+)?)([kKmM]?)", name or "")
    if not m:
        return None
    mult = {"": 1, "k": 1000, "m": 1_000_000}[m.group(2).lower()]
    return int(round(float(m.group(1)) * mult))


def approach_label(objective: str, budget: str, fraction: float = 1.0, step: int | None = None) -> str:
    """``TACO-250k``, with the data fraction when not 100% and the step when it differs from the
    budget name (``TACO-250k [step 60]``)."""
    lab = f"{OBJ_LABELS.get(objective, objective)}-{budget}" if budget else \
        f"{OBJ_LABELS.get(objective, objective)} @ step {step}"
    if not math.isclose(fraction, 1.0):
        lab += f" ({fmt_fraction(fraction)} data)"
    if budget and step is not None and budget_steps_from_name(budget) != step:
        lab += f" [step {step}]"
    return lab


def _fmt(x: Any, nd: int = 1, signed: bool = False) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return NA
    x = float(x)
    if round(x, nd) == 0:
        x = 0.0  # no "-0.0"
    return f"{x:+.{nd}f}" if signed else f"{x:.{nd}f}"


def _nan(x: Any) -> float:
    return float(x) if x is not None and x == x else math.nan


class TableBuilder:
    """Builds long-form rows of one table from the aggregate frames and the spec."""

    def __init__(self, agg: Mapping[str, pd.DataFrame], cfg: AnalysisConfig, role: str | None = None):
        """``role``: the paper size (``small``/``base``) the table's published numbers belong to;
        rows of a size that is not that model get no difference against them."""
        self.agg, self.cfg, self.role = agg, cfg, role
        self.cells = agg["cells"]
        self.per_seed = agg["per_seed"]
        self.rows: list[dict[str, Any]] = []
        self._cells = {(r["size"], r["objective"], round(float(r["fraction"]), 6), int(r["step"]), r["score_key"]): r
                       for r in self.cells.to_dict("records")}
        ps = self.per_seed
        self._runs = {(size, obj, round(float(frac), 6), int(step)): g
                      for (size, obj, frac, step), g in ps.groupby(["size", "objective", "fraction", "step"])}

    def _cell_row(self, size, obj, frac, step, key) -> Mapping[str, Any] | None:
        return self._cells.get((size, obj, round(float(frac), 6), int(step), key))

    def _avg(self, size, obj, frac, step, keys: Sequence[str]) -> dict[str, Any]:
        sub = self._runs.get((size, obj, round(float(frac), 6), int(step)), self.per_seed.iloc[:0])
        s = seed_averages(sub, keys)
        complete = s[np.isfinite(s["average"].astype(float))]
        # same label as taco.report.stats.glue_average_table, so the CI equals glue_average.csv's
        out = summarize(complete["average"].tolist(), confidence_level=self.cfg.confidence_level,
                        n_resamples=self.cfg.n_resamples, method=self.cfg.ci_method, seed=self.cfg.seed,
                        label=key_str(size, obj, frac, step, "avg|" + ";".join(keys)))
        out["n_degenerate"] = int((complete["degenerate_keys"] != "").sum())
        out["n_incomplete"] = int(len(s) - len(complete))
        return out

    def add(self, *, table: str, section: str, label: str, size: str | None, objective: str,
            fraction: float, budget: str, step: int | None, keys: Sequence[str],
            avg_keys: Sequence[str] | None, paper: Mapping[str, float | None] | None,
            paper_source: str, note: str = "", ours_available: bool = True,
            kind: str = "reproduced") -> None:
        """Append rows (one per key, plus ``avg`` when ``avg_keys``) for one approach.

        ``step`` None or ``ours_available`` False gives n/a reproduced values (note says why).
        ``paper`` maps column -> published value or None (n/a). Differences are ours - paper,
        and only where the column measures the same thing (a partial average is not compared).
        """
        paper = paper or {}
        cols: list[tuple[str, Sequence[str] | None]] = [(k, None) for k in keys]
        if avg_keys is not None:
            cols.append(("avg", tuple(avg_keys)))
        for col, akeys in cols:
            rec: dict[str, Any] = {
                "table": table, "section": section, "kind": kind, "approach": label, "size": size or "",
                "objective": objective, "fraction": fraction, "budget": budget,
                "step": step if step is not None else "", "column": col,
                "column_label": KEY_LABELS.get(col, average_label(akeys) if akeys else col),
                "metric": self.cfg.primary_metric.get(col, "") if akeys is None else "average",
                "unit": UNIT, "n_seeds": 0, "mean": math.nan, "std": math.nan, "ci_low": math.nan,
                "ci_high": math.nan, "n_degenerate": 0,
            }
            notes = [note] if note else []
            if ours_available and step is not None and size:
                if akeys is None:
                    r = self._cell_row(size, objective, fraction, step, col)
                    if r is None or int(r["n_seeds"]) == 0:
                        from taco.report.stats import task_of

                        why = self.cfg.missing_tasks.get(task_of(col))
                        notes.append(f"{KEY_LABELS.get(col, col)} not fine-tuned: {why}" if why else
                                     f"{KEY_LABELS.get(col, col)} not fine-tuned (not in tasks)"
                                     if col not in self.cfg.score_keys else "no runs")
                    else:
                        rec.update(n_seeds=int(r["n_seeds"]), mean=_nan(r["mean"]), std=_nan(r["std"]),
                                   ci_low=_nan(r["ci_low"]), ci_high=_nan(r["ci_high"]),
                                   n_degenerate=int(r["n_degenerate"]))
                        notes += [n for n in str(r.get("note") or "").split("; ")
                                  if n.startswith(("unit: pre-training run", "one pre-training run"))]
                        if rec["n_degenerate"]:
                            notes.append(f"{KEY_LABELS.get(col, col)}: {rec['n_degenerate']} degenerate "
                                         "run(s) included")
                        n_undef = r.get("n_undefined", 0)
                        n_undef = int(n_undef) if n_undef is not None and n_undef == n_undef else 0
                        if n_undef:
                            notes.append(f"{KEY_LABELS.get(col, col)}: {n_undef} run(s) with an undefined "
                                         f"{r.get('primary_metric', 'metric')} (constant predictions) "
                                         "counted as 0")
                elif not akeys:
                    notes.append("no score key of the average was fine-tuned")
                else:
                    s = self._avg(size, objective, fraction, step, akeys)
                    rec.update(n_seeds=s["n"], mean=s["mean"], std=s["std"], ci_low=s["ci_low"],
                               ci_high=s["ci_high"], n_degenerate=s["n_degenerate"])
                    if s["n_degenerate"]:
                        notes.append(f"average: {s['n_degenerate']} seed(s) with a degenerate run included")
                    if s["n"] == 0:
                        notes.append("no seed with every key of the average")
                    if s["n_incomplete"]:
                        notes.append(f"{s['n_incomplete']} incomplete seed(s) excluded")
            pv = paper.get(col)
            rec["paper"] = float(pv) if pv is not None else math.nan
            comparable = akeys is None or tuple(akeys) == GLUE_AVERAGE_KEYS
            if pv is not None and not comparable:
                notes.append("partial average: not comparable with the paper's 9-score average")
            blocker = (self.cfg.paper_comparison_blocker(size, self.role) if size and self.role else
                       self.cfg.paper_comparison_blocker(None, "small"))
            rec["diff"] = rec["mean"] - rec["paper"] if comparable and not blocker else math.nan
            rec["paper_blocker"] = blocker
            if blocker and pv is not None and kind == "reproduced":
                notes.append(blocker)
            rec["paper_source"] = paper_source if pv is not None or paper_source == NOT_IN_PAPER \
                else "UNKNOWN (not published)"
            rec["note"] = "; ".join(dict.fromkeys(n for n in notes if n))
            self.rows.append(rec)

    def frame(self) -> pd.DataFrame:
        """The long-form table."""
        return pd.DataFrame(self.rows)


# ---------------------------------------------------------------------------------------------
# the five tables
# ---------------------------------------------------------------------------------------------
def _budget_note(cfg: AnalysisConfig, size: str | None, budget: str, role: str) -> tuple[int | None, str]:
    if size is None:
        return None, f"no run size plays BERT-{role} (roles.{role} is null): not run"
    step = cfg.budget_step(size, budget)
    if step is None:
        return None, f"budget {budget} not run for size {size!r} (not in budget_names.{size})"
    return step, ""


def _step_note(cfg: AnalysisConfig, size: str | None, budget: str, step: int | None,
               role: str) -> tuple[int | None, str]:
    """Like :func:`_budget_note` for a step that may have no paper budget name."""
    if budget or step is None:
        return _budget_note(cfg, size, budget, role)
    return step, ""


def build_table1(agg, cfg: AnalysisConfig, paper_values: Mapping[str, Any]) -> pd.DataFrame:
    """Table 1: BERT-small MLM-250k, TACO-50k, TACO-250k, GLUE dev (reproduced beside published)
    and test (published only: the test set needs the GLUE server)."""
    tb = TableBuilder(agg, cfg, "small")
    size = cfg.roles.get("small")
    pv = (paper_values.get("table1_bert_small") or {})
    src = "paper Table 1 (paper_values.json)"
    # synthetic tasks have no GLUE test set: no test section to stand beside the paper's
    for section in ("dev",) if cfg.synthetic_tasks else ("dev", "test"):
        published = pv.get(section) or {}
        approaches = [("mlm", "250k"), ("taco", "50k"), ("taco", "250k")]
        if section == "dev" and cfg.has_control(size):  # this suite's sanity baseline, not in the paper
            tb.add(table="table1", section=section, label=f"{OBJ_LABELS[CONTROL]} (control: random init, step 0)",
                   size=size, objective=CONTROL, fraction=1.0, budget="", step=0, keys=GLUE_AVERAGE_KEYS,
                   avg_keys=average_keys(cfg), paper=None, paper_source=NOT_IN_PAPER,
                   note="no-pre-training control: the architecture from random initialisation, fine-tuned alike")
        for obj, budget in approaches:
            name = f"{OBJ_LABELS[obj]}-{budget}"
            if section == "test" and name not in published:
                continue
            step, note = _budget_note(cfg, size, budget, "small")
            if step is not None and not cfg.has_run(size, obj, 1.0):
                note = f"run {obj} (100% data) not in the analysis spec"
            if section == "test":
                note = ("test set scored by the GLUE server only: upload this run's "
                        "glue_submission/.../seed-N.zip (see the test-scores line)")
            tb.add(table="table1", section=section, label=approach_label(obj, budget, 1.0, step), size=size,
                   objective=obj, fraction=1.0, budget=budget, step=step, keys=GLUE_AVERAGE_KEYS,
                   avg_keys=average_keys(cfg), paper=published.get(name), paper_source=src, note=note,
                   ours_available=section == "dev")
    return tb.frame()


def control_average(agg, cfg: AnalysisConfig, size: str | None) -> dict[str, Any] | None:
    """The no-pre-training control's GLUE average of ``size`` as Table 1 prints it (``mean``, ``std``,
    ``ci_low``, ``ci_high``, ``n`` in GLUE points); None when the spec lists no control of ``size``."""
    if not cfg.has_control(size):
        return None
    return TableBuilder(agg, cfg)._avg(size, CONTROL, 1.0, 0, average_keys(cfg))


def build_table2(agg, cfg: AnalysisConfig, paper_values: Mapping[str, Any]) -> pd.DataFrame:
    """Table 2: MLM and TACO on the reduced fraction vs full data, at every budget a reduced-data
    run was fine-tuned at (default 250k), on MNLI-m/mm, QQP, QNLI, SST-2 plus their average."""
    tb = TableBuilder(agg, cfg, "small")
    size = cfg.roles.get("small")
    red = cfg.reduced_fraction
    published = paper_values.get("table2_data_efficiency") or {}  # "MLM-250k (25% data)" -> {key: value}
    steps: set[int] = set()
    for v in cfg.runs:
        if v.size == size and math.isclose(v.fraction, red) and v.objective in ("mlm", "taco"):
            steps.update(cfg.run_steps(v))
    budgets = [(cfg.budget_name(size, st) or "", st) for st in sorted(steps)]
    if not budgets:
        budgets = [("250k", cfg.budget_step(size, "250k"))]
    keys = tuple(k for k in TABLE2_KEYS)
    avg_keys = tuple(k for k in TABLE2_KEYS if k in cfg.score_keys)
    for budget, step in budgets:
        for obj in ("mlm", "taco"):
            for frac in (1.0, red):
                st, note = _step_note(cfg, size, budget, step, "small")
                if st is not None and not cfg.has_run(size, obj, frac):
                    note = f"run {obj} ({fmt_fraction(frac)} data) not in the analysis spec"
                tb.add(table="table2", section="dev", label=approach_label(obj, budget, frac, st), size=size,
                       objective=obj, fraction=frac, budget=budget, step=st, keys=keys, avg_keys=avg_keys,
                       paper=published.get(approach_label(obj, budget, frac)),
                       paper_source="paper Table 2 (paper_values.json)", note=note)
    return tb.frame()


def build_table3(agg, cfg: AnalysisConfig, paper_values: Mapping[str, Any]) -> pd.DataFrame:
    """Table 3: the BERT-base role, MLM and TACO at each budget of that size (published: UNKNOWN)."""
    tb = TableBuilder(agg, cfg, "base")
    size = cfg.roles.get("base")
    published = paper_values.get("table3_base") or {}  # "TACO-250k" -> {key: value}
    budgets = cfg.size_steps(size)
    if not budgets:
        budgets = [(b, None) for b in ("100k", "250k", "500k")]
    for budget, st in budgets:
        for obj in ("mlm", "taco"):
            step, note = _step_note(cfg, size, budget, st, "base")
            if step is not None and not cfg.has_run(size, obj, 1.0):
                note = f"run {obj} not in the analysis spec"
            tb.add(table="table3", section="dev", label=approach_label(obj, budget, 1.0, step), size=size,
                   objective=obj, fraction=1.0, budget=budget, step=step, keys=GLUE_AVERAGE_KEYS,
                   avg_keys=average_keys(cfg), paper=published.get(approach_label(obj, budget)),
                   paper_source="paper Table 3 (paper_values.json)", note=note)
    return tb.frame()


def build_table4(agg, cfg: AnalysisConfig, paper_values: Mapping[str, Any]) -> pd.DataFrame:
    """Table 4: TACO beside BERT-NCE and INFOWORD.

    Published rows: the paper cites BERT-NCE and INFOWORD from Kong et al. (ICLR 2020); those numbers
    and the paper's TACO row (key ``table4_bert_nce_infoword``) are not available to this project, so
    those rows say so. Measured rows: MLM, TACO and this suite's reimplementations of BERT-NCE and
    INFOWORD (``taco.registry.TABLE4_OBJECTIVES``) at the largest budget of the base role (the small role when
    base was not run), at equal steps and data; the reimplementations are labelled as such, never as
    the published numbers."""
    size = cfg.roles.get("base") or cfg.roles.get("small")
    role = "base" if cfg.roles.get("base") else "small"
    tb = TableBuilder(agg, cfg, role)
    published = paper_values.get("table4_bert_nce_infoword") or {}
    for obj in TABLE4_OBJECTIVES:
        spec = OBJECTIVE_SPECS[obj]
        if obj == "mlm":
            continue
        cited = bool(spec.reimplemented_from)
        name = OBJ_LABELS.get(obj, obj)
        tb.add(table="table4", section="dev",
               label=f"{name} (cited from Kong et al., ICLR 2020)" if cited else f"{name} (paper)",
               size=None, objective=obj, fraction=1.0, budget="", step=None, keys=GLUE_AVERAGE_KEYS,
               avg_keys=GLUE_AVERAGE_KEYS, paper=published.get(name),
               paper_source="paper Table 4" + (", cited from Kong et al." if cited else "") + " (paper_values.json)",
               note=(f"cited from {KONG_2020}" if cited else "published Table 4 values UNKNOWN"),
               ours_available=False, kind="cited" if cited else "published")
    if not (size and cfg.size_steps(size)):
        for obj in TABLE4_OBJECTIVES:
            tb.add(table="table4", section="dev", label=f"{OBJ_LABELS.get(obj, obj)} (ours)", size=None,
                   objective=obj, fraction=1.0, budget="", step=None, keys=GLUE_AVERAGE_KEYS,
                   avg_keys=average_keys(cfg), paper=None, paper_source="", note="no size role run")
        return tb.frame()
    budget, step = cfg.size_steps(size)[-1]
    for obj in TABLE4_OBJECTIVES:
        note = f"ours: {role} role (size {size!r}), largest budget"
        if role == "small":
            note += "; base role not run"
        if OBJECTIVE_SPECS[obj].reimplemented_from:
            note += f"; this suite's reimplementation ({OBJECTIVE_SPECS[obj].reimplemented_from}), not the published numbers"
        if not cfg.has_run(size, obj, 1.0):
            note = f"run {obj} not in the analysis spec"
        label = approach_label(obj, budget, 1.0, step) + f" ({role} role" + (
            ", reimplementation)" if OBJECTIVE_SPECS[obj].reimplemented_from else ")")
        tb.add(table="table4", section="dev", label=label, size=size, objective=obj, fraction=1.0, budget=budget,
               step=step, keys=GLUE_AVERAGE_KEYS, avg_keys=average_keys(cfg), paper=None, paper_source="",
               note=note)
    return tb.frame()


ABLATION_OBJECTIVES = ("taco", "taco_concentrated", "mlm", "mlm_tp")


def build_ablation(agg, cfg: AnalysisConfig, paper_values: Mapping[str, Any]) -> pd.DataFrame:
    """Ablation: TACO, concentrated TACO, MLM, MLM+TP at each small-role budget (100% data). The
    published average is known only where Figure 5 plots it (TACO at every budget, MLM at 250k,
    read from the plot +-0.1 points)."""
    tb = TableBuilder(agg, cfg, "small")
    size = cfg.roles.get("small")
    fig5 = paper_values.get("figure5_small_dev_avg_read_from_pixels") or {}
    budgets = cfg.size_steps(size) or [("250k", None)]
    for obj in ABLATION_OBJECTIVES:
        pub = fig5.get({"taco": "TACO", "mlm": "MLM"}.get(obj, ""), {}) or {}
        for budget, st in budgets:
            step, note = _step_note(cfg, size, budget, st, "small")
            if step is not None and not cfg.has_run(size, obj, 1.0):
                note = f"run {obj} not in the analysis spec"
            p = pub.get(budget)
            tb.add(table="ablation", section="dev", label=approach_label(obj, budget, 1.0, step), size=size,
                   objective=obj, fraction=1.0, budget=budget, step=step, keys=GLUE_AVERAGE_KEYS,
                   avg_keys=average_keys(cfg), paper={"avg": 100.0 * p} if p is not None else None,
                   paper_source="paper Figure 5 (read from the plot, +-0.1 points)", note=note)
    return tb.frame()


BUILDERS = {"table1": build_table1, "table2": build_table2, "table3": build_table3,
            "table4": build_table4, "ablation": build_ablation}
TITLES = {
    "table1": "Table 1: BERT-small on GLUE (dev reproduced; test published only)",
    "table2": "Table 2: data efficiency, reduced vs full pre-training data (MNLI, QQP, QNLI, SST-2)",
    "table3": "Table 3: base size, MLM and TACO at each pre-training budget",
    "table4": "Table 4: TACO beside BERT-NCE and INFOWORD (Kong et al., ICLR 2020)",
    "ablation": "Ablation: TACO, concentrated TACO, MLM, MLM+TP over pre-training budgets",
}


# ---------------------------------------------------------------------------------------------
# rendering
# ---------------------------------------------------------------------------------------------
def _avg_header(long: pd.DataFrame, label: str) -> str:
    if label == "GLUE avg (9 scores)":
        return "Avg."
    m = re.search(r": (.*)\)$", label)
    keys = m.group(1).split(", ") if m else []
    return "Avg. (partial: " + ", ".join(KEY_LABELS.get(k, k) for k in keys) + ")"


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
                row[headers[c]] = _fmt(g.loc[c]["paper"])
            out.append(row)
            continue
        ns = sorted({int(n) for n in g["n_seeds"] if n})
        nlab = "n=" + ("/".join(str(n) for n in ns) if ns else "0")
        ours = {"Set": section, "Approach": f"{approach} (ours, {nlab})"}
        paper = {"Set": section, "Approach": f"{approach} (paper)"}
        diff = {"Set": section, "Approach": "  difference (ours - paper)"}
        for c in cols:
            r = g.loc[c]
            m, sd = r["mean"], r["std"]
            ours[headers[c]] = NA if not math.isfinite(m) else (
                _fmt(m) + (f" ±{sd:.1f}" if math.isfinite(sd) else "") + ("*" if r["n_degenerate"] else ""))
            paper[headers[c]] = _fmt(r["paper"])
            diff[headers[c]] = _fmt(r["diff"], signed=True)
        out.append(ours)
        if (g["paper_source"] == NOT_IN_PAPER).all() or blocker.startswith("synthetic"):
            continue
        if not known:
            out.append(_not_available_row(section, f"{approach} (paper)", [headers[c] for c in cols]))
        elif blocker:
            out.append(paper)
        else:
            out += [paper, diff]
    return pd.DataFrame(out)


def _notes(long: pd.DataFrame) -> list[str]:
    notes = []
    for (approach,), g in long.groupby(["approach"], sort=False):
        ns = sorted(set(n for x in g["note"] if x for n in x.split("; ")))
        if ns:
            notes.append(f"{approach}: {'; '.join(ns)}")
    return notes


METRIC_LABELS = {"accuracy": "accuracy", "f1": "F1", "matthews_correlation": "Matthews corr.",
                 "pearson": "Pearson corr.", "spearmanr": "Spearman corr.", "mean": "mean of its metrics"}


def column_metrics_note(long: pd.DataFrame) -> str:
    """Which metric each column is (the primary metric of its score key; the average is the plain
    mean of the columns it covers, each in its own metric), e.g. ``QQP = F1``."""
    parts = []
    for col, g in long.groupby("column", sort=False):
        if col == "avg":
            continue
        metric = next((m for m in g["metric"] if isinstance(m, str) and m), "")
        parts.append(f"{KEY_LABELS.get(col, col)} = {METRIC_LABELS.get(metric, metric or 'n/a')}")
    note = "Columns: " + ", ".join(parts)
    if "avg" in set(long["column"]):
        note += "; Avg. = plain mean of the score columns it names, each in its own metric"
    return note + " (every metric of every run is in the aggregate CSVs; choice: docs/metrics.md)."


def capped_sets_note(cfg: AnalysisConfig | None) -> str:
    """What the fine-tuning runs were capped at (analysis spec ``max_train_samples`` /
    ``max_eval_samples``); empty when nothing was capped or the spec does not say."""
    if cfg is None:
        return ""
    from taco.data.glue import CAP_SAMPLING

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


def synthetic_label(cfg: AnalysisConfig | None) -> str:
    """What is synthetic in this run, for titles (``''`` when the tasks are real): e.g.
    ``SYNTHETIC GLUE-format tasks and synthetic corpus (smoke test; not comparable with the paper)``."""
    if cfg is None or not cfg.synthetic_tasks:
        return ""
    return ("SYNTHETIC GLUE-format tasks" + (" and synthetic corpus" if cfg.synthetic_corpus else "")
            + " (smoke test; not comparable with the paper)")


#: how to obtain test-set numbers (``taco glue-submission``; zips written by the workflow below the results folder)
TEST_SCORES_NOTE = ("Test scores: these are dev-set numbers. For each fine-tuned checkpoint and seed the workflow "
                    "writes a GLUE server submission, `glue_submission/<size>/<objective>/data-<fraction>/step-<step>/"
                    "seed-<seed>.zip` (test-set predictions of every fine-tuned task; its README.md lists which "
                    "files are placeholders for tasks not run); upload it at https://gluebenchmark.com/submit "
                    "for numbers comparable with the paper's test rows.")


def render_markdown(long: pd.DataFrame, title: str, cfg: AnalysisConfig | None = None) -> str:
    """Markdown: title, the wide table, which metric each column is, whether the fine-tuning sets
    were capped (from ``cfg``), and the notes (what is n/a and why)."""
    w = wide_table(long)
    head = list(w.columns)
    lines = [f"## {title}", "", "| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    for _, r in w.iterrows():
        lines.append("| " + " | ".join(str(r[h]).replace("|", "\\|") for h in head) + " |")
    ci = (f"{cfg.confidence_level * 100:g}% CI in the CSV: {ci_method_name(cfg.ci_method)}" if cfg is not None
          else f"CI in the CSV: {ci_method_name('t')}")
    lines += ["", f"Values in {UNIT}; ours = mean ±SD over fine-tuning seeds ({ci}); "
              "`*` = includes degenerate runs (constant predictions; an undefined correlation counts as 0); "
              "n/a = not run or not published (never invented).", "", column_metrics_note(long),
              "", SYNTHETIC_TEST_NOTE if cfg is not None and cfg.synthetic_tasks else TEST_SCORES_NOTE]
    blockers = sorted({b for b in long.get("paper_blocker", pd.Series(dtype=str)) if isinstance(b, str) and b})
    if blockers:
        lines += ["", "No difference against the paper is printed: " + "; ".join(blockers) + "."]
    capped = capped_sets_note(cfg)
    if capped:
        lines += ["", capped]
    notes = _notes(long)
    if notes:
        lines += ["", "Notes:"] + [f"- {n}" for n in notes]
    return "\n".join(lines) + "\n"


def _tex_escape(s: str) -> str:
    rep = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
           "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}", "±": r"$\pm$"}
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
                  f"{UNIT}; ours: mean ±SD over seeds; n/a: not run or not published. "
                  + column_metrics_note(long)) + "}",
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
    if sizes and sizes != [role]:
        title += f" [size run: {', '.join(sizes)}, in the role of BERT-{role}]"
    return f"{title} - {synthetic}" if synthetic else title


def build_tables(agg: Mapping[str, pd.DataFrame], cfg: AnalysisConfig,
                 paper_values: Mapping[str, Any] | None = None) -> dict[str, pd.DataFrame]:
    """All five tables as long-form DataFrames (keys: table1, table2, table3, table4, ablation)."""
    pv = paper_values if paper_values is not None else load_paper_values()
    return {name: BUILDERS[name](agg, cfg, pv) for name in TABLES}


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


def build_parser():
    """The command line of ``taco tables``."""
    return report_parser("tables", __doc__.split("\n")[0])


def main(argv: list[str] | None = None) -> int:
    """``taco tables``: aggregate CSVs + analysis spec -> table{1,2,3,4}/ablation .csv/.md/.html/.tex."""
    return report_main("tables", __doc__.split("\n")[0],
                       lambda agg, cfg, args: write_tables(build_tables(agg, cfg), args.output_dir, cfg), argv)

if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
