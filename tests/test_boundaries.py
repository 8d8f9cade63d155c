"""The package boundaries the three software environments rely on.

The statistics environment (envs/stats.yaml: numpy, scipy, pandas, matplotlib, markdown, pyyaml, jsonschema)
runs ``taco aggregate/tables/figures/claims/dynamics-figures/glue-submission``; it has no torch, transformers or
datasets. These tests import every module of the packages it uses with those libraries blocked.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

_BLOCKER = """
import importlib.abc, importlib.util, pkgutil, sys
BLOCKED = {blocked!r}
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ImportError(f"{{name}} is not in this environment")
        return None
sys.meta_path.insert(0, Block())
import taco
mods = []
for pkg in {packages!r}:
    mod = importlib.import_module(pkg)
    mods.append(pkg)
    for info in pkgutil.iter_modules(mod.__path__, pkg + "."):
        importlib.import_module(info.name)
        mods.append(info.name)
for name in {modules!r}:
    importlib.import_module(name)
    mods.append(name)
print(len(mods))
"""


def _import_without(blocked, packages, modules=()):
    import importlib  # noqa: F401

    code = "import importlib\n" + _BLOCKER.format(blocked=set(blocked), packages=list(packages),
                                                  modules=list(modules))
    return subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)


def test_statistics_environment_never_imports_torch():
    out = _import_without({"torch", "transformers", "datasets", "tokenizers", "accelerate"},
                          ["taco.report"], ["taco.registry", "taco.manifest", "taco.errors", "taco.cli",
                                            "taco.evaluation.submission"])  # taco glue-submission
    assert out.returncode == 0, out.stderr
    assert int(out.stdout.strip()) >= 8


def test_workflow_code_imports_no_ml_library():
    """Snakemake parses the workflow in its own environment: taco.workflow needs none of them."""
    out = _import_without({"torch", "transformers", "datasets", "tokenizers", "accelerate", "scipy",
                           "pandas", "matplotlib"}, ["taco.workflow"], ["taco.registry"])
    assert out.returncode == 0, out.stderr


@pytest.mark.parametrize("blocked", [{"torch"}])
def test_the_blocker_itself_works(blocked):
    out = _import_without(blocked, [], ["taco.tc.loss"])
    assert out.returncode != 0 and "not in this environment" in out.stderr
