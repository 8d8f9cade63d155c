"""The time left of a running workflow, printed after each of Snakemake's "N of M steps done" lines.

Snakemake reports ``N of M steps done``; this adds an estimate of the wall-clock time left. The
estimate is measured, not planned: each rule's jobs are expected to take as long as that rule's
finished jobs took on average in this run (a rule with no finished job yet: the mean of all finished
jobs), the jobs still running are expected to take the rest of that time, and the sum is divided by
the parallelism the run has achieved so far (job-seconds per wall-clock second since the first job
started, at least 1). So the first line comes after the first finished job, and the estimate sharpens
as each rule finishes its first job. Standard library only: it runs inside Snakemake's process.

The Snakefile's ``onstart`` block (a real run of the main process, not a dry run) adds a
:class:`ProgressHandler` to Snakemake's logger with the run's job counts; it reads Snakemake's log
events (``job_info`` when a job starts, ``job_finished``, ``progress``: the event names of
snakemake-interface-logger-plugins' ``LogEvent``) and writes one line to stderr after each progress
line. (A Snakemake logger plugin would need a module that ``pkgutil`` lists, which an editable install
does not provide.) Nothing here can stop a run: an error in the estimate is reported once by
``logging.Handler.handleError`` and the handler goes quiet.
"""

from __future__ import annotations

import logging
import sys
import time
from dataclasses import dataclass, field
from typing import Callable, Mapping, TextIO


def format_duration(seconds: float) -> str:
    """``seconds`` as ``"45 s"``, ``"3 min 20 s"`` or ``"2 h 05 min"`` (rounded down to the unit shown)."""
    s = max(0, int(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {(s % 3600) // 60:02d} min"


@dataclass
class Progress:
    """Jobs planned, running and finished in one Snakemake run, and the time left.

    Feed it :meth:`planned` (Snakemake's job stats: rule -> number of jobs, a ``"total"`` entry is
    ignored), :meth:`started` (job id, rule) and :meth:`finished` (job id); read :meth:`seconds_left`
    or :meth:`line`. Times come from ``clock`` (seconds, monotonic; injectable for tests).
    """

    clock: Callable[[], float] = time.monotonic
    counts: dict[str, int] = field(default_factory=dict)
    running: dict[int, tuple[str, float]] = field(default_factory=dict)
    durations: dict[str, list[float]] = field(default_factory=dict)
    first_start: float | None = None

    def planned(self, stats: Mapping[str, int]) -> None:
        """Record the run's jobs per rule (Snakemake's ``RUN_INFO`` stats). Raises ``ValueError`` on
        a negative count."""
        for rule, n in stats.items():
            if rule == "total":
                continue
            if int(n) < 0:
                raise ValueError(f"rule {rule!r}: negative job count {n}")
            self.counts[rule] = int(n)

    def started(self, jobid: int, rule: str) -> None:
        """A job of ``rule`` started now (a second report of the same job keeps the first time)."""
        if jobid in self.running:
            return
        now = self.clock()
        self.running[jobid] = (rule, now)
        if self.first_start is None:
            self.first_start = now

    def finished(self, jobid: int) -> None:
        """A job finished now; a job never reported as started is ignored (its duration is unknown)."""
        entry = self.running.pop(jobid, None)
        if entry is not None:
            rule, start = entry
            self.durations.setdefault(rule, []).append(self.clock() - start)

    @property
    def done(self) -> int:
        """Jobs finished in this run (with a known duration)."""
        return sum(len(d) for d in self.durations.values())

    @property
    def total(self) -> int:
        """Jobs planned for this run."""
        return sum(self.counts.values())

    def seconds_left(self) -> float | None:
        """Estimated wall-clock seconds until the last planned job finishes; ``None`` before the
        first job finished (nothing measured yet). 0 when no job is left."""
        if not self.done:
            return None
        all_durations = [d for ds in self.durations.values() for d in ds]
        overall = sum(all_durations) / len(all_durations)

        def expected(rule: str) -> float:
            ds = self.durations.get(rule)
            return sum(ds) / len(ds) if ds else overall

        now = self.clock()
        running_by_rule: dict[str, int] = {}
        work = 0.0
        elapsed_running = 0.0
        for rule, start in self.running.values():
            running_by_rule[rule] = running_by_rule.get(rule, 0) + 1
            elapsed_running += now - start
            work += max(expected(rule) - (now - start), 0.0)
        for rule, n in self.counts.items():
            waiting = n - len(self.durations.get(rule, ())) - running_by_rule.get(rule, 0)
            work += max(waiting, 0) * expected(rule)
        wall = now - (self.first_start if self.first_start is not None else now)
        parallelism = max((sum(all_durations) + elapsed_running) / wall, 1.0) if wall > 0 else 1.0
        return work / parallelism

    def line(self) -> str | None:
        """``"taco: 12 of 65 jobs done, about 1 min 20 s left (estimated)"``; ``None`` before the first
        finished job and once every planned job is done."""
        left = self.seconds_left()
        if left is None or self.done >= self.total:
            return None
        return f"taco: {self.done} of {self.total} jobs done, about {format_duration(left)} left (estimated)"


class ProgressHandler(logging.Handler):
    """A ``logging.Handler`` for Snakemake's logger that writes :meth:`Progress.line` to ``stream``
    after each ``progress`` event. ``counts``: the run's jobs per rule (``workflow.dag.stats()[1]``)."""

    def __init__(self, counts: Mapping[str, int], stream: TextIO | None = None,
                 progress: Progress | None = None) -> None:
        super().__init__(level=logging.INFO)
        self.stream = stream if stream is not None else sys.stderr
        self.progress = progress if progress is not None else Progress()
        self.progress.planned(counts)
        self.failed = False

    def emit(self, record: logging.LogRecord) -> None:
        """Record job starts and ends; after a ``progress`` event write the time left."""
        if self.failed:
            return
        try:
            event = str(getattr(record, "event", "") or "")
            if event == "job_info":
                self.progress.started(int(record.jobid), str(record.rule_name))
            elif event == "job_finished":
                self.progress.finished(int(record.job_id))
            elif event == "progress":
                line = self.progress.line()
                if line:
                    self.stream.write(line + "\n")
                    self.stream.flush()
        except Exception:  # a convenience: report once, never stop the run
            self.failed = True
            self.handleError(record)
