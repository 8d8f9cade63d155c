"""The paper's configuration end to end, shrunk, with every source from the Hub (item 2).

``config.yaml`` plus ``tests/configs/paper-shrunk.yaml`` (an overlay that only makes it smaller)
runs the workflow's whole default target, with the paper's data sources: the corpus from
``wikimedia/wikipedia`` (20231101.en) and ``rojagtap/bookcorpus``, the ``bert-base-uncased``
tokenizer and GLUE (``nyu-mll/glue``), all from the Hub. The Hub is the stand-in server of
``tests/hub_standin.py`` on 127.0.0.1 (``HF_ENDPOINT``), serving small copies built from the real
files in ``../shared/data``; offline mode is off and the Hugging Face cache is new, so ``datasets``
and ``huggingface_hub`` make the calls and downloads they make on a networked machine.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hub_standin import build_paper_hub, serve

REPO = Path(__file__).resolve().parent.parent
OVERLAY = REPO / "tests" / "configs" / "paper-shrunk.yaml"
TASKS = ["rte", "stsb"]

pytestmark = pytest.mark.slow


def snakemake(workdir: Path, env: dict[str, str], *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"), "--directory", str(workdir),
         "--configfile", str(REPO / "config.yaml"), str(OVERLAY), "--cores", str(os.cpu_count() or 2), *extra],
        capture_output=True, text=True, timeout=1800, env=env)


def test_overlay_only_makes_the_paper_config_smaller():
    """The overlay keeps every source and the grid of config.yaml; it changes sizes, not data."""
    import yaml

    overlay = yaml.safe_load(OVERLAY.read_text())
    assert "corpus" not in overlay and "tokenizer" not in overlay and "runs" not in overlay["pretrain"]
    assert set(overlay["glue"]) == {"tasks"}  # the source stays the Hub
    assert overlay["gpus"] == 0 and all(s["num_gpus"] == 0 for s in overlay["pretrain"]["sizes"].values())
    assert overlay["finetune"]["num_gpus"] == 0
    assert all(s["preset"] == "tiny" for s in overlay["pretrain"]["sizes"].values())


def test_paper_config_shrunk_runs_end_to_end_from_the_hub(tmp_path, shared_data):
    hub = build_paper_hub(tmp_path / "hub", shared_data, TASKS)
    workdir = tmp_path / "work"
    hf_home = tmp_path / "hf-home"
    env = {k: v for k, v in os.environ.items()
           if k not in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_CACHE",
                        "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "TRANSFORMERS_CACHE", "HF_TOKEN")}
    with serve(hub) as server:
        env.update(HF_ENDPOINT=server.endpoint, HF_HOME=str(hf_home), HF_HUB_DISABLE_TELEMETRY="1")
        start = time.monotonic()
        out = snakemake(workdir, env)
        wall = time.monotonic() - start
        assert out.returncode == 0, (out.stdout[-3000:], out.stderr[-6000:])
        again = snakemake(workdir, env, "-n")
        requests = list(server.requests)
    print(f"paper-shrunk workflow wall time: {wall:.0f} s")
    assert "Nothing to be done" in again.stdout + again.stderr, (again.stdout + again.stderr)[-3000:]

    # every file came through the Hub's HTTP API into the fresh cache
    got = {path.split("?")[0] for method, path in requests if method == "GET"}
    for name in ("20231101.en/train-00000-of-00002.parquet", "20231101.en/train-00001-of-00002.parquet"):
        assert any(p.startswith("/datasets/wikimedia/wikipedia/resolve/") and p.endswith(name) for p in got), name
    for name in ("books_large_p1.txt", "books_large_p2.txt"):
        assert any(p.startswith("/datasets/rojagtap/bookcorpus/resolve/") and p.endswith(name) for p in got), name
    for task in TASKS:
        for split in ("train", "validation"):
            assert any(p.startswith("/datasets/nyu-mll/glue/resolve/")
                       and p.endswith(f"{task}/{split}-00000-of-00001.parquet") for p in got), (task, split)
    assert any(p.startswith("/bert-base-uncased/resolve/") and p.endswith("tokenizer.json") for p in got)
    assert any(p.startswith("/api/datasets/wikimedia/wikipedia/revision/") for p in got)
    for repo in ("datasets--wikimedia--wikipedia", "datasets--rojagtap--bookcorpus", "datasets--nyu-mll--glue",
                 "models--bert-base-uncased"):
        assert (hf_home / "hub" / repo).is_dir(), repo

    results = workdir / "results"
    corpus = json.loads((results / "data" / "corpus" / "manifest.json").read_text())
    assert "wikimedia/wikipedia" in json.dumps(corpus) and "rojagtap/bookcorpus" in json.dumps(corpus)
    tok = json.loads((results / "data" / "tokenizer" / "manifest.json").read_text())
    assert tok["parameters"]["hub_id"] == "bert-base-uncased" and tok["vocab_size"] == 30522
    metrics = sorted((results / "finetune").rglob("metrics.json"))
    assert {m.parent.parent.name for m in metrics} == set(TASKS)
    for m in metrics:
        data = json.loads(m.read_text())
        assert data["glue_source"] == "hub" and data["scores"]
    # the paper's grid: every objective, both sizes, both data fractions
    ckpts = {p.relative_to(results / "pretrain").as_posix() for p in (results / "pretrain").glob("*/*/*/step-*")}
    assert {f"small/{v}/data-1.0/step-8" for v in ("mlm", "taco", "mlm_tp", "taco_concentrated")} <= ckpts
    assert {"small/mlm/data-0.25/step-8", "small/taco/data-0.25/step-8", "base/mlm/data-1.0/step-8",
            "base/taco/data-1.0/step-8"} <= ckpts
    for t in ("table1", "table2", "table3", "table4", "ablation"):
        with open(results / f"{t}.csv", newline="") as fh:
            assert list(csv.DictReader(fh)), t
    with open(results / "claims.csv", newline="") as fh:
        assert [r for r in csv.DictReader(fh) if r["level"] == "claim"]
