"""A page's numbers come from its record: every result number of README "The result so far",
docs/cpu-experiment.md and docs/data.md listed here is recomputed from the record's own files (the CSVs `taco
efficiency`, `taco claims` and `taco cpu-seconds` wrote) and must appear on the page as formatted here. A
superseded number cannot stay: re-deciding a record into a new folder changes what these read, and the test
names the page, the text it expected and the record it read. A new result sentence on a page gets its line here.
"""

from __future__ import annotations

import csv
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
RECORDS = REPO / "docs" / "records"
REDECIDED = "2026-12-07-redecided"


@dataclass(frozen=True)
class Value:
    """One number of a record: the rows of ``record`` (a CSV under docs/records/) matching ``where``, column
    ``column``, reduced by ``agg`` (``one``: exactly one row; ``min`` / ``max`` / ``sum`` / ``mean``), times ``scale``,
    formatted with ``fmt``."""

    record: str
    where: dict[str, str] = field(default_factory=dict)
    column: str = ""
    fmt: str = ".2f"
    agg: str = "one"
    scale: float = 1.0

    def number(self) -> float:
        with open(RECORDS / self.record, newline="") as fh:
            rows = [r for r in csv.DictReader(fh) if all(r.get(k) == v for k, v in self.where.items())]
        values = [float(r[self.column]) for r in rows if r[self.column] not in ("", "nan")]
        if self.agg == "one":
            assert len(rows) == 1, f"{self.record}: {len(rows)} rows match {self.where}"
            (x,) = values
        else:
            assert values, f"{self.record}: no value of {self.column} where {self.where}"
            x = {"min": min, "max": max, "sum": sum, "mean": lambda v: sum(v) / len(v)}[self.agg](values)
        return x * self.scale

    def text(self) -> str:
        x = self.number()
        return "inf" if math.isinf(x) else format(x, self.fmt)


def _e(record: str, claim: str, kind: str, column: str, fmt: str = ".2f", **where: str) -> Value:
    return Value(record, {"claim_id": claim, "kind": kind, **where}, column, fmt)


def _c(record: str, claim: str, column: str, fmt: str = ".1f", **where: str) -> Value:
    return Value(record, {"claim_id": claim, "level": "claim", **where}, column, fmt)


BT, MB, LONG = (f"{REDECIDED}/bert-tiny/efficiency.csv", f"{REDECIDED}/modernbert-tiny/efficiency.csv",
                f"{REDECIDED}/bert-tiny-long/efficiency.csv")
BTC, MBC = f"{REDECIDED}/bert-tiny/claims.csv", f"{REDECIDED}/modernbert-tiny/claims.csv"
LOSS = {"form": "validation_mlm_loss"}
PROBE = {"form": "glue_probe_average"}
MB_SIZE = {"size": "modernbert_tiny"}
FT_COST = "2026-12-06-cpu-real-finetune-retuned/cpu_seconds.csv"

