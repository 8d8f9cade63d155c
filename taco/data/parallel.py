"""Worker processes and progress lines for the data steps (``taco corpus``, ``tokenizer``, ``pack``).

- ``ordered_map``: ``fn`` over an iterable in a pool of *spawned* processes, results in input
  order, at most ``window`` tasks in flight (memory bounded by the window, not by the input).
  Spawned, not forked: forking a process whose Rust tokenizer has started its thread pool can
  hang the child (huggingface/tokenizers warns "The current process just got forked, after
  parallelism has already been used"). ``single_thread_tokenizers()`` sets
  ``TOKENIZERS_PARALLELISM=false`` and ``RAYON_NUM_THREADS=1`` so that each worker's tokenizer
  uses one thread and N workers use N cores.
- ``Progress``: one line on stderr (the rule's log) every ``interval`` seconds:
  documents and tokens done, rate, time elapsed and left.
"""

from __future__ import annotations

import collections
import multiprocessing
import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

#: seconds between two progress lines (override: environment TACO_PROGRESS_SECONDS)
PROGRESS_SECONDS = 30.0


def single_thread_tokenizers() -> None:
    """Limit this process's Rust tokenizer (and anything using rayon) to one thread.

    Must run before ``tokenizers`` first parallelises (``encode_batch``); used as the pool
    initializer of every data worker and by ``--workers 1`` in the main process.
    """
    os.environ["TOKENIZERS_PARALLELISM"] = "false"
    os.environ["RAYON_NUM_THREADS"] = "1"


#: in a worker: the exception its initializer raised (re-raised by the first task, see ``_call``)
_INIT_ERROR: BaseException | None = None


def _init(initializer, initargs):
    global _INIT_ERROR
    single_thread_tokenizers()
    if initializer is not None:
        try:
            initializer(*initargs)
        except Exception as exc:  # noqa: BLE001 - a raising initializer makes Pool respawn workers forever
            _INIT_ERROR = exc


def _call(fn, item):
    """Run one task in a worker; a failed initializer surfaces here, in the caller's ``get()``."""
    if _INIT_ERROR is not None:
        raise RuntimeError(f"data worker initialisation failed: {_INIT_ERROR!r}") from _INIT_ERROR
    return fn(item)


class WorkerPool:
    """A spawn-context pool of ``workers`` processes (tokenizers limited to one thread each).

    ``workers <= 1``: no process; ``map`` runs in the caller (after ``initializer``), so results
    are identical by construction. Use as a context manager.
    """

    def __init__(self, workers: int, initializer: Callable | None = None, initargs: tuple = ()):
        if workers < 1:
            raise ValueError(f"--workers must be >= 1, got {workers}")
        self.workers = workers
        self.pool = None
        if workers > 1:
            ctx = multiprocessing.get_context("spawn")
            self.pool = ctx.Pool(workers, initializer=_init, initargs=(initializer, initargs))
        else:
            _init(initializer, initargs)

    def map(self, fn: Callable, items: Iterable[Any], window: int | None = None) -> Iterator[Any]:
        """``fn(item)`` for each item, yielded in input order; ``window`` tasks in flight at most
        (default ``2 * workers``), so a slow consumer holds back the producers."""
        if self.pool is None:
            for item in items:
                yield fn(item)
            return
        window = window or 2 * self.workers
        pending: collections.deque = collections.deque()
        for item in items:
            pending.append(self.pool.apply_async(_call, (fn, item)))
            if len(pending) >= window:
                yield pending.popleft().get()
        while pending:
            yield pending.popleft().get()

    def close(self) -> None:
        if self.pool is not None:
            self.pool.terminate()
            self.pool.join()
            self.pool = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _hms(seconds: float) -> str:
    s = int(round(seconds))
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"


class Progress:
    """Progress of one long data step, printed to ``stream`` (stderr: the job's log).

    ``update(documents, tokens)`` adds to the counts and prints a line when ``interval`` seconds
    (default ``PROGRESS_SECONDS`` or ``$TACO_PROGRESS_SECONDS``) have passed since the last one;
    ``finish()`` prints the final line. Time left is extrapolated from the share of documents done
    when ``total_documents`` is known. Example line::

        pack train: 120,000/480,000 documents (25.0%), 31.2M tokens, 1.05M tokens/s, 0:01:54 elapsed, ~0:05:42 left
    """

    def __init__(self, label: str, total_documents: int | None = None, interval: float | None = None,
                 stream=None, unit: str = "documents"):
        if interval is None:
            interval = float(os.environ.get("TACO_PROGRESS_SECONDS", PROGRESS_SECONDS))
        self.label, self.total, self.interval, self.unit = label, total_documents, interval, unit
        self.stream = stream if stream is not None else sys.stderr
        self.documents = self.tokens = 0
        self.t0 = self.last = time.monotonic()

    def line(self) -> str:
        elapsed = max(time.monotonic() - self.t0, 1e-9)
        done = f"{self.documents:,}"
        left = ""
        if self.total:
            share = self.documents / self.total
            done += f"/{self.total:,} {self.unit} ({100 * share:.1f}%)"
            if 0 < share < 1:
                left = f", ~{_hms(elapsed * (1 - share) / share)} left"
        else:
            done += f" {self.unit}"
        tok = f", {self.tokens / 1e6:,.1f}M tokens, {self.tokens / elapsed / 1e6:,.2f}M tokens/s" if self.tokens else ""
        rate = f", {self.documents / elapsed:,.0f} {self.unit}/s" if not self.tokens else ""
        return f"{self.label}: {done}{tok}{rate}, {_hms(elapsed)} elapsed{left}"

    def update(self, documents: int = 0, tokens: int = 0) -> None:
        self.documents += documents
        self.tokens += tokens
        now = time.monotonic()
        if now - self.last >= self.interval:
            self.last = now
            print(self.line(), file=self.stream, flush=True)

    def finish(self) -> None:
        print(self.line() + " (done)", file=self.stream, flush=True)
