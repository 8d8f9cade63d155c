"""The default profile is in force (item 3).

Snakemake 9 reads a workflow profile only from ``profiles/default/`` beside the Snakefile or in the
working directory (``workflow/profiles/default`` was never read). These tests show that plain
``snakemake`` picks up ``profiles/default/config.v8+.yaml``, from the repository and from another
working directory: its settings are Snakemake's own parsed options, and ``rerun-incomplete`` acts on
a job whose Snakemake was killed.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parent.parent
PROFILE = REPO / "profiles" / "default" / "config.v8+.yaml"

_PARSE = r"""
import json, sys
from snakemake.cli import parse_args
_, args = parse_args(sys.argv[1:])
print("ARGS_JSON=" + json.dumps({k: v for k, v in vars(args).items()
                                 if isinstance(v, (bool, int, float, str, list, type(None)))}, default=str))
"""


def snakemake_options(cwd: Path, *argv: str) -> dict:
    """Snakemake's parsed command-line options (profile applied) for ``snakemake <argv>`` in ``cwd``."""
    out = subprocess.run([sys.executable, "-c", _PARSE, *argv], cwd=cwd, capture_output=True, text=True,
                         timeout=120)
    line = [ln for ln in out.stdout.splitlines() if ln.startswith("ARGS_JSON=")]
    assert line, out.stderr[-3000:]
    return json.loads(line[0][len("ARGS_JSON="):])


def test_profile_is_where_snakemake_9_looks():
    assert PROFILE.is_file()
    assert not (REPO / "workflow" / "profiles" / "default").exists()
    assert (REPO / "workflow" / "profiles" / "slurm" / "config.v8+.yaml").is_file()


@pytest.mark.parametrize("where", ["repository", "elsewhere"])
def test_profile_settings_are_snakemakes_options(tmp_path, where):
    """Plain `snakemake` in the repository, and `snakemake --snakefile <repo>/Snakefile` from any
    other directory, run with the profile's settings; `--workflow-profile none` without them."""
    profile = yaml.safe_load(PROFILE.read_text())
    argv = ["-n"] if where == "repository" else ["-n", "--snakefile", str(REPO / "Snakefile")]
    cwd = REPO if where == "repository" else tmp_path
    opts = snakemake_options(cwd, *argv)
    for key in ("retries", "rerun-incomplete", "keep-going", "printshellcmds", "show-failed-logs",
                "latency-wait"):
        assert opts[key.replace("-", "_")] == profile[key], key
    bare = snakemake_options(cwd, *argv, "--workflow-profile", "none")
    assert bare["retries"] == 0 and not bare["rerun_incomplete"] and not bare["keep_going"]


def _snakemake(workdir: Path, *extra: str, **kw) -> subprocess.Popen:
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1")
    return subprocess.Popen(
        [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"), "--directory", str(workdir),
         "--configfile", str(REPO / "configs" / "smoke.yaml"), "--cores", "1", *extra],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True, env=env, **kw)


def test_rerun_incomplete_is_in_force(tmp_path):
    """Snakemake killed (-9) while a job runs leaves that job marked incomplete; with a partial output
    on disk, `snakemake` without the profile stops ("incomplete files"), plain `snakemake` (the
    profile's rerun-incomplete) plans the job again."""
    target = "results/smoke/data/corpus"
    proc = _snakemake(tmp_path, target)
    marker = tmp_path / ".snakemake" / "incomplete"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not (marker.is_dir() and any(marker.iterdir())):
        assert proc.poll() is None, proc.stdout.read()[-3000:]
        time.sleep(0.1)
    assert marker.is_dir() and any(marker.iterdir()), "the corpus job never started"
    os.killpg(proc.pid, signal.SIGKILL)  # Snakemake and its job, as a crash of the machine would
    proc.wait(timeout=30)
    proc.stdout.close()
    # taco writes its outputs atomically, so a killed job leaves none; a partial one stands in here
    (tmp_path / target).mkdir(parents=True, exist_ok=True)
    unlock = _snakemake(tmp_path, "--unlock")  # what the user does after a crash: the lock stayed
    assert unlock.wait(timeout=120) == 0
    unlock.stdout.close()

    bare = _snakemake(tmp_path, target, "-n", "--workflow-profile", "none")
    text = bare.communicate(timeout=120)[0]
    assert bare.returncode != 0 and "incomplete" in text.lower(), text[-3000:]

    planned = _snakemake(tmp_path, target, "-n")
    text = planned.communicate(timeout=120)[0]
    assert planned.returncode == 0, text[-3000:]
    assert "Using workflow specific profile" in text and "profiles/default" in text
    # rerun-incomplete hands the incomplete outputs to Snakemake's forced re-runs
    assert "rule corpus:" in text and "reason: Forced execution" in text, text[-3000:]
    assert "Shell command:" in text  # printshellcmds, also from the profile
