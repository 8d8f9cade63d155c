"""`kill -9` of Snakemake in the middle of a pre-training segment loses no compute (item 4).

The trainer that Snakemake started runs on and finishes (an orphan); the next `snakemake
--rerun-incomplete` deletes the finished budget as incomplete and reruns `taco pretrain`, which
must export the kept final state again instead of training the segment a second time.
Configuration: `configs/smoke.yaml`, one segment (tiny MLM, 0 -> 50 steps).
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from taco.training.runlog import read_log

REPO = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.slow


def _cmd(workdir: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"), "--directory", str(workdir),
            "--configfile", str(REPO / "configs/smoke.yaml"), "--cores", "1", *extra]


def _env() -> dict[str, str]:
    return dict(os.environ, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1")


def _lock_free(lock: Path) -> bool:
    with open(lock, "a+") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        fcntl.flock(fh, fcntl.LOCK_UN)
        return True


def test_kill_9_of_snakemake_mid_segment_then_rerun_exports_without_training(tmp_path):
    results = tmp_path / "results" / "smoke"
    blocks = results / "data" / "blocks" / "data-1.0"
    seg = "tiny/mlm/data-1.0/step-50"
    out, state = results / "pretrain" / seg, results / ".state" / "pretrain" / seg
    # the segment's inputs first (not part of what is measured)
    done = subprocess.run(_cmd(tmp_path, str(blocks.relative_to(tmp_path))), cwd=tmp_path, env=_env(),
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]

    log = open(tmp_path / "snakemake-1.log", "w")
    smk = subprocess.Popen(_cmd(tmp_path, str(out.relative_to(tmp_path))), cwd=tmp_path, env=_env(),
                           stdout=log, stderr=subprocess.STDOUT)
    deadline = time.time() + 600
    while not any(r.get("event") == "train_begin" for r in read_log(state / "logs")):
        assert smk.poll() is None, (tmp_path / "snakemake-1.log").read_text()[-3000:]
        assert time.time() < deadline, "the segment did not start"
        time.sleep(0.05)
    os.kill(smk.pid, signal.SIGKILL)  # Snakemake dies; its job (the trainer) runs on
    smk.wait(timeout=60)
    log.close()
    assert not (out / "manifest.json").is_file(), "the segment finished before Snakemake was killed"

    deadline = time.time() + 600  # the orphaned trainer finishes the segment and releases its lock
    while not ((out / "manifest.json").is_file() and _lock_free(state / ".lock")):
        assert time.time() < deadline, "the orphaned trainer did not finish"
        time.sleep(0.2)
    exported = json.loads((out / "manifest.json").read_text())
    assert exported["step"] == 50

    unlock = subprocess.run(_cmd(tmp_path, "--unlock"), cwd=tmp_path, env=_env(), capture_output=True, text=True)
    assert unlock.returncode == 0, unlock.stderr[-2000:]
    again = subprocess.run(_cmd(tmp_path, "--rerun-incomplete", str(out.relative_to(tmp_path))), cwd=tmp_path,
                           env=_env(), capture_output=True, text=True, timeout=900)
    text = again.stdout + again.stderr
    assert again.returncode == 0, text[-4000:]
    assert "incomplete" in text.lower()  # Snakemake saw the job as incomplete and ran it again ...
    events = [r["event"] for r in read_log(state / "logs")]
    assert events.count("train_begin") == 1, events  # ... and nothing was trained a second time
    assert events.count("reexport") == 1, events
    m = json.loads((out / "manifest.json").read_text())
    assert m["step"] == 50 and m["model_sha256"] == exported["model_sha256"]
    assert m["config_hash"] == exported["config_hash"]
