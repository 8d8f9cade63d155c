"""Per-rule software environments (envs/*.yaml) without conda: every rule that runs code names one,
each file is valid, pinned conda YAML, and no package drifts from pyproject.toml.

The rules are read from the parsed workflow (Snakemake's API, the same objects `--use-conda` uses),
not by a regex over the rule files, so a rule without `conda:` cannot slip through unnoticed.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

REPO = Path(__file__).resolve().parent.parent
ENV_DIR = REPO / "envs"
ENV_FILES = sorted(ENV_DIR.glob("*.yaml"))

# Conda packages that are the environment's tooling, not dependencies of the project:
# python is checked against requires-python, pip only installs the `pip:` list.
TOOLING = {"python", "pip"}

_RULES_SCRIPT = r"""
import json, sys
from pathlib import Path
from snakemake.api import SnakemakeApi
from snakemake.settings.types import ConfigSettings, ResourceSettings, OutputSettings
repo, workdir = Path(sys.argv[1]), Path(sys.argv[2])
with SnakemakeApi(OutputSettings()) as api:
    wf = api.workflow(resource_settings=ResourceSettings(),
                      config_settings=ConfigSettings(configfiles=[repo / "configs" / "smoke.yaml"]),
                      snakefile=repo / "Snakefile", workdir=workdir)._workflow
    rules = []
    for r in wf.rules:
        conda = r.conda_env
        if conda is not None:
            conda = str((Path(r.basedir) / str(conda)).resolve())
        rules.append({"name": r.name, "conda": conda, "shell": bool(r.shellcmd), "script": r.script,
                      "notebook": r.notebook, "wrapper": r.wrapper, "run": bool(r.is_run),
                      "norun": bool(r.norun)})
