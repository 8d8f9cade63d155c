"""GLUE test-server submissions: per-run test predictions and ``taco glue-submission`` (one zip).

The paper's test rows are GLUE server scores (gluebenchmark.com). ``taco finetune`` writes the
test predictions of its task while the model is in memory (``test_predictions.tsv``, written by
``write_test_predictions``); ``taco glue-submission`` gathers the runs of one checkpoint and seed
into the zip the server takes:

    taco glue-submission --runs <finetune run dir> [...] --output submission.zip

The zip holds all eleven files the server expects (``SUBMISSION_FILES``: CoLA, SST-2, MRPC, STS-B,
QQP, MNLI-m, MNLI-mm, QNLI, RTE, WNLI, AX), each ``index<TAB>prediction`` with the label strings of
the GLUE files (``0``/``1`` for CoLA, SST-2, MRPC, QQP and WNLI; ``entailment``/``not_entailment``
for QNLI and RTE; ``entailment``/``neutral``/``contradiction`` for MNLI and AX; a score in [0, 5]
for STS-B), and a ``README.md`` that lists which files are the run's predictions and which are
placeholders. A task that was not run (or whose run has no test predictions) gets a placeholder:
one constant prediction per test row (``PLACEHOLDERS``: the majority class of the task's GLUE
training set where one class leads, else a stated constant; the STS-B training mean), so the
server accepts the zip; its score for that task is a baseline's, not the model's.

Label strings: the server's gold files use the label strings of the GLUE TSV files, so a Hub
label id is written as the GLUE file string that ``taco.registry.GLUE_TASK_SPECS[task].local_labels``
maps to it (the inverse of the mapping the local loader reads with). Torch-free.

Errors: a bad input (run folder without ``metrics.json``, runs of different checkpoints or seeds,
a repeated task, a test-prediction row with an unknown label or a wrong field count) raises
``UsageError`` naming the file (and line) before the zip is written; the CLI exits 2.
"""

from __future__ import annotations

import argparse
import csv
import io
import math
import os
import sys
import zipfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from taco.cli_parts import cli_error
from taco.errors import UsageError
from taco.registry import GLUE_TASK_SPECS

#: file written by ``taco finetune`` beside ``metrics.json``
TEST_PREDICTIONS_NAME = "test_predictions.tsv"
#: its columns: the submission file a row belongs to, the GLUE index, the server's label string
TEST_PREDICTIONS_COLUMNS = ("file", "index", "prediction")

#: file -> (task whose model predicts it, number of rows of the GLUE test set). The row counts are
#: those of the GLUE test files (download_glue_data.py; Hub ``nyu-mll/glue`` test splits, ``ax``
#: config for AX). Placeholders have this many rows.
SUBMISSION_FILES: dict[str, tuple[str, int]] = {
    "CoLA.tsv": ("cola", 1063),
    "SST-2.tsv": ("sst2", 1821),
    "MRPC.tsv": ("mrpc", 1725),
    "STS-B.tsv": ("stsb", 1379),
    "QQP.tsv": ("qqp", 390_965),
    "MNLI-m.tsv": ("mnli", 9796),
    "MNLI-mm.tsv": ("mnli", 9847),
    "QNLI.tsv": ("qnli", 5463),
    "RTE.tsv": ("rte", 3000),
    "WNLI.tsv": ("wnli", 146),
    "AX.tsv": ("mnli", 1104),
}


@dataclass(frozen=True)
class Placeholder:
    """The constant prediction of a file whose task was not run, and why that constant."""

    prediction: str
    basis: str


