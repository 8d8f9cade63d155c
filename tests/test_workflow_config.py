"""The workflow's config: schema defaults, semantic checks naming the key, the run grid.

Bad configurations must fail before any job runs, with the offending key named (issue 5).
"""

import copy
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from taco.workflow import config as wc

REPO = Path(__file__).resolve().parent.parent


def load(name):
    from snakemake.utils import validate

    cfg = yaml.safe_load((REPO / name).read_text())
    validate(cfg, str(REPO / "workflow/schemas/config.schema.yaml"))
    return cfg


@pytest.fixture(scope="module")
def smoke():
    return load("configs/smoke.yaml")


def test_schema_fills_defaults(smoke):
    assert smoke["pretrain"]["mlm_probability"] == 0.15
    assert smoke["pretrain"]["tc"]["temperature"] == 0.07
    assert smoke["finetune"]["report_rule"] == "last"
    assert smoke["analysis"]["equivalence_margin"] == 0.5


def test_paper_grid():
    cfg = load("config.yaml")
    wc.check_config(cfg)
    runs = wc.runs(cfg)
    assert wc.Run("small", "taco", 1.0) in runs and wc.Run("small", "mlm", 0.25) in runs
    assert {r.variant for r in runs if r.size == "small" and r.fraction == 1.0} == {
        "mlm", "taco", "mlm_tp", "taco_concentrated"}
    assert wc.budgets(cfg, "small") == [10000, 20000, 30000, 40000, 50000, 100000, 150000, 200000, 250000]
    assert wc.budgets(cfg, "base")[-1] == 500000
    assert len(cfg["finetune"]["seeds"]) == 5
    assert wc.finetune_hyperparameters(cfg, "base") == {"learning_rate": 3e-5, "epochs": 6}
    assert wc.previous_budget(cfg, "small", 10000) is None
    assert wc.previous_budget(cfg, "small", 100000) == 50000


def test_budget_names():
    assert wc.budget_name(250000) == "250k"
    assert wc.budget_name(2500) == "2.5k"
    assert wc.budget_name(60) == "60"


@pytest.mark.parametrize("mutate, key", [
    (lambda c: c["pretrain"]["runs"][0].update(size="huge"), "pretrain.runs[0].size"),
    (lambda c: c["pretrain"]["sizes"]["tiny"].update(budgets=[100, 50, 150]), "pretrain.sizes.tiny.budgets"),
    (lambda c: c["pretrain"]["sizes"]["tiny"].update(budgets=[50, 100, 900]), "pretrain.sizes.tiny.budgets"),
    (lambda c: c["pretrain"]["tc"].update(window=4), "pretrain.tc.window"),
    (lambda c: c["analysis"]["roles"].update(small="nope"), "analysis.roles.small"),
    (lambda c: c["corpus"].update(source="local", paths=["/does/not/exist"]), "corpus.paths"),
    (lambda c: c["glue"].update(source="local", data_dir="/does/not/exist"), "glue.data_dir"),
    (lambda c: c["tokenizer"].update(kind="vocab", vocab_file="{data_root}/v.txt"), "data_root"),
    (lambda c: c["pretrain"]["sizes"]["tiny"].update(per_device_batch_size=1),
     "pretrain.sizes.tiny.per_device_batch_size"),
    (lambda c: c["pretrain"].update(tp={"weight": 0.5, "mode": "joint"}), "pretrain.tp.weight"),
])
def test_semantic_errors_name_the_key(smoke, mutate, key):
    cfg = copy.deepcopy(smoke)
    mutate(cfg)
    with pytest.raises(wc.ConfigError) as err:
        wc.check_config(cfg)
    assert str(err.value).startswith(key)


def dry_run(configfile, *extra):
    return subprocess.run(
        [sys.executable, "-m", "snakemake", "-n", "--cores", "1", "--configfile", str(configfile),
         "--directory", str(REPO), *extra],
        cwd=REPO, capture_output=True, text=True, timeout=300,
    )


def _set(path, value):
    def mutate(cfg):
        node = cfg
        for k in path[:-1]:
            node = node[k]
        node[path[-1]] = value
    return mutate


@pytest.mark.parametrize("mutate, needle", [
    (_set(["pretrain", "runs", 0, "variants"], ["bert"]), "bert"),
    (_set(["pretrain", "runs", 0, "fractions"], [1.5]), "fractions"),
    (_set(["pretrain", "sizes", "tiny", "budgets"], [100, 50, 150]), "pretrain.sizes.tiny.budgets"),
    (_set(["pretrain", "sizes", "tiny", "budgets"], [50, 100, 151]), "beyond max_steps"),
    (_set(["pretrain", "sizes", "tiny", "preset"], "huge"), "huge"),
    (_set(["glue", "tasks"], ["squad"]), "squad"),
    (_set(["corpus", "source"], "local"), "corpus.paths"),
    (_set(["pretrain", "sizes", "tiny", "learning_rate"], "fast"), "learning_rate"),
    (_set(["pretrain", "sizes", "tiny", "per_device_batch_size"], 1), "pretrain.sizes.tiny.per_device_batch_size"),
])
def test_bad_config_fails_before_any_job(tmp_path, mutate, needle):
    cfg = yaml.safe_load((REPO / "configs/smoke.yaml").read_text())
    mutate(cfg)
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(cfg))
    out = dry_run(bad)
    assert out.returncode != 0
    assert needle in out.stderr + out.stdout
    assert "Job stats" not in out.stdout


