"""Local text files as documents: finding, decoding and splitting them (``taco corpus --source local``).

The readers behind a local corpus (``taco.data.corpus``), without the artifact around it:
:func:`local_input_files` expands files and folders (``*.txt``, ``*.tokens``, ``*.raw``,
``*.parquet``, recursively, sorted), :func:`splits_per_path` gives each path its split
(:data:`SPLIT_BY` or ``paragraphs:N``), :func:`read_text_file` decodes a file by ``--encoding``
(strict UTF-8, Latin-1, or UTF-8 falling back to Latin-1 per file), :func:`split_documents` cuts
its text into documents, and :func:`read_local_documents` chains them with the ``<unk>`` policy
and the WikiText detokenizer (only for files that carry WikiText's escapes,
:func:`is_wikitext_tokenized`). Every name is also importable from ``taco.data.corpus``.
"""

from __future__ import annotations

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
    :class:`taco.data.textfile.InputEncodingError` naming the file, line and column),
    ``latin-1`` (every byte sequence decodes), or ``utf-8-or-latin-1`` (UTF-8, else the whole file
    as Latin-1: the NLTK Project Gutenberg selection has two Latin-1 files and NLTK reads it so;
    the corpus manifest lists such files under ``latin1_files``).
    """
    from taco.data.textfile import describe_decode_error, InputEncodingError

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
                         report: dict[str, Any] | None = None, encoding: str = "utf-8") -> list[str]:
    """Documents of the given files in order: split, then ``<unk>`` policy, then detokenized.

    ``detokenize`` applies the WikiText detokenizer only to files that are WikiText-tokenized
    (``is_wikitext_tokenized``): plain prose read next to WikiText (the Gutenberg books) is kept as
    written. Files are decoded by ``encoding`` (``read_text_file``). If ``report`` is a
    dict it receives ``{"latin1_files": [...], "detokenized_files": [...]}`` (file names).
    """
    if unk_policy not in UNK_POLICIES:
        raise ValueError(f"unknown --unk-policy {unk_policy!r}; expected one of {UNK_POLICIES}")
    docs: list[str] = []
    latin1, detok = [], []
    for f in files:
        text, used = read_text_file(f, encoding)
        if used != "utf-8":
            latin1.append(Path(f).name)
        detok_file = detokenize and is_wikitext_tokenized(text)
        if detok_file:
            detok.append(Path(f).name)
        for d in split_documents(text, split_by):
            d = apply_unk_policy(d, unk_policy)
            if detok_file:
                d = wikitext_detokenize(d)
            d = d.strip()
            if d:
                docs.append(d)
    if report is not None:
        report.update(latin1_files=latin1, detokenized_files=detok)
    return docs
