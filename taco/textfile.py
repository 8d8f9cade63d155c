"""Reading input text files as UTF-8, with errors that name the file, the line and the byte.

Every text input the suite reads as UTF-8 (local GLUE TSVs, ``vocab.txt``, the analysis spec)
goes through :func:`read_utf8`, so a stray non-UTF-8 byte (``\\xff`` in a sentence) stops the
command before any work with ``<file>:<line>: not UTF-8 ...`` instead of a ``UnicodeDecodeError``
traceback that names no file. (Local corpus files are read by ``taco.data.local_text``, which falls
back to Latin-1 on purpose for the Gutenberg selection and records which files it read so.)
"""

from __future__ import annotations

import codecs
import os
from pathlib import Path

from taco.errors import UsageError


class InputEncodingError(UsageError):
    """An input file is not valid UTF-8; the message names the file, the 1-based line and column."""


def describe_decode_error(path: str | os.PathLike, raw: bytes, exc: UnicodeDecodeError, what: str) -> str:
    """``<path>:<line>: ...`` for a UnicodeDecodeError at byte offset ``exc.start`` of ``raw``.

    Line and column are 1-based; the column counts bytes from the start of the line.
    """
    line = raw.count(b"\n", 0, exc.start) + 1
    column = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
    bad = raw[exc.start:exc.end]
    return (f"{path}:{line}: not UTF-8 text: byte(s) {bad!r} at column {column} ({exc.reason}); the {what} "
            "must be UTF-8 (re-encode it, e.g. `iconv -f latin1 -t utf-8`, or fix that line)")


def read_utf8(path: str | os.PathLike, what: str = "input file", strip_bom: bool = False,
              error: type[Exception] = InputEncodingError) -> str:
    """The text of ``path`` decoded as strict UTF-8, without newline translation.

    Args:
        path: the file.
        what: how the message calls the file ("GLUE file", "vocab file", ...).
        strip_bom: drop a leading UTF-8 byte-order mark (MRPC's files carry one).
        error: the exception class raised (a ValueError subclass of the caller's).
    Raises:
        FileNotFoundError: no such file (the message names it).
        ``error`` (default :class:`InputEncodingError`): a byte sequence that is not UTF-8; the
            message names the file, the line and column, and the bytes.
    """
    path = Path(path)
    raw = path.read_bytes()
    if strip_bom and raw.startswith(codecs.BOM_UTF8):
        raw = raw[len(codecs.BOM_UTF8):]
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise error(describe_decode_error(path, raw, exc, what)) from None
