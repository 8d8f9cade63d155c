"""docs/claims.md is generated from the claims' declarations (taco.report.claims_definitions) and kept current."""

from __future__ import annotations

from pathlib import Path

import taco.report.claims_definitions as defs
from taco.commands.claims_definitions import main
from taco.stats.claim_rules import CLAIM_KINDS
from taco.stats.claims import CLAIMS, Arm, Claim
from taco.stats.efficiency import PAPER_SPEEDUP

REPO = Path(__file__).resolve().parent.parent
PAGE = REPO / "docs" / "claims.md"


def test_the_committed_page_is_the_generated_one():
    assert PAGE.read_text(encoding="utf-8") == defs.definitions_page(), (
        f"docs/claims.md is stale: run `{defs.REGENERATE}`")
    assert main([str(PAGE), "--check"]) == 0


def test_every_claim_kind_and_e_row_is_on_the_page():
    page = defs.definitions_page()
    rows = [line for line in page.splitlines() if line.startswith("| ") and not line.startswith("| id ")]
    ids = [line.split(" | ")[0][2:] for line in rows]
    assert ids == [c.id for c in CLAIMS] + ["E1", "E1 (probe row)"] + [v[0] for v in PAPER_SPEEDUP.values()]
    for kind in CLAIM_KINDS:
        assert f"- **{kind.replace('_', ' ')}** (" in page
    # the claim's own numbers, where it states them, replace the spec's defaults
    assert "| C2 | " in page and "target 1.2, shortfall 0.6 (supported above 0.6)" in page


def test_a_new_claim_makes_the_committed_page_stale(monkeypatch, tmp_path, capsys):
    """As a maintainer adding a claim would: the page gains its row and the check fails until regenerated."""
    new = Claim("C9", "TACO-150k matches MLM-250k", "a scratch claim", "match", "small",
                Arm("taco", 1.0, "150k"), Arm("mlm", 1.0, "250k"), margin=0.8)
    monkeypatch.setattr(defs, "CLAIMS", (*CLAIMS, new))  # the command reads the page module's
    page = defs.definitions_page()
    assert "| C9 | TACO-150k matches MLM-250k | TACO-150k | MLM-250k | BERT-small | match | 0.8 |" in page
    assert main([str(PAGE), "--check"]) == 1
    assert defs.REGENERATE in capsys.readouterr().err
    out = tmp_path / "claims.md"
    assert main([str(out)]) == 0 and out.read_text(encoding="utf-8") == page
