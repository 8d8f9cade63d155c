"""A copy of the suite in a scratch folder (the package, the workflow, the configurations, the Snakefile), for
the tests that add a module the way a newcomer would (an objective, an encoder family) and run it there."""

from __future__ import annotations

import shutil
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def copy_suite(dst: Path) -> Path:
    """``taco/``, ``workflow/``, ``configs/``, ``envs/``, ``profiles/``, ``Snakefile``, ``config.yaml`` and
    ``pyproject.toml`` of this checkout copied into ``dst`` (no ``__pycache__``); returns ``dst``."""
    for name in ("taco", "workflow", "configs", "envs", "profiles"):
        shutil.copytree(REPO / name, dst / name, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("Snakefile", "config.yaml", "pyproject.toml"):
        shutil.copy(REPO / name, dst / name)
    return dst
