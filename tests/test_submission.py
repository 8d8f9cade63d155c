"""GLUE server submissions (taco.evaluation.submission, ``taco glue-submission``): label strings checked
against the registry's Hub label names with a table written out here from the GLUE files' conventions,
file names, row counts against the shared GLUE test files, the zip's files and README, placeholders
against the shared training sets, errors before anything is written. Torch-free and fast."""

from __future__ import annotations

import csv
import io
import json
import statistics
import zipfile
from collections import Counter
from pathlib import Path

import pytest

from taco.data.glue import glue_test_splits, read_glue_test_tsv, read_glue_tsv
from taco.errors import UsageError
from taco.evaluation import submission as sub
from taco.registry import GLUE_TASK_SPECS

from shared_data import GLUE_DIR

#: the files the GLUE server expects in a submission zip (gluebenchmark.com submission page)
SERVER_FILES = {"CoLA.tsv", "SST-2.tsv", "MRPC.tsv", "STS-B.tsv", "QQP.tsv", "MNLI-m.tsv", "MNLI-mm.tsv",
                "QNLI.tsv", "RTE.tsv", "WNLI.tsv", "AX.tsv"}

#: Hub ClassLabel name -> the label string of the GLUE files (and of the server's gold labels):
#: binary tasks are 0/1 in the GLUE files (WNLI: 1 = entailment), the NLI tasks spell the label out
SERVER_STRING_OF_NAME = {
    "cola": {"unacceptable": "0", "acceptable": "1"},
    "sst2": {"negative": "0", "positive": "1"},
    "mrpc": {"not_equivalent": "0", "equivalent": "1"},
    "qqp": {"not_duplicate": "0", "duplicate": "1"},
    "mnli": {"entailment": "entailment", "neutral": "neutral", "contradiction": "contradiction"},
    "qnli": {"entailment": "entailment", "not_entailment": "not_entailment"},
    "rte": {"entailment": "entailment", "not_entailment": "not_entailment"},
    "wnli": {"not_entailment": "0", "entailment": "1"},
}


def test_label_strings_follow_the_registry_label_names():
    for task, t in GLUE_TASK_SPECS.items():
        if t.is_regression:
            assert sub.server_labels(task) is None
            continue
        want = tuple(SERVER_STRING_OF_NAME[task][name] for name in t.label_names)
        assert sub.server_labels(task) == want, task
        assert sub.format_predictions(task, range(t.num_labels)) == list(want)
    assert sub.format_predictions("wnli", [1, 0]) == ["1", "0"]
    assert sub.format_predictions("mnli", [2]) == ["contradiction"]
    with pytest.raises(ValueError, match="outside"):
        sub.format_predictions("rte", [2])


def test_stsb_scores_clipped_to_0_5():
    assert sub.format_predictions("stsb", [-0.3, 5.7, 2.34567, 0.0]) == ["0.000", "5.000", "2.346", "0.000"]
    with pytest.raises(ValueError, match="finite"):
        sub.format_predictions("stsb", [float("nan")])
    assert sub.valid_prediction("STS-B.tsv", "4.5") and not sub.valid_prediction("STS-B.tsv", "5.5")


def test_every_server_file_is_one_test_split():
    assert set(sub.SUBMISSION_FILES) == SERVER_FILES
    split_files = [s.submission_file for task in GLUE_TASK_SPECS for s in glue_test_splits(task)]
    assert sorted(split_files) == sorted(SERVER_FILES)
    for task in GLUE_TASK_SPECS:
        for s in glue_test_splits(task):
            assert sub.SUBMISSION_FILES[s.submission_file][0] == task
    assert {s.submission_file for s in glue_test_splits("mnli")} == {"MNLI-m.tsv", "MNLI-mm.tsv", "AX.tsv"}
    assert set(sub.PLACEHOLDERS) == SERVER_FILES
    for file, ph in sub.PLACEHOLDERS.items():
        assert sub.valid_prediction(file, ph.prediction), file


