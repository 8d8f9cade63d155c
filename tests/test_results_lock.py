"""No run may destroy another's work (fault sweep IV, items 1-2): the results folder is locked for the
length of a run (taco.workflow.results_lock), a stale lock is recognised, `snakemake --unlock` clears it,
and several nodes on the local executor are refused before any job."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from taco.workflow import results_lock
from taco.workflow.results_lock import LOCK_NAME, ResultsLockError, acquire, clear, holder, release

REPO = Path(__file__).resolve().parent.parent


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _write_lock(folder: Path, **record) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / LOCK_NAME
    path.write_text(json.dumps({"host": socket.gethostname(), "workdir": "/other/run", "started": "earlier",
                                **record}))
    return path


def test_a_live_run_holding_the_folder_is_named_and_nothing_is_taken(tmp_path):
    parent = os.getppid()  # alive for the whole test
    path = _write_lock(tmp_path / "r", pid=parent)
    with pytest.raises(ResultsLockError, match=rf"in use by another run \(pid {parent} on .*/other/run.*--unlock"):
        acquire(tmp_path / "r")
    assert json.loads(path.read_text())["pid"] == parent  # untouched


def test_a_lock_of_another_host_is_refused_not_guessed(tmp_path):
    _write_lock(tmp_path / "r", pid=1, host="some-other-node")
    with pytest.raises(ResultsLockError, match="another host"):
        acquire(tmp_path / "r")


def test_a_stale_lock_is_taken_over_with_a_note(tmp_path, capsys):
    _write_lock(tmp_path / "r", pid=_dead_pid())
    record = acquire(tmp_path / "r")
    assert record["pid"] == os.getpid()
    assert "no longer exists" in capsys.readouterr().err
    assert holder(tmp_path / "r")["pid"] == os.getpid()
    assert release(tmp_path / "r") and holder(tmp_path / "r") is None


def test_release_leaves_another_runs_lock_and_clear_refuses_a_live_one(tmp_path):
    """Fault sweep V.1: --unlock (clear) under a live run of this host refuses, naming it; a stale lock and one of
    another host are cleared."""
    _write_lock(tmp_path / "r", pid=os.getppid())
    assert not release(tmp_path / "r")
    assert holder(tmp_path / "r") is not None
    with pytest.raises(ResultsLockError, match=rf"still running \(pid {os.getppid()} on {socket.gethostname()}, "
                                               r"working directory /other/run"):
        clear(tmp_path / "r")
    assert holder(tmp_path / "r")["pid"] == os.getppid()
    dead = _dead_pid()
    _write_lock(tmp_path / "r", pid=dead)
    assert clear(tmp_path / "r")["pid"] == dead
    assert holder(tmp_path / "r") is None and clear(tmp_path / "r") is None
    _write_lock(tmp_path / "r", pid=os.getppid(), host="elsewhere")
    assert clear(tmp_path / "r")["host"] == "elsewhere"


def test_a_damaged_lock_file_is_refused(tmp_path):
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / LOCK_NAME).write_text("{not json")
    with pytest.raises(ResultsLockError):
        acquire(tmp_path / "r")
    assert results_lock.holder(tmp_path / "r") == {}


def _snakemake(work: Path, results: Path, *extra: str, config: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "snakemake", *extra, "--cores", "1", "--snakefile", str(REPO / "Snakefile"),
           "--directory", str(work), "--configfile", str(REPO / "configs" / "smoke.yaml"),
           "--config", f"results_dir={results}", "fork_server=False", *config]
    return subprocess.run(cmd, cwd=work, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"})


def test_a_second_snakemake_run_on_a_locked_folder_runs_no_job_and_unlock_clears(tmp_path):
    """Run B (its own working directory, run A's results folder) stops before any job, naming A; `--unlock`
    clears A's lock when A is gone, and the run then goes through and gives its lock back."""
    results, work = tmp_path / "results", tmp_path / "b"
    work.mkdir()
    _write_lock(results, pid=os.getppid())
    target = str(results / "analysis.json")
    b = _snakemake(work, results, target)
    assert b.returncode != 0
    assert "in use by another run" in b.stderr and "/other/run" in b.stderr, b.stderr[-3000:]
    assert not (results / "analysis.json").exists()
    dry = _snakemake(work, results, "-n", target)
    assert dry.returncode == 0 and "is in use by a running run" in dry.stderr, dry.stderr[-2000:]
    refused = _snakemake(work, results, "--unlock")  # A is alive: its lock stays (fault sweep V.1)
    assert refused.returncode != 0 and "--unlock refuses" in refused.stderr, refused.stderr[-2000:]
    assert holder(results)["pid"] == os.getppid()
    _write_lock(results, pid=_dead_pid())  # A is gone
    unlock = _snakemake(work, results, "--unlock")
    assert unlock.returncode == 0, unlock.stderr[-2000:]
    assert holder(results) is None
    again = _snakemake(work, results, target)
    assert again.returncode == 0, again.stderr[-3000:]
    assert (results / "analysis.json").exists() and holder(results) is None


def test_several_nodes_on_the_local_executor_are_refused_before_any_job(tmp_path):
    """pretrain.sizes.<size>.num_nodes: 2 without SLURM once deleted a finished checkpoint and then failed on
    SLURM_JOB_ID: the dry run notes it, the real run stops at its start naming the key."""
    work, results = tmp_path / "w", tmp_path / "results"
    work.mkdir()
    overlay = tmp_path / "nodes.yaml"
    overlay.write_text("pretrain:\n  sizes:\n    tiny:\n      num_nodes: 2\n")
    extra = ("--configfile", str(REPO / "configs" / "smoke.yaml"), str(overlay))
    cmd = lambda *more: [sys.executable, "-m", "snakemake", *more, "--cores", "1", "--snakefile",  # noqa: E731
                         str(REPO / "Snakefile"), "--directory", str(work), *extra, "--config",
                         f"results_dir={results}", "fork_server=False"]
    dry = subprocess.run(cmd("--dry-run"), cwd=work, capture_output=True, text=True, timeout=600)
    assert "pretrain.sizes.tiny.num_nodes: 2: several nodes need a SLURM allocation" in dry.stderr, dry.stderr[-3000:]
    real = subprocess.run(cmd(str(results / "analysis.json")), cwd=work, capture_output=True, text=True, timeout=600)
    assert real.returncode != 0
    assert "pretrain.sizes.tiny.num_nodes: 2 on the local executor" in real.stderr, real.stderr[-3000:]
    assert not (results / "analysis.json").exists()