#: file -> placeholder. Class counts of the GLUE training sets (checked against the shared GLUE
#: files by tests/test_submission.py where present).
PLACEHOLDERS: dict[str, Placeholder] = {
    "CoLA.tsv": Placeholder("1", "majority class of CoLA train (acceptable: 6023 of 8551)"),
    "SST-2.tsv": Placeholder("1", "majority class of SST-2 train (positive: 37569 of 67349)"),
    "MRPC.tsv": Placeholder("1", "majority class of MRPC train (equivalent: 2474 of 3668)"),
    "STS-B.tsv": Placeholder("2.701", "mean similarity of STS-B train (5749 pairs)"),
    "QQP.tsv": Placeholder("0", "majority class of QQP train (not duplicate: about 63%)"),
    "MNLI-m.tsv": Placeholder("entailment", "constant (MNLI train is balanced: about a third per class)"),
    "MNLI-mm.tsv": Placeholder("entailment", "constant (MNLI train is balanced: about a third per class)"),
    "QNLI.tsv": Placeholder("entailment", "constant (QNLI train is balanced: about half per class)"),
    "RTE.tsv": Placeholder("entailment", "majority class of RTE train (entailment: 1249 of 2490)"),
    "WNLI.tsv": Placeholder("0", "majority class of WNLI train (not_entailment: 323 of 635)"),
    "AX.tsv": Placeholder("entailment", "constant (AX is scored with the MNLI classifier; MNLI is balanced)"),
}

README_NAME = "README.md"


# ------------------------------------------------------------------------------------------------
# label strings
# ------------------------------------------------------------------------------------------------
def server_labels(task: str) -> tuple[str, ...] | None:
    """The server's label string of each Hub label id of ``task`` (index = id); None for STS-B.

    Derived from ``GLUE_TASK_SPECS[task].local_labels`` (GLUE file string -> Hub id), inverted.
    Raises ValueError for an unknown task or a label mapping that is not one-to-one.
    """
    try:
        t = GLUE_TASK_SPECS[task]
    except KeyError:
        raise ValueError(f"unknown GLUE task {task!r}; expected one of {sorted(GLUE_TASK_SPECS)}") from None
    if t.is_regression:
        return None
    inverse = {i: s for s, i in (t.local_labels or {}).items()}
    if sorted(inverse) != list(range(t.num_labels)) or len(inverse) != len(t.local_labels or {}):
        raise ValueError(f"{task}: local_labels {dict(t.local_labels or {})} is not one string per label id")
    return tuple(inverse[i] for i in range(t.num_labels))


def format_predictions(task: str, predictions: Iterable[float]) -> list[str]:
    """Server strings of ``predictions`` (shape (N,)): label ids for a classification task, scores
    for STS-B (clipped to [0, 5], three decimals, as the server's 0-5 scale). ValueError for an id
    outside the label space or a non-finite score."""
    labels = server_labels(task)
    out = []
    for p in predictions:
        if labels is None:
            x = float(p)
            if not math.isfinite(x):
                raise ValueError(f"{task}: prediction {p!r} is not a finite score")
            out.append(f"{min(max(x, 0.0), 5.0):.3f}")
        else:
            i = int(p)
            if not 0 <= i < len(labels):
                raise ValueError(f"{task}: label id {p!r} outside 0..{len(labels) - 1}")
            out.append(labels[i])
    return out


def valid_prediction(file: str, value: str) -> bool:
    """Whether ``value`` is a prediction the server takes in ``file``."""
    labels = server_labels(SUBMISSION_FILES[file][0])
    if labels is not None:
        return value in labels
    try:
        x = float(value)
    except ValueError:
        return False
    return math.isfinite(x) and 0.0 <= x <= 5.0


# ------------------------------------------------------------------------------------------------
# per-run test predictions (written by taco finetune)
# ------------------------------------------------------------------------------------------------
def write_test_predictions(path: str | os.PathLike,
                           rows: Mapping[str, tuple[Sequence[int], Sequence[str]]]) -> None:
    """Write ``test_predictions.tsv``: ``file, index, prediction`` per row, files in server order.

    ``rows`` maps a submission file name to (GLUE indices, server label strings) of equal length.
    An empty mapping writes the header only. ValueError for an unknown file or unequal lengths.
    """
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh, delimiter="\t", lineterminator="\n")
        w.writerow(TEST_PREDICTIONS_COLUMNS)
        for file in sorted(rows, key=list(SUBMISSION_FILES).index):
            index, preds = rows[file]
            if len(index) != len(preds):
                raise ValueError(f"{file}: {len(index)} indices but {len(preds)} predictions")
            for i, p in zip(index, preds):
                w.writerow([file, int(i), p])


