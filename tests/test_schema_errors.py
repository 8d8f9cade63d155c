"""Errors that name the key: the project's own schema check (taco.workflow.schema) runs
before Snakemake's validate, in `taco plan` and in the Snakefile, and says the key, the bad value and
what is allowed in a few lines; `taco plan --config` merges nested sections as Snakemake does."""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from taco.workflow.plan import command as plan
from taco.workflow.schema import MAX_ERRORS, SchemaError, check_schema, schema_errors

REPO = Path(__file__).resolve().parent.parent
SMOKE = yaml.safe_load((REPO / "configs" / "smoke.yaml").read_text())


def _with(path, value, base=SMOKE):
    cfg = copy.deepcopy(base)
    node = cfg
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = value
    return cfg


@pytest.mark.parametrize("name", ["config.yaml", "configs/smoke.yaml", "configs/local.yaml",
                                  "configs/cpu-real.yaml", "configs/gpu-mini.yaml"])
def test_shipped_configs_pass(name):
    assert schema_errors(yaml.safe_load((REPO / name).read_text())) == []


def test_defaults_are_filled_not_reported_and_config_untouched():
    cfg = {"results_dir": "results/x"}
    before = copy.deepcopy(cfg)
    assert schema_errors(cfg) == []
    assert cfg == before


@pytest.mark.parametrize("path, value, needles", [
    (["corpus", "source"], "hubb", ["corpus.source:", "'hubb'", "one of 'synthetic', 'local', 'hub'"]),
    (["pretrain", "sizes", "tiny", "learning_rate"], "fast",
     ["pretrain.sizes.tiny.learning_rate:", "'fast' is a string", "a number", "> 0"]),
    (["pretrain", "runs", 0, "fractions"], [1.5], ["pretrain.runs[0].fractions[0]:", "1.5", "<= 1"]),
    (["pretrain", "sizes", "tiny", "lerning_rate"], 1e-3,
     ["pretrain.sizes.tiny.lerning_rate: unknown key", "did you mean 'learning_rate'?",
      "allowed keys of pretrain.sizes.tiny:", "max_steps"]),
    (["resultsdir"], "x", ["resultsdir: unknown key", "did you mean 'results_dir'?", "allowed keys:"]),
])
def test_each_violation_names_key_value_and_allowed(path, value, needles):
    lines = schema_errors(_with(path, value))
    assert len(lines) == 1, lines
    for n in needles:
        assert n in lines[0], (n, lines[0])


def test_several_violations_are_listed_and_capped():
    cfg = _with(["corpus", "source"], "hubb")
    cfg["seedx"] = 1
    with pytest.raises(SchemaError) as err:
        check_schema(cfg)
    text = str(err.value)
    assert text.splitlines()[0] == "configuration does not match config.schema.yaml:"
    assert "seedx: unknown key" in text and "corpus.source:" in text
    many = copy.deepcopy(SMOKE)
    for i in range(MAX_ERRORS + 3):
        many[f"bogus_{i}"] = i
    text = str(pytest.raises(SchemaError, check_schema, many).value)
    assert len(text.splitlines()) == 1 + MAX_ERRORS + 1 and text.endswith("... and 3 more")


def _plan(*argv, cwd):
    return subprocess.run([sys.executable, "-m", "taco", "plan", "--no-snakemake", *argv], capture_output=True,
                          text=True, cwd=str(cwd), timeout=300)


def test_taco_plan_bad_key_and_value_in_a_few_lines(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(_with(["pretrain", "sizes", "tiny", "lerning_rate"], 0.1,
                                        _with(["corpus", "source"], "hubb"))))
    r = _plan("--configfile", str(bad), cwd=tmp_path)
    assert r.returncode == 2
    err = r.stderr.strip().splitlines()
    assert len(err) <= 4, r.stderr
    assert err[0] == "taco plan: error: configuration does not match config.schema.yaml:"
    assert any("corpus.source: 'hubb'" in ln and "'synthetic', 'local', 'hub'" in ln for ln in err)
    assert any("pretrain.sizes.tiny.lerning_rate: unknown key" in ln for ln in err)
    assert "Error validating config file" not in r.stderr


