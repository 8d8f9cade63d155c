"""Local text files as documents: finding, decoding and splitting them (``taco corpus --source local``).

The readers behind a local corpus (``taco.data.corpus``), without the artifact around it:
:func:`local_input_files` expands files and folders (``*.txt``, ``*.tokens``, ``*.raw``,
``*.parquet``, recursively, sorted), :func:`splits_per_path` gives each path its split
(:data:`SPLIT_BY` or ``paragraphs:N``), :func:`read_text_file` decodes a file by ``--encoding``
(strict UTF-8, Latin-1, or UTF-8 falling back to Latin-1 per file), :func:`split_documents` cuts
its text into documents, :func:`cap_document` cuts a document longer than a cap into pieces at line
boundaries, and :func:`read_local_documents` chains them with the ``<unk>`` policy and the WikiText
detokenizer (only for files that carry WikiText's escapes, :func:`is_wikitext_tokenized`). Every
name is also importable from ``taco.data.corpus``.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from taco.data.detokenize import UNK_POLICIES, apply_unk_policy, wikitext_detokenize

SPLIT_BY = ("blank_line", "line", "wikitext_article")
#: the split of a span of N blank-line paragraphs: ``paragraphs:N`` (N >= 1)
PARAGRAPHS_PREFIX = "paragraphs:"
LOCAL_SUFFIXES = (".txt", ".tokens", ".raw", ".parquet")

_WIKITEXT_TITLE = re.compile(r"^ ?= [^=].* = ?$")


def check_split(split_by: str) -> str:
    """``split_by`` if it is a known split (:data:`SPLIT_BY` or ``paragraphs:N`` with N >= 1), else
    ValueError naming it and the valid forms."""
    if split_by in SPLIT_BY:
        return split_by
    if isinstance(split_by, str) and split_by.startswith(PARAGRAPHS_PREFIX):
        n = split_by[len(PARAGRAPHS_PREFIX):]
        if n.isdigit() and int(n) >= 1:
            return split_by
    raise ValueError(f"unknown --split-by {split_by!r}; expected one of {SPLIT_BY} or "
                     f"{PARAGRAPHS_PREFIX}N (N >= 1 paragraphs per document)")


def splits_per_path(paths: Sequence[str | os.PathLike], split_by: str | Sequence[str]) -> list[str]:
    """One split per path: ``split_by`` itself for every path (a string or a one-element list), or
    the list as given when it has one entry per path. ValueError on a length mismatch or an unknown
    split, naming them."""
    splits = [split_by] if isinstance(split_by, str) else list(split_by)
    if len(splits) == 1:
        splits = splits * len(paths)
    if len(splits) != len(paths):
        raise ValueError(f"--split-by: {len(splits)} values for {len(paths)} paths (give one for all paths "
                         "or one per path, in the order of --paths / corpus.paths)")
    return [check_split(s) for s in splits]


def split_documents(text: str, split_by: str = "blank_line") -> list[str]:
    """Split a file's text into documents (stripped; empty ones dropped).

    ``blank_line``: blocks separated by lines that are empty or whitespace only, the block's lines
    joined with a newline. ``line``: one document per non-blank line. ``wikitext_article``: a new
    document at each top-level heading `` = Title = `` (`` = = Section = = `` stays inside),
    paragraphs joined with a newline. ``paragraphs:N``: the ``blank_line`` paragraphs in
    consecutive spans of N (the last span of a file may be shorter), joined with a newline.
    """
    lines = text.splitlines()
    docs: list[str] = []
    check_split(split_by)
    if split_by.startswith(PARAGRAPHS_PREFIX):
        n = int(split_by[len(PARAGRAPHS_PREFIX):])
        paras = split_documents(text, "blank_line")
        return ["\n".join(paras[i:i + n]) for i in range(0, len(paras), n)]
    if split_by == "line":
        return [ln.strip() for ln in lines if ln.strip()]
    if split_by == "blank_line":
        cur: list[str] = []
        for ln in lines + [""]:
            if ln.strip():
                cur.append(ln.strip())
            elif cur:
                docs.append("\n".join(cur))
                cur = []
        return docs
    if split_by == "wikitext_article":
        cur = []
        for ln in lines:
            if _WIKITEXT_TITLE.match(ln) and cur:
                docs.append("\n".join(cur))
                cur = []
            if ln.strip():
                cur.append(ln.strip())
        if cur:
            docs.append("\n".join(cur))
        return docs
    raise ValueError(f"unknown --split-by {split_by!r}; expected one of {SPLIT_BY}")


def _cut_line(line: str, max_chars: int) -> list[str]:
    """A line longer than ``max_chars`` in pieces of at most ``max_chars``, cut at the last whitespace
    before the limit (a run of text without whitespace that long is cut at the limit)."""
    out = []
    while len(line) > max_chars:
        cut = max(line.rfind(" ", 0, max_chars + 1), line.rfind("\t", 0, max_chars + 1))
        if cut <= 0:
            cut = max_chars
        out.append(line[:cut].rstrip())
        line = line[cut:].lstrip()
    if line:
        out.append(line)
    return [p for p in out if p]


def cap_document(text: str, max_chars: int) -> list[str]:
    """``text`` (one document) as pieces of at most ``max_chars`` characters each.

    A document within the cap is returned whole. A longer one is cut at line boundaries (a document's
    paragraphs and, in verse, its lines are lines here) into about ``n = ceil(len / max_chars)`` pieces
    of about equal length: each cut is the line boundary nearest to ``remaining / pieces left``
    characters that keeps the piece within the cap, so no piece is a short remainder; a single line
    longer than the cap is cut at whitespace first. Pieces keep the document's order, lines joined
    by ``\n`` as in ``text``.

    Why: the validation split and the data fractions draw whole documents, so one very long document
    (Paradise Lost read as blank-line paragraphs is one ~100k-token document) makes the draws lumpy.
    ``taco corpus --max-document-chars``; config ``corpus.max_document_chars``.

    Raises ValueError for ``max_chars < 1``.
    """
    if not isinstance(max_chars, int) or isinstance(max_chars, bool) or max_chars < 1:
        raise ValueError(f"--max-document-chars must be an integer >= 1, got {max_chars!r}")
    if len(text) <= max_chars:
        return [text]
    units = [u for line in text.split("\n") for u in (_cut_line(line, max_chars) if len(line) > max_chars
                                                        else [line])]
    left = sum(map(len, units)) + len(units) - 1  # characters of the pieces still to close
    n_left = math.ceil(left / max_chars)
    pieces: list[str] = []
    cur: list[str] = []
    size = 0
    for u in units:
        if cur:
            grown, target = size + 1 + len(u), left / n_left
            if grown > max_chars or (n_left > 1 and abs(grown - target) >= abs(size - target)):
                pieces.append("\n".join(cur))
                left -= size + 1
                n_left = max(1, math.ceil(left / max_chars))
                cur, size = [], 0
        size += len(u) + (1 if cur else 0)
        cur.append(u)
    if cur:
        pieces.append("\n".join(cur))
    return pieces


def local_input_files(paths: Sequence[str | os.PathLike]) -> list[Path]:
    """Expand files and folders (recursively: ``*.txt``, ``*.tokens``, ``*.raw``), sorted per folder.

    Raises FileNotFoundError naming a path that does not exist or a folder with no text files.
    """
    return [f for f, _ in local_input_files_split(paths, "blank_line")]


def local_input_files_split(paths: Sequence[str | os.PathLike],
                            split_by: str | Sequence[str]) -> list[tuple[Path, str]]:
    """(file, split) for every file of ``paths`` (folders expanded as :func:`local_input_files`),
    each file with the split of the path it came from (:func:`splits_per_path`)."""
    if not paths:
        raise ValueError("local corpus needs at least one path (--paths)")
    out: list[tuple[Path, str]] = []
    for p, split in zip(map(Path, paths), splits_per_path(paths, split_by)):
        if p.is_file():
            out.append((p, split))
        elif p.is_dir():
            found = sorted(f for f in p.rglob("*") if f.is_file() and f.suffix in LOCAL_SUFFIXES)
            if not found:
                raise FileNotFoundError(f"{p}: folder holds no {'/'.join(LOCAL_SUFFIXES)} files")
            out.extend((f, split) for f in found)
        else:
            raise FileNotFoundError(f"{p}: no such file or folder (local corpus input)")
    return out


#: WikiText's in-number escapes; a file holding one of them is WikiText-tokenized
_WIKITEXT_MARKERS = (" @-@ ", " @,@ ", " @.@ ")


#: how local text files are decoded (``--encoding``, config ``corpus.encoding``)
ENCODINGS = ("utf-8", "latin-1", "utf-8-or-latin-1")


def read_text_file(path: str | os.PathLike, encoding: str = "utf-8") -> tuple[str, str]:
    """Text of ``path`` and the encoding used. Universal newlines: CRLF becomes ``\\n``.

    ``encoding``: ``utf-8`` (strict: a byte that is not UTF-8 raises
    :class:`taco.textfile.InputEncodingError` naming the file, line and column),
    ``latin-1`` (every byte sequence decodes), or ``utf-8-or-latin-1`` (UTF-8, else the whole file
    as Latin-1: the NLTK Project Gutenberg selection has two Latin-1 files and NLTK reads it so;
    the corpus manifest lists such files under ``latin1_files``).
    """
    from taco.textfile import describe_decode_error, InputEncodingError

    if encoding not in ENCODINGS:
        raise ValueError(f"unknown --encoding {encoding!r}; expected one of {ENCODINGS}")
    raw = Path(path).read_bytes().replace(b"\r\n", b"\n")
    if encoding == "latin-1":
        return raw.decode("latin-1"), "latin-1"
    try:
        return raw.decode("utf-8"), "utf-8"
    except UnicodeDecodeError as exc:
        if encoding == "utf-8":
            raise InputEncodingError(describe_decode_error(
                path, raw, exc, "corpus file (or set corpus.encoding / --encoding utf-8-or-latin-1)")) from None
        return raw.decode("latin-1"), "latin-1"


def is_wikitext_tokenized(text: str) -> bool:
    """True when ``text`` carries WikiText's number escapes (`` @-@ ``, `` @,@ ``, `` @.@ ``)."""
    return any(m in text for m in _WIKITEXT_MARKERS)


