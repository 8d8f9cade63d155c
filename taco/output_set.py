"""A set of output files written whole or not at all.

A command whose outputs belong together (``taco efficiency``'s csv, curves, page, figure and manifest)
must not leave a mix of new and old files when the disk fills or the folder is read-only halfway: every
file is first written to a temporary sibling (``.<name>.tmp-<pid>``), and only when all of them are
written are they renamed over the old ones (renames in one folder need no space). A failure while
writing leaves every earlier file untouched and removes the temporaries; the error names the folder
(:class:`OutputSetError`; ``no_space`` tells a full disk, exit :data:`taco.errors.EXIT_NO_SPACE`).
Standard library only.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from pathlib import Path

__all__ = ["OutputSet", "OutputSetError"]


class OutputSetError(OSError):
    """Writing the set failed (the message names the folder and the file); nothing was replaced."""

    def __init__(self, message: str, no_space: bool = False):
        super().__init__(message)
        self.no_space = no_space


def _remove(tmp: Path) -> None:
    """Remove a temporary if it can be removed: on a read-only file system even removing a file that was never
    created fails (EROFS), and that must not hide the error that names the folder."""
    try:
        tmp.unlink(missing_ok=True)
    except OSError:
        pass


class OutputSet:
    """Collect the files of one output folder, then :meth:`commit` them together.

    ``with OutputSet(folder) as out: out.text("a.csv", ...); out.write("b.png", fig.savefig)`` commits at
    the end of the block when it raised nothing, and discards the temporaries otherwise.
    """

    def __init__(self, folder: str | os.PathLike):
        self.folder = Path(folder)
        self._pending: list[tuple[Path, Path]] = []
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise self._error(exc, self.folder) from None

    def _error(self, exc: OSError, path: Path) -> OutputSetError:
        no_space = exc.errno == errno.ENOSPC
        why = "no space left on device" if no_space else (exc.strerror or str(exc))
        return OutputSetError(f"cannot write into the output folder {self.folder} ({path.name}: {why}); "
                              "no earlier output was replaced", no_space=no_space)

    def write(self, name: str, writer: Callable[[Path], object]) -> Path:
        """Call ``writer(temporary_path)`` to write the file ``name``; returns its final path."""
        final = self.folder / name
        tmp = self.folder / f".{name}.tmp-{os.getpid()}"
        try:
            writer(tmp)
        except OSError as exc:
            _remove(tmp)
            raise self._error(exc, final) from None
        except BaseException:
            _remove(tmp)
            raise
        self._pending.append((tmp, final))
        return final

    def text(self, name: str, text: str) -> Path:
        """Write ``text`` (UTF-8) as the file ``name``; returns its final path."""
        return self.write(name, lambda p: p.write_text(text, encoding="utf-8"))

    def commit(self) -> list[Path]:
        """Rename every temporary file over its final name; returns the final paths in the order written."""
        done = []
        for tmp, final in self._pending:
            os.replace(tmp, final)
            done.append(final)
        self._pending = []
        return done

    def discard(self) -> None:
        """Remove the temporaries written so far (the earlier outputs stay)."""
        for tmp, _ in self._pending:
            _remove(tmp)
        self._pending = []

    def __enter__(self) -> "OutputSet":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.commit()
        else:
            self.discard()