print("RULES_JSON=" + json.dumps(rules))
"""


@pytest.fixture(scope="module")
def rules(tmp_path_factory) -> list[dict]:
    """The workflow's rules as Snakemake parsed them (smoke config, no jobs run)."""
    workdir = tmp_path_factory.mktemp("envs-workdir")
    out = subprocess.run([sys.executable, "-c", _RULES_SCRIPT, str(REPO), str(workdir)],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    line = next(ln for ln in out.stdout.splitlines() if ln.startswith("RULES_JSON="))
    return json.loads(line.removeprefix("RULES_JSON="))


def load_env(path: Path) -> dict:
    return yaml.safe_load(path.read_text())


def conda_and_pip(env: dict) -> tuple[list[str], list[str]]:
    conda, pip = [], []
    for dep in env["dependencies"]:
        if isinstance(dep, dict):
            assert set(dep) == {"pip"}, f"unexpected nested dependency block {dep}"
            pip.extend(dep["pip"])
        else:
            conda.append(dep)
    return conda, pip


_CONDA_SPEC = re.compile(r"^(?P<name>[A-Za-z0-9_.\-]+)\s*(?P<op>==|=)\s*(?P<version>[0-9][0-9A-Za-z.*+_]*)$")


def parse_conda_spec(spec: str) -> tuple[str, str | None, str | None]:
    """``name[=|==]version`` -> (name, operator, version); operator/version None when unpinned."""
    m = _CONDA_SPEC.match(spec.strip())
    if m:
        return m["name"], m["op"], m["version"]
    return spec.strip(), None, None


def project_requirements() -> tuple[dict[str, Requirement], SpecifierSet]:
    meta = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    # the base install and the suite's extra (the envs run the suite's commands)
    reqs = [Requirement(r) for r in meta["dependencies"] + meta["optional-dependencies"]["suite"]]
    return {canonicalize_name(r.name): r for r in reqs}, SpecifierSet(meta["requires-python"])


# ---- rules ----------------------------------------------------------------------------------

def test_rules_were_found(rules):
    names = {r["name"] for r in rules}
    # the parse really saw the workflow: the stages named in the design are all there
    assert {"corpus", "tokenizer", "pack", "pretrain", "finetune", "aggregate", "tables", "figures",
            "claims", "dynamics", "dynamics_figures", "all"} <= names, names


def test_every_rule_that_runs_code_has_a_conda_env(rules):
    code_rules = [r for r in rules if r["shell"] or r["script"] or r["notebook"] or r["wrapper"]]
    assert len(code_rules) >= 10, code_rules
    missing = [r["name"] for r in code_rules if not r["conda"]]
    assert not missing, f"rules that run code without a `conda:` environment: {missing}"
    for r in code_rules:
        env = Path(r["conda"])
        assert env.is_file(), f"rule {r['name']}: conda env {env} does not exist"
        assert env.parent == ENV_DIR, f"rule {r['name']}: conda env {env} is not in envs/"


def test_rules_without_env_are_bookkeeping_only(rules):
    # `run:` blocks execute inside Snakemake's own process (conda cannot apply to them, Snakemake
    # rejects `conda:` there); they must stay tiny bookkeeping rules, and rules with no action
    # (`all`) run nothing.
    without = {r["name"] for r in rules if not r["conda"]}
    for r in rules:
        if r["name"] in without:
            assert r["run"] or r["norun"], f"rule {r['name']} runs code but has no environment"
    assert without <= {"all", "analysis_spec", "aggregate_inputs", "plan", "run_config"}, without


def test_rule_env_assignment(rules):
    by_rule = {r["name"]: Path(r["conda"]).stem for r in rules if r["conda"]}
    for name in ("pretrain", "finetune", "dynamics"):
        assert by_rule[name] == "train", (name, by_rule[name])
    for name in ("corpus", "tokenizer", "pack"):
        assert by_rule[name] == "data", (name, by_rule[name])
    for name in ("aggregate", "tables", "figures", "claims", "dynamics_figures", "glue_submission"):
        assert by_rule[name] == "stats", (name, by_rule[name])
    assert {p.stem for p in ENV_FILES} == set(by_rule.values()), "an env file no rule uses, or a missing one"


# ---- env files ------------------------------------------------------------------------------

def test_env_files_exist():
    assert {p.stem for p in ENV_FILES} == {"data", "train", "stats"}


@pytest.mark.parametrize("path", ENV_FILES, ids=lambda p: p.name)
def test_env_is_valid_pinned_conda_yaml(path):
    env = load_env(path)
    assert isinstance(env, dict), f"{path.name}: not a YAML mapping"
    assert set(env) <= {"name", "channels", "dependencies"}, f"{path.name}: unknown keys {set(env)}"
    assert isinstance(env.get("name"), str) and env["name"], f"{path.name}: `name` missing"
    channels = env.get("channels")
    assert isinstance(channels, list) and channels and all(isinstance(c, str) for c in channels), path.name
    assert "defaults" not in channels, f"{path.name}: the `defaults` channel has licensing terms; use conda-forge"
    deps = env.get("dependencies")
    assert isinstance(deps, list) and deps, f"{path.name}: `dependencies` missing"
    conda, pip = conda_and_pip(env)
    assert all(isinstance(d, str) for d in conda + pip), path.name
    names = [parse_conda_spec(c)[0] for c in conda]
    assert "python" in names, f"{path.name}: python is not pinned"
    if pip:
        assert "pip" in names, f"{path.name}: a `pip:` block needs `pip` among the conda dependencies"
    for spec in conda:
        name, op, version = parse_conda_spec(spec)
        if name == "pip":
            continue  # the installer itself
        assert op is not None, f"{path.name}: conda package {spec!r} is not pinned"
        if name != "python":
            assert op == "==", f"{path.name}: pin conda package {spec!r} exactly (==)"
    for spec in pip:
        req = Requirement(spec)
        specs = list(req.specifier)
        assert len(specs) == 1 and specs[0].operator == "==" and "*" not in specs[0].version, (
            f"{path.name}: pip package {spec!r} is not pinned with =="
        )
        assert not req.marker and not req.url, f"{path.name}: {spec!r}: keep pins plain"
    pip_names = [canonicalize_name(Requirement(s).name) for s in pip]
    assert len(pip_names) == len(set(pip_names)), f"{path.name}: a package is listed twice"


# ---- drift between envs/ and pyproject.toml ---------------------------------------------------

@pytest.mark.parametrize("path", ENV_FILES, ids=lambda p: p.name)
def test_env_packages_are_project_dependencies_at_compatible_versions(path):
    deps, requires_python = project_requirements()
    conda, pip = conda_and_pip(load_env(path))
    for spec in pip:
        req = Requirement(spec)
        name = canonicalize_name(req.name)
        assert name in deps, (f"{path.name}: {req.name} is not a dependency in pyproject.toml "
                              "(add it there, or drop it here)")
        pinned = next(iter(req.specifier)).version
        assert deps[name].specifier.contains(pinned, prereleases=True), (
            f"{path.name}: {req.name}=={pinned} is outside pyproject.toml's {deps[name]}"
        )
    for spec in conda:
        name, _op, version = parse_conda_spec(spec)
        if name == "python":
            # conda's python=3.11 means 3.11.*: its first release must satisfy requires-python
            assert requires_python.contains(Version(version.rstrip(".*")), prereleases=True), (
                f"{path.name}: python={version} vs requires-python {requires_python}"
            )
            continue
        if name in TOOLING:
            continue
        cname = canonicalize_name(name)
        assert cname in deps, f"{path.name}: conda package {name} is not a dependency in pyproject.toml"
        assert deps[cname].specifier.contains(version, prereleases=True), (
            f"{path.name}: {name}={version} is outside pyproject.toml's {deps[cname]}"
        )


def test_same_package_same_pin_in_every_env():
    pins: dict[str, dict[str, str]] = {}
    for path in ENV_FILES:
        _conda, pip = conda_and_pip(load_env(path))
        for spec in pip:
            req = Requirement(spec)
            pins.setdefault(canonicalize_name(req.name), {})[path.name] = next(iter(req.specifier)).version
    drift = {name: by_env for name, by_env in pins.items() if len(set(by_env.values())) > 1}
    assert not drift, f"one package, different pins across envs/: {drift}"


def test_every_project_dependency_is_in_some_env():
    deps, _ = project_requirements()
    covered = set()
    for path in ENV_FILES:
        conda, pip = conda_and_pip(load_env(path))
        covered |= {canonicalize_name(Requirement(s).name) for s in pip}
        covered |= {canonicalize_name(parse_conda_spec(c)[0]) for c in conda}
    missing = sorted(set(deps) - covered)
    assert not missing, f"pyproject.toml dependencies that no environment in envs/ installs: {missing}"


def test_train_env_pins_the_torch_build_the_readme_installs():
    # README: `pip install torch==<pin>`; the train env must pin the same torch (CUDA build on Linux).
    readme = (REPO / "README.md").read_text()
    m = re.search(r"pip install torch==([0-9][0-9.]*)", readme)
    assert m, "README no longer shows the pinned torch install"
    _conda, pip = conda_and_pip(load_env(ENV_DIR / "train.yaml"))
    torch = next(Requirement(s) for s in pip if canonicalize_name(Requirement(s).name) == "torch")
    assert next(iter(torch.specifier)).version == m.group(1)
