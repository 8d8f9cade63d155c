"""The end-of-run summary: taco.workflow.summary on fixture files, and the Snakefile's
``onsuccess`` block that calls it."""

from __future__ import annotations

import io
import re
import subprocess
import sys
import textwrap
from pathlib import Path

from taco.workflow import summary

REPO = Path(__file__).resolve().parent.parent

CLAIMS = """claim_id,level,claim,verdict,reason
C1,claim,TACO-50k matches MLM-250k,not supported,x
C1,task,TACO-50k matches MLM-250k,,detail only
C2,claim,TACO ahead at equal steps,inconclusive,two seeds
C3,claim,a,supported,
C4,claim,b,not run,not run: 100k
C5,claim,c,not run,not run: base
C5,task,c,not supported,detail
"""

PER_SEED = """size,objective,fraction,step,task,pretrain_seed,seed,score_key,value,degenerate,undefined_metric,path
tiny,mlm,1.0,50,sst2,0,1,sst2,50.0,True,False,r/mlm/sst2/seed-1/metrics.json
tiny,mlm,1.0,50,sst2,0,2,sst2,61.0,False,False,r/mlm/sst2/seed-2/metrics.json
tiny,mlm,1.0,50,mnli,0,1,mnli_m,33.0,False,False,r/mlm/mnli/seed-1/metrics.json
tiny,mlm,1.0,50,mnli,0,1,mnli_mm,0.0,True,True,r/mlm/mnli/seed-1/metrics.json
tiny,taco,1.0,50,sst2,0,1,sst2,70.0,False,False,r/taco/sst2/seed-1/metrics.json
"""


def _results(root: Path) -> Path:
    res = root / "results" / "smoke"
    (res / "aggregate").mkdir(parents=True)
    (res / "claims.csv").write_text(CLAIMS)
    (res / "aggregate" / "per_seed.csv").write_text(PER_SEED)
    return res


def test_counts_from_fixture_files(tmp_path):
    res = _results(tmp_path)
    counts = summary.verdict_counts(res / "claims.csv")
    assert counts == {"supported": 1, "not supported": 1, "inconclusive": 1, "not run": 2}  # task rows ignored
    # 4 runs (mnli's two score keys are one run), 2 of them degenerate (sst2 seed 1, mnli seed 1)
    assert summary.degenerate_counts(res / "aggregate" / "per_seed.csv") == (2, 4)


def test_summary_text(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _results(tmp_path)
    text = summary.run_summary("results/smoke", [tmp_path / "configs" / "smoke.yaml"], {"data_root": "../d"})
    lines = text.splitlines()
    assert len(lines) == 4
    assert lines[0].startswith("TACO run finished. Results: results/smoke/")
    assert "Claims (5): 1 supported, 1 not supported, 1 inconclusive, 0 not decidable, 2 not run" in lines[1]
    assert "results/smoke/claims.md" in lines[1]
    assert lines[2].startswith("Degenerate runs: 2 of 4 fine-tuning runs predicted one class")
    assert "frequent where the model learned little" in lines[2]  # said where it is read (issue 53.3)
    assert lines[3] == ("Report: snakemake --report report.html --configfile configs/smoke.yaml "
                        "--config data_root=../d")


def test_partial_run_names_the_absent_files(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "results" / "local").mkdir(parents=True)
    text = summary.run_summary("results/local")
    assert "Claims: results/local/claims.csv absent" in text
    assert "Degenerate runs: results/local/aggregate/per_seed.csv absent" in text
    assert text.splitlines()[-1] == "Report: snakemake --report report.html"


def test_unreadable_files_are_named_and_print_never_raises(tmp_path):
    res = tmp_path / "r"
    (res / "aggregate").mkdir(parents=True)
    (res / "claims.csv").write_text("claim_id,level\nC1,claim\n")
    (res / "aggregate" / "per_seed.csv").write_text("")
    text = summary.run_summary(res)
    assert "no 'verdict' column" in text and "no 'degenerate' column" in text
    out = io.StringIO()
    summary.print_summary(res, configfiles=[object()], file=out)  # a broken argument: one line, no raise
    assert out.getvalue().startswith("run summary unavailable: TypeError")


def test_unknown_verdicts_are_counted_too(tmp_path):
    (tmp_path / "claims.csv").write_text("level,verdict\nclaim,supported\nclaim,withdrawn\n")
    text = summary.run_summary(tmp_path)
    assert "Claims (2): 1 supported, 0 not supported, 0 inconclusive, 0 not decidable, 0 not run, 1 withdrawn" in text


def _onsuccess_block() -> str:
    text = (REPO / "Snakefile").read_text()
    assert text.count("\nonsuccess:") == 1
    return re.search(r"^onsuccess:\n(?:(?:    .*)?\n)+", text, re.M).group(0)


def test_snakefile_onsuccess_prints_the_summary(tmp_path):
    """The Snakefile's own onsuccess block, in a one-rule workflow (Snakemake's names workflow.configfiles
    and workflow.config_settings.config must exist): the summary is printed after the run."""
    block = _onsuccess_block()
    assert "print_summary(R," in block
    (tmp_path / "cfg.yaml").write_text("results_dir: res\n")
    (tmp_path / "Snakefile").write_text(textwrap.dedent("""\
        R = config["results_dir"]
        FORK_SERVER = []  # the Snakefile's fork servers of this run (none here)
        RESULTS_LOCK = []  # the results-folder lock the Snakefile took (none here)

        rule all:
            output: f"{R}/done.txt"
            run:
                open(output[0], "w").write("x")

        """) + block)
    r = subprocess.run([sys.executable, "-m", "snakemake", "--cores", "1", "--workflow-profile", "none",
                        "--configfile", "cfg.yaml", "--config", "seed=3"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    out = r.stdout + r.stderr
    assert "TACO run finished. Results: res/" in out
    assert "Claims: res/claims.csv absent" in out
    assert "Report: snakemake --report report.html --configfile cfg.yaml --config seed=3" in out


def test_a_missing_middle_budget_is_named(tmp_path):
    from taco.workflow.summary import missing_budget_notes

    chain = [str(tmp_path / f"step-{s}") for s in (2, 4, 6)]
    (tmp_path / "step-4").mkdir()
    notes = missing_budget_notes([chain])
    assert len(notes) == 1 and notes[0].startswith(f"{chain[0]} is missing while the later budget {chain[1]}")
    (tmp_path / "step-2").mkdir()
    assert missing_budget_notes([chain]) == []  # step-6 missing at the end: not yet run, not a note


def test_a_verdict_with_a_scope_says_its_unit(tmp_path):
    """Issue 64.2: where a verdict rests on one checkpoint per arm (claims.csv ``verdict_scope``), the end summary
    prints it with its scope; a verdict without one, a ``not run`` and a task row are not listed."""
    res = tmp_path / "r"
    res.mkdir()
    (res / "claims.csv").write_text(
        "claim_id,level,size,claim,verdict,reason,verdict_scope\n"
        "S1,claim,modernbert_tiny,x,not supported,r,one checkpoint per arm: pre-training variance not sampled\n"
        "E1,claim,tiny,x,supported,r,\n"
        "C4,claim,tiny,x,not run,r,one checkpoint per arm: pre-training variance not sampled\n"
        "S1,task,modernbert_tiny,x,not supported,r,one checkpoint per arm: pre-training variance not sampled\n")
    text = summary.run_summary(res)
    assert ("  S1 [modernbert_tiny]: not supported (one checkpoint per arm: pre-training variance not sampled)"
            in text.splitlines())
    assert "E1 [tiny]" not in text and "C4 [tiny]" not in text
