"""Configuration faults refused before any job, each naming the file, line or key (the third fault sweep):
duplicate YAML keys, an overlay given before its base, NaN / infinite numbers, unbounded integers, bad
per-entry pre-training seeds, and the too-few-seeds note for an entry's own seeds."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from taco.workflow.config_source import ConfigFileError, config_file_errors, read_config_file

REPO = Path(__file__).resolve().parent.parent


def test_a_key_given_twice_is_named_with_both_lines(tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text("seed: 0\npretrain:\n  logging_steps: 5\n  logging_steps: 6\n")
    with pytest.raises(ConfigFileError, match=r"c.yaml:4: key 'logging_steps' is given twice .*first at line 3"):
        read_config_file(f)
    assert any("given twice" in e for e in config_file_errors([f]))


def test_a_merge_key_override_is_not_a_duplicate():
    """configs/cpu-real-families.yaml: `<<: *tiny` then `architecture: roberta` overrides, as YAML means."""
    data, _ = read_config_file(REPO / "configs" / "cpu-real-families.yaml")
    assert data["pretrain"]["sizes"]["roberta_tiny"]["architecture"] == "roberta"
    assert config_file_errors([REPO / "configs" / "cpu-real.yaml", REPO / "configs" / "cpu-real-families.yaml"]) == []


def test_an_overlay_before_its_base_names_both():
    errors = config_file_errors(["configs/cpu-real-families.yaml", "configs/cpu-real.yaml"])
    assert len(errors) == 1
    assert "configs/cpu-real-families.yaml is an overlay of configs/cpu-real.yaml" in errors[0]


def test_an_overlay_before_its_base_stops_taco_plan_and_snakemake_naming_both(tmp_path):
    """The wrong order planned the base alone (54 jobs, no ModernBERT or RoBERTa run, no word): `taco plan` and
    `snakemake --dry-run` both stop before any job with one line naming the overlay and its base."""
    overlay, base = REPO / "configs" / "cpu-real-families.yaml", REPO / "configs" / "cpu-real.yaml"
    plan = subprocess.run([sys.executable, "-m", "taco", "plan", "--no-snakemake", "--configfile",
                           "configs/cpu-real-families.yaml", "configs/cpu-real.yaml"], cwd=REPO, capture_output=True,
                          text=True, timeout=300)
    assert plan.returncode == 2, plan.stdout[-2000:] + plan.stderr[-2000:]
    assert plan.stderr.startswith("taco plan: error: configs/cpu-real-families.yaml is an overlay of "
                                  "configs/cpu-real.yaml: give configs/cpu-real.yaml before it"), plan.stderr
    assert "jobs" not in plan.stdout, plan.stdout
    work = tmp_path / "work"
    work.mkdir()
    dry = subprocess.run([sys.executable, "-m", "snakemake", "--dry-run", "--cores", "1", "--snakefile",
                          str(REPO / "Snakefile"), "--directory", str(work), "--configfile", str(overlay), str(base)],
                         cwd=work, capture_output=True, text=True, timeout=300)
    text = dry.stdout + dry.stderr
    assert dry.returncode != 0 and "Job stats" not in text, text[-3000:]
    assert f"{overlay} is an overlay of configs/cpu-real.yaml: give configs/cpu-real.yaml before it" in text, text


@pytest.mark.parametrize("text, key", [
    ("pretrain:\n  sizes:\n    tiny: {learning_rate: .nan}\n", "pretrain.sizes.tiny.learning_rate"),
    ("finetune:\n  hyperparameters:\n    tiny: {learning_rate: .inf, epochs: 1}\n", "finetune.hyperparameters.tiny.learning_rate"),
    ("finetune:\n  batch_size: 1000000000\n", "finetune.batch_size"),
    ("pretrain:\n  tc: {num_negatives: 100000000}\n", "pretrain.tc.num_negatives"),
    ("finetune:\n  mem_mb: 1000000000000000\n", "finetune.mem_mb"),
    ("pretrain:\n  sizes:\n    tiny: {mem_mb: 1000000000000000}\n", "pretrain.sizes.tiny.mem_mb"),
    ("corpus:\n  num_documents: 1000000000000\n", "corpus.num_documents"),
    ("pretrain:\n  runs:\n    - {size: tiny, objectives: [mlm], seeds: [-1]}\n", "pretrain.runs[0].seeds[0]"),
    ("pretrain:\n  runs:\n    - {size: tiny, objectives: [mlm], seeds: [1, 1]}\n", "pretrain.runs[0].seeds"),
])
def test_bad_values_are_refused_before_any_job(tmp_path, text, key):
    from taco.workflow.plan.command import load_config
    from taco.workflow.plan.inputs import PlanError

    f = tmp_path / "bad.yaml"
    f.write_text(text)
    with pytest.raises(PlanError) as err:
        load_config([str(REPO / "configs" / "smoke.yaml"), str(f)])
    assert key in str(err.value) and "bad.yaml:" in str(err.value), str(err.value)


def test_an_entrys_own_seeds_get_the_too_few_to_decide_note(tmp_path):
    from taco.workflow.config_checks import config_notes
    from taco.workflow.plan.command import load_config

    f = tmp_path / "two.yaml"
    f.write_text("pretrain:\n  runs:\n    - {size: tiny, objectives: [mlm, taco], seeds: [0, 1]}\n")
    cfg = load_config([str(REPO / "configs" / "smoke.yaml"), str(f)])
    notes = config_notes(cfg)
    assert any(n.startswith("pretrain.runs[0].seeds: 2 pre-training runs") and "no claim can be decided" in n
               for n in notes), notes


def _bomb(path: Path, levels: int = 7) -> Path:
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    lines += [f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, levels)]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("text, needle", [
    (None, "aliases expand to more than 200,000 values"),
    ("a: &x\n  b: *x\n", "a recursive alias"),
    ("a: " + "[" * 5000 + "]" * 5000 + "\n", "nested too deeply"),
    ("a: " + "[" * 70 + "]" * 70 + "\n", "nested deeper than 64 levels"),
], ids=["billion laughs", "recursive alias", "5000 deep", "70 deep"])
def test_hostile_yaml_is_refused_quickly_naming_the_file(tmp_path, text, needle):
    """Fault sweep IV, item 10: an alias bomb took `taco plan` past 3 GB within 46 s (and `snakemake -n` within
    36 s); a recursive alias or 5,000-deep nesting gave a RecursionError traceback."""
    import time

    f = tmp_path / "overlay.yaml"
    _bomb(f) if text is None else f.write_text(text)
    t0 = time.monotonic()
    with pytest.raises(ConfigFileError, match=needle) as err:
        read_config_file(f)
    assert str(f) in str(err.value) and time.monotonic() - t0 < 10
    plan = subprocess.run([sys.executable, "-m", "taco", "plan", "--no-snakemake", "--configfile",
                           str(REPO / "configs" / "smoke.yaml"), str(f)], capture_output=True, text=True, timeout=120)
    assert plan.returncode == 2 and needle in plan.stderr and "Traceback" not in plan.stderr, plan.stderr[-2000:]


def test_an_alias_bomb_stops_snakemake_before_it_expands(tmp_path):
    """(A recursive alias or 5,000-deep nesting fails inside Snakemake's own loading, before the Snakefile runs: its
    traceback is Snakemake's, quick and small; nothing of this suite can run earlier.)"""
    f = _bomb(tmp_path / "overlay.yaml")
    work = tmp_path / "w"
    work.mkdir()
    dry = subprocess.run([sys.executable, "-m", "snakemake", "--dry-run", "--cores", "1", "--snakefile",
                          str(REPO / "Snakefile"), "--directory", str(work), "--configfile",
                          str(REPO / "configs" / "smoke.yaml"), str(f)], cwd=work, capture_output=True, text=True,
                         timeout=120)
    out = dry.stdout + dry.stderr
    assert dry.returncode != 0 and "aliases expand to more than 200,000 values" in out, out[-2000:]
