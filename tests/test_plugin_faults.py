"""A plug-in breaks only itself (fault sweep IV, item 8): a stray or broken module in taco/families/ or
taco/objectives/, or an entry point that raises on import or needs a missing package, is named in one line and
left out; commands that need no family or objective still work, and asking for what it would declare names it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from entry_points import install_entry_point
from scratch_suite import copy_suite


def _run(cwd: Path, *args: str, env_extra: dict | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(cwd), (env_extra or {}).get("PYTHONPATH")])),
           "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    return subprocess.run([sys.executable, "-m", "taco", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=300)


def test_stray_and_broken_modules_are_named_and_left_out(tmp_path):
    suite = copy_suite(tmp_path / "suite")
    (suite / "taco" / "families" / "notes.py").write_text("x = 1\n")
    (suite / "taco" / "objectives" / "notes.py").write_text("raise RuntimeError('half-written')\n")
    assert _run(suite, "probe", "--help").returncode == 0  # needs neither
    for args in (["pretrain", "--help"], ["plan", "--help"]):
        r = _run(suite, *args)
        assert r.returncode == 0, r.stderr[-2000:]
        assert "Traceback" not in r.stderr
        assert ("taco: warning: the family module taco/families/notes.py is left out: a family module must declare "
                "DECLARED") in r.stderr
        assert ("taco: warning: the objective module taco/objectives/notes.py is left out: RuntimeError: "
                "half-written") in r.stderr
    bad = _run(suite, "pretrain", "--blocks", "x", "--objective", "notes", "--size", "tiny", "--output", "o")
    assert bad.returncode == 2 and "left out: taco/objectives/notes.py" in bad.stderr, bad.stderr[-2000:]


def test_an_entry_point_needing_a_missing_package_names_itself_not_the_suites_extras(tmp_path):
    site = install_entry_point(tmp_path / "site", "thirdparty", "fancy",
                               "import package_that_is_not_installed_xyz\n", "taco.families")
    repo = Path(__file__).resolve().parent.parent
    r = _run(repo, "pretrain", "--help", env_extra={"PYTHONPATH": str(site)})
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr[-2000:]
    assert ("the family module entry point fancy = 'thirdparty.fancy' (group taco.families, package thirdparty) "
            "is left out: it needs the package 'package_that_is_not_installed_xyz'") in r.stderr, r.stderr
    assert "taco-repro[suite]" not in r.stderr