def read_local_documents(files: Sequence[Path], split_by: str = "blank_line",
                         detokenize: bool = False, unk_policy: str = "drop",
                         report: dict[str, Any] | None = None, encoding: str = "utf-8",
                         max_document_chars: int | None = None) -> list[str]:
    """Documents of the given files in order: split, then ``<unk>`` policy, then detokenized, then
    capped (``max_document_chars``: a longer document becomes pieces, :func:`cap_document`; ``None``:
    no cap).

    ``detokenize`` applies the WikiText detokenizer only to files that are WikiText-tokenized
    (``is_wikitext_tokenized``): plain prose read next to WikiText (the Gutenberg books) is kept as
    written. Files are decoded by ``encoding`` (``read_text_file``). If ``report`` is a
    dict it receives ``{"latin1_files": [...], "detokenized_files": [...], "capped_documents": [...]}``
    (file names; per file with a capped document: ``{"file", "documents", "pieces", "longest_chars"}``,
    the documents cut, the pieces they became and the longest of them before the cut).
    """
    if unk_policy not in UNK_POLICIES:
        raise ValueError(f"unknown --unk-policy {unk_policy!r}; expected one of {UNK_POLICIES}")
    if max_document_chars is not None:
        cap_document("", max_document_chars)  # checks the cap before any file is read
    docs: list[str] = []
    latin1, detok, capped = [], [], []
    for f in files:
        text, used = read_text_file(f, encoding)
        if used != "utf-8":
            latin1.append(Path(f).name)
        detok_file = detokenize and is_wikitext_tokenized(text)
        if detok_file:
            detok.append(Path(f).name)
        cut = {"file": Path(f).name, "documents": 0, "pieces": 0, "longest_chars": 0}
        for d in split_documents(text, split_by):
            d = apply_unk_policy(d, unk_policy)
            if detok_file:
                d = wikitext_detokenize(d)
            d = d.strip()
            if not d:
                continue
            pieces = [d] if max_document_chars is None else cap_document(d, max_document_chars)
            if len(pieces) > 1:
                cut["documents"] += 1
                cut["pieces"] += len(pieces)
                cut["longest_chars"] = max(cut["longest_chars"], len(d))
            docs.extend(pieces)
        if cut["documents"]:
            capped.append(cut)
    if report is not None:
        report.update(latin1_files=latin1, detokenized_files=detok)
        if max_document_chars is not None:
            report["capped_documents"] = capped
    return docs
