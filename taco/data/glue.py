"""GLUE loaders from the Hub, a local GLUE folder, or the synthetic language (tasks: taco.registry).

``load_glue_task(task, source, data_dir=None)`` returns a ``datasets.DatasetDict`` with the splits
``train`` and the dev split(s) (``validation``, or ``validation_matched`` and
``validation_mismatched`` for MNLI), with the column names and label ids of the Hub dataset
``nyu-mll/glue``: the text fields (``sentence``, ``sentence1``/``sentence2``, ``question1``/
``question2``, ``question``/``sentence``, ``premise``/``hypothesis``), ``label`` (``ClassLabel``;
``float32`` 0-5 for STS-B) and ``idx`` (``int32``, the row's 0-based position in its split).
The unlabelled test splits (what the GLUE server scores) are loaded on their own by
``load_glue_test`` (text fields and ``idx``, the GLUE ``index`` of each row).

Sources:

- ``hub``: ``datasets.load_dataset("nyu-mll/glue", <task>)`` (``hub_id`` may name a mirror or a
  local folder laid out like the Hub repository).
- ``local``: a folder in the original GLUE layout (``download_glue_data.py``): ``CoLA/train.tsv``,
  ``SST-2/dev.tsv``, ``MNLI/dev_matched.tsv`` ... Read as the GLUE/HF loaders do: UTF-8 with the
  BOM removed (MRPC starts with one), tab separated, *no quoting* (fields may begin with an
  unbalanced ``"``), CoLA with no header. Label strings map to the Hub ids. A row with the wrong
  number of fields or an unknown label raises ``GlueFormatError`` naming the file and the line;
  rows are never skipped.
- ``synthetic``: a task of the same name, columns, label space and metric built from the synthetic
  language of ``taco.data.synthetic`` (deterministic from a seed; offline).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from taco.textfile import read_utf8
from taco.registry import GLUE_TASK_SPECS, GlueTask

#: default Hub dataset id of GLUE
HUB_ID = "nyu-mll/glue"

SOURCES = ("hub", "local", "synthetic")


class GlueFormatError(ValueError):
    """A GLUE TSV row that cannot be read (wrong field count, unknown label); names file and line."""





def get_task(task: str) -> GlueTask:
    """The registry entry of ``task``; ValueError naming the known tasks otherwise."""
    try:
        return GLUE_TASK_SPECS[task]
    except KeyError:
        raise ValueError(f"unknown GLUE task {task!r}; expected one of {sorted(GLUE_TASK_SPECS)}") from None


def expected_layout(task: str | None = None) -> str:
    """Human-readable description of the local GLUE layout (for error messages)."""
    tasks = [get_task(task)] if task else list(GLUE_TASK_SPECS.values())
    lines = []
    for t in tasks:
        files = [t.train_file, *t.dev_files.values()]
        lines.append(f"  {t.dir_name}/{{{','.join(files)}}}")
    return "expected the original GLUE layout (download_glue_data.py):\n" + "\n".join(lines)


def local_files(task: str, data_dir: str | os.PathLike) -> dict[str, Path]:
    """Split name -> path of the local TSV that holds it (paths may not exist)."""
    t = get_task(task)
    base = Path(data_dir) / t.dir_name
    out = {"train": base / t.train_file}
    out.update({split: base / name for split, name in t.dev_files.items()})
    return out


def available_local_tasks(data_dir: str | os.PathLike) -> dict[str, str | None]:
    """Task -> None where every required local file exists, else the reason (missing paths).

    Lets a workflow report the missing tasks once, before any job runs.
    """
    out: dict[str, str | None] = {}
    for name in GLUE_TASK_SPECS:
        missing = [str(p) for p in local_files(name, data_dir).values() if not p.is_file()]
        out[name] = None if not missing else "missing " + ", ".join(missing)
    return out


def read_glue_tsv(path: str | os.PathLike, task: str) -> dict[str, list]:
    """Read one local GLUE TSV into Hub-named columns (``label`` as Hub ids, ``idx`` 0..N-1).

    Raises:
        FileNotFoundError: the file is missing (message names the path and the expected layout).
        GlueFormatError: a row with the wrong field count, an unknown label, a missing header
            column, bytes that are not UTF-8; the message names the file and the 1-based line number.
    """
    t = get_task(task)
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: GLUE file not found; {expected_layout(task)}")
    columns: dict[str, list] = {f: [] for f in t.text_fields}
    columns["label"] = []
    # strict UTF-8 naming the file and line of a bad byte; MRPC's BOM stripped; no newline
    # translation, so a field's stray \r stays visible (none in GLUE)
    lines = read_utf8(path, "GLUE file", strip_bom=True, error=GlueFormatError).split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # final newline (CoLA dev has none, as in GLUE)
    start = 0
    if t.local_num_fields is not None:
        n_fields = t.local_num_fields
        index = {k: int(v) for k, v in t.local_columns.items()}
    else:
        if not lines:
            raise GlueFormatError(f"{path}:1: empty file, expected a header line")
        header = lines[0].rstrip("\r").split("\t")
        n_fields = len(header)
        index = {}
        for hub_col, name in t.local_columns.items():
            if name not in header:
                raise GlueFormatError(f"{path}:1: header has no column {name!r} (has {header})")
            index[hub_col] = header.index(name)
        start = 1
    text_idx = [(f, index[f]) for f in t.text_fields]
    label_idx = index["label"]
    for lineno in range(start, len(lines)):
        row = lines[lineno].rstrip("\r").split("\t")
        if len(row) != n_fields:
            raise GlueFormatError(
                f"{path}:{lineno + 1}: expected {n_fields} tab-separated fields, found {len(row)}"
            )
        raw = row[label_idx]
        if t.is_regression:
            try:
                label: float | int = float(raw)
            except ValueError:
                raise GlueFormatError(f"{path}:{lineno + 1}: label {raw!r} is not a number") from None
        else:
            assert t.local_labels is not None
            if raw not in t.local_labels:
                raise GlueFormatError(
                    f"{path}:{lineno + 1}: unknown label {raw!r} for {task} "
                    f"(expected one of {sorted(t.local_labels)})"
                )
            label = t.local_labels[raw]
        for f, i in text_idx:
            columns[f].append(row[i])
        columns["label"].append(label)
    columns["idx"] = list(range(len(columns["label"])))
    return columns


def _select(task: GlueTask, mapping: Mapping[str, Any], splits: Sequence[str] | None) -> dict[str, Any]:
    if splits is None:
        return dict(mapping)
    bad = [s for s in splits if s not in task.splits]
    if bad:
        raise ValueError(f"{task.name}: unknown split(s) {bad}; expected some of {task.splits}")
    return {s: mapping[s] for s in splits}


def _from_columns(task: GlueTask, split_columns: Mapping[str, Mapping[str, list]]):
    from datasets import Dataset, DatasetDict

    feats = task.features()
    return DatasetDict({
        split: Dataset.from_dict({k: list(cols[k]) for k in feats}, features=feats)
        for split, cols in split_columns.items()
    })


def load_local_glue(task: str, data_dir: str | os.PathLike, splits: Sequence[str] | None = None):
    """``DatasetDict`` of ``task`` read from a local GLUE folder (see module docstring).

    ``splits`` (default: train and every dev split) restricts what is read, e.g.
    ``("validation",)`` to score a task whose train file is absent (QNLI here).

    Raises FileNotFoundError (path + expected layout) when a required file is missing: the train
    file and every dev file are required unless ``splits`` leaves them out.
    """
    t = get_task(task)
    files = _select(t, local_files(task, data_dir), splits)
    missing = [str(p) for p in files.values() if not p.is_file()]
    if missing:
        raise FileNotFoundError(
            f"GLUE task {task!r}: missing {', '.join(missing)} under {data_dir}; {expected_layout(task)}"
        )
    return _from_columns(t, {split: read_glue_tsv(p, task) for split, p in files.items()})


def load_hub_glue(task: str, hub_id: str = HUB_ID, cache_dir: str | None = None, revision: str | None = None):
    """``DatasetDict`` of ``task`` from the Hub (``load_dataset(hub_id, task)``), test split dropped.

    ``hub_id`` may be a local folder laid out like the Hub repository (per-config parquet files
    declared in its README). Checks the columns and that every expected split is present.
    """
    from datasets import DatasetDict, load_dataset

    t = get_task(task)
    ds = load_dataset(hub_id, t.name, cache_dir=cache_dir, revision=revision)
    missing = [s for s in t.splits if s not in ds]
    if missing:
        raise ValueError(f"{hub_id} config {t.name!r} has no split(s) {missing} (has {list(ds)})")
    out = DatasetDict({s: ds[s] for s in t.splits})
    want = list(t.features())
    for s, d in out.items():
        if sorted(d.column_names) != sorted(want):
            raise ValueError(f"{hub_id}/{t.name}/{s}: columns {d.column_names}, expected {want}")
    return out


def load_synthetic_glue(task: str, seed: int = 0, num_train: int | None = None, num_dev: int | None = None):
    """``DatasetDict`` of the synthetic task named ``task`` (see ``taco.data.synthetic``)."""
    from taco.data.synthetic import build_glue_task

    t = get_task(task)
    rows = build_glue_task(task, seed=seed, num_train=num_train, num_dev=num_dev)
    cols = {}
    for split, items in rows.items():
        c: dict[str, list] = {k: [r[k] for r in items] for k in (*t.text_fields, "label")}
        c["idx"] = list(range(len(items)))
        cols[split] = c
    return _from_columns(t, cols)


def load_glue_task(task: str, source: str, data_dir: str | os.PathLike | None = None, *,
                   hub_id: str = HUB_ID, cache_dir: str | None = None, seed: int = 0,
                   num_train: int | None = None, num_dev: int | None = None,
                   splits: Sequence[str] | None = None):
    """Load one GLUE task as a ``datasets.DatasetDict`` (splits ``GLUE_TASK_SPECS[task].splits``).

    Args:
        task: a key of :data:`taco.registry.GLUE_TASK_SPECS` (``cola``, ``sst2``, ..., ``wnli``).
        source: ``hub``, ``local`` or ``synthetic``.
        data_dir: the local GLUE folder (required for ``local``).
        hub_id, cache_dir: for ``hub``.
        seed, num_train, num_dev: for ``synthetic`` (sizes default per task).
        splits: a subset of ``GLUE_TASK_SPECS[task].splits`` to return (default: all of them).

    Raises:
        ValueError: unknown task or source, ``local`` without ``data_dir``.
        FileNotFoundError / GlueFormatError: see ``load_local_glue`` / ``read_glue_tsv``.
    """
    get_task(task)
    if source == "local":
        if data_dir is None:
            raise ValueError("source='local' needs data_dir (a folder in the GLUE layout)")
        return load_local_glue(task, data_dir, splits=splits)
    if source == "hub":
        ds = load_hub_glue(task, hub_id=hub_id, cache_dir=cache_dir)
    elif source == "synthetic":
        ds = load_synthetic_glue(task, seed=seed, num_train=num_train, num_dev=num_dev)
    else:
        raise ValueError(f"unknown GLUE source {source!r}; expected one of {SOURCES}")
    from datasets import DatasetDict

    return DatasetDict(_select(GLUE_TASK_SPECS[task], ds, splits))


# ------------------------------------------------------------------------------------------------
# capped sets: a seeded random sample, never the first N rows
# ------------------------------------------------------------------------------------------------


def sample_indices(labels: Sequence[Any], n: int, seed: int, *, stratify: bool, stream: str = "") -> list[int]:
    """Row indices of a seeded random sample of ``n`` of the ``len(labels)`` rows, ascending.

    GLUE files are ordered (CoLA by source publication, STS-B by genre), so the first ``n`` rows are
    a biased subset: CoLA's first 5,000 training rows cover 7 of its 17 sources. ``stratify`` (for
    classification) allocates ``n`` to the labels in proportion to their counts (largest
    remainders, ties to the smaller label) and samples within each label without replacement;
    otherwise (regression: STS-B) a simple random sample. The generator is
    ``numpy.random.default_rng([seed, crc32(stream)])``: the same seed and stream always give the
    same rows, and train and dev splits (different ``stream``) are drawn independently. ``n`` at
    or above the row count returns every row.
    """
    total = len(labels)
    if n < 0:
        raise ValueError(f"sample size must be >= 0, got {n}")
    if n >= total:
        return list(range(total))
    import zlib

    import numpy as np

    rng = np.random.default_rng([int(seed), zlib.crc32(stream.encode())])
    if not stratify:
        return sorted(int(i) for i in rng.choice(total, size=n, replace=False))
    lab = np.asarray(labels)
    classes, counts = np.unique(lab, return_counts=True)
    exact = n * counts / total
    alloc = np.floor(exact).astype(int)
    short = n - int(alloc.sum())
    order = sorted(range(len(classes)), key=lambda c: (-(exact[c] - alloc[c]), c))
    for c in order[:short]:
        alloc[c] += 1
    chosen: list[int] = []
    for c, k in zip(classes, alloc):
        rows = np.flatnonzero(lab == c)
        chosen += [int(i) for i in rng.choice(rows, size=int(k), replace=False)]
    return sorted(chosen)


def cap_split(ds, n: int | None, seed: int, task: str, split: str):
    """``ds`` (a ``datasets.Dataset`` of ``task``'s ``split``) capped at ``n`` rows by
    :func:`sample_indices` (stratified by label unless the task is a regression; stream
    ``"<task>|<split>"``); ``ds`` itself when ``n`` is None or not below its size."""
    if n is None or n >= len(ds):
        return ds
    t = get_task(task)
    idx = sample_indices(ds["label"], n, seed, stratify=not t.is_regression, stream=f"{task}|{split}")
    return ds.select(idx)


# ------------------------------------------------------------------------------------------------
# unlabelled test splits (scored by the GLUE server, gluebenchmark.com)
# ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class GlueTestSplit:
    """One unlabelled GLUE test split, where each source keeps it, and its submission file.

    Attributes:
        task: the registry task whose fine-tuned model predicts it (``mnli`` for the diagnostic AX).
        name: split key (``test``; MNLI: ``test_matched``, ``test_mismatched``, ``ax``).
        local_file: path below a local GLUE folder (``RTE/test.tsv``, ``diagnostic/diagnostic.tsv``).
        hub_config, hub_split: where ``nyu-mll/glue`` keeps it (``("ax", "test")`` for AX).
        submission_file: the file name the GLUE server expects in a submission zip (``RTE.tsv``).
    """

    task: str
    name: str
    local_file: str
    hub_config: str
    hub_split: str
    submission_file: str


def glue_test_splits(task: str) -> tuple[GlueTestSplit, ...]:
    """The test split(s) a model fine-tuned on ``task`` predicts, in submission-file order.

    Every task has ``<dir_name>/test.tsv`` (Hub split ``test``), submitted as ``<dir_name>.tsv``;
    MNLI has the matched and mismatched test sets (``MNLI-m.tsv``, ``MNLI-mm.tsv``) and also
    predicts the diagnostic set AX (``diagnostic/diagnostic.tsv``, Hub config ``ax``; ``AX.tsv``),
    as the GLUE server asks (Wang et al., 2019, Sec. 4: the diagnostic is scored with the MNLI
    classifier). Raises ValueError for an unknown task.
    """
    t = get_task(task)
    d = t.dir_name
    if task == "mnli":
        return (GlueTestSplit(task, "test_matched", f"{d}/test_matched.tsv", task, "test_matched", "MNLI-m.tsv"),
                GlueTestSplit(task, "test_mismatched", f"{d}/test_mismatched.tsv", task, "test_mismatched",
                              "MNLI-mm.tsv"),
                GlueTestSplit(task, "ax", "diagnostic/diagnostic.tsv", "ax", "test", "AX.tsv"))
    return (GlueTestSplit(task, "test", f"{d}/test.tsv", task, "test", f"{d}.tsv"),)


#: header names of the row index in GLUE test files (QQP's test.tsv calls it ``id``)
_INDEX_COLUMNS = ("index", "id")


def read_glue_test_tsv(path: str | os.PathLike, task: str) -> dict[str, list]:
    """Read one local GLUE test TSV into Hub-named text columns and ``idx`` (the file's index).

    Test files all have a header (CoLA's too, unlike its train/dev files) with an ``index``
    (QQP: ``id``) column and the same text column names as the task's train file (CoLA:
    ``sentence``). Read like ``read_glue_tsv``: UTF-8 without BOM, tab separated, no quoting.

    Raises:
        FileNotFoundError: the file is missing.
        GlueFormatError: no header, a missing column, a row with the wrong field count, an index
            that is not an integer, bytes that are not UTF-8; names the file and the 1-based line.
    """
    t = get_task(task)
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: GLUE test file not found")
    lines = read_utf8(path, "GLUE test file", strip_bom=True, error=GlueFormatError).split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if not lines:
        raise GlueFormatError(f"{path}:1: empty file, expected a header line")
    header = lines[0].rstrip("\r").split("\t")
    names = {f: (t.local_columns[f] if isinstance(t.local_columns.get(f), str) else f) for f in t.text_fields}
    missing = [n for n in names.values() if n not in header]
    index_col = next((c for c in _INDEX_COLUMNS if c in header), None)
    if missing or index_col is None:
        want = [*missing] + ([] if index_col else ["index"])
        raise GlueFormatError(f"{path}:1: header has no column(s) {want} (has {header})")
    pos = {f: header.index(n) for f, n in names.items()}
    ipos = header.index(index_col)
    columns: dict[str, list] = {f: [] for f in t.text_fields}
    columns["idx"] = []
    for lineno in range(1, len(lines)):
        row = lines[lineno].rstrip("\r").split("\t")
        if len(row) != len(header):
            raise GlueFormatError(f"{path}:{lineno + 1}: expected {len(header)} tab-separated fields, "
                                  f"found {len(row)}")
        try:
            columns["idx"].append(int(row[ipos]))
        except ValueError:
            raise GlueFormatError(f"{path}:{lineno + 1}: index {row[ipos]!r} is not an integer") from None
        for f, i in pos.items():
            columns[f].append(row[i])
    return columns


def _test_dataset(task: GlueTask, columns: Mapping[str, list]):
    from datasets import Dataset, Features, Value

    feats = Features({**{f: Value("string") for f in task.text_fields}, "idx": Value("int32")})
    return Dataset.from_dict({k: list(columns[k]) for k in feats}, features=feats)


def load_glue_test(task: str, source: str, data_dir: str | os.PathLike | None = None, *,
                   hub_id: str = HUB_ID, cache_dir: str | None = None, seed: int = 0,
                   num_test: int | None = None):
    """The unlabelled test split(s) of ``task`` that ``source`` holds.

    Args:
        task, source, data_dir, hub_id, cache_dir: as ``load_glue_task``.
        seed, num_test: for ``synthetic`` (which builds test splits like its dev splits;
            ``num_test`` defaults to the dev size).

    Returns:
        ``(present, absent)``: ``present`` maps a ``GlueTestSplit`` to a ``datasets.Dataset`` with
        the task's text fields and ``idx`` (int32, the GLUE index); ``absent`` maps the
        ``GlueTestSplit`` that the source lacks (a local folder without ``test.tsv`` or without
        ``diagnostic/``, a Hub mirror without the ``ax`` config) to the reason. Absence is not an
        error: the submission then carries a labelled placeholder.

    Raises:
        ValueError: unknown task or source, ``local`` without ``data_dir``.
        GlueFormatError: a local test file that cannot be read (file and line named).
    """
    t = get_task(task)
    present, absent = {}, {}
    if source == "local":
        if data_dir is None:
            raise ValueError("source='local' needs data_dir (a folder in the GLUE layout)")
        for split in glue_test_splits(task):
            path = Path(data_dir) / split.local_file
            if path.is_file():
                present[split] = _test_dataset(t, read_glue_test_tsv(path, task))
            else:
                absent[split] = f"no {path}"
    elif source == "hub":
        from datasets import load_dataset

        for split in glue_test_splits(task):
            try:
                ds = load_dataset(hub_id, split.hub_config, cache_dir=cache_dir)[split.hub_split]
            except Exception as exc:  # noqa: BLE001  (a mirror without the config or split)
                absent[split] = f"{hub_id} config {split.hub_config!r} split {split.hub_split!r}: {exc}"
                continue
            present[split] = ds.select_columns([*t.text_fields, "idx"]).cast(
                _test_dataset(t, {f: [] for f in (*t.text_fields, "idx")}).features)
    elif source == "synthetic":
        from taco.data.synthetic import build_glue_test_split

        for split in glue_test_splits(task):
            rows = build_glue_test_split(task, split.name, seed=seed, num=num_test)
            cols: dict[str, list] = {f: [r[f] for r in rows] for f in t.text_fields}
            cols["idx"] = list(range(len(rows)))
            present[split] = _test_dataset(t, cols)
    else:
        raise ValueError(f"unknown GLUE source {source!r}; expected one of {SOURCES}")
    return present, absent
