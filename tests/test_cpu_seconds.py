"""``taco cpu-seconds``: the fork server's CPU lines in a results folder's logs, summed per rule folder."""

from __future__ import annotations

import csv

from taco.cli import main as taco_main
from taco.launch.cpu_seconds import collect
from taco.launch.forkserver_protocol import cpu_line, cpu_seconds_in


def _log(path, *lines):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line + "\n" for line in lines))


def test_lines_are_summed_per_rule_folder_and_jobs_without_a_line_are_counted(tmp_path, capsys):
    logs = tmp_path / "logs"
    _log(logs / "pretrain" / "tiny" / "mlm" / "step-800.log", "pretrain mlm: step 800/800 (100%)",
         cpu_line(101, 0, 812.25))
    _log(logs / "pretrain" / "tiny" / "taco" / "step-800.log", cpu_line(102, 0, 900.0))
    _log(logs / "finetune" / "a.log", "Traceback ...", cpu_line(103, 1, 12.5))
    _log(logs / "finetune" / "b.log", "running, or a fresh process: no line")
    # a job that forked two taco commands into one log: both count
    _log(logs / "report" / "claims.log", cpu_line(104, 0, 3.0), "done", cpu_line(105, 0, 4.0))
    _log(logs / "forkserver.log", "forkserver: serving", cpu_line(1, 0, 99.0))  # the server's own log: not a job
    got = {c.rule_folder: c for c in collect(tmp_path)}
    assert sorted(got) == ["finetune", "pretrain", "report"]
    # the printed line has one decimal: 812.25 -> "812.2" (format's rounding), read back as 812.2
    assert abs(got["pretrain"].cpu_seconds - (812.2 + 900.0)) < 1e-9 and got["pretrain"].jobs == 2
    assert (got["finetune"].jobs, got["finetune"].jobs_without_count, got["finetune"].failed) == (2, 1, 1)
    assert got["finetune"].cpu_seconds == 12.5 and got["report"].cpu_seconds == 7.0
    out = tmp_path / "cpu.csv"
    assert taco_main(["cpu-seconds", str(tmp_path), "--output", str(out)]) == 0
    rows = list(csv.DictReader(out.open()))
    assert [r["rule_folder"] for r in rows] == ["finetune", "pretrain", "report"]
    assert rows[1]["cpu_seconds"] == "1712.2" and rows[0]["failed"] == "1"
    assert "| **total** | 5 | 1 | 1 | 1731.7 | 0 |" in capsys.readouterr().out


def test_the_line_round_trips_and_other_lines_are_not_read():
    assert cpu_seconds_in(cpu_line(7, 0, 1.0) + "\n") == [(0, 1.0)]
    assert cpu_seconds_in("forkserver: the job's working folder 'x' cannot be entered (No such file)\n") == []
    assert cpu_seconds_in("note: forkserver: pid 1 exit 0, 2.0 CPU-s\n") == []  # only whole lines


def test_a_folder_without_logs_is_named(tmp_path, capsys):
    assert taco_main(["cpu-seconds", str(tmp_path / "nope")]) == 2
    assert "nope/logs: no logs folder" in capsys.readouterr().err


def test_faults_are_named_not_dropped(tmp_path, capsys):
    """Fault sweep V, item 6: a deleted job log made the job and its cost vanish (now: a job with a benchmark
    record and no log is named); a damaged CPU line ("1.2.3", ".") gave a ValueError traceback (now: exit 2 naming
    the log and the line); a folder named x.log under logs/ gave IsADirectoryError (now: not a job's log)."""
    logs, bench = tmp_path / "logs", tmp_path / "benchmarks"
    _log(logs / "pretrain" / "a.log", cpu_line(1, 0, 10.0))
    _log(bench / "pretrain" / "a.tsv", "s\th:m:s")
    _log(bench / "pretrain" / "gone.tsv", "s\th:m:s")  # its log was deleted
    (logs / "pretrain" / "x.log").mkdir()
    got = {c.rule_folder: c for c in collect(tmp_path)}
    assert got["pretrain"].jobs == 1 and got["pretrain"].without_log == ["pretrain/gone"]
    assert taco_main(["cpu-seconds", str(tmp_path)]) == 0
    cap = capsys.readouterr()
    assert "| **total** | 1 | 0 | 0 | 10.0 | 1 |" in cap.out and "pretrain/gone" in cap.err
    for bad in ("forkserver: pid 3 exit 0, 1.2.3 CPU-s", "forkserver: pid 3 exit 0, . CPU-s"):
        _log(logs / "finetune" / "b.log", "ok", bad)
        assert taco_main(["cpu-seconds", str(tmp_path)]) == 2
        err = capsys.readouterr().err
        assert f"{logs / 'finetune' / 'b.log'}: line 2:" in err and "Traceback" not in err, err
