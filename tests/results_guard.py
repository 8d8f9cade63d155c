"""Which files under the checkout's ``results/`` the tests could write, and whether they did.

No test may depend on or write into the checkout's ``results/``: a user's own results live there (the
quick start writes ``results/smoke/``), and a long real run may be writing into another subfolder of it
while the tests run. ``tests/conftest.py`` takes a :func:`snapshot` of the *watched* files at the start
of the session and reports, at its end, every file that is new, changed or gone (:func:`changes`).

Watched, and only these: the ``results_dir`` of every configuration the tests use (``config.yaml``,
``configs/*.yaml``, ``tests/configs/*.yaml``, e.g. ``results/smoke``, ``results/cpu-real-ci``), read
from those files, so a new configuration is watched without editing this module. ``config.yaml``'s
``results_dir`` is ``results`` itself; for it only the files directly in ``results/`` and the folders the
workflow writes there (``pretrain``, ``finetune``, ``data``, ..., read from the rules as ``{R}/<name>``)
are watched, not every subfolder. So a run of another configuration (``--config
results_dir=results/cpu-efficiency``, say) writing while the tests run is never counted; a run of one of
the watched configurations started by hand during the session would be, and the report names its files.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import yaml

#: ``{R}/<name>`` in the Snakefile and the rules: the top-level entries a run writes in its results_dir.
_LAYOUT = re.compile(r"\{R\}/([A-Za-z0-9_.-]+)")


def config_results_dirs(repo: Path) -> list[str]:
    """The ``results_dir`` values of ``config.yaml``, ``configs/*.yaml`` and ``tests/configs/*.yaml``
    that lie under ``results/`` (relative, normalised: no trailing slash), sorted and unique."""
    files = [repo / "config.yaml", *sorted((repo / "configs").glob("*.yaml")),
             *sorted((repo / "tests" / "configs").glob("*.yaml"))]
    out = set()
    for f in files:
        if not f.is_file():
            continue
        cfg = yaml.safe_load(f.read_text()) or {}
        value = cfg.get("results_dir") if isinstance(cfg, dict) else None
        if not isinstance(value, str) or os.path.isabs(value):
            continue
        norm = os.path.normpath(value)
        if norm == "results" or norm.startswith("results" + os.sep):
            out.add(norm)
    return sorted(out)


def workflow_layout(repo: Path) -> list[str]:
    """Names of the top-level files and folders a run writes in its results_dir, from the rules
    (``{R}/<name>``; ``data`` comes from ``path_data`` and is added)."""
    texts = [(repo / "Snakefile").read_text()] + [p.read_text() for p in sorted((repo / "workflow" / "rules").glob("*.smk"))]
    names = {m.group(1) for t in texts for m in _LAYOUT.finditer(t)}
    return sorted(names | {"data"})


def watched_paths(repo: Path) -> list[tuple[Path, bool]]:
    """``(path, recursive)`` pairs to snapshot: each watched results_dir recursively; for ``results``
    itself its direct files (``recursive=False``) and the workflow's own folders."""
    out: list[tuple[Path, bool]] = []
    for rel in config_results_dirs(repo):
        if rel == "results":
            out.append((repo / "results", False))
            out += [(repo / "results" / name, True) for name in workflow_layout(repo)]
        else:
            out.append((repo / rel, True))
    return out


def snapshot(repo: Path) -> dict[str, tuple[int, int]]:
    """``{path relative to repo: (mtime_ns, size)}`` of every file below the watched paths."""
    files: dict[str, tuple[int, int]] = {}

    def add(p: Path) -> None:
        try:
            st = p.lstat()
        except FileNotFoundError:  # removed while walking
            return
        files[str(p.relative_to(repo))] = (st.st_mtime_ns, st.st_size)

    for path, recursive in watched_paths(repo):
        if path.is_file() or path.is_symlink():
            add(path)
        elif path.is_dir():
            if recursive:
                for root, _dirs, names in os.walk(path):
                    for n in names:
                        add(Path(root) / n)
            else:
                for p in path.iterdir():
                    if p.is_file() or p.is_symlink():
                        add(p)
    return files


def changes(before: dict[str, tuple[int, int]], after: dict[str, tuple[int, int]]) -> list[str]:
    """One line per file that is new, changed (mtime or size) or gone between two snapshots, sorted."""
    lines = []
    for path in sorted(set(before) | set(after)):
        if path not in before:
            lines.append(f"new: {path}")
        elif path not in after:
            lines.append(f"removed: {path}")
        elif before[path] != after[path]:
            lines.append(f"changed: {path}")
    return lines