#: (page, the text with {} for each value, the values): the text must appear on the page (whitespace-normalised)
CHECKS: list[tuple[str, str, tuple[Value, ...]]] = [
    # E1 on BERT-tiny, primary and secondary budgets, and the paper's factor
    ("README.md", "{}x [{}, {}]", (_e(BT, "E1", "primary", "speedup", **LOSS), _e(BT, "E1", "primary", "calibrated_ci_low", **LOSS),
                                   _e(BT, "E1", "primary", "calibrated_ci_high", **LOSS))),
    ("README.md", "{}x / {}x at T = 800 / 2,000", (_e(BT, "E1", "secondary", "speedup", target_step="800", **LOSS),
                                                   _e(BT, "E1", "secondary", "speedup", target_step="2000", **LOSS))),
    ("README.md", "the calibrated p of \"speedup <= 5\" is {} (upper bound {})",
     (_e(BT, "E1", "primary", "calibrated_p_paper_factor", ".1f", **LOSS), _e(BT, "E1", "primary", "calibrated_ci_high", **LOSS))),
    # the long pair
    ("README.md", "{}x / {}x / {}x at 4k / 8k / 16k", tuple(Value(LONG, {"claim_id": "E1", "target_step": t, "kind": k}, "speedup", ".1f")
                                                          for t, k in (("4000", "secondary"), ("8000", "secondary"), ("16000", "primary")))),
    # E1 on ModernBERT-tiny
    ("README.md", "{}x [{}, {}]; {}x at T = 800", (_e(MB, "E1", "primary", "speedup", **LOSS), _e(MB, "E1", "primary", "calibrated_ci_low", **LOSS),
                                                  _e(MB, "E1", "primary", "calibrated_ci_high", **LOSS),
                                                  _e(MB, "E1", "secondary", "speedup", target_step="800", **LOSS))),
    ("README.md", "{}x at 2,000", (_e(MB, "E1", "secondary", "speedup", target_step="2000", **LOSS),)),
    ("README.md", "p = {} against 1.2x", (_e(MB, "E1", "primary", "calibrated_p_not_supported", ".2g", **LOSS),)),
    ("docs/cpu-experiment.md", "1.08x [{}, {}]; {}x at T = 2,000, {}x at T = 800",
     (_e(MB, "E1", "primary", "calibrated_ci_low", **LOSS), _e(MB, "E1", "primary", "calibrated_ci_high", **LOSS),
      _e(MB, "E1", "secondary", "speedup", target_step="2000", **LOSS), _e(MB, "E1", "secondary", "speedup", target_step="800", **LOSS))),
    ("docs/cpu-experiment.md", "p = {} against 1.2x; p(<= 1x) = {}",
     (_e(MB, "E1", "primary", "calibrated_p_not_supported", ".2g", **LOSS), _e(MB, "E1", "primary", "calibrated_p_faster", ".2g", **LOSS))),
    # the probe rows: not decidable, their crossings' moves
    ("README.md", "BERT-tiny {}x, ModernBERT-tiny {}x", (_e(BT, "E1", "secondary", "speedup", **PROBE),
                                                        _e(MB, "E1", "secondary", "speedup", ".1f", **PROBE))),
    ("README.md", "a crossing moves {}-{}%", (Value(BT, {"claim_id": "E1", **PROBE}, "crossing_move", ".0f", scale=100),
                                             Value(MB, {"claim_id": "E1", **PROBE}, "crossing_move", ".0f", scale=100))),
    # E2 on BERT-tiny
    ("README.md", "BERT-tiny {}x [0, unbounded]; a crossing moves {}%", (_e(BT, "E2", "primary", "speedup"),
                                                                        Value(BT, {"claim_id": "E2", "kind": "primary"}, "crossing_move",
                                                                              ".0f", scale=100))),
    # the GLUE claims: effect [90% decision interval]
    ("README.md", "BERT-tiny {} [{}, {}] points; ModernBERT-tiny {} [{}, {}]",
     (_c(BTC, "C1", "effect"), _c(BTC, "C1", "decision_ci_low"), _c(BTC, "C1", "decision_ci_high"),
      _c(MBC, "C1", "effect", **MB_SIZE), _c(MBC, "C1", "decision_ci_low", **MB_SIZE), _c(MBC, "C1", "decision_ci_high", **MB_SIZE))),
    ("README.md", "BERT-tiny {} [{}, {}]; ModernBERT-tiny +{} [{}, {}]",
     (_c(BTC, "C2", "effect"), _c(BTC, "C2", "decision_ci_low"), _c(BTC, "C2", "decision_ci_high"),
      _c(MBC, "C2", "effect", **MB_SIZE), _c(MBC, "C2", "decision_ci_low", **MB_SIZE), _c(MBC, "C2", "decision_ci_high", **MB_SIZE))),
    ("README.md", "BERT-tiny {} [{}, {}]; ModernBERT-tiny {} [{}, {}]",
     (_c(BTC, "S1", "effect"), _c(BTC, "S1", "decision_ci_low"), _c(BTC, "S1", "decision_ci_high"),
      _c(MBC, "S1", "effect", **MB_SIZE), _c(MBC, "S1", "decision_ci_low", **MB_SIZE), _c(MBC, "S1", "decision_ci_high", **MB_SIZE))),
    # the whole rule's detectable gaps, smallest-largest over the decided GLUE claims
    ("README.md", "3 seeds detect only {}-{} points (BERT-tiny) and {}-{} (ModernBERT-tiny)",
     (Value(BTC, {"level": "claim", "size": "tiny"}, "detectable_gap", ".1f", "min"),
      Value(BTC, {"level": "claim", "size": "tiny"}, "detectable_gap", ".1f", "max"),
      Value(MBC, {"level": "claim", **MB_SIZE}, "detectable_gap", ".1f", "min"),
      Value(MBC, {"level": "claim", **MB_SIZE}, "detectable_gap", ".1f", "max"))),
    # the cost of cpu-real: one measured figure, its fine-tuning parts from the record
    ("docs/cpu-experiment.md", "fine-tuning trials {}, reported fine-tuning {}",
     (Value(FT_COST, {"rule folder": "finetune_tuning"}, "cpu_seconds", ",.1f"),
      Value(FT_COST, {"rule folder": "finetune"}, "cpu_seconds", ",.1f"))),
]

