"""The session check that no test writes under the checkout's ``results/``, on a fake
checkout: what it watches, that results already there fail nothing, and that a write is reported."""

from __future__ import annotations

import os
from pathlib import Path

import results_guard as guard

REPO = Path(__file__).resolve().parent.parent


def _checkout(root: Path) -> Path:
    (root / "configs").mkdir(parents=True)
    (root / "tests" / "configs").mkdir(parents=True)
    (root / "workflow" / "rules").mkdir(parents=True)
    (root / "config.yaml").write_text("results_dir: results\n")
    (root / "configs" / "smoke.yaml").write_text("results_dir: results/smoke/\n")
    (root / "configs" / "abs.yaml").write_text("results_dir: /elsewhere/results\n")
    (root / "tests" / "configs" / "ci.yaml").write_text("results_dir: results/ci\n")
    (root / "Snakefile").write_text('rule all:\n    input: f"{R}/claims.csv"\n')
    (root / "workflow" / "rules" / "a.smk").write_text('output: f"{R}/pretrain/{RUN}"\n')
    return root


def test_watches_the_configs_results_dirs_only(tmp_path):
    repo = _checkout(tmp_path)
    assert guard.config_results_dirs(repo) == ["results", "results/ci", "results/smoke"]
    assert guard.workflow_layout(repo) == ["claims.csv", "data", "pretrain"]
    watched = {(str(p.relative_to(repo)), r) for p, r in guard.watched_paths(repo)}
    assert ("results", False) in watched and ("results/smoke", True) in watched
    assert ("results/pretrain", True) in watched and ("results/ci", True) in watched


def test_existing_results_pass_and_a_test_write_is_reported(tmp_path):
    repo = _checkout(tmp_path)
    (repo / "results" / "smoke").mkdir(parents=True)
    (repo / "results" / "smoke" / "table1.csv").write_text("a\n")  # a user's quick start
    (repo / "results" / "other").mkdir()
    before = guard.snapshot(repo)
    assert "results/smoke/table1.csv" in before
    assert guard.changes(before, guard.snapshot(repo)) == []

    (repo / "results" / "other" / "log.txt").write_text("a real run of another results_dir\n")
    (repo / "results" / "notes.txt").mkdir()  # a folder directly in results/ is not a file
    assert guard.changes(before, guard.snapshot(repo)) == []

    (repo / "results" / "smoke" / "data").mkdir()
    (repo / "results" / "smoke" / "data" / "blocks.npy").write_bytes(b"x")
    (repo / "results" / "smoke" / "table1.csv").write_text("a,b\n")
    (repo / "results" / "claims.csv").write_text("c\n")
    (repo / "results" / "pretrain" / "x").mkdir(parents=True)
    (repo / "results" / "pretrain" / "x" / "w.bin").write_bytes(b"w")
    assert guard.changes(before, guard.snapshot(repo)) == [
        "new: results/claims.csv", "new: results/pretrain/x/w.bin", "new: results/smoke/data/blocks.npy",
        "changed: results/smoke/table1.csv"]


def test_mtime_alone_and_removal_count(tmp_path):
    repo = _checkout(tmp_path)
    f = repo / "results" / "smoke" / "claims.csv"
    f.parent.mkdir(parents=True)
    f.write_text("same\n")
    before = guard.snapshot(repo)
    st = f.stat()
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    assert guard.changes(before, guard.snapshot(repo)) == ["changed: results/smoke/claims.csv"]
    f.unlink()
    assert guard.changes(before, guard.snapshot(repo)) == ["removed: results/smoke/claims.csv"]


def test_the_checkout_is_watched_where_the_quick_start_writes():
    dirs = guard.config_results_dirs(REPO)
    assert "results/smoke" in dirs and "results/cpu-real-ci" in dirs
