"""Settings that change no result re-run nothing (item 4; item 4), over the whole DAG.

A tiny grid (synthetic data, MLM and TACO with two budget segments each, fine-tuning with two seeds
in one job, dynamics, every table, figure, claim, submission and report file) is run for real once
through the default target, in a scratch ``--directory``; then each such setting is changed and
``snakemake -n`` of the default target must have nothing to do: what Snakemake itself decides from
its metadata, with the project's default profile. A setting that only ``plan.md`` shows (a rule's
``runtime``, ``finetune.num_gpus``, ``finetune.seeds_per_job``) re-plans that one local job and nothing
else. Controls that show the check can fail: the TC temperature re-plans TACO's segments and not
MLM's (MLM does not use the TC loss), and a changed setting is seen at all.
"""

from __future__ import annotations

import copy
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.slow

TINY = {
    "results_dir": "results/tiny",
    "corpus": {"source": "synthetic", "num_documents": 120},
    "tokenizer": {"kind": "train", "vocab_size": 300},
    "max_seq_length": 32,
    "validation_blocks": 8,
    "pretrain": {
        "runs": [{"size": "tiny", "objectives": ["mlm", "taco"], "fractions": [1.0]}],
        "sizes": {"tiny": {"preset": "tiny", "max_steps": 4, "warmup_steps": 1, "budgets": [2, 4],
                           "per_device_batch_size": 4, "grad_accum": 1, "num_gpus": 0,
                           "learning_rate": 1.0e-3, "save_every": 2, "precision": "fp32",
                           "mem_mb": 1000, "runtime": 10, "threads": 1}},
        "tc": {"num_negatives": 4},
        "logging_steps": 1,
    },
    "finetune": {"seeds": [1, 2], "seeds_per_job": "all", "budgets": "last", "max_length": 32,
                 "batch_size": 8, "warmup_steps": 1, "hyperparameters": {"tiny": {"learning_rate": 1.0e-3,
                                                                                   "epochs": 1}},
                 "max_train_samples": 16, "max_eval_samples": 16, "num_gpus": 1, "threads": 1,
                 "mem_mb": 1000, "runtime": 10},
    "glue": {"source": "synthetic", "tasks": ["rte"]},
    "dynamics": {"enabled": True, "objectives": ["mlm", "taco"], "num_blocks": 4, "max_pairs": 200},
    "analysis": {"roles": {"small": "tiny", "base": None}, "n_resamples": 99, "min_seeds": 2},
    "gpus": 0,
}


def _set(path: str, value):
    def mutate(cfg):
        node = cfg
        keys = path.split(".")
        for k in keys[:-1]:
            node = node.setdefault(k, {})  # a section the overlay leaves to the schema defaults
        node[keys[-1]] = value
    return mutate


#: settings that change no result and that no written file shows: (config key, new value)
NO_RESULT_SETTINGS = [
    ("pretrain.logging_steps", 3),
    ("pretrain.sizes.tiny.save_every", 1),
    ("pretrain.sizes.tiny.threads", 2),
    ("pretrain.sizes.tiny.mem_mb", 3000),
    ("finetune.threads", 2),
    ("finetune.mem_mb", 3000),
    ("gpus", 2),  # a GPU box: jobs now run under `taco gpu-slot`
    ("gpu_lock_dir", "/tmp/elsewhere"),  # where the slot locks live
    ("data_threads", 2),  # worker processes of corpus, tokenizer and pack
    ("results_dir", "results/tiny/"),  # the same folder, spelt with a trailing slash
    ("monitoring.tensorboard", False),  # training curves
    ("monitoring.wandb", True),
    ("fork_server", False),  # every job a fresh process instead of a fork of the run's server
]
#: settings that change no result but that plan.md shows (jobs per rule, runtimes, CPU-only note)
PLAN_SETTINGS = [
    ("pretrain.sizes.tiny.runtime", 99),
    ("finetune.runtime", 99),
    ("finetune.num_gpus", 0),
    ("finetune.seeds_per_job", "one"),
    ("finetune.tasks_per_job", "all"),  # one job per checkpoint: the same outputs, nothing re-runs
]


def snakemake(workdir: Path, cfg: dict, *extra: str, python: str = sys.executable) -> subprocess.CompletedProcess:
    """Snakemake on the default target (the whole DAG) in ``workdir``, with ``cfg`` as its config file."""
    path = workdir / "config.yaml"
    path.write_text(yaml.safe_dump(cfg))
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1")
    return subprocess.run(
        [python, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"), "--directory", str(workdir),
         "--configfile", str(path), "--cores", "2", *extra],
        capture_output=True, text=True, timeout=1500, env=env)