# docs/cpu-experiment.md's tables, two decimals
CHECKS += [
    ("docs/cpu-experiment.md", "BERT-tiny {} [{}, {}]; ModernBERT-tiny {} [{}, {}]",
     tuple(_c(rec, claim, col, ".2f", **where) for rec, where in ((BTC, {}), (MBC, MB_SIZE))
           for col in ("effect", "decision_ci_low", "decision_ci_high")))
    for claim in ("C1",)
] + [
    ("docs/cpu-experiment.md", "BERT-tiny {} [{}, {}]; ModernBERT-tiny +{} [{}, {}]",
     tuple(_c(rec, "C2", col, ".2f", **where) for rec, where in ((BTC, {}), (MBC, MB_SIZE))
           for col in ("effect", "decision_ci_low", "decision_ci_high"))),
    ("docs/cpu-experiment.md", "BERT-tiny {} [{}, {}]; ModernBERT-tiny",
     tuple(_c(BTC, "S1", col, ".2f") for col in ("effect", "decision_ci_low", "decision_ci_high"))),
    ("docs/cpu-experiment.md", ", {} [{}, {}] (CoLA",
     tuple(_c(MBC, "S1", col, ".2f", **MB_SIZE) for col in ("effect", "decision_ci_low", "decision_ci_high"))),
    ("docs/cpu-experiment.md", "3.96x [calibrated 90% {}, {}]; {}x at T = 2,000, {}x at 800",
     (_e(BT, "E1", "primary", "calibrated_ci_low", **LOSS), _e(BT, "E1", "primary", "calibrated_ci_high", **LOSS),
      _e(BT, "E1", "secondary", "speedup", target_step="2000", **LOSS),
      _e(BT, "E1", "secondary", "speedup", target_step="800", **LOSS))),
    ("docs/cpu-experiment.md", "{}x / {}x / {}x / {}x at 4k / 8k / 12k / 16k",
     tuple(Value(LONG, {"claim_id": "E1", "target_step": t, "kind": k}, "speedup", ".1f")
           for t, k in (("4000", "secondary"), ("8000", "secondary"), ("12000", "secondary"), ("16000", "primary")))),
    ("docs/cpu-experiment.md", "BERT-tiny {}x [{}, {}]; ModernBERT-tiny {}x [{}, unbounded]",
     (_e(BT, "E1", "secondary", "speedup", **PROBE), _e(BT, "E1", "secondary", "calibrated_ci_low", ".0f", **PROBE),
      _e(BT, "E1", "secondary", "calibrated_ci_high", **PROBE), _e(MB, "E1", "secondary", "speedup", ".1f", **PROBE),
      _e(MB, "E1", "secondary", "calibrated_ci_low", **PROBE))),
]

WINDOW = "2026-12-07-tc-window/curves.csv"


def _w(column: str, step: str, fmt: str = ".3f", agg: str = "one", **where: str) -> Value:
    return Value(WINDOW, {"step": step, **where}, column, fmt, agg)


W255 = {"arm": "TACO W=255", "source": "this record"}
CHECKS += [
    # the window record: W = 255 never leaves the plateau, its loss above MLM's; W = 5 reproduces
    (page, "(order gap at most {} nats) and their MLM loss at 1,500 ({}, {}, {}) is above MLM alone's ({}-{})",
     (Value(WINDOW, {"arm": "TACO W=255"}, "probe_order_gap", ".3f", "max"),
      _w("mlm_loss", "1500", seed="1", **W255), _w("mlm_loss", "1500", seed="0", **W255), _w("mlm_loss", "1500", seed="2", **W255),
      _w("mlm_loss", "1500", agg="min", arm="MLM"), _w("mlm_loss", "1500", agg="max", arm="MLM")))
    for page in ("README.md", "docs/cpu-experiment.md")
]



