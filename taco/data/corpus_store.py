"""The storage of a corpus artifact: text parts read in place, and a document id for every row.

A corpus artifact (``taco corpus``, manifest format 3) lists its text as **parts**, in corpus order::

    "parts": [{"name": "wikimedia/wikipedia", "column": "text", "rows": 6407814,
               "rows_per_document": 1, "in_place": true,
               "files": [{"path": "/…/hub/datasets/…/wikipedia-train-00000-of-00041.arrow",
                          "rows": 156288, "bytes": 482349056, "sha256": "…"}, …]},
              {"name": "rojagtap/bookcorpus", "rows_per_document": 50, …}]

Each file is an Arrow IPC stream (the format of ``datasets``' cache and ``ArrowWriter``), read
memory-mapped: a Hub dataset's own cache files are referenced where they lie (``in_place``: no
second copy of the corpus; their sha256 is recorded so that a changed file is caught), local and
synthetic text is written once into the artifact's ``data/`` (paths relative to the artifact).

**Document ids.** Row ``r`` of a part that starts at corpus row ``R`` and at document ``D`` belongs
to document ``D + (r - R) // rows_per_document``. ``rows_per_document`` is 1 where a row is a
document (a Wikipedia article, a WikiText article, a synthetic document) and ``span_rows`` (a
setting, default ``DEFAULT_SPAN_ROWS``) where a row is one sentence (``rojagtap/bookcorpus``): the
document is then a contiguous span of sentences. The ids are computed, not stored (8 bytes per row
saved: 0.6 GB for BookCorpus' 74M sentences). Empty rows are kept (a Hub file is not rewritten);
the packer skips them.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from taco.manifest import read_manifest, sha256_file

#: Sentences per document span for a sentence-per-row source: about one Wikipedia article's worth.
#: English Wikipedia averages ~650 words per article (4.4B words / 6.7M articles, 20231101.en);
#: BookCorpus ~13 words per sentence (~0.98B words / 74M sentences), so ~50 sentences.
DEFAULT_SPAN_ROWS = 50
#: what one row of a source is
ROW_KINDS = ("document", "sentence")
#: corpus manifest format that has ``parts``
FORMAT = 3


class CorpusFileError(ValueError):
    """A corpus file (shard) cannot be read as recorded; the message names the file."""


def rows_per_document(row_kind: str, span_rows: int) -> int:
    """1 for ``document`` rows, ``span_rows`` for ``sentence`` rows. ValueError otherwise."""
    if row_kind not in ROW_KINDS:
        raise ValueError(f"unknown row kind {row_kind!r}; expected one of {ROW_KINDS}")
    if span_rows < 1:
        raise ValueError(f"corpus.span_rows must be >= 1, got {span_rows}")
    return 1 if row_kind == "document" else int(span_rows)


# ------------------------------------------------------------------------------------ files


def open_arrow(path: str | os.PathLike, column: str = "text"):
    """The ``column`` of an Arrow IPC stream file, memory-mapped, as a ``pyarrow.ChunkedArray``.

    Raises CorpusFileError naming ``path`` if it is missing, truncated or not Arrow, or lacks
    ``column`` (the message lists the columns it has).
    """
    import pyarrow as pa

    path = Path(path)
    if not path.is_file():
        raise CorpusFileError(f"{path}: corpus file not found")
    try:
        table = pa.ipc.open_stream(pa.memory_map(str(path), "r")).read_all()
    except (pa.ArrowInvalid, OSError) as e:
        raise CorpusFileError(f"{path}: cannot be read as an Arrow stream (truncated or corrupt?): {e}") from None
    if column not in table.column_names:
        raise CorpusFileError(f"{path}: no text column {column!r} (has {table.column_names})")
    return table.column(column)


def check_parquet_shard(path: str | os.PathLike, column: str = "text") -> int:
    """Rows of a parquet shard, checked readable (footer) and holding a string ``column``.

    Raises CorpusFileError naming the shard (truncated file, not parquet, wrong text column).
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        meta = pq.ParquetFile(str(path))
    except (pa.ArrowInvalid, OSError) as e:
        raise CorpusFileError(f"{path}: cannot be read as parquet (truncated or corrupt?): {e}") from None
    names = meta.schema_arrow.names
    if column not in names:
        raise CorpusFileError(f"{path}: no text column {column!r} (has {names}); set the text column")
    if not pa.types.is_string(meta.schema_arrow.field(column).type) and \
            not pa.types.is_large_string(meta.schema_arrow.field(column).type):
        raise CorpusFileError(f"{path}: column {column!r} is {meta.schema_arrow.field(column).type}, not text")
    return meta.metadata.num_rows


