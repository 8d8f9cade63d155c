"""Materialize a pre-training corpus as a *documents artifact*.

A corpus artifact is a directory with ``manifest.json`` (``kind: "corpus"``, the source and its
parameters, sha256 of every input file, row/document/character counts, ``artifact_key``: a hash of
everything that determines the content) and its text as **parts** (``taco.data.corpus_store``):
Arrow files of one string column, in corpus order, each row with a document id. A Hub dataset's
own cache files are read in place (no second copy of the corpus; their sha256 is recorded), local
and synthetic text is written once into ``data/``. A row is a document, or, for a sentence-per-row
source (``rojagtap/bookcorpus``), one sentence of a document made of ``span_rows`` contiguous rows
(``--rows sentence`` / ``--hub-rows sentence``; setting ``corpus.span_rows``, default 50, about one
Wikipedia article's worth). ``load_documents`` gives the rows as a ``datasets.Dataset``,
``CorpusReader`` the rows and document ranges.

Sources:

- ``synthetic``: ``taco.data.synthetic.generate_documents(num_documents, seed)`` (offline default).
- ``local``: plain-text files or folders (``*.txt``, ``*.tokens``, ``*.raw``, recursively, sorted);
  one document per blank-line-separated block (``blank_line``), per line (``line``), per
  WikiText article (``wikitext_article``: a new document at each `` = Title = `` heading), or per
  span of N consecutive blank-line paragraphs (``paragraphs:N``, e.g. ``paragraphs:20`` for a book:
  a stretch of unbroken text several blocks long). Each path may have its own split (``--split-by``
  once for all paths or once per path; config ``corpus.split_by``: a string or a list, one per
  path), so WikiText is split by article and the books in spans next to it. Optional
  WikiText detokenization (of the files that carry WikiText's escapes only, so books read next to
  WikiText stay as written) and an ``<unk>`` policy (``taco.data.detokenize``). Files that are not
  UTF-8 are read as Latin-1 (the Gutenberg selection, as NLTK reads it). Optionally a cap on a
  document's length (``--max-document-chars``, config ``corpus.max_document_chars``): a longer
  document is cut at line boundaries into pieces of about equal length
  (``taco.data.local_text.cap_document``), so no single document (Paradise Lost read as blank-line
  paragraphs: one ~100k-token document) dominates the whole-document draws of the validation split
  and the data fractions; the manifest lists the documents cut (``local_files.capped_documents``).
- ``hub``: one or more ``datasets.load_dataset(id, config, split=..., revision=...)`` datasets,
  concatenated, their ``text`` column kept. Presets: ``paper`` (English Wikipedia + BookCorpus, as
  the paper; ids are settings) and ``wikitext103`` (WikiText-103 raw, smaller).

CLI: ``taco corpus --source {synthetic,local,hub} ... --output DIR``. The local-file readers
(finding, decoding and splitting the files) are ``taco.data.local_text``, re-exported here.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from taco.data.corpus_store import (DEFAULT_SPAN_ROWS, FORMAT, ROW_KINDS, CorpusReader,
                                    check_parquet_shard, file_records, iter_parquet_texts, rows_per_document,
                                    write_text_file)
from taco.data.detokenize import UNK_POLICIES
from taco.data.local_text import (
    ENCODINGS, PARAGRAPHS_PREFIX, SPLIT_BY, cap_document, check_split, local_input_files_split, read_local_documents, read_text_file, splits_per_path)
from taco.data.parallel import Progress, WorkerPool
from taco.manifest import (atomic_directory, build_manifest, read_manifest, sha256_file, sha256_json,
                           write_manifest)

SOURCES = ("synthetic", "local", "hub")

#: Hub presets: name -> list of (dataset id, config, split, revision). Not reachable from this
#: machine, so they are settings: override them with --hub-dataset/--hub-config/--hub-split.
HUB_PRESETS: dict[str, list[tuple[str, str | None, str, str | None]]] = {
    # the paper: English Wikipedia + BookCorpus. bookcorpus/bookcorpus is script-based; datasets>=4
    # reads its parquet conversion branch.
    "paper": [("wikimedia/wikipedia", "20231101.en", "train", None),
              ("bookcorpus/bookcorpus", "plain_text", "train", "refs/convert/parquet")],
    "wikitext103": [("Salesforce/wikitext", "wikitext-103-raw-v1", "train", None)],
}
#: what one row of each preset dataset is (BookCorpus: one sentence)
HUB_PRESET_ROWS: dict[str, list[str]] = {"paper": ["document", "sentence"], "wikitext103": ["sentence"]}


class ArtifactMismatchError(FileExistsError):
    """An artifact exists at the output path but was made from other parameters or inputs."""


def check_existing(output: str | os.PathLike, key: str, overwrite: bool = False,
                   parameters: dict | None = None, inputs: dict | None = None) -> bool:
    """Decide what to do with an existing artifact directory before any work starts.

    Returns True when ``output`` holds a finished artifact whose manifest ``artifact_key`` equals
    ``key`` (reuse it), False when there is nothing there or ``overwrite`` is set (build it).

    Raises:
        ArtifactMismatchError: ``output`` exists with another key, or without a manifest
            (an interrupted run), and ``overwrite`` is False. The message names both keys.
    """
    output = Path(output)
    if not output.exists():
        return False
    try:
        manifest = read_manifest(output)
    except FileNotFoundError:
        manifest = {}
    found = manifest.get("artifact_key")
    if found == key:
        return True
    if overwrite:
        return False
    differ = []
    for label, new, old in (("", parameters, manifest.get("parameters")), ("input ", inputs, manifest.get("inputs"))):
        if new is not None and isinstance(old, dict):
            differ += [f"{label}{k}: {old.get(k)!r} -> {new.get(k)!r}"
                       for k in sorted(set(new) | set(old)) if old.get(k) != new.get(k)]
    detail = f"; differing: {', '.join(differ)}" if differ else ""
    raise ArtifactMismatchError(
        f"{output} exists but was made {'by an unfinished run' if found is None else 'with other parameters or inputs'} "
        f"(artifact_key {found} != {key}{detail}); remove it or pass --overwrite"
    )


# ------------------------------------------------------------------------------------ hub


def _hub_specs(datasets_: Sequence[str] | None, configs: Sequence[str | None] | None,
               splits: Sequence[str] | None, revisions: Sequence[str | None] | None,
               preset: str | None) -> list[tuple[str, str | None, str, str | None]]:
    if datasets_:
        n = len(datasets_)

        def broadcast(values, default, name):
            values = list(values or [])
            if not values:
                return [default] * n
            if len(values) == 1:
                return values * n
            if len(values) != n:
                raise ValueError(f"--{name} given {len(values)} times for {n} --hub-dataset values")
            return values

        cfgs = [None if c in (None, "", "none") else c for c in broadcast(configs, None, "hub-config")]
        return list(zip(datasets_, cfgs, broadcast(splits, "train", "hub-split"),
                        [None if r in (None, "", "none") else r for r in broadcast(revisions, None, "hub-revision")]))
    if preset not in HUB_PRESETS:
        raise ValueError(f"unknown --hub-preset {preset!r}; expected one of {sorted(HUB_PRESETS)}")
    return list(HUB_PRESETS[preset])


def _hub_dataset(spec, text_column: str, cache_dir: str | None, num_proc: int | None):
    """``datasets.load_dataset`` of one spec; ValueError naming the dataset and its first cache
    file when ``text_column`` is absent."""
    from datasets import load_dataset

    ds_id, config, split, revision = spec
    ds = load_dataset(ds_id, config, split=split, revision=revision, cache_dir=cache_dir, num_proc=num_proc)
    if text_column not in ds.column_names:
        shard = ds.cache_files[0]["filename"] if ds.cache_files else "(in memory)"
        raise ValueError(f"{ds_id} ({config}, {split}), shard {shard}: no text column {text_column!r} "
                         f"(has {ds.column_names}); set --hub-text-column")
    return ds


# ------------------------------------------------------------------------------------ build


def _local_file_documents(task: tuple) -> tuple[list[str], dict[str, Any]]:
    """Worker: the documents of one local input file (text: split/unk/detokenize; parquet: rows)."""
    f, split_by, detokenize, unk_policy, text_column, encoding, max_chars = task
    if Path(f).suffix == ".parquet":
        docs = [t.strip() for batch in iter_parquet_texts(f, text_column) for t in batch]
        docs = [d for d in docs if d]
        if max_chars is None:
            return docs, {}
        pieces = [cap_document(d, max_chars) for d in docs]
        cut = [(len(p), len(d)) for p, d in zip(pieces, docs) if len(p) > 1]
        report = {"capped_documents": [{"file": Path(f).name, "documents": len(cut), "pieces": sum(n for n, _ in cut),
                                        "longest_chars": max(c for _, c in cut)}] if cut else []}
        return [x for p in pieces for x in p], report
    report: dict[str, Any] = {}
    return read_local_documents([Path(f)], split_by, detokenize, unk_policy, report=report,
                                encoding=encoding, max_document_chars=max_chars), report


def _local_part(files: Sequence[Path], data_dir: Path, split_by: str | Sequence[str], detokenize: bool,
                unk_policy: str, text_column: str, rows_per_doc: int, workers: int,
                encoding: str = "utf-8", max_document_chars: int | None = None
                ) -> tuple[dict[str, Any], dict[str, Any], int]:
    """Write the local documents to ``data_dir/text.arrow`` (files read by ``workers`` processes,
    in order, a few files in memory at a time). ``split_by``: one split for all files or one per
    file; ``max_document_chars``: the cap (``None``: none). Returns (part, read report, characters)."""
    splits = [split_by] * len(files) if isinstance(split_by, str) else list(split_by)
    report: dict[str, list] = {"latin1_files": [], "detokenized_files": []}
    if max_document_chars is not None:
        report["capped_documents"] = []
    progress = Progress("corpus local", total_documents=len(files), unit="files")
    rows_done = [0]

    def batches():
        tasks = [(str(f), split, detokenize, unk_policy, text_column, encoding, max_document_chars)
                 for f, split in zip(files, splits)]
        with WorkerPool(workers) as pool:
            for docs, rep in pool.map(_local_file_documents, tasks):
                for k, v in rep.items():
                    report.setdefault(k, []).extend(v)
                rows_done[0] += len(docs)
                progress.update(1)
                for i in range(0, len(docs), 10_000):
                    yield docs[i:i + 10_000]

    rows, chars = write_text_file(data_dir / "text.arrow", batches())
    progress.finish()
    if rows == 0:
        raise ValueError(f"local corpus {list(map(str, files))}: no non-empty documents")
    part = {"name": "local", "column": "text", "rows": rows, "rows_per_document": rows_per_doc, "in_place": False,
            "files": file_records([data_dir / "text.arrow"], "text", relative_to=data_dir.parent)}
    return part, report, chars


def _hub_parts(specs, row_kinds: Sequence[str], span_rows: int, text_column: str, data_dir: Path,
               cache_dir: str | None, num_proc: int | None, threads: int) -> tuple[list[dict], list[str]]:
    """One part per Hub dataset: its cache files referenced in place (no copy) when the loaded
    dataset is a plain concatenation of them, else its text column written to ``data_dir``."""
    parts, fingerprints = [], []
    for i, (spec, kind) in enumerate(zip(specs, row_kinds)):
        ds = _hub_dataset(spec, text_column, cache_dir, num_proc)
        fingerprints.append(ds._fingerprint)
        files = [f["filename"] for f in ds.cache_files]
        part = {"name": spec[0], "config": spec[1], "split": spec[2], "rows_per_document": rows_per_document(kind, span_rows)}
        if files and ds._indices is None:
            records = file_records(files, text_column, threads=threads)
            if sum(r["rows"] for r in records) != len(ds):
                raise ValueError(f"{spec[0]}: cache files hold {sum(r['rows'] for r in records)} rows, "
                                 f"the dataset {len(ds)}")
            part.update(column=text_column, rows=len(ds), in_place=True, files=records)
        else:  # in memory or re-indexed: write the text column once
            path = data_dir / f"hub-{i:02d}.arrow"
            col = ds.select_columns([text_column])
            write_text_file(path, ([t or "" for t in col[j:j + 10_000][text_column]]
                                   for j in range(0, len(col), 10_000)))
            part.update(column="text", rows=len(ds), in_place=False,
                        files=file_records([path], "text", relative_to=data_dir.parent))
        print(f"corpus hub: {spec[0]}: {len(ds):,} rows, {len(part['files'])} files "
              f"{'read in place' if part['in_place'] else 'copied'}", file=sys.stderr, flush=True)
        parts.append(part)
    return parts, fingerprints


def _local_parameters(paths, split_by: str | Sequence[str], wikitext_detokenize: bool, unk_policy: str, rows: str,
                      span_rows: int, text_column: str, encoding: str, max_document_chars: int | None = None
                      ) -> tuple[list[Path], dict[str, Any], dict[str, str], list[str]]:
    """Checks and artifact parameters of a local corpus, before any work: the input files (a bad
    parquet shard or, with strict UTF-8, a text file that is not UTF-8 raises here, named), the
    parameters that enter the artifact key, the inputs' sha256 by path, and each file's split.
    ``split_by`` enters the key as given when it is one split for all paths (a string: the key of
    every corpus built before per-path splits stays the same), else as the list, one per path.
    ``max_document_chars`` enters the key only when set (the key of an uncapped corpus stays the same)."""
    params: dict[str, Any] = {}
    if max_document_chars is not None:
        cap_document("", max_document_chars)  # a bad cap stops here, named
    splits = splits_per_path(paths or [None], split_by)  # checks the splits (and their number) first
    if unk_policy not in UNK_POLICIES:
        raise ValueError(f"unknown --unk-policy {unk_policy!r}; expected one of {UNK_POLICIES}")
    pairs = local_input_files_split(paths or [], split_by)
    files = [f for f, _ in pairs]
    if encoding not in ENCODINGS:
        raise ValueError(f"unknown --encoding {encoding!r}; expected one of {ENCODINGS}")
    for f in files:  # a bad shard or a non-UTF-8 text file stops the step here, named, before any work
        if f.suffix == ".parquet":
            check_parquet_shard(f, text_column)
        elif encoding == "utf-8":
            read_text_file(f, "utf-8")
    one = len(set(splits)) == 1
    params.update(split_by=splits[0] if one else splits, wikitext_detokenize=bool(wikitext_detokenize),
                  unk_policy=unk_policy)
    if encoding != "utf-8":
        params["encoding"] = encoding
    if max_document_chars is not None:
        params["max_document_chars"] = int(max_document_chars)
    if rows != "document":
        params.update(rows=rows, span_rows=span_rows)
    if any(f.suffix == ".parquet" for f in files):
        params["text_column"] = text_column
    inputs = {str(f): sha256_file(f) for f in files}
    # the key depends on file contents and order, not on where the files lie
    params["input_order"] = [f.name for f in files]
    return files, params, inputs, [s for _, s in pairs]


def build_corpus(source: str, output: str | os.PathLike, *, paths: Sequence[str | os.PathLike] | None = None,
                 split_by: str | Sequence[str] = "blank_line", wikitext_detokenize: bool = False, unk_policy: str = "drop",
                 rows: str = "document", text_column: str = "text",
                 hub_datasets: Sequence[str] | None = None, hub_configs: Sequence[str | None] | None = None,
                 hub_splits: Sequence[str] | None = None, hub_revisions: Sequence[str | None] | None = None,
                 hub_rows: Sequence[str] | None = None,
                 hub_preset: str = "paper", hub_text_column: str = "text", cache_dir: str | None = None,
                 num_proc: int | None = None, num_documents: int = 4000, seed: int = 0,
                 span_rows: int = DEFAULT_SPAN_ROWS, workers: int = 1, overwrite: bool = False,
                 encoding: str = "utf-8", max_document_chars: int | None = None) -> Path:
    """Build (or reuse) the corpus artifact at ``output``; returns its path.

    Args (besides the source's own, see the module docstring):
        split_by: local: one split for every path, or a list with one per path (module docstring).
        rows / hub_rows: what one row is, ``document`` or ``sentence`` (local: one value; hub: one
            per dataset or one for all; presets say ``sentence`` for BookCorpus). Sentence rows are
            grouped into documents of ``span_rows`` contiguous rows (``taco.data.corpus_store``).
        text_column: the text column of local ``*.parquet`` shards.
        workers: processes reading local files; ``num_proc`` of ``load_dataset`` and hashing
            threads for the Hub (default: ``workers``).
        max_document_chars: local only: cut a longer document at line boundaries into pieces of at
            most this many characters (``taco.data.local_text.cap_document``); ``None``: no cap.
            ValueError for another source.

    Errors (bad source/options, missing files, unreadable parquet shards: CorpusFileError naming
    the shard) are raised before any work starts. An existing ``output`` made with the same
    parameters and inputs is reused; one made otherwise raises ``ArtifactMismatchError`` unless
    ``overwrite``. Written atomically: a failure leaves no artifact.
    """
    t0 = time.time()
    output = Path(output)
    if source not in SOURCES:
        raise ValueError(f"unknown corpus source {source!r}; expected one of {SOURCES}")
    if workers < 1:
        raise ValueError(f"--workers must be >= 1, got {workers}")
    if max_document_chars is not None and source != "local":
        raise ValueError(f"--max-document-chars applies to --source local only (got --source {source})")
    params: dict[str, Any] = {"source": source}
    inputs: dict[str, Any] = {}
    rpd = rows_per_document(rows, span_rows)
    if source == "synthetic":
        if num_documents < 1:
            raise ValueError(f"--num-documents must be >= 1, got {num_documents}")
        params.update(num_documents=num_documents, seed=seed)
    elif source == "local":
        files, local_params, inputs, file_splits = _local_parameters(
            paths, split_by, wikitext_detokenize, unk_policy, rows, span_rows, text_column, encoding,
            max_document_chars)
        params.update(local_params)
    else:
        specs = _hub_specs(hub_datasets, hub_configs, hub_splits, hub_revisions, hub_preset)
        kinds = list(hub_rows or []) or (HUB_PRESET_ROWS.get(hub_preset, []) if not hub_datasets else [])
        kinds = kinds or ["document"]
        if len(kinds) == 1:
            kinds = kinds * len(specs)
        if len(kinds) != len(specs):
            raise ValueError(f"--hub-rows given {len(kinds)} times for {len(specs)} Hub datasets")
        for k in kinds:
            rows_per_document(k, span_rows)
        params.update(hub=[list(s) for s in specs], text_column=hub_text_column, hub_rows=kinds)
        if "sentence" in kinds:
            params["span_rows"] = span_rows
    # format 2: non-UTF-8 files read as Latin-1; detokenization only of WikiText-tokenized files
    # format 3: parts read in place, document ids (rows_per_document), empty Hub rows kept
    key = sha256_json({"kind": "corpus", "parameters": params,
                       "inputs": sorted(inputs.values()), "format": FORMAT})
    if check_existing(output, key, overwrite, parameters=params):
        print(f"corpus: {output} is up to date (artifact_key {key[:12]})", file=sys.stderr)
        return output

    extra: dict[str, Any] = {}
    n_chars: int | None = None
    with atomic_directory(output, overwrite=True) as tmp:
        data_dir = tmp / "data"
        data_dir.mkdir()
        if source == "synthetic":
            from taco.data.synthetic import generate_documents

            docs = generate_documents(num_documents, seed)
            _, n_chars = write_text_file(data_dir / "text.arrow", [docs])
            parts = [{"name": "synthetic", "column": "text", "rows": len(docs), "rows_per_document": 1,
                      "in_place": False, "files": file_records([data_dir / "text.arrow"], "text", relative_to=tmp)}]
        elif source == "local":
            part, extra["local_files"], n_chars = _local_part(
                files, data_dir, file_splits, wikitext_detokenize, unk_policy, text_column, rpd, workers, encoding,
                max_document_chars)
            parts = [part]
        else:
            parts, extra["hub_fingerprints"] = _hub_parts(
                specs, kinds, span_rows, hub_text_column, data_dir, cache_dir,
                num_proc if num_proc is not None else (workers if workers > 1 else None), workers)
        n_rows = sum(p["rows"] for p in parts)
        n_docs = sum(-(-p["rows"] // p["rows_per_document"]) for p in parts)
        write_manifest(tmp, build_manifest(
            "corpus", params, inputs, source=source, artifact_key=key, format=FORMAT, parts=parts,
            counts={"rows": n_rows, "documents": n_docs, "characters": n_chars,
                    "bytes_in_artifact": sum(f["bytes"] for p in parts if not p["in_place"] for f in p["files"]),
                    "bytes_in_place": sum(f["bytes"] for p in parts if p["in_place"] for f in p["files"])},
            wall_time_s=round(time.time() - t0, 3), **extra))
    return output


def load_documents(corpus_dir: str | os.PathLike):
    """The rows of a corpus artifact as one ``datasets.Dataset`` with column ``text``, memory-mapped
    from its parts in place (``Dataset.from_file``; nothing copied). Empty Hub rows are included.

    Raises ValueError for a directory that is not a corpus artifact (format >= 3) and
    CorpusFileError naming a missing or unreadable file.
    """
    from datasets import Dataset, concatenate_datasets

    reader = CorpusReader(corpus_dir)
    parts = []
    for path, _, _, column, _ in reader.files:
        ds = Dataset.from_file(str(path)).select_columns([column])
        parts.append(ds.rename_column(column, "text") if column != "text" else ds)
    return parts[0] if len(parts) == 1 else concatenate_datasets(parts)


def document_ids(corpus_dir: str | os.PathLike):
    """The document id of every row (int64 array, ``num_rows``), see ``taco.data.corpus_store``."""
    return CorpusReader(corpus_dir, check=False).document_ids()


# ------------------------------------------------------------------------------------ CLI


def _split_arg(value: str) -> str:
    try:
        return check_split(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def build_parser() -> argparse.ArgumentParser:
    from taco.data.command import data_parser

    p = data_parser("corpus", __doc__.split("\n")[0], output_help="artifact directory to write",
                    overwrite_help="replace an artifact made otherwise")
    p.add_argument("--source", choices=SOURCES, default="synthetic",
                   help="synthetic: an artificial language (offline); local: text files (--paths); hub: Hub "
                        "datasets (--hub-*)")
    g = p.add_argument_group("synthetic")
    g.add_argument("--num-documents", type=int, default=4000, help="documents of the synthetic language")
    g.add_argument("--seed", type=int, default=0, help="seed of the synthetic language")
    g = p.add_argument_group("local")
    g.add_argument("--paths", nargs="+", default=[], help="text files or folders")
    g.add_argument("--split-by", nargs="+", type=_split_arg, default=["blank_line"],
                   help=f"one for all paths or one per path: {', '.join(SPLIT_BY)} or {PARAGRAPHS_PREFIX}N "
                        "(spans of N blank-line paragraphs)")
    g.add_argument("--wikitext-detokenize", action="store_true",
                   help="undo WikiText's spaced-out tokenization (' @-@ ', ' , ') in the local files")
    g.add_argument("--unk-policy", choices=UNK_POLICIES, default="drop",
                   help="WikiText's <unk> tokens: drop them, or keep them as the tokenizer's [UNK]")
    g.add_argument("--encoding", choices=ENCODINGS, default="utf-8",
                   help="decoding of text files: strict utf-8 (a bad byte stops with file and line), "
                        "latin-1, or utf-8-or-latin-1 (per file; Latin-1 files listed in the manifest)")
    g.add_argument("--max-document-chars", type=int, default=None,
                   help="cut a longer document at line boundaries into pieces of about equal length, each at "
                        "most this many characters (default: no cap)")
    g.add_argument("--rows", choices=ROW_KINDS, default="document",
                   help="what one document of the input is: a document, or a sentence (grouped in spans)")
    g.add_argument("--text-column", default="text", help="text column of *.parquet inputs")
    g = p.add_argument_group("hub (each option repeatable or one value for all datasets)")
    g.add_argument("--hub-preset", choices=sorted(HUB_PRESETS), default="paper",
                   help="used when no --hub-dataset is given")
    g.add_argument("--hub-dataset", action="extend", nargs="+", default=[],
                   help="Hub dataset id(s), e.g. wikimedia/wikipedia (default: those of --hub-preset)")
    g.add_argument("--hub-config", action="extend", nargs="+", default=[],
                   help="dataset configuration name(s), e.g. 20231101.en")
    g.add_argument("--hub-split", action="extend", nargs="+", default=[], help="split(s) to read, e.g. train")
    g.add_argument("--hub-revision", action="extend", nargs="+", default=[],
                   help="dataset revision(s) (commit, tag or branch) to pin the download")
    g.add_argument("--hub-text-column", default="text", help="text column of the Hub datasets")
    g.add_argument("--cache-dir", default=None, help="datasets cache folder (default: the datasets library's own)")
    g.add_argument("--hub-rows", action="extend", nargs="+", choices=ROW_KINDS, default=[],
                   help="per dataset: a row is a document or a sentence (preset paper: document sentence)")
    g.add_argument("--num-proc", type=int, default=None, help="load_dataset num_proc (default: --workers)")
    p.add_argument("--span-rows", type=int, default=DEFAULT_SPAN_ROWS,
                   help="sentences per document span for sentence rows (about one article)")
    p.add_argument("--workers", type=int, default=1, help="processes (the job's threads)")
    return p


def main(argv: list[str] | None = None) -> int:
    from taco.data.command import run_data_command

    args = build_parser().parse_args(argv)
    return run_data_command("corpus", args.output, lambda: build_corpus(
        args.source, args.output, paths=args.paths,
        split_by=args.split_by[0] if len(args.split_by) == 1 else args.split_by,
        wikitext_detokenize=args.wikitext_detokenize, unk_policy=args.unk_policy,
        hub_datasets=args.hub_dataset, hub_configs=args.hub_config, hub_splits=args.hub_split,
        hub_revisions=args.hub_revision, hub_preset=args.hub_preset,
        hub_text_column=args.hub_text_column, cache_dir=args.cache_dir, num_proc=args.num_proc,
        num_documents=args.num_documents, seed=args.seed, overwrite=args.overwrite,
        rows=args.rows, text_column=args.text_column, hub_rows=args.hub_rows,
        span_rows=args.span_rows, workers=args.workers, encoding=args.encoding,
        max_document_chars=args.max_document_chars))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