@dataclass(frozen=True)
class Gap:
    """A difference of two record numbers, ``a - b``, formatted (a page's "trails by")."""

    a: Value
    b: Value
    fmt: str = ".2f"

    @property
    def record(self) -> str:
        return f"{self.a.record} - {self.b.record}"

    def text(self) -> str:
        return format(self.a.number() - self.b.number(), self.fmt)


REPLICATES = "2026-12-07-modernbert-replicates/this_vm_curves.csv"
RECORDED_MB = Value("2026-12-07-modernbert-widened/efficiency_curves.csv",
                    {"objective": "mlm", "step": "800", "size": "modernbert_tiny"}, "value", agg="mean")
CHECKS += [
    # ModernBERT-tiny's new MLM runs against the three recorded ones at step 800
    ("README.md", "trail the three recorded ones by {}-{} nats at step 800",
     tuple(Gap(Value(REPLICATES, {"objective": "mlm", "step": "800", "pretrain_seed": seed}, "value"), RECORDED_MB)
           for seed in ("3", "4"))),
    ("docs/cpu-experiment.md", "MLM seeds 3 and 4 trail the recorded MLM runs by {} and {} nats at step 800",
     tuple(Gap(Value(REPLICATES, {"objective": "mlm", "step": "800", "pretrain_seed": seed}, "value"), RECORDED_MB)
           for seed in ("3", "4"))),
]

#: the one measured cost of configs/cpu-real.yaml, as every page that states it writes it
CPU_REAL_COST = "7.6 CPU-h"
COST_PAGES = ("README.md", "docs/cpu-experiment.md", "docs/data.md")


def _normalised(text: str) -> str:
    return re.sub(r"\s+", " ", text)


@pytest.mark.parametrize("page,template,values", CHECKS, ids=[f"{p}:{t[:40]}" for p, t, _ in CHECKS])
def test_a_result_number_on_a_page_is_its_record(page, template, values):
    expected = template.format(*(v.text() for v in values))
    text = _normalised((REPO / page).read_text(encoding="utf-8"))
    assert _normalised(expected) in text, (
        f"{page} should say {expected!r} (from {', '.join(sorted({v.record for v in values}))}); "
        "a superseded number, or a page that no longer states it: update the page or this check")


def test_cpu_real_has_one_cost_on_every_page():
    """One cost for configs/cpu-real.yaml (measured, with the plan beside it): the pages that state it say the
    same figure, and none keeps the superseded ones (~2 h, ~43 + ~69 min)."""
    for page in COST_PAGES:
        text = _normalised((REPO / page).read_text(encoding="utf-8"))
        assert CPU_REAL_COST in text, page
        for old in ("~43 min", "~69 min", "~2 h of"):
            assert old not in text, (page, old)


def test_the_checker_fails_on_a_superseded_number(tmp_path, monkeypatch):
    """The mechanism itself: a page with the old headline (3.51x) against the re-decided record fails."""
    page = tmp_path / "README.md"
    page.write_text("E1 on BERT-tiny: 3.51x [2.78, 4.24]\n")
    monkeypatch.setitem(globals(), "REPO", tmp_path)
    page_name, template, values = CHECKS[0]
    with pytest.raises(AssertionError, match=r"should say '3\.96x \[3\.34, 4\.29\]'"):
        test_a_result_number_on_a_page_is_its_record(page_name, template, values)


def _cells(row: str) -> int:
    """The cells of a Markdown table row: ``|`` outside code spans and not escaped."""
    n, code, prev = 0, False, ""
    for ch in row.strip().strip("|"):
        if ch == "`":
            code = not code
        elif ch == "|" and not code and prev != "\\":
            n += 1
        prev = ch
    return n + 1


def test_every_table_row_has_its_header_columns():
    """A row pasted into the wrong table (a record row inside a result table) shows as a row with another number
    of cells than its header: README and every page of docs/ (not the records' generated pages)."""
    bad = []
    for page in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]:
        header = None
        for i, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
            if not line.startswith("|"):
                header = None
                continue
            if header is None:
                header = _cells(line)
            elif _cells(line) != header:
                bad.append(f"{page.relative_to(REPO)}:{i}: {_cells(line)} cells, its header {header}")
    assert not bad, "\n".join(bad)
