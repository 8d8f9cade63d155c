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
                          ["taco.report", "taco.stats"],
                          ["taco.registry", "taco.manifest", "taco.errors", "taco.cli", "taco.cli_parts",
                           "taco.evaluation.submission"])  # taco glue-submission
    assert out.returncode == 0, out.stderr
    assert int(out.stdout.strip()) >= 8


def test_workflow_code_imports_no_ml_library():
    """Snakemake parses the workflow in its own environment: taco.workflow needs none of them."""
    out = _import_without({"torch", "transformers", "datasets", "tokenizers", "accelerate", "scipy",
                           "pandas", "matplotlib"}, ["taco.workflow"], ["taco.registry"])
    assert out.returncode == 0, out.stderr


def test_the_statistics_need_no_plotting_and_no_markdown():
    """taco.stats computes; taco.report renders: no module of taco.stats imports matplotlib or markdown."""
    out = _import_without({"torch", "transformers", "datasets", "matplotlib", "markdown"}, ["taco.stats"])
    assert out.returncode == 0, out.stderr
    assert int(out.stdout.strip()) >= 9


@pytest.mark.parametrize("blocked", [{"torch"}])
def test_the_blocker_itself_works(blocked):
    out = _import_without(blocked, [], ["taco.tc.loss"])
    assert out.returncode != 0 and "not in this environment" in out.stderr


