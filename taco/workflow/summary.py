"""The summary printed when a workflow run ends: the Snakefile's ``onsuccess`` block calls
:func:`print_summary`.

It says where the results are, the verdict counts of ``<results_dir>/claims.csv`` (supported / not
supported / inconclusive / not run, over the claim-level rows), how many fine-tuning runs are
degenerate (constant predictions or an undefined primary metric, the ``degenerate`` column of
``<results_dir>/aggregate/per_seed.csv``), and the command that builds the HTML report. A run of
partial targets (one table, the corpus only) has no claims or aggregate yet: the summary says which
file is absent instead of failing, and nothing here ever raises into Snakemake (:func:`print_summary`
reports its own errors as one line). Reads CSV with the standard library only, so it works in every
environment that runs Snakemake.
"""

from __future__ import annotations

import csv
import json
import os
import shlex
import sys
from collections import Counter
from pathlib import Path
from typing import Iterable, Mapping

#: The claim verdicts in the order the summary lists them (taco.stats.claim_rules' values; read from the CSV
#: with the standard library only, so not imported).
VERDICTS = ("supported", "not supported", "inconclusive", "not decidable", "not run")


def scoped_verdicts(claims_csv: str | os.PathLike) -> list[str]:
    """One line per claim-level row of ``claims.csv`` whose verdict carries a scope (``verdict_scope``: one
    checkpoint per arm, a proxy, a plateau): ``S1 [modernbert_tiny]: not supported (one checkpoint per arm: ...)``.
    Empty for a file without the column (an older run). Raises as :func:`verdict_counts`."""
    out = []
    with open(claims_csv, newline="") as fh:
        reader = csv.DictReader(fh)
        if not reader.fieldnames or "verdict_scope" not in reader.fieldnames:
            return out
        for row in reader:
            scope, verdict = (row.get("verdict_scope") or "").strip(), (row.get("verdict") or "").strip()
            if row.get("level", "claim") == "claim" and scope and verdict and verdict != "not run":
                size = (row.get("size") or "").strip()
                out.append(f"  {row.get('claim_id', '?')}" + (f" [{size}]" if size else "") + f": {verdict} ({scope})")
    return out


