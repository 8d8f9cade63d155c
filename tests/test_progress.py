"""The time-left line of a workflow run (taco.workflow.progress), on a fake clock with known answers."""

from __future__ import annotations

import io
import logging

import pytest

from taco.workflow.progress import Progress, ProgressHandler, format_duration


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def test_serial_jobs_extrapolate_each_rules_mean_and_the_overall_mean_for_unseen_rules():
    clock = Clock()
    p = Progress(clock=clock)
    p.planned({"pretrain": 4, "finetune": 2, "total": 6})
    assert p.total == 6 and p.seconds_left() is None and p.line() is None
    for jobid, length in ((1, 8.0), (2, 12.0)):  # one at a time: parallelism 1
        p.started(jobid, "pretrain")
        clock.t += length
        p.finished(jobid)
    # 2 pretrain jobs left at their mean 10 s, 2 finetune jobs at the overall mean 10 s
    assert p.done == 2 and p.seconds_left() == pytest.approx(40.0)
    assert p.line() == "taco: 2 of 6 jobs done, about 40 s left (estimated)"


def test_parallel_jobs_divide_the_work_by_the_parallelism_achieved():
    clock = Clock()
    p = Progress(clock=clock)
    p.planned({"finetune": 6})
    for jobid in (1, 2):
        p.started(jobid, "finetune")
    clock.t = 10.0
    p.finished(1)
    p.finished(2)
    # 20 job-seconds in 10 s of wall: parallelism 2; 4 jobs x 10 s left / 2
    assert p.seconds_left() == pytest.approx(20.0)


def test_a_running_job_counts_only_its_expected_remainder():
    clock = Clock()
    p = Progress(clock=clock)
    p.planned({"pretrain": 3})
    p.started(1, "pretrain")
    clock.t = 30.0
    p.finished(1)
    p.started(2, "pretrain")
    p.started(2, "pretrain")  # reported twice: the first start stands
    clock.t = 40.0
    # job 2 has run 10 of its expected 30 s; job 3 waits (30 s); parallelism (30 + 10) / 40 = 1
    assert p.seconds_left() == pytest.approx(50.0)
    p.finished(99)  # never started: ignored
    assert p.done == 1


def test_no_line_once_every_job_is_done_and_bad_counts_are_refused():
    clock = Clock()
    p = Progress(clock=clock)
    p.planned({"report": 1})
    p.started(1, "report")
    clock.t = 3.0
    p.finished(1)
    assert p.seconds_left() == 0.0 and p.line() is None
    with pytest.raises(ValueError, match="'report'"):
        Progress().planned({"report": -1})


@pytest.mark.parametrize("seconds, text", [(0, "0 s"), (59.9, "59 s"), (61, "1 min 01 s"),
                                           (3599, "59 min 59 s"), (7500, "2 h 05 min")])
def test_durations_read_as_people_write_them(seconds, text):
    assert format_duration(seconds) == text


def _record(**extra) -> logging.LogRecord:
    record = logging.LogRecord("snakemake.logging", logging.INFO, __file__, 1, None, None, None)
    record.__dict__.update(extra)
    return record


def test_the_handler_reads_snakemakes_events_and_writes_after_each_progress_line():
    clock = Clock()
    out = io.StringIO()
    handler = ProgressHandler({"pretrain": 2, "total": 2}, stream=out, progress=Progress(clock=clock))
    handler.handle(_record(event="job_info", jobid=5, rule_name="pretrain"))
    clock.t = 7.0
    handler.handle(_record(event="job_finished", job_id=5))
    handler.handle(_record(event="progress", done=1, total=2))
    assert out.getvalue() == "taco: 1 of 2 jobs done, about 7 s left (estimated)\n"


def test_a_broken_event_is_reported_once_and_never_raises(capsys):
    out = io.StringIO()
    handler = ProgressHandler({"pretrain": 2}, stream=out)
    handler.handle(_record(event="job_info", jobid="not a number", rule_name="pretrain"))
    handler.handle(_record(event="progress", done=0, total=2))
    assert handler.failed and out.getvalue() == ""
    assert capsys.readouterr().err.count("Traceback") == 1