def test_the_tc_loss_and_the_objectives_need_only_torch_and_transformers():
    """``pip install taco-repro`` (no extra) gives the TC loss, its Trainer plug-in and the objectives:
    every other library the suite uses (the ``suite`` extra) is absent here, as Python sees a package
    that is not installed (``sys.modules[name] = None``: ``find_spec`` gives None, an import fails), so
    transformers' own availability checks see it missing too. accelerate stays: transformers' Trainer
    needs it."""
    suite_only = ["datasets", "scipy", "pandas", "sklearn", "matplotlib", "markdown", "pyarrow", "jsonschema",
                  "tensorboard", "snakemake"]  # pyyaml comes with transformers
    code = (f"import sys\nfor n in {suite_only!r}:\n    sys.modules[n] = None\n"
            "import importlib\n"
            "for m in ('taco.tc.loss', 'taco.tc.sampling', 'taco.tc.plugin', 'taco.objectives', 'taco.objectives.taco',"
            " 'taco.objectives.infoword', 'taco.model.modeling', 'taco.model.collator', 'taco.parameters'):\n"
            "    importlib.import_module(m)\n"
            "from taco.tc.plugin import TacoTrainer\nprint('ok')\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip().endswith("ok"), out.stderr[-3000:]


def test_the_base_install_requires_only_torch_and_transformers():
    import tomllib

    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    names = {d.split(">")[0].split("<")[0].split("=")[0].split("[")[0].strip() for d in project["dependencies"]}
    assert names == {"torch", "transformers", "accelerate", "safetensors", "numpy"}, names
    dev = " ".join(project["optional-dependencies"]["dev"])
    assert "workflow" in dev and "suite" in " ".join(project["optional-dependencies"]["workflow"])


def test_a_command_without_the_suite_extra_names_the_extra():
    code = ("import sys\nsys.modules['pandas'] = None\nfrom taco.cli import main\n"
            "sys.exit(main(['aggregate', '--help']))\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and "pip install 'taco-repro[suite]'" in out.stderr and "'pandas'" in out.stderr, out.stderr


#: the package's floors, ground first: a module imports only from its own floor or below (the house drawn by
#: farm-studio; docs/architecture.md). The longest matching prefix places a module.
FLOORS = (
    ("taco", "taco.parameters", "taco.errors", "taco.paper", "taco.families", "taco.manifest", "taco.textfile",
     "taco.cli",
     "taco.cli_parts", "taco.tc", "taco.launch"),
    ("taco.objectives",),
    ("taco.registry",),
    # taco.data.glue_metrics (they read only the registry): the GLUE task's metrics beside its data
    ("taco.data", "taco.model", "taco.flops", "taco.deviations"),
    ("taco.stats",),
    # taco.training.glue_probe: the frozen-feature probe runs inside pre-training (taco pretrain
    # --glue-probe-tasks) as after it (taco probe)
    ("taco.training", "taco.report"),
    ("taco.evaluation", "taco.commands"),
    ("taco.workflow",),
)


def _floor(module: str) -> tuple[int, str]:
    found = [(i, p) for i, floor in enumerate(FLOORS) for p in floor if module == p or module.startswith(p + ".")]
    assert found, f"{module}: on no floor of FLOORS (add it)"
    return max(found, key=lambda f: len(f[1]))


def _imports(path: Path) -> list[tuple[str, int]]:
    import ast

    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.append((node.module, node.lineno))
        elif isinstance(node, ast.Import):
            out += [(a.name, node.lineno) for a in node.names]
    return [(m, line) for m, line in out if m == "taco" or m.startswith("taco.")]


def test_no_import_runs_up_a_floor():
    """Every ``import taco.*`` (at the top or inside a function) goes to the module's own floor or below."""
    up = []
    for path in sorted((REPO / "taco").rglob("*.py")):
        module = ".".join(path.relative_to(REPO).with_suffix("").parts).removesuffix(".__init__")
        mine = _floor(module)[0]
        up += [f"{path.relative_to(REPO)}:{line}: {module} (floor {mine}) imports {m} (floor {_floor(m)[0]})"
               for m, line in _imports(path) if _floor(m)[0] > mine]
    assert not up, "\n".join(up)


def test_the_report_and_the_statistics_read_no_data_module():
    """What the pages need of the data layer comes through the registry or the runs' manifests: taco.report
    and taco.stats import nothing from taco.data (the text reader is taco.textfile, below both)."""
    users = [f"{p.relative_to(REPO)}:{line}: {m}" for pkg in ("report", "stats")
             for p in sorted((REPO / "taco" / pkg).rglob("*.py")) for m, line in _imports(p)
             if m == "taco.data" or m.startswith("taco.data.")]
    assert not users, users


def test_no_command_imports_the_dispatcher():
    """taco.cli dispatches commands by name; the commands share taco.cli_parts (the --help layout, the error
    tail), so only the two runners of a command line import taco.cli: ``python -m taco`` and the fork server's
    child."""
    users = [f"{p.relative_to(REPO)}:{line}" for p in sorted((REPO / "taco").rglob("*.py"))
             if p.name not in ("__main__.py", "forkserver_server.py") for m, line in _imports(p) if m == "taco.cli"]
    assert not users, users


def test_no_report_command_imports_another_command():
    """The commands of the statistics and the report (``taco aggregate``, ``tables``, ``figures``, ``claims``,
    ``efficiency``, ``pretrain-curves``, ``dynamics-figures``, ``deviations``, ``claims-definitions``) are the modules
    of taco/commands/:
    each wires taco.stats to taco.report's renderers and imports no other command; what two of them share
    (saving a figure, the synthetic-run label, efficiency.csv's reader, the aggregate-reading shell) lives in a
    module of its own. taco.stats and taco.report hold no command (no ``main``)."""
    import ast

    from taco.cli import COMMANDS

    commands = {m for m, _ in COMMANDS.values() if m.startswith("taco.commands.")}
    assert len(commands) == 9, commands
    on_disk = {f"taco.commands.{p.stem}" for p in (REPO / "taco/commands").glob("*.py")
               if p.stem not in ("__init__", "report_cli")}
    assert on_disk == commands, on_disk ^ commands
    found = [f"{m} imports {imp} (line {line})" for m in sorted(commands)
             for imp, line in _imports(REPO / (m.replace(".", "/") + ".py")) if imp in commands and imp != m]
    assert not found, found
    mains = [str(p.relative_to(REPO)) for pkg in ("stats", "report") for p in sorted((REPO / "taco" / pkg).glob("*.py"))
             if any(isinstance(n, ast.FunctionDef) and n.name == "main" for n in ast.parse(p.read_text()).body)]
    assert not mains, mains


def test_the_tc_kernel_loads_without_the_objectives():
    """taco.tc depends on nothing above it: with taco.objectives unimportable (a stray module there, a
    broken objective) the TC loss, its options and the Trainer plug-in still load."""
    code = ("import sys\nsys.modules['taco.objectives'] = None\n"
            "from taco.tc.plugin import TacoTrainer\nfrom taco.tc.options import OPTIONS\nfrom taco.tc.loss import tc_loss\n"
            "print(sorted(o.name for o in OPTIONS))\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip() == str(sorted(["tc_weight", "tc_temperature", "tc_window", "tc_num_negatives",
                                             "tc_negative_pool"]))