def read_test_predictions(path: str | os.PathLike) -> dict[str, list[tuple[int, str]]]:
    """Read a ``test_predictions.tsv``: file -> [(index, prediction)] in file order.

    Raises UsageError naming the file and line for a wrong header, a wrong field count, an unknown
    submission file, a non-integer index, a repeated index or a label the server does not take.
    """
    path = Path(path)
    out: dict[str, list[tuple[int, str]]] = {}
    seen: set[tuple[str, int]] = set()
    with open(path, newline="") as fh:
        lines = fh.read().split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if not lines or tuple(lines[0].split("\t")) != TEST_PREDICTIONS_COLUMNS:
        raise UsageError(f"{path}:1: expected the header {chr(9).join(TEST_PREDICTIONS_COLUMNS)!r}")
    for n, line in enumerate(lines[1:], start=2):
        row = line.split("\t")
        if len(row) != 3:
            raise UsageError(f"{path}:{n}: expected 3 tab-separated fields, found {len(row)}")
        file, index, pred = row
        if file not in SUBMISSION_FILES:
            raise UsageError(f"{path}:{n}: unknown submission file {file!r}")
        try:
            i = int(index)
        except ValueError:
            raise UsageError(f"{path}:{n}: index {index!r} is not an integer") from None
        if (file, i) in seen:
            raise UsageError(f"{path}:{n}: index {i} of {file} repeated")
        if not valid_prediction(file, pred):
            raise UsageError(f"{path}:{n}: {pred!r} is not a prediction the GLUE server takes in {file}")
        seen.add((file, i))
        out.setdefault(file, []).append((i, pred))
    return out


# ------------------------------------------------------------------------------------------------
# the zip of one (checkpoint, seed)
# ------------------------------------------------------------------------------------------------
@dataclass
class RunRecord:
    """What one fine-tuning run contributes (read from its folder)."""

    directory: Path
    task: str
    seed: int
    checkpoint: str
    checkpoint_sha256: str | None
    glue_source: str
    absent: dict[str, str]
    predictions: dict[str, list[tuple[int, str]]] | None


def read_run(directory: str | os.PathLike) -> RunRecord:
    """Read ``metrics.json`` and ``test_predictions.tsv`` (None when absent) of one run folder.

    Raises UsageError naming the file when ``metrics.json`` is missing or lacks a key.
    """
    from taco.manifest import read_json_record

    d = Path(directory)
    mpath = d / "metrics.json"
    m = read_json_record(mpath, ("task", "seed", "checkpoint"), UsageError,
                         "metrics.json (not a finished taco finetune run)")
    if m["task"] not in GLUE_TASK_SPECS:
        raise UsageError(f"{mpath}: unknown task {m['task']!r}")
    tpath = d / TEST_PREDICTIONS_NAME
    test = m.get("test_predictions") or {}
    return RunRecord(d, m["task"], int(m["seed"]), str(m["checkpoint"]), m.get("checkpoint_manifest_sha256"),
                     str(m.get("glue_source", "?")), dict(test.get("absent") or {}),
                     read_test_predictions(tpath) if tpath.is_file() else None)