def test_plan_config_merges_nested_sections_as_snakemake(tmp_path):
    smoke = str(REPO / "configs" / "smoke.yaml")
    cfg = plan.load_config([smoke], {"pretrain": {"tc": {"weight": 2.0}}})
    assert cfg["pretrain"]["tc"]["weight"] == 2.0
    assert cfg["pretrain"]["tc"]["temperature"] == 0.07  # kept from smoke.yaml, not replaced
    assert cfg["pretrain"]["runs"] == SMOKE["pretrain"]["runs"]
    # through the CLI: parsed by Snakemake's own parse_config, so glue keeps its source
    r = _plan("--configfile", smoke, "--config", "glue={tasks: [sst2]}", "seed=3", "--json", str(tmp_path / "p.json"),
              cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    # a nested number arrives as a string, as in Snakemake: the error names the key and points nowhere else
    r = _plan("--configfile", smoke, "--config", "pretrain={tc: {weight: 2}}", cwd=tmp_path)
    assert r.returncode == 2 and "pretrain.tc.weight: '2' is a string; allowed: a number" in r.stderr, r.stderr


def test_plan_config_dotted_key_points_to_overlays(tmp_path):
    r = _plan("--configfile", str(REPO / "configs" / "smoke.yaml"), "--config", "pretrain.tc.weight=2", cwd=tmp_path)
    assert r.returncode == 2
    assert "pretrain.tc.weight=2" in r.stderr and "overlay" in r.stderr and "--configfile base.yaml overlay.yaml" in r.stderr


def test_snakemake_bad_key_in_a_few_lines(tmp_path):
    """The Snakefile runs the same check before Snakemake's validate: a few lines, not the schema."""
    overlay = tmp_path / "overlay.yaml"
    overlay.write_text("pretrain:\n  sizes:\n    tiny:\n      lerning_rate: 1\n")
    work = tmp_path / "work"
    work.mkdir()
    r = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--cores", "1", "--snakefile", str(REPO / "Snakefile"),
                        "--directory", str(work), "--configfile", str(REPO / "configs" / "smoke.yaml"), str(overlay)],
                       cwd=work, capture_output=True, text=True, timeout=300)
    assert r.returncode != 0
    text = r.stdout + r.stderr
    assert "pretrain.sizes.tiny.lerning_rate: unknown key (did you mean 'learning_rate'?)" in text
    assert len(text.splitlines()) < 15, text


def test_renamed_keys_are_refused_naming_the_new_key(tmp_path):
    """`variants` (an objective list) was renamed `objectives`; an old configuration fails
    before any work with a line naming the new key, through the Snakefile too."""
    cfg = copy.deepcopy(SMOKE)
    cfg["pretrain"]["runs"][1]["variants"] = cfg["pretrain"]["runs"][1].pop("objectives")
    cfg["dynamics"]["variants"] = cfg["dynamics"].pop("objectives")
    lines = schema_errors(cfg)
    assert any(line.startswith("pretrain.runs[1].variants: renamed to pretrain.runs[1].objectives")
               for line in lines), lines
    assert any(line.startswith("dynamics.variants: renamed to dynamics.objectives") for line in lines), lines
    # `negatives` was a count under tc and a source under nce
    words = copy.deepcopy(SMOKE)
    words["pretrain"]["tc"]["negatives"] = words["pretrain"]["tc"].pop("num_negatives")
    words["pretrain"]["nce"] = {"negatives": "vocabulary"}
    lines = schema_errors(words)
    assert any(line.startswith("pretrain.tc.negatives: renamed to pretrain.tc.num_negatives") for line in lines), lines
    assert any(line.startswith("pretrain.nce.negatives: renamed to pretrain.nce.negative_source")
               for line in lines), lines
    old = tmp_path / "old.yaml"
    old.write_text(yaml.safe_dump(cfg))
    out = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--cores", "1", "--snakefile",
                          str(REPO / "Snakefile"), "--directory", str(tmp_path), "--configfile", str(old)],
                         cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert out.returncode != 0
    assert "dynamics.variants: renamed to dynamics.objectives" in out.stdout + out.stderr


def test_old_analysis_spec_key_is_refused_naming_runs():
    from taco.stats.analysis_config import AnalysisConfigError, validate_analysis

    with pytest.raises(AnalysisConfigError, match="variants.*renamed to runs"):
        validate_analysis({"variants": [{"size": "tiny", "objective": "mlm", "fraction": 1.0}]})