def test_smoke_dry_run_plans_every_stage():
    out = dry_run(REPO / "configs/smoke.yaml")
    assert out.returncode == 0, out.stderr
    for rule in ("corpus", "tokenizer", "pack", "pretrain", "finetune", "aggregate", "tables",
                 "figures", "claims", "dynamics", "dynamics_figures"):
        # finetune runs as `finetune_seeds` when finetune.seeds_per_job is "all" (configs/smoke.yaml)
        assert f"\n{rule} " in out.stdout or f"\n{rule}_seeds " in out.stdout, rule


def test_local_config_reports_missing_tasks_once(shared_data):
    out = subprocess.run(
        [sys.executable, "-m", "snakemake", "-n", "--cores", "1", "--configfile", "configs/local.yaml",
         "--config", f"data_root={shared_data}"],
        cwd=REPO, capture_output=True, text=True, timeout=300,
    )
    assert out.returncode == 0, out.stderr
    text = out.stdout + out.stderr
    assert text.count("GLUE tasks absent from the local folder") == 1
    for task in ("mnli", "qqp", "qnli"):
        assert f"{task}: missing" in text
    assert "/rte/seed-1/metrics.json" in text and "/mnli/" not in text


def test_tc_batch_check_spares_objectives_without_tc(smoke):
    """One sequence per device batch is fine when no run of that size uses the TC loss."""
    cfg = copy.deepcopy(smoke)
    cfg["pretrain"]["sizes"]["tiny"]["per_device_batch_size"] = 1
    for entry in cfg["pretrain"]["runs"]:
        entry["variants"] = ["mlm"]
    wc.check_config(cfg)


def test_results_dir_that_is_a_file_is_a_config_error(smoke, tmp_path):
    blocker = tmp_path / "results"
    blocker.write_text("not a folder")
    for value in (str(blocker), str(blocker / "sub")):
        cfg = copy.deepcopy(smoke)
        cfg["results_dir"] = value
        with pytest.raises(wc.ConfigError) as err:
            wc.check_config(cfg)
        assert str(err.value).startswith("results_dir:") and "existing file" in str(err.value)
    cfg = copy.deepcopy(smoke)
    cfg["results_dir"] = str(tmp_path / "new" / "results")  # not there yet: fine
    wc.check_config(cfg)
    # the same through Snakemake: the key, not a NotADirectoryError traceback
    out = dry_run(REPO / "configs/smoke.yaml", "--config", f"results_dir={blocker}")
    assert out.returncode != 0
    text = out.stdout + out.stderr
    assert "results_dir:" in text and "existing file" in text
    assert "NotADirectoryError" not in text and "Traceback" not in text


def test_bad_analysis_setting_stops_before_any_job(tmp_path):
    """`analysis:` settings pass the analysis spec's own schema before any job runs."""
    overlay = tmp_path / "bad.yaml"
    overlay.write_text("analysis:\n  primary_metric: {qqp: auc}\n")
    out = dry_run(REPO / "configs/smoke.yaml", "--configfile", str(REPO / "configs/smoke.yaml"), str(overlay))
    assert out.returncode != 0
    text = out.stderr + out.stdout
    assert "primary_metric" in text and "qqp" in text and "Job stats" not in text


def test_slurm_profile_sizes_every_gpu_rule(tmp_path):
    """Each rule whose jobs ask for a GPU in the paper configuration (``gpu >= 1`` among the job's
    resources as Snakemake builds them; both fine-tuning forms, one job per seed and
    ``finetune.seeds_per_job: all``) has its own ``set-resources`` entry with ``gpu >= 1`` in the SLURM
    profile; otherwise SLURM would run it on a CPU node with the default resources."""
    from dag_jobs import list_jobs

    gpu_rules = set()
    for name, override in (("one", None), ("all", {"finetune": {"seeds_per_job": "all"}})):
        jobs = list_jobs(tmp_path / name, [REPO / "config.yaml"], override)
        gpu_rules |= {j["rule"] for j in jobs if (j["resources"].get("gpu") or 0) >= 1}
    assert {"pretrain", "finetune", "finetune_seeds"} <= gpu_rules, gpu_rules
    profile = yaml.safe_load((REPO / "workflow/profiles/slurm/config.v8+.yaml").read_text())
    sized = profile["set-resources"]
    missing = sorted(r for r in gpu_rules if r not in sized or sized[r].get("gpu", 0) < 1)
    assert not missing, f"GPU rules without a set-resources entry in the SLURM profile: {missing}"