def planned(out: subprocess.CompletedProcess) -> dict[str, int]:
    """rule -> jobs from the "Job stats" table of a dry run ({} when there is nothing to be done)."""
    text = out.stdout + out.stderr
    assert out.returncode == 0, text[-3000:]
    if "Nothing to be done" in text:
        return {}
    table = text.split("Job stats:", 1)[1]
    counts = {}
    for line in table.splitlines()[3:]:
        m = re.match(r"^(\w+)\s+(\d+)$", line.strip())
        if not m or m.group(1) == "total":
            break
        counts[m.group(1)] = int(m.group(2))
    assert counts, text[-3000:]
    return counts


def changed(key: str, value) -> dict:
    cfg = copy.deepcopy(TINY)
    _set(key, value)(cfg)
    return cfg


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    """A scratch working directory where the tiny grid's whole DAG (the default target) has run."""
    workdir = tmp_path_factory.mktemp("rerun")
    out = snakemake(workdir, TINY)
    assert out.returncode == 0, (out.stdout + out.stderr)[-5000:]
    assert (workdir / "results/tiny/figure2.png").is_file() and (workdir / "results/tiny/deviations.md").is_file()
    assert planned(snakemake(workdir, TINY, "-n")) == {}
    return workdir


def test_settings_that_change_no_result_rerun_nothing(finished):
    """All of NO_RESULT_SETTINGS changed at once: one dry run instead of one per setting (each costs a
    whole DAG build). Snakemake re-plans a job when any of its params, inputs or code changed, so a
    setting that leaks into a job re-plans it here too; the settings only add to each other (the lock
    folder, say, is now used: gpus is 2). Where work is re-planned, each setting is then tried alone
    to name the culprits."""
    cfg = copy.deepcopy(TINY)
    for key, value in NO_RESULT_SETTINGS:
        _set(key, value)(cfg)
    jobs = planned(snakemake(finished, cfg, "-n"))
    if jobs:
        culprits = {key: alone for key, value in NO_RESULT_SETTINGS
                    if (alone := planned(snakemake(finished, changed(key, value), "-n")))}
        pytest.fail(f"changing all of {[k for k, _ in NO_RESULT_SETTINGS]} re-plans {jobs}; "
                    f"alone: {culprits or 'none re-plans anything'}")


@pytest.mark.parametrize("key, value", PLAN_SETTINGS, ids=[k for k, _ in PLAN_SETTINGS])
def test_setting_shown_only_by_the_plan_rewrites_only_the_plan(finished, key, value):
    assert planned(snakemake(finished, changed(key, value), "-n")) == {"all": 1, "plan": 1}


def test_another_interpreter_reruns_nothing(finished, tmp_path):
    """The Python interpreter is part of how a job runs, not of what it computes."""
    link = tmp_path / "bin" / "python3"
    link.parent.mkdir()
    link.symlink_to(sys.executable)
    assert planned(snakemake(finished, TINY, "-n", python=str(link))) == {}


def test_tc_setting_reruns_the_tc_objective_only(finished):
    """The control: the TC temperature is a param of TACO's segments (both run again, and what they
    feed), but not of MLM's, whose weights it cannot change."""
    jobs = planned(snakemake(finished, changed("pretrain.tc.temperature", 0.1), "-n"))
    # of the 4 segments (2 objectives x 2 budgets) TACO's 2; its 1 fine-tuning job and 2 dynamics jobs
    assert jobs.get("pretrain") == 2 and jobs.get("finetune_seeds") == 1 and jobs.get("dynamics") == 2, jobs


def test_a_setting_run_config_shows_rewrites_it_and_the_deviations(finished):
    """The control of the report files: the fine-tuning batch size is in run_config.json (and changes
    every fine-tuning job), so run_config and deviations are planned again."""
    jobs = planned(snakemake(finished, changed("finetune.batch_size", 4), "-n"))
    assert jobs.get("run_config") == 1 and jobs.get("deviations") == 1 and jobs.get("finetune_seeds") == 2, jobs


def test_a_deleted_middle_budget_is_named_and_nothing_else_moves(finished):
    """Snakemake 9 plans nothing for a deleted middle budget (its later budget and results stay): the
    workflow says which budget is missing and how to rebuild it (docs/reruns.md); the named target rebuilds
    it alone. The budget is moved aside and back, so the module's finished run is left as it was."""
    import shutil

    runs = sorted((finished / "results/tiny/pretrain").glob("*/*/data-1.0"))
    chain = sorted(runs[0].glob("step-*"), key=lambda p: int(p.name.split("-")[1]))
    assert len(chain) >= 2
    middle = chain[0]
    aside = finished / "aside"
    shutil.move(str(middle), str(aside))
    try:
        out = snakemake(finished, TINY, "-n")
        assert planned(out) == {}
        text = out.stdout + out.stderr
        rel = str(middle.relative_to(finished))
        assert f"NOTE: {rel} is missing while the later budget" in text and f"`snakemake {rel}`" in text
    finally:
        shutil.move(str(aside), str(middle))
    assert "is missing while" not in (lambda o: o.stdout + o.stderr)(snakemake(finished, TINY, "-n"))
