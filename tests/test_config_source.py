"""Where a configuration's keys come from (taco.workflow.config_source): `taco plan`'s errors name the
file and line of the offending key, a missing file or a YAML syntax error is one line with file, line
and column, and the Snakefile's errors carry the same file and line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from taco.workflow.config_source import ConfigFileError, key_path, key_sources, read_config_file

REPO = Path(__file__).resolve().parent.parent
SMOKE = REPO / "configs" / "smoke.yaml"


def _plan(*argv, cwd):
    return subprocess.run([sys.executable, "-m", "taco", "plan", "--no-snakemake", *argv], capture_output=True,
                          text=True, cwd=str(cwd), timeout=300)


def test_read_config_file_records_each_keys_line(tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text("seed: 3\npretrain:\n  runs:\n    - size: tiny\n      objectives: [mlm]\n")
    data, where = read_config_file(f)
    assert data == {"seed": 3, "pretrain": {"runs": [{"size": "tiny", "objectives": ["mlm"]}]}}
    assert where[("seed",)] == (1, 1) and where[("pretrain", "runs")] == (3, 3)
    assert where[("pretrain", "runs", 0, "size")] == (4, 7) and where[("pretrain", "runs", 0, "objectives", 0)] == (5, 20)
    assert key_path("pretrain.runs[0].fractions[1]") == ("pretrain", "runs", 0, "fractions", 1)


def test_later_files_and_overrides_move_only_what_they_set(tmp_path):
    base, overlay = tmp_path / "base.yaml", tmp_path / "overlay.yaml"
    base.write_text("seed: 1\npretrain:\n  tc:\n    weight: 1.0\n  runs:\n    - size: tiny\n      objectives: [mlm]\n")
    overlay.write_text("pretrain:\n  tc:\n    window: 4\n  runs: [{size: big, objectives: [taco]}]\n")
    src = key_sources([base, overlay], {"seed": 5})
    assert src.where("pretrain.tc.weight") == f"{base}:4"  # a merged mapping keeps the earlier file's keys
    assert src.where("pretrain.tc.window") == f"{overlay}:3"
    assert src.where("pretrain.runs[0].size") == f"{overlay}:4"  # a list replaces the earlier one whole
    assert src.where("seed") == "--config"
    assert src.where("pretrain.sizes.tiny.budgets") == f"{overlay}:1"  # a default: its nearest enclosing key
    assert src.where("gpus") is None
    text = src.annotate("configuration does not match x:\n  pretrain.tc.window: 4 is not allowed")
    assert text == f"configuration does not match x:\n  {overlay}:3: pretrain.tc.window: 4 is not allowed"


@pytest.mark.parametrize("text, needle", [
    ("pretrain:\n  seeds: [1, 2\n  foo: 1\n", ":3:6: not valid YAML: expected ',' or ']', but got ':' "
                                              "(while parsing a flow sequence at line 2, column 10)"),
    ("seed: 1\n  foo: 1\n", ":2:6: not valid YAML: mapping values are not allowed here"),
    ("- a\n- b\n", ": not a mapping of configuration keys (a YAML list)"),
])
def test_yaml_problems_are_one_line_with_line_and_column(tmp_path, text, needle):
    f = tmp_path / "bad.yaml"
    f.write_text(text)
    with pytest.raises(ConfigFileError) as err:
        read_config_file(f)
    assert str(err.value) == f"{f}{needle}"
    r = _plan("--configfile", str(f), cwd=tmp_path)
    assert r.returncode == 2 and r.stderr == f"taco plan: error: --configfile {f}{needle}\n", r.stderr


def test_missing_config_file_is_one_line_with_the_closest_name():
    r = _plan("--configfile", "configs/smok.yaml", cwd=REPO)
    assert r.returncode == 2
    assert r.stderr == (f"taco plan: error: --configfile configs/smok.yaml: no such file (working directory {REPO}); "
                        "did you mean configs/smoke.yaml?\n"), r.stderr


def test_plan_errors_name_the_file_and_line_of_the_key(tmp_path):
    """A schema error (a bad value, an unknown key) and a semantic one (check_config) each start with the
    FILE:LINE of the key in the last file that sets it; --config overrides say --config."""
    overlay = tmp_path / "overlay.yaml"
    overlay.write_text("corpus:\n  source: hubb\npretrain:\n  sizes:\n    tiny:\n      lerning_rate: 0.1\n")
    r = _plan("--configfile", str(SMOKE), str(overlay), cwd=tmp_path)
    assert r.returncode == 2
    err = r.stderr.splitlines()
    assert f"  {overlay}:2: corpus.source: 'hubb' is not allowed; allowed: one of 'synthetic', 'local', 'hub'" in err
    assert any(ln.startswith(f"  {overlay}:6: pretrain.sizes.tiny.lerning_rate: unknown key") for ln in err), err
    overlay.write_text("pretrain:\n  runs:\n    - size: tiny\n      objectives: [mlm]\n    - size: huge\n"
                       "      objectives: [mlm]\n")
    r = _plan("--configfile", str(SMOKE), str(overlay), cwd=tmp_path)
    assert r.returncode == 2
    assert r.stderr.startswith(f"taco plan: error: {overlay}:5: pretrain.runs[1].size: unknown size 'huge'"), r.stderr
    r = _plan("--configfile", str(SMOKE), "--config", "seed=-4", cwd=tmp_path)
    assert r.returncode == 2 and "  --config: seed: -4 is not allowed" in r.stderr, r.stderr


def test_snakemake_errors_name_the_file_and_line_of_the_key(tmp_path):
    """The Snakefile annotates its schema and semantic errors the same way (before any job)."""
    overlay = tmp_path / "overlay.yaml"
    overlay.write_text("glue:\n  tasks: [sst2]\nfinetune:\n  seeds: [-1, 2]\n")
    r = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--cores", "1", "--snakefile", str(REPO / "Snakefile"),
                        "--directory", str(tmp_path), "--configfile", str(SMOKE), str(overlay)],
                       cwd=tmp_path, capture_output=True, text=True, timeout=300)
    text = r.stdout + r.stderr
    assert r.returncode != 0 and "Job stats" not in text
    assert f"  {overlay}:4: finetune.seeds[0]: -1 is not allowed; allowed: an integer, >= 0" in text, text
