"""taco.deviations (and its page, taco.report.deviations_page): the differences of a run configuration from the paper's setup."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from taco.paper import PAPER_SETUP
from taco.deviations import find_deviations
from taco.commands.deviations import main

REPO = Path(__file__).resolve().parent.parent


def resolved(*files: str, **overrides) -> dict:
    """A configuration as the workflow resolves it (files merged, overrides, schema defaults)."""
    from snakemake.utils import update_config, validate

    from taco.workflow.schema import schema_file

    cfg: dict = {}
    for f in files:
        update_config(cfg, yaml.safe_load((REPO / f).read_text()))
    update_config(cfg, copy.deepcopy(overrides))
    validate(cfg, str(schema_file(REPO / "workflow/schemas/config.schema.yaml")))
    return cfg


def _rows(devs, kind):
    return {d.topic: d for d in devs if d.kind == kind}


def test_paper_grid_changes_nothing_but_the_method_rows(tmp_path):
    cfg = resolved("config.yaml")
    devs = find_deviations(cfg)
    assert _rows(devs, "configuration") == {}
    method = _rows(devs, "method")
    for topic in ("precision", "dev beside published test numbers", "corpus versions",
                  "definition of e (global part g = h - e)", "positive window", "MLM+TP weighting",
                  "fine-tuning seeds and reported epoch", "pre-training replicates"):
        assert topic in method, topic
    assert "up to +-4" in method["positive window"].paper and "+-1..+-2" in method["positive window"].here
    assert "fp16" in method["precision"].paper and "bf16" in method["precision"].here
    assert "separate, weight 1" in method["MLM+TP weighting"].here
    assert "wikimedia/wikipedia (20231101.en" in method["corpus versions"].here
    # the official train_base.sh: 256 per GPU x 4 accumulation x 2 GPUs
    base = cfg["pretrain"]["sizes"]["base"]
    assert base["per_device_batch_size"] * base["grad_accum"] * base["num_gpus"] == 2048 == PAPER_SETUP["global_batch"]
    cfg_file = tmp_path / "run_config.json"
    cfg_file.write_text(json.dumps(cfg))
    assert main(["--config", str(cfg_file), "--output", str(tmp_path / "deviations.md")]) == 0
    md = (tmp_path / "deviations.md").read_text()
    assert "None: this configuration runs the paper's recipe." in md and "| precision |" in md


def test_each_change_of_the_configuration_is_a_row():
    cfg = resolved("config.yaml", pretrain={"sizes": {"base": {"per_device_batch_size": 128}},
                                            "tp": {"mode": "joint"}},
                   finetune={"max_eval_samples": 500, "seeds": [1, 2, 3]})
    devs = find_deviations(cfg, {"missing_tasks": {"qqp": "missing: train.tsv"}})
    conf = _rows(devs, "configuration")
    batch = conf["base: global batch (sequences per step)"]
    assert batch.here.startswith(f"{128 * 4 * 2} (128 x 4 x 2)") and batch.paper.startswith("2048")
    dev_cap = conf["capped dev sets"]  # says how the cap is drawn, with the real N
    assert dev_cap.here.startswith("a seeded random sample of 500 dev examples per task")
    assert f"data seed {cfg['seed']}" in dev_cap.here and "not the first rows" in dev_cap.here
    assert "few hundred" not in dev_cap.effect and "500 dev examples" in dev_cap.effect
    assert "qqp: missing: train.tsv" in conf["GLUE tasks skipped (data absent)"].here
    assert "joint" in _rows(devs, "method")["MLM+TP weighting"].here
    assert _rows(devs, "method")["fine-tuning seeds and reported epoch"].here.startswith("seeds 1, 2, 3")
    assert set(conf) == {"base: global batch (sequences per step)", "capped dev sets",
                         "GLUE tasks skipped (data absent)"}


def test_cpu_configuration(tmp_path):
    cfg = resolved("configs/local.yaml", data_root=str(tmp_path))
    conf = _rows(find_deviations(cfg), "configuration")
    assert conf["tiny: pre-training steps"].here == "160" and conf["tiny: pre-training steps"].paper.startswith("250000")
    assert conf["tiny: model shape (plays BERT-small)"].here == "preset 'tiny' (L2/H128/A2)"
    assert conf["capped training sets"].here.startswith("a seeded random sample of 384 training examples per task")
    assert "BERT-base 100% data: mlm, taco" in conf["pre-training runs not in this configuration"].here
    assert str(tmp_path) in conf["corpus"].here and "{data_root}" not in conf["corpus"].here  # as written


def test_bad_input_exits_2(tmp_path, capsys):
    assert main(["--config", str(tmp_path / "nope.yaml"), "--output", str(tmp_path / "d.md")]) == 2
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({"pretrain": {"runs": []}}))
    assert main(["--config", str(bad), "--output", str(tmp_path / "d.md")]) == 2
    assert "pretrain.sizes" in capsys.readouterr().err
    assert not (tmp_path / "d.md").exists()


def test_statistics_environment_never_imports_torch():
    code = "import sys, taco.deviations, taco.commands.deviations, taco.commands.claims; sys.exit('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], cwd=REPO).returncode == 0


# ---------------------------------------------------------------------------------------------
# every claim about the official code is a fact of docs/paper-facts.md
# ---------------------------------------------------------------------------------------------
import os
import re

from taco.registry import FINETUNE_HYPERPARAMETERS, PRETRAIN_SCHEDULE
from taco.deviations import OFFICIAL

#: ``file.ext:12-14, 20`` in a row's "Paper / official code" column
CITATION = re.compile(r"([\w.\-]+\.(?:sh|py|md)):(\d+(?:-\d+)?(?:, \d+(?:-\d+)?)*)")


def official_facts() -> dict:
    """The machine-readable block of docs/paper-facts.md (``# official-code-facts``)."""
    text = (REPO / "docs" / "paper-facts.md").read_text()
    m = re.search(r"```yaml\n(# official-code-facts\n.*?)```", text, re.S)
    assert m, "docs/paper-facts.md has no official-code-facts block"
    data = yaml.safe_load(m.group(1))
    for f in data["facts"]:
        a, _, b = str(f["lines"]).partition("-")
        f["range"] = (int(a), int(b or a))
    return data


def _fmt_value(v) -> str:
    return f"{v:g}" if isinstance(v, float) else str(v)


def citations(text: str) -> list[tuple[str, int, int]]:
    """(file name, first line, last line) of every ``file:line`` citation in ``text``."""
    out = []
    for name, ranges in CITATION.findall(text):
        for r in ranges.split(", "):
            a, _, b = r.partition("-")
            out.append((name, int(a), int(b or a)))
    return out


def _all_configs(tmp_path) -> dict[str, dict]:
    """Every shipped configuration, resolved, plus one that changes every setting a row covers."""
    everything = resolved("config.yaml", max_seq_length=128,
                          pretrain={"mlm_probability": 0.2, "tc": {"weight": 0.5, "temperature": 0.1, "window": 3,
                                                                   "num_negatives": 10},
                                    "sizes": {"small": {"max_steps": 1000, "warmup_steps": 10, "learning_rate": 5e-4,
                                                        "weight_decay": 0.1, "per_device_batch_size": 8}}},
                          finetune={"max_length": 64, "batch_size": 16, "warmup_steps": 10,
                                    "hyperparameters": {"small": {"learning_rate": 1e-4, "epochs": 2}}},
                          tokenizer={"kind": "hub", "hub_id": "bert-base-cased"})
    return {"config.yaml": resolved("config.yaml"), "smoke": resolved("configs/smoke.yaml"),
            "gpu-mini": resolved("configs/gpu-mini.yaml"),
            "cpu-real": resolved("configs/cpu-real.yaml", data_root=str(tmp_path)),
            "local": resolved("configs/local.yaml", data_root=str(tmp_path)), "everything": everything}


def test_every_claim_about_the_official_code_cites_a_recorded_fact(tmp_path):
    facts = official_facts()
    by_file: dict[str, list[dict]] = {}
    for f in facts["facts"]:
        by_file.setdefault(Path(f["file"]).name, []).append(f)
    checked = 0
    for name, cfg in _all_configs(tmp_path).items():
        for d in find_deviations(cfg):
            cites = citations(d.paper)
            if OFFICIAL in d.paper:
                assert cites, f"{name}: row {d.topic!r} claims something of the official code without file:line"
            for file, a, b in cites:
                known = by_file.get(file, [])
                covered = {ln for f in known for ln in range(f["range"][0], f["range"][1] + 1)}
                assert set(range(a, b + 1)) <= covered, f"{name}: {d.topic!r} cites {file}:{a}-{b}, not a fact"
                exact = [f for f in known if f["range"] == (a, b)]
                for f in exact or [f for f in known if a <= f["range"][0] and f["range"][1] <= b]:
                    assert _fmt_value(f["value"]) in d.paper, (name, d.topic, f["id"], f["value"])
                    checked += 1
    assert checked >= 30  # the rows do cite: shape, batch, steps, TC, fine-tuning, corpus, subset, e, window


def test_the_suites_paper_setup_agrees_with_the_official_facts():
    v = {f["id"]: f["value"] for f in official_facts()["facts"]}
    for role in ("small", "base"):
        assert PAPER_SETUP["global_batch"] == v[f"{role}_per_gpu_batch"] * v[f"{role}_grad_accum"] * v[f"{role}_gpus"]
        assert PRETRAIN_SCHEDULE[role] == {"max_steps": v[f"{role}_max_steps"], "warmup_steps": v[f"{role}_warmup"]}
        assert PAPER_SETUP["learning_rate"] == v[f"{role}_lr"] and PAPER_SETUP["weight_decay"] == v[f"{role}_weight_decay"]
        assert FINETUNE_HYPERPARAMETERS[role] == {"learning_rate": v[f"ft_{role}_lr"], "epochs": v[f"ft_{role}_epochs"]}
    assert PAPER_SETUP["max_seq_length"] == v["small_seq_len"] and PAPER_SETUP["mlm_probability"] == v["small_mlm_prob"]
    assert PAPER_SETUP["tc"] == {"weight": v["small_tc_weight"], "temperature": v["small_tau"],
                                 "window": v["small_window"], "num_negatives": v["small_neg_k"]}
    assert PAPER_SETUP["finetune"] == {"max_length": v["ft_small_max_length"], "batch_size": v["ft_small_batch"],
                                       "warmup_steps": v["ft_small_warmup"], "seed": v["ft_small_seed"]}


@pytest.mark.skipif(not os.environ.get("TACO_OFFICIAL_REPO"),
                    reason="TACO_OFFICIAL_REPO (a git clone or mirror of FUZHIYI/TACO) not set")
def test_the_facts_read_as_the_official_repository_does():
    """Each fact's ``code`` is on its first cited line of the official repository at its commit."""
    facts = official_facts()
    for f in facts["facts"]:
        text = subprocess.run(["git", "-C", os.environ["TACO_OFFICIAL_REPO"], "show", f"{facts['commit']}:{f['file']}"],
                              capture_output=True, text=True, check=True).stdout.split("\n")
        assert f["code"] in text[f["range"][0] - 1], (f["id"], text[f["range"][0] - 1])


def test_rows_of_issue_21_2(tmp_path):
    """The subset draw, held-out validation blocks, pinned corpus versions, the tokenizer's reason,
    and no Hub-copies row for a corpus that is not from the Hub."""
    cfgs = _all_configs(tmp_path)
    paper = _rows(find_deviations(cfgs["config.yaml"]), "method")
    subset = paper["how the reduced-data subset is drawn"]
    assert "no data-fraction option" in subset.paper and "first N texts" in subset.paper and "25%" in subset.paper
    assert "seeded random draw (data seed 0)" in subset.here
    held = paper["held-out validation blocks"]
    assert "trains on everything" in held.paper
    assert held.here.startswith(f"{cfgs['config.yaml']['validation_blocks']} blocks of whole documents")
    versions = paper["corpus versions"]
    assert "wikipedia config 20220301.en" in versions.paper and "Hub datasets bookcorpus" in versions.paper
    assert "not published" not in versions.paper.split(";")[1]
    smoke = find_deviations(cfgs["smoke"])
    assert not any("Hub" in d.reason or "Hub copies" in d.here or d.topic == "corpus versions" for d in smoke)
    smoke_conf = _rows(smoke, "configuration")
    assert smoke_conf["GLUE tasks"].here.startswith("SYNTHETIC GLUE-format tasks")
    assert "synthetic corpus's own" in smoke_conf["tokenizer"].reason
    cpu = _rows(find_deviations(cfgs["cpu-real"]), "configuration")
    assert cpu["tokenizer"].reason.startswith("speed, not availability") and "8192" in cpu["tokenizer"].here
    assert "how the reduced-data subset is drawn" not in _rows(find_deviations(cfgs["cpu-real"]), "method")
    assert "GLUE tasks" not in cpu


def test_finetuning_hyperparameters_are_those_the_workflow_runs():
    """paper-shrunk names its sizes small/base but gives both the tiny preset, fine-tuned at tiny's
    1e-3 for one epoch (finetune.hyperparameters.tiny): the deviations report those values, read by
    preset as the workflow reads them, not the paper's (a size-key lookup reported 5e-5 x 4 / 3e-5 x 6
    as if nothing changed)."""
    from taco.workflow.config import finetune_hyperparameters

    cfg = resolved("config.yaml", "tests/configs/paper-shrunk.yaml")
    rows = {d.topic: d for d in find_deviations(cfg)}
    for size in ("small", "base"):
        run = finetune_hyperparameters(cfg, size)
        assert (run["learning_rate"], run["epochs"]) == (1e-3, 1)
        lr, ep = rows[f"{size}: fine-tuning learning rate"], rows[f"{size}: fine-tuning epochs"]
        assert lr.here == "0.001" and ep.here == "1", (lr, ep)
        assert lr.key == "finetune.hyperparameters.tiny.learning_rate"


def test_reimplemented_baselines_list_every_choice_with_its_key():
    """where a configuration trains BERT-NCE or INFOWORD, deviations.md lists the objective
    and each of its options (the details Kong et al.'s text does not give) with the key that sets it."""
    from taco.objectives import OBJECTIVE_SPECS, options_of

    devs = find_deviations(resolved("config.yaml", pretrain={"infoword": {"span_max": 3}}))
    method = _rows(devs, "method")
    for name in ("bert_nce", "infoword"):
        obj = OBJECTIVE_SPECS[name]
        assert f"{obj.label}: the objective" in method and "reimplemented from the description" in \
            method[f"{obj.label}: the objective"].reason
        for opt in options_of(obj):
            row = method[f"{obj.label}: {opt.help}"]
            assert row.key == opt.config_key and row.here.startswith(f"{opt.config_key} = ")
    assert method["INFOWORD: longest masked n-gram (tokens)"].here == "pretrain.infoword.span_max = 3"
    assert method["BERT-NCE: temperature dividing the InfoNCE scores (> 0)"].here.endswith("(default)")
    # a configuration without the baselines has none of these rows
    cpu = _rows(find_deviations(resolved("configs/cpu-real.yaml", data_root="/x")), "method")
    assert not [t for t in cpu if t.startswith(("BERT-NCE", "INFOWORD"))]


def test_tc_negative_pool_and_infoword_targets_are_rows():
    """The TC negative pool is a method row whatever its value (config.yaml: all_ranks, the official
    2-GPU pool of 512 sequences; rank: the process's own 256), and where INFOWORD is trained its extra
    MLM targets (the masked n-gram) are a row with the share of a block."""
    paper = _rows(find_deviations(resolved("config.yaml")), "method")
    pool = paper["TC negative pool (several GPUs)"]
    assert pool.key == "pretrain.tc.negative_pool" and "512 sequences" in pool.paper
    assert pool.here.startswith("pretrain.tc.negative_pool = all_ranks") and "small: 512 sequences" in pool.here
    rank = _rows(find_deviations(resolved("config.yaml", pretrain={"tc": {"negative_pool": "rank"}})), "method")
    assert "small: 256 sequences (256 per process x 1)" in rank["TC negative pool (several GPUs)"].here
    targets = paper["INFOWORD: MLM targets per block"]
    assert "up to 5 more targets per 256-token block" in targets.here and "(2.0% of the block)" in targets.here
    assert "confound at equal steps" in targets.effect
    short = _rows(find_deviations(resolved("config.yaml", max_seq_length=128)), "method")
    assert "(3.9% of the block)" in short["INFOWORD: MLM targets per block"].here
    cpu = _rows(find_deviations(resolved("configs/cpu-real.yaml", data_root="/x")), "method")
    assert "TC negative pool (several GPUs)" in cpu and "INFOWORD: MLM targets per block" not in cpu
