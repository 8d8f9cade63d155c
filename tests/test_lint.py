"""``snakemake --lint`` passes for every shipped configuration, in a scratch ``--directory``. This is
CI's lint step (``.ci/run`` no longer lints the smoke configuration a second time before the tests)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from shared_data import SHARED

REPO = Path(__file__).resolve().parents[1]
CONFIGS = ["config.yaml", *sorted(p.relative_to(REPO).as_posix() for p in (REPO / "configs").glob("*.yaml"))]


@pytest.mark.parametrize("configfile", CONFIGS)
def test_workflow_lint_is_clean(configfile, tmp_path):
    cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"), "--directory", str(tmp_path),
           "--lint", "--configfile", str(REPO / configfile), "--config", f"data_root={SHARED}"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert "Congratulations, your workflow is in a good condition" in out.stdout + out.stderr
