"""A lock on the results folder itself, held by one Snakemake run at a time.

Snakemake locks its working directory (``.snakemake/locks``), not the folders its outputs live in. Two runs
from two working directories whose ``results_dir`` is the same folder each believe the outputs are theirs:
when run B's job fails on an output run A just finished, Snakemake's "Removing output files of failed job"
deletes A's checkpoint, and B's job log overwrites A's. The Snakefile's ``onstart`` therefore takes
``<results_dir>/.taco-run.lock`` (:data:`LOCK_NAME`) before any job runs and ``onsuccess``/``onerror``
give it back; a second run on the folder stops with a message naming the run that holds it.

The lock file is created atomically (``O_CREAT | O_EXCL``) and holds JSON: ``pid``, ``host``, ``workdir``,
``started`` (UTC) and ``command``. A lock left by a run that was killed (``kill -9``, a lost node) is
*stale* when its host is this host and its process no longer exists: it is taken over with a note. A
lock of another host cannot be checked from here: it is refused, and ``snakemake --unlock`` (same
config) or deleting the file clears it (:func:`clear`). Dry runs, ``--touch`` and cluster jobs' own
Snakemake processes take no lock. Standard library only.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import socket
import sys
from pathlib import Path
from typing import Any

__all__ = ["LOCK_NAME", "ResultsLockError", "acquire", "release", "clear", "holder", "live_holder"]

LOCK_NAME = ".taco-run.lock"


class ResultsLockError(RuntimeError):
    """Another live run holds the results folder (the message names it and how to clear a stale lock)."""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, another user's
        return True
    return True


def holder(results_dir: str | os.PathLike) -> dict[str, Any] | None:
    """The lock's record, or None when the folder is not locked (an unreadable file reads as ``{}``)."""
    path = Path(results_dir) / LOCK_NAME
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    try:
        record = json.loads(text)
    except ValueError:
        return {}
    return record if isinstance(record, dict) else {}


def _describe(record: dict[str, Any]) -> str:
    return (f"pid {record.get('pid', '?')} on {record.get('host', '?')}, working directory "
            f"{record.get('workdir', '?')}, started {record.get('started', '?')}")


def acquire(results_dir: str | os.PathLike, command: str | None = None) -> dict[str, Any]:
    """Take the lock of ``results_dir`` for this process; returns the record written.

    A stale lock (this host, process gone) is replaced and a note printed to stderr. Raises
    :class:`ResultsLockError` when a live run (or a run on another host) holds it.
    """
    folder = Path(results_dir)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / LOCK_NAME
    me = {"pid": os.getpid(), "host": socket.gethostname(), "workdir": os.getcwd(),
          "started": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
          "command": command if command is not None else " ".join(sys.argv)}
    for _ in range(3):
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            other = holder(folder)
            if other is None:  # released between the two calls
                continue
            same_host = other.get("host") == me["host"]
            pid = other.get("pid")
            if same_host and isinstance(pid, int) and pid == me["pid"]:
                return other  # this process holds it already
            if same_host and isinstance(pid, int) and not _alive(pid):
                print(f"taco: the results folder {folder} was locked by a run that no longer exists "
                      f"({_describe(other)}); taking the lock over", file=sys.stderr)
                path.unlink(missing_ok=True)
                continue
            where = ("it is still running" if same_host and isinstance(pid, int)
                     else "it runs on another host, or the lock file is unreadable, so this host cannot tell "
                          "whether it still runs")
            raise ResultsLockError(
                f"the results folder {folder} is in use by another run ({_describe(other)}): {where}. "
                "Two runs on one results folder would delete each other's outputs. Wait for it, or use "
                f"another results_dir; if that run is gone, `snakemake --unlock` with the same config (or "
                f"deleting {path}) clears the lock.")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(me, fh, indent=1)
        return me
    raise ResultsLockError(f"could not take the lock {path}: it changed hands three times; try again")


def release(results_dir: str | os.PathLike) -> bool:
    """Give the lock back if this process holds it; True when a lock was removed."""
    path = Path(results_dir) / LOCK_NAME
    record = holder(results_dir)
    if record and record.get("pid") == os.getpid() and record.get("host") == socket.gethostname():
        path.unlink(missing_ok=True)
        return True
    return False


def live_holder(results_dir: str | os.PathLike) -> dict[str, Any] | None:
    """The lock's record when a process of this host that is still alive holds it (and it is not this
    process), else None: a stale lock, another host's, an unreadable one or none."""
    record = holder(results_dir)
    if not record or record.get("host") != socket.gethostname():
        return None
    pid = record.get("pid")
    if not isinstance(pid, int) or pid == os.getpid() or not _alive(pid):
        return None
    return record


def clear(results_dir: str | os.PathLike) -> dict[str, Any] | None:
    """Remove the lock (``snakemake --unlock``); returns the record removed, or None when there was none.

    Raises :class:`ResultsLockError` naming the holder (pid, host, working directory) when a live run of this
    host holds it: unlocking under a running run would let a second run delete its outputs (fault sweep V.1).
    A stale lock, another host's (which this host cannot check) or an unreadable one is removed."""
    live = live_holder(results_dir)
    if live is not None:
        raise ResultsLockError(
            f"the results folder {results_dir} is held by a run that is still running ({_describe(live)}); "
            "--unlock refuses to clear it: wait for that run, or stop it first")
    record = holder(results_dir)
    if record is not None:
        (Path(results_dir) / LOCK_NAME).unlink(missing_ok=True)
    return record