def _display(path: str | os.PathLike) -> str:
    """``path`` relative to the working directory where it lies below it, else as given."""
    p = Path(path)
    try:
        return str(p.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(p)


def verdict_counts(claims_csv: str | os.PathLike) -> Counter:
    """Verdict -> number of claims in ``claims.csv`` (rows with ``level`` ``claim``; per-task detail rows
    are not claims). Raises ``FileNotFoundError`` if absent, ``ValueError`` if it has no ``verdict``
    column."""
    with open(claims_csv, newline="") as fh:
        reader = csv.DictReader(fh)
        if not reader.fieldnames or "verdict" not in reader.fieldnames:
            raise ValueError(f"{claims_csv}: no 'verdict' column")
        has_level = "level" in reader.fieldnames
        return Counter((row["verdict"] or "").strip() or "(none)" for row in reader
                       if not has_level or row["level"] == "claim")


def degenerate_counts(per_seed_csv: str | os.PathLike) -> tuple[int, int]:
    """``(degenerate runs, runs)`` of ``aggregate/per_seed.csv``: a run is one fine-tuning run (its
    ``path``, or size/objective/fraction/step/task/seeds where there is none); it is degenerate when any
    of its score keys is. Raises ``FileNotFoundError`` if absent, ``ValueError`` without a
    ``degenerate`` column."""
    ident = ("size", "objective", "fraction", "step", "task", "pretrain_seed", "seed")
    runs: dict[tuple, bool] = {}
    with open(per_seed_csv, newline="") as fh:
        reader = csv.DictReader(fh)
        if not reader.fieldnames or "degenerate" not in reader.fieldnames:
            raise ValueError(f"{per_seed_csv}: no 'degenerate' column")
        for row in reader:
            key = (row["path"],) if row.get("path") else tuple(row.get(c, "") for c in ident)
            flag = str(row["degenerate"]).strip().lower() in ("true", "1", "yes")
            runs[key] = runs.get(key, False) or flag
    return sum(runs.values()), len(runs)


def report_command(configfiles: Iterable[str | os.PathLike] = (),
                   config_overrides: Mapping[str, object] | None = None,
                   output: str = "report.html") -> str:
    """The ``snakemake --report`` command for this run's configuration (its ``--configfile`` files and
    ``--config`` values, which decide the results_dir the report reads)."""
    words = ["snakemake", "--report", output]
    files = [_display(f) for f in configfiles]
    if files:
        words += ["--configfile", *files]
    if config_overrides:
        words.append("--config")
        for key, value in config_overrides.items():
            text = value if isinstance(value, str) else json.dumps(value, default=dict)
            words.append(f"{key}={text}")
    return " ".join(shlex.quote(w) for w in words)


def run_summary(results_dir: str | os.PathLike, configfiles: Iterable[str | os.PathLike] = (),
                config_overrides: Mapping[str, object] | None = None) -> str:
    """The end-of-run summary as text (a few lines); absent or unreadable files are named, never raised."""
    results = Path(results_dir)
    lines = [f"TACO run finished. Results: {_display(results)}/ (tables *.csv/*.md, figures *.png/*.pdf, "
             f"claims.md)"]
    claims = results / "claims.csv"
    try:
        counts = verdict_counts(claims)
    except FileNotFoundError:
        lines.append(f"Claims: {_display(claims)} absent (not among this run's targets)")
    except (ValueError, OSError, csv.Error) as err:
        lines.append(f"Claims: {_display(claims)} unreadable ({err})")
    else:
        parts = [f"{counts.get(v, 0)} {v}" for v in VERDICTS]
        parts += [f"{n} {v}" for v, n in sorted(counts.items()) if v not in VERDICTS]
        lines.append(f"Claims ({sum(counts.values())}): " + ", ".join(parts) + f"  (details: {_display(results / 'claims.md')})")
        scoped = scoped_verdicts(claims)
        if scoped:
            lines.append("Verdicts with a scope (what each decides about):")
            lines += scoped
    per_seed = results / "aggregate" / "per_seed.csv"
    try:
        degenerate, runs = degenerate_counts(per_seed)
    except FileNotFoundError:
        lines.append(f"Degenerate runs: {_display(per_seed)} absent (no aggregate in this run)")
    except (ValueError, OSError, csv.Error) as err:
        lines.append(f"Degenerate runs: {_display(per_seed)} unreadable ({err})")
    else:
        lines.append(f"Degenerate runs: {degenerate} of {runs} fine-tuning runs predicted one class or a constant "
                     "score (the metric is then 0 or undefined; marked * in the tables): frequent where the model "
                     "learned little, as in the quick start's short runs")
    lines.append("Report: " + report_command(configfiles, config_overrides))
    return "\n".join(lines)


def print_summary(results_dir: str | os.PathLike, configfiles: Iterable[str | os.PathLike] = (),
                  config_overrides: Mapping[str, object] | None = None, file=None) -> None:
    """Print :func:`run_summary` (to stderr, where Snakemake logs); never raises: an unexpected error
    becomes one line, so the summary cannot fail a finished run."""
    out = file if file is not None else sys.stderr
    try:
        text = run_summary(results_dir, configfiles, config_overrides)
    except Exception as err:  # noqa: BLE001 - the run has succeeded; the summary is advice
        text = f"run summary unavailable: {type(err).__name__}: {err}"
    print(text, file=out, flush=True)


def missing_budget_notes(budget_chains: Iterable[list[str]]) -> list[str]:
    """One note per budget checkpoint that is missing while a later budget of the same run exists (a deleted
    middle budget): Snakemake 9 keeps what was made from it and plans nothing ("Nothing to be done"), so
    the workflow says which budget is missing and how to rebuild it (docs/reruns.md). ``budget_chains``: per
    pre-training run, its budget directories in step order."""
    notes = []
    for chain in budget_chains:
        present = [os.path.isdir(p) for p in chain]
        for i, p in enumerate(chain):
            later = [q for q, ok in zip(chain[i + 1:], present[i + 1:]) if ok]
            if not present[i] and later:
                notes.append(f"{p} is missing while the later budget {later[0]} exists: Snakemake keeps what was "
                             f"made from it and will not rebuild it by itself; rebuild it with `snakemake {p}` "
                             "(docs/reruns.md)")
    return notes
