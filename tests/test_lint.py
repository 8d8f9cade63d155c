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


def _data_root(configfiles, root: Path) -> Path:
    """The shared data folder as the configuration sees it: its entries linked, and a folder with one text file
    for each ``{data_root}/<name>`` the files name that it lacks (a corpus folder of one's own)."""
    import re

    root.mkdir(parents=True)
    for entry in SHARED.iterdir():
        (root / entry.name).symlink_to(entry)
    for f in configfiles:
        for name in re.findall(r"\{data_root\}/([\w.-]+)", (REPO / f).read_text()):
            if not (root / name).exists():
                (root / name).mkdir()
                (root / name / "text.txt").write_text("Some text of my own.\n\nAnother paragraph.\n")
    return root


def needs_shared_data(configfiles) -> bool:
    """Whether a configuration reads ``{data_root}`` (the real files in ../shared/data)."""
    return any("{data_root}" in (REPO / f).read_text() for f in configfiles)


@pytest.mark.parametrize("configfiles", CONFIGS, ids=lambda files: files[-1])
def test_workflow_lint_is_clean(configfiles, tmp_path, request):
    root = SHARED
    if needs_shared_data(configfiles):
        request.getfixturevalue("shared_data")  # skips, naming the folder, on a clone without ../shared/data
        root = _data_root(configfiles, tmp_path / "data")
    cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"), "--directory", str(tmp_path),
           "--lint", "--configfile", *(str(REPO / f) for f in configfiles), "--config", f"data_root={root}"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert "Congratulations, your workflow is in a good condition" in out.stdout + out.stderr


def test_without_the_shared_data_the_data_configurations_skip_with_the_reason(tmp_path):
    """A clone without ../shared/data: the lint of every configuration that reads {data_root} skips, saying
    which folder is missing, and the run passes (exit 0)."""
    import os

    data = [files[-1] for files in CONFIGS if needs_shared_data(files)]
    assert data, "no shipped configuration reads {data_root}"
    env = dict(os.environ, TACO_SHARED_DATA=str(tmp_path / "nowhere"))
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:randomly", "-p", "no:cacheprovider",
                          str(REPO / "tests" / "test_lint.py"), "-k", " or ".join(Path(f).stem for f in data)],
                         capture_output=True, text=True, timeout=300, env=env, cwd=REPO)
    assert out.returncode == 0, out.stdout[-3000:]
    assert f"{len(data)} skipped" in out.stdout and "nowhere" in out.stdout, out.stdout[-3000:]
