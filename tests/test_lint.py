"""``snakemake --lint`` passes for every shipped configuration, in a scratch ``--directory``. This is
CI's lint step (``.ci/run`` no longer lints the smoke configuration a second time before the tests)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from shared_data import SHARED
from shipped_configs import config_sets

REPO = Path(__file__).resolve().parents[1]
#: config.yaml and every configs/*.yaml (an overlay with its base)
CONFIGS = [files for files in config_sets() if not files[-1].startswith("tests/")]


@pytest.mark.parametrize("configfiles", CONFIGS, ids=lambda files: files[-1])
def test_workflow_lint_is_clean(configfiles, tmp_path):
    cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"), "--directory", str(tmp_path),
           "--lint", "--configfile", *(str(REPO / f) for f in configfiles), "--config", f"data_root={SHARED}"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert "Congratulations, your workflow is in a good condition" in out.stdout + out.stderr
