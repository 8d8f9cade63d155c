"""Settings that change no result re-run nothing (issue 11, item 4, second part).

A tiny DAG (synthetic data, one TACO run of two budget segments, fine-tuning with two seeds in one
job, dynamics) is run for real once; then each such setting is changed and `snakemake -n` must have
nothing to do: what Snakemake itself decides from its metadata, with the project's default profile.
A setting that does change the weights (the TC temperature) must plan pre-training again, so the
check cannot pass by seeing nothing.
"""

from __future__ import annotations

import copy
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.slow

RUN = "results/tiny/{kind}/tiny/taco/data-1.0/step-{step}"
TARGETS = ([f"{RUN.format(kind='finetune', step=4)}/rte/seed-{s}/metrics.json" for s in (1, 2)]
           + [f"{RUN.format(kind='dynamics', step=s)}/dynamics.json" for s in (2, 4)])

TINY = {
    "results_dir": "results/tiny",
    "corpus": {"source": "synthetic", "num_documents": 120},
    "tokenizer": {"kind": "train", "vocab_size": 300},
    "max_seq_length": 32,
    "validation_blocks": 8,
    "pretrain": {
        "runs": [{"size": "tiny", "variants": ["taco"], "fractions": [1.0]}],
        "sizes": {"tiny": {"preset": "tiny", "max_steps": 4, "warmup_steps": 1, "budgets": [2, 4],
                           "per_device_batch_size": 4, "grad_accum": 1, "num_gpus": 0,
                           "learning_rate": 1.0e-3, "save_every": 2, "precision": "fp32",
                           "mem_mb": 1000, "runtime": 10, "threads": 1}},
        "tc": {"negatives": 4},
        "logging_steps": 1,
    },
    "finetune": {"seeds": [1, 2], "seeds_per_job": "all", "budgets": "last", "max_length": 32,
                 "batch_size": 8, "warmup_steps": 1, "hyperparameters": {"tiny": {"learning_rate": 1.0e-3,
                                                                                   "epochs": 1}},
                 "max_train_samples": 16, "max_eval_samples": 16, "num_gpus": 1, "threads": 1,
                 "mem_mb": 1000, "runtime": 10},
    "glue": {"source": "synthetic", "tasks": ["rte"]},
    "dynamics": {"enabled": True, "variants": ["taco"], "num_blocks": 4, "max_pairs": 200},
    "analysis": {"roles": {"small": "tiny", "base": None}, "n_resamples": 99, "min_seeds": 2},
    "gpus": 0,
}


def _set(path: str, value):
    def mutate(cfg):
        node = cfg
        keys = path.split(".")
        for k in keys[:-1]:
            node = node[k]
        node[keys[-1]] = value
    return mutate


#: every setting that changes no result: (config key, new value)
NO_RESULT_SETTINGS = [
    ("pretrain.logging_steps", 3),
    ("pretrain.sizes.tiny.save_every", 1),
    ("pretrain.sizes.tiny.threads", 2),
    ("pretrain.sizes.tiny.mem_mb", 3000),
    ("pretrain.sizes.tiny.runtime", 99),
    ("finetune.threads", 2),
    ("finetune.mem_mb", 3000),
    ("finetune.runtime", 99),
    ("finetune.num_gpus", 0),
    ("finetune.seeds_per_job", "one"),
    ("gpus", 2),  # a GPU box: jobs now run under `taco gpu-slot`
    ("data_threads", 2),  # worker processes of corpus, tokenizer and pack
]


def snakemake(workdir: Path, cfg: dict, *extra: str, python: str = sys.executable) -> subprocess.CompletedProcess:
    path = workdir / "config.yaml"
    path.write_text(yaml.safe_dump(cfg))
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1")
    return subprocess.run(
        [python, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"), "--directory", str(workdir),
         "--configfile", str(path), "--cores", "2", *extra, *TARGETS],
        capture_output=True, text=True, timeout=900, env=env)


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    """A working directory where the tiny DAG has run to the end."""
    workdir = tmp_path_factory.mktemp("rerun")
    out = snakemake(workdir, TINY)
    assert out.returncode == 0, out.stderr[-5000:]
    again = snakemake(workdir, TINY, "-n")
    assert "Nothing to be done" in again.stdout + again.stderr, (again.stdout + again.stderr)[-3000:]
    return workdir


@pytest.mark.parametrize("key, value", NO_RESULT_SETTINGS, ids=[k for k, _ in NO_RESULT_SETTINGS])
def test_setting_that_changes_no_result_reruns_nothing(finished, key, value):
    cfg = copy.deepcopy(TINY)
    _set(key, value)(cfg)
    out = snakemake(finished, cfg, "-n")
    text = out.stdout + out.stderr
    assert out.returncode == 0, text[-3000:]
    assert "Nothing to be done" in text, f"changing {key} re-plans work:\n{text[-3000:]}"


def test_another_interpreter_reruns_nothing(finished, tmp_path):
    """The Python interpreter is part of how a job runs, not of what it computes."""
    link = tmp_path / "bin" / "python3"
    link.parent.mkdir()
    link.symlink_to(sys.executable)
    out = snakemake(finished, TINY, "-n", python=str(link))
    assert "Nothing to be done" in out.stdout + out.stderr, (out.stdout + out.stderr)[-3000:]


def test_setting_that_changes_the_weights_reruns_pretraining(finished):
    """The control: the TC temperature is a param of pre-training, so both segments run again."""
    cfg = copy.deepcopy(TINY)
    cfg["pretrain"]["tc"]["temperature"] = 0.1
    out = snakemake(finished, cfg, "-n")
    text = out.stdout + out.stderr
    assert "Params have changed" in text or "params changed" in text.lower(), text[-3000:]
    assert "rule pretrain:" in text and "Nothing to be done" not in text