def test_row_counts_equal_the_shared_test_files():
    seen = 0
    for task in GLUE_TASK_SPECS:
        for s in glue_test_splits(task):
            path = GLUE_DIR / s.local_file
            if not path.is_file():
                continue
            seen += 1
            n_lines = len(path.read_text(encoding="utf-8-sig").rstrip("\n").split("\n")) - 1  # header
            cols = read_glue_test_tsv(path, task)
            assert len(cols["idx"]) == n_lines == sub.SUBMISSION_FILES[s.submission_file][1], s.local_file
            assert cols["idx"] == list(range(n_lines))
    if not seen:
        pytest.skip(f"no GLUE test files under {GLUE_DIR}")


def test_placeholders_are_the_training_majority():
    counted = 0
    for task in ("cola", "sst2", "mrpc", "rte", "wnli", "stsb"):
        t = GLUE_TASK_SPECS[task]
        path = GLUE_DIR / t.dir_name / t.train_file
        if not path.is_file():
            continue
        counted += 1
        labels = read_glue_tsv(path, task)["label"]
        ph = sub.PLACEHOLDERS[f"{t.dir_name}.tsv"]
        if task == "stsb":
            assert ph.prediction == f"{statistics.mean(labels):.3f}"
        else:
            (top, n), = Counter(labels).most_common(1)
            assert ph.prediction == SERVER_STRING_OF_NAME[task][t.label_names[top]]
            assert f"{n} of {len(labels)}" in ph.basis
    if not counted:
        pytest.skip(f"no GLUE training files under {GLUE_DIR}")


# ---- the zip ------------------------------------------------------------------------------------------
def _run(tmp: Path, task: str, seed: int = 3, files: dict | None = None, ckpt: str = "sha-a",
         source: str = "local", absent: dict | None = None, test_file: bool = True) -> Path:
    d = tmp / f"{task}-{seed}-{ckpt}"
    d.mkdir(parents=True)
    (d / "metrics.json").write_text(json.dumps({
        "task": task, "seed": seed, "checkpoint": f"/ckpt/{ckpt}", "checkpoint_manifest_sha256": ckpt,
        "glue_source": source, "test_predictions": {"files": {}, "absent": absent or {}}}))
    if test_file:
        sub.write_test_predictions(d / sub.TEST_PREDICTIONS_NAME, files or {})
    return d


def _read_zip(path: Path) -> dict[str, str]:
    with zipfile.ZipFile(path) as zf:
        return {n: zf.read(n).decode() for n in zf.namelist()}


def _rows(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text), delimiter="\t"))


def test_zip_holds_every_file_and_readme_names_the_placeholders(tmp_path):
    rte = _run(tmp_path, "rte", files={"RTE.tsv": ([1, 0, 2], ["not_entailment", "entailment", "entailment"])})
    mnli = _run(tmp_path, "mnli", files={"MNLI-m.tsv": ([0, 1], ["neutral", "contradiction"]),
                                         "MNLI-mm.tsv": ([0], ["entailment"])},
                absent={"AX.tsv": "no glue/diagnostic/diagnostic.tsv"})
    stsb = _run(tmp_path, "stsb", test_file=False)  # a run made before test predictions existed
    out = tmp_path / "sub" / "seed-3.zip"
    status = sub.build_submission([rte, mnli, stsb], out)
    assert {f for f, s in status.items() if s == "predictions"} == {"RTE.tsv", "MNLI-m.tsv", "MNLI-mm.tsv"}
    files = _read_zip(out)
    assert set(files) == SERVER_FILES | {"README.md"}
    for name in SERVER_FILES:
        rows = _rows(files[name])
        assert rows[0] == ["index", "prediction"], name
        assert all(sub.valid_prediction(name, p) for _, p in rows[1:]), name
    assert _rows(files["RTE.tsv"])[1:] == [["0", "entailment"], ["1", "not_entailment"], ["2", "entailment"]]
    assert _rows(files["MNLI-mm.tsv"])[1:] == [["0", "entailment"]]
    # placeholders: one constant per GLUE test row
    for name, n in {"CoLA.tsv": 1063, "QQP.tsv": 390965, "AX.tsv": 1104, "STS-B.tsv": 1379, "WNLI.tsv": 146}.items():
        rows = _rows(files[name])[1:]
        assert len(rows) == n and [int(i) for i, _ in rows] == list(range(n)), name
        assert {p for _, p in rows} == {sub.PLACEHOLDERS[name].prediction}, name
    readme = files["README.md"]
    table = {line.split(" | ")[0].lstrip("| "): line for line in readme.splitlines() if line.startswith("| ")
             and line.split(" | ")[0].lstrip("| ").endswith(".tsv")}
    assert set(table) == SERVER_FILES
    for name, line in table.items():
        assert ("PLACEHOLDER" in line) == (name not in {"RTE.tsv", "MNLI-m.tsv", "MNLI-mm.tsv"}), name
    assert "diagnostic.tsv" in table["AX.tsv"] and "test_predictions.tsv" in table["STS-B.tsv"]
    assert "was not fine-tuned" in table["QQP.tsv"]
    assert "Real predictions: MNLI-m.tsv, MNLI-mm.tsv, RTE.tsv." in readme
    assert "Placeholders: CoLA.tsv, SST-2.tsv, MRPC.tsv, STS-B.tsv, QQP.tsv, QNLI.tsv, WNLI.tsv, AX.tsv." in readme
    # same inputs, same bytes
    again = tmp_path / "again.zip"
    sub.build_submission([rte, mnli, stsb], again)
    assert again.read_bytes() == out.read_bytes()