def plan_submission(runs: Sequence[RunRecord]) -> tuple[dict[str, list[tuple[int, str]]], dict[str, str]]:
    """Decide every submission file: ``(real, placeholder_reasons)``.

    ``real`` maps a file to the run's (index, prediction) rows, sorted by index; every other file
    of ``SUBMISSION_FILES`` is in ``placeholder_reasons`` with why it has no real predictions.
    Raises UsageError when the runs are of different checkpoints or seeds or repeat a task.
    """
    if not runs:
        raise UsageError("--runs: no fine-tuning run given")
    keys = {(r.checkpoint_sha256 or r.checkpoint, r.seed) for r in runs}
    if len(keys) > 1:
        listing = "; ".join(f"{r.directory}: {r.checkpoint} seed {r.seed}" for r in runs)
        raise UsageError(f"--runs: one submission is one checkpoint and one seed; got {listing}")
    by_task: dict[str, RunRecord] = {}
    for r in runs:
        if r.task in by_task:
            raise UsageError(f"--runs: task {r.task} twice ({by_task[r.task].directory}, {r.directory})")
        by_task[r.task] = r
    real: dict[str, list[tuple[int, str]]] = {}
    reasons: dict[str, str] = {}
    for file, (task, _) in SUBMISSION_FILES.items():
        r = by_task.get(task)
        if r is None:
            reasons[file] = f"task {task} was not fine-tuned for this checkpoint and seed"
        elif r.predictions is None:
            reasons[file] = (f"the {task} run ({r.directory}) has no {TEST_PREDICTIONS_NAME} "
                             "(made before test predictions existed, or with --no-test-predictions)")
        elif file in r.predictions:
            real[file] = sorted(r.predictions[file])
        else:
            why = r.absent.get(file, "no test rows for this file")
            reasons[file] = f"the {task} run had no test split for it ({why})"
    return real, reasons


def readme_text(runs: Sequence[RunRecord], real: Mapping[str, list], reasons: Mapping[str, str]) -> str:
    """The archive's README.md: what it is, and per file: prediction or PLACEHOLDER, rows, why."""
    r0 = runs[0]
    sources = sorted({r.glue_source for r in runs})
    lines = [
        "# GLUE test-server submission",
        "",
        f"Checkpoint: `{r0.checkpoint}`  ",
        f"Fine-tuning seed: {r0.seed}  ",
        f"GLUE source of the runs: {', '.join(sources)}",
        "",
    ]
    if any(s not in ("hub", "local") for s in sources):  # synthetic: no upload advice
        lines += ["**Not submittable:** the runs used this suite's SYNTHETIC GLUE-format tasks, whose test",
                  "rows are not the GLUE test sets. This archive only has the GLUE server's file layout, so",
                  "that the packaging can be tested; it gives no test scores and nothing in it compares with",
                  "the paper's test rows. Files marked PLACEHOLDER hold one constant prediction per test row.",
                  ""]
    else:
        lines += ["Upload this zip at https://gluebenchmark.com/submit to get the test scores that the paper's",
                  "test rows report. Files marked PLACEHOLDER hold one constant prediction per test row so that",
                  "the server accepts the archive: their scores are a constant baseline's, not the model's, and",
                  "so is any GLUE average that includes them.",
                  ""]
    wrong = [f for f, rows in real.items() if len(rows) != SUBMISSION_FILES[f][1]]
    if wrong and all(s in ("hub", "local") for s in sources):
        lines += ["**Warning:** row counts differ from the GLUE test sets for "
                  + ", ".join(f"{f} ({len(real[f])}, expected {SUBMISSION_FILES[f][1]})" for f in wrong)
                  + "; the server will reject these files.", ""]
    lines += ["| file | content | rows | source |", "|---|---|---|---|"]
    by_task = {r.task: r for r in runs}
    for file, (task, n) in SUBMISSION_FILES.items():
        if file in real:
            lines.append(f"| {file} | predictions | {len(real[file])} | `{by_task[task].directory}` |")
        else:
            ph = PLACEHOLDERS[file]
            lines.append(f"| {file} | PLACEHOLDER: constant `{ph.prediction}`, {ph.basis} | {n} | "
                         f"{reasons[file]} |")
    lines += ["", "Real predictions: " + (", ".join(f for f in SUBMISSION_FILES if f in real) or "none") + ".",
              "Placeholders: " + (", ".join(f for f in SUBMISSION_FILES if f not in real) or "none") + ".", ""]
    return "\n".join(lines)