def iter_parquet_texts(path: str | os.PathLike, column: str = "text", batch_rows: int = 10_000) -> Iterator[list[str]]:
    """Batches of the ``column`` of a parquet shard (None -> ""); CorpusFileError names a bad shard."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        for batch in pq.ParquetFile(str(path)).iter_batches(batch_size=batch_rows, columns=[column]):
            yield [t or "" for t in batch.column(0).to_pylist()]
    except (pa.ArrowInvalid, OSError) as e:
        raise CorpusFileError(f"{path}: unreadable part of parquet shard: {e}") from None


def write_text_file(path: str | os.PathLike, batches: Iterable[Sequence[str]], progress=None) -> tuple[int, int]:
    """Write batches of strings as one Arrow stream file (column ``text``); ``(rows, characters)``."""
    from datasets import Features, Value
    from datasets.arrow_writer import ArrowWriter

    rows = chars = 0
    with ArrowWriter(features=Features({"text": Value("string")}), path=str(path)) as w:
        for batch in batches:
            batch = list(batch)
            if not batch:
                continue
            w.write_batch({"text": batch})
            n_chars = sum(map(len, batch))
            rows += len(batch)
            chars += n_chars
            if progress is not None:
                progress.update(len(batch))
        w.finalize()
    return rows, chars


def file_records(paths: Sequence[str | os.PathLike], column: str, relative_to: str | os.PathLike | None = None,
                 threads: int = 1) -> list[dict[str, Any]]:
    """``{"path", "rows", "bytes", "sha256"}`` of each Arrow file (sha256 in ``threads`` threads).

    ``path`` is relative to ``relative_to`` when given (files inside the artifact), else absolute.
    Raises CorpusFileError for an unreadable file.
    """
    rows = [len(open_arrow(p, column)) for p in paths]
    with ThreadPoolExecutor(max(1, threads)) as ex:  # hashlib releases the GIL
        digests = list(ex.map(sha256_file, paths))
    out = []
    for p, n, d in zip(paths, rows, digests):
        shown = os.path.relpath(p, relative_to) if relative_to is not None else str(Path(p).resolve())
        out.append({"path": shown, "rows": n, "bytes": Path(p).stat().st_size, "sha256": d})
    return out


# ------------------------------------------------------------------------------------ reader


class CorpusReader:
    """Texts and document ids of a corpus artifact, read in place (memory-mapped).

    ``num_rows``; ``texts(rows)`` (a sorted int array of row indices -> list of str, None -> "");
    ``documents()`` -> ``(starts, stops)``: the half-open row range of every document, in corpus
    order (int64 arrays of length ``num_documents``); ``document_ids()`` -> the id of every row.

    ``check_files()`` (run by the constructor unless ``check=False``) opens every file and checks
    its size and row count against the manifest; CorpusFileError names the first bad one.
    ``verify_hashes(threads)`` re-hashes them against the recorded sha256.

    Raises ValueError for a directory that is not a corpus artifact of format >= 3.
    """

    def __init__(self, corpus_dir: str | os.PathLike, check: bool = True):
        self.dir = Path(corpus_dir)
        self.manifest = read_manifest(self.dir)
        if self.manifest.get("kind") != "corpus":
            raise ValueError(f"{self.dir}: manifest kind is {self.manifest.get('kind')!r}, expected 'corpus'")
        self.parts = self.manifest.get("parts")
        if not self.parts:
            raise ValueError(f"{self.dir}: corpus artifact of an older format (no 'parts'); "
                             "rebuild it with `taco corpus ... --overwrite`")
        self.files: list[tuple[Path, int, int, str, str]] = []  # (path, rows, bytes, column, sha256)
        for part in self.parts:
            for f in part["files"]:
                p = Path(f["path"])
                self.files.append((p if p.is_absolute() else self.dir / p, int(f["rows"]), int(f["bytes"]),
                                   part.get("column", "text"), f.get("sha256")))
        self.num_rows = sum(int(p["rows"]) for p in self.parts)
        self._column = None
        self._starts = None
        if check:
            self.check_files()

    def check_files(self) -> None:
        for path, rows, size, column, _ in self.files:
            if not path.is_file():
                raise CorpusFileError(f"{path}: corpus file not found (listed in {self.dir / 'manifest.json'})")
            if path.stat().st_size != size:
                raise CorpusFileError(f"{path}: {path.stat().st_size} bytes, the corpus manifest recorded {size} "
                                      "(truncated or changed since `taco corpus`)")
            n = len(open_arrow(path, column))
            if n != rows:
                raise CorpusFileError(f"{path}: {n} rows, the corpus manifest recorded {rows}")

    def verify_hashes(self, threads: int = 1) -> list[str]:
        """Re-hash every file; CorpusFileError names one whose sha256 differs. Returns the digests."""
        with ThreadPoolExecutor(max(1, threads)) as ex:
            digests = list(ex.map(sha256_file, [f[0] for f in self.files]))
        for (path, *_, recorded), d in zip(self.files, digests):
            if recorded and d != recorded:
                raise CorpusFileError(f"{path}: sha256 {d[:12]} differs from the recorded {recorded[:12]} "
                                      "(changed since `taco corpus`)")
        return digests

    @property
    def column(self):
        """All rows' text as one memory-mapped ``pyarrow.ChunkedArray``."""
        if self._column is None:
            import pyarrow as pa

            chunks = []
            for path, _, _, column, _ in self.files:
                chunks += open_arrow(path, column).chunks
            self._column = pa.chunked_array(chunks, type=pa.string()) if chunks else pa.chunked_array([], pa.string())
        return self._column

    @property
    def _chunk_starts(self) -> np.ndarray:
        if getattr(self, "_starts", None) is None:
            self._starts = np.concatenate([[0], np.cumsum([len(c) for c in self.column.chunks])]).astype(np.int64)
        return self._starts

    def texts(self, rows: np.ndarray) -> list[str]:
        """The text of each row index (any order; None -> ""). Reads only those rows: a slice for a
        contiguous run, else a take per memory-mapped chunk (``ChunkedArray.take`` would first
        concatenate every chunk, i.e. copy the whole corpus into memory)."""
        rows = np.asarray(rows, dtype=np.int64)
        if len(rows) == 0:
            return []
        if rows[-1] - rows[0] + 1 == len(rows) and (len(rows) < 2 or (np.diff(rows) == 1).all()):
            return [v or "" for v in self.column.slice(int(rows[0]), len(rows)).to_pylist()]
        if rows.min() < 0 or rows.max() >= self.num_rows:
            raise IndexError(f"row index out of range 0..{self.num_rows - 1}")
        starts = self._chunk_starts
        chunk = np.searchsorted(starts, rows, side="right") - 1
        order = np.argsort(chunk, kind="stable")
        cuts = np.flatnonzero(np.diff(chunk[order])) + 1
        out: list[str] = [""] * len(rows)
        for group in np.split(order, cuts):
            c = int(chunk[group[0]])
            values = self.column.chunk(c).take(rows[group] - starts[c]).to_pylist()
            for i, v in zip(group.tolist(), values):
                out[i] = v or ""
        return out

    def documents(self) -> tuple[np.ndarray, np.ndarray]:
        starts, stops, row = [], [], 0
        for part in self.parts:
            n, k = int(part["rows"]), int(part.get("rows_per_document", 1))
            s = np.arange(row, row + n, k, dtype=np.int64)
            starts.append(s)
            stops.append(np.minimum(s + k, row + n))
            row += n
        return np.concatenate(starts), np.concatenate(stops)

    @property
    def num_documents(self) -> int:
        return sum(-(-int(p["rows"]) // int(p.get("rows_per_document", 1))) for p in self.parts)

    def document_ids(self) -> np.ndarray:
        starts, stops = self.documents()
        return np.repeat(np.arange(len(starts), dtype=np.int64), stops - starts)