def test_synthetic_runs_are_marked_not_submittable(tmp_path):
    d = _run(tmp_path, "rte", source="synthetic", files={"RTE.tsv": ([0], ["entailment"])})
    sub.build_submission([d], tmp_path / "s.zip")
    synthetic = _read_zip(tmp_path / "s.zip")["README.md"]
    assert "Not submittable" in synthetic and "SYNTHETIC GLUE-format tasks" in synthetic
    assert "gluebenchmark.com" not in synthetic and "Upload" not in synthetic  # no upload advice
    d2 = _run(tmp_path / "b", "rte", files={"RTE.tsv": ([0], ["entailment"])})
    sub.build_submission([d2], tmp_path / "l.zip")
    readme = _read_zip(tmp_path / "l.zip")["README.md"]
    assert "Not submittable" not in readme and "RTE.tsv (1, expected 3000)" in readme
    assert "Upload this zip at https://gluebenchmark.com/submit" in readme


def test_errors_before_writing(tmp_path, capsys):
    out = tmp_path / "o.zip"
    a = _run(tmp_path, "rte", seed=3)
    b = _run(tmp_path, "cola", seed=4)
    with pytest.raises(UsageError, match="one checkpoint and one seed"):
        sub.build_submission([a, b], out)
    c = _run(tmp_path, "cola", seed=3, ckpt="sha-b")
    with pytest.raises(UsageError, match="one checkpoint and one seed"):
        sub.build_submission([a, c], out)
    a2 = _run(tmp_path / "x", "rte", seed=3)
    with pytest.raises(UsageError, match="task rte twice"):
        sub.build_submission([a, a2], out)
    bad = _run(tmp_path, "wnli", seed=3)
    (bad / sub.TEST_PREDICTIONS_NAME).write_text("file\tindex\tprediction\nWNLI.tsv\t0\tentailment\n")
    with pytest.raises(UsageError, match=r"test_predictions.tsv:2: 'entailment' is not a prediction"):
        sub.build_submission([a, bad], out)
    (bad / sub.TEST_PREDICTIONS_NAME).write_text("file\tindex\tprediction\nWNLI.tsv\t0\n")
    with pytest.raises(UsageError, match=r":2: expected 3 tab-separated fields"):
        sub.read_run(bad)
    assert sub.main(["--runs", str(tmp_path / "nothing"), "--output", str(out)]) == 2
    assert "nothing/metrics.json: no such metrics.json" in capsys.readouterr().err
    assert sub.main(["--runs", str(a), str(b), "--output", str(out)]) == 2
    assert not out.exists()
    assert sub.main(["--runs", str(a), "--output", str(out)]) == 0 and out.is_file()