def _file_text(rows: Iterable[tuple[int, str]]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, delimiter="\t", lineterminator="\n")
    w.writerow(["index", "prediction"])
    w.writerows(rows)
    return buf.getvalue()


def build_submission(run_dirs: Sequence[str | os.PathLike], output: str | os.PathLike) -> dict[str, str]:
    """Write the submission zip of the runs in ``run_dirs`` (one checkpoint, one seed) to ``output``.

    Returns file -> ``"predictions"`` or ``"placeholder"``. The zip is written through a temporary
    sibling and a rename, with fixed timestamps (same inputs, same bytes). Raises UsageError (see
    ``read_run``, ``plan_submission``) before anything is written.
    """
    runs = [read_run(d) for d in run_dirs]
    real, reasons = plan_submission(runs)
    output = Path(output)
    output.parent.mkdir(parents=True, exist_ok=True)
    tmp = output.with_name(f".{output.name}.tmp-{os.getpid()}")
    members = {file: _file_text(real[file]) if file in real
               else _file_text((i, PLACEHOLDERS[file].prediction) for i in range(n))
               for file, (_, n) in SUBMISSION_FILES.items()}
    members[README_NAME] = readme_text(runs, real, reasons)
    try:
        with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as zf:
            for name, text in members.items():
                info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
                info.compress_type = zipfile.ZIP_DEFLATED
                info.external_attr = 0o644 << 16
                zf.writestr(info, text)
        os.replace(tmp, output)
    finally:
        tmp.unlink(missing_ok=True)
    return {f: ("predictions" if f in real else "placeholder") for f in SUBMISSION_FILES}


# ------------------------------------------------------------------------------------------------
# CLI
# ------------------------------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    from taco.cli_parts import HelpFormatter
    p = argparse.ArgumentParser(formatter_class=HelpFormatter,
        prog="taco glue-submission",
        description="Gather the test predictions of one checkpoint's fine-tuning runs (per seed) into "
                    "the zip the GLUE server takes; tasks not run get labelled placeholders.")
    p.add_argument("--runs", nargs="+", required=True,
                   help="taco finetune output folders (metrics.json, test_predictions.tsv), one per task; with "
                        "--seed they contain {seed}")
    p.add_argument("--output", required=True, help="the zip to write; with several --seed it contains {seed}")
    p.add_argument("--seed", nargs="+", default=None,
                   help="fine-tuning seeds: one zip per seed in this process ({seed} in --runs and --output "
                        "filled in); default: the folders as given, one zip")
    return p


def per_seed_jobs(args: argparse.Namespace) -> list[tuple[list[str], str]]:
    """(run folders, zip) per ``--seed`` (``{seed}`` filled in), or the arguments as given without it.
    UsageError when several seeds would write one zip or read the same folders."""
    if not args.seed:
        return [(list(args.runs), args.output)]
    if len(set(args.seed)) != len(args.seed):
        raise UsageError(f"--seed: repeated seed in {args.seed}")
    if len(args.seed) > 1 and ("{seed}" not in args.output or not all("{seed}" in r for r in args.runs)):
        raise UsageError("--output and every --runs folder must contain {seed} when several seeds are given")
    return [([r.replace("{seed}", str(s)) for r in args.runs], args.output.replace("{seed}", str(s)))
            for s in args.seed]


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        for runs, output in per_seed_jobs(args):
            status = build_submission(runs, output)
            real = [f for f, s in status.items() if s == "predictions"]
            print(f"taco glue-submission: wrote {output}: {len(real)} of {len(status)} files are predictions "
                  f"({', '.join(real) or 'none'}); the others are placeholders (see its {README_NAME})",
                  file=sys.stderr)
    except UsageError as exc:
        return cli_error("glue-submission", exc)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
