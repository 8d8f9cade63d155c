"""The rule-to-command contract: every job of every shipped configuration runs a command that the
target's own parser accepts, with the configuration's values (item 1).

For each configuration (``config.yaml``, every ``configs/*.yaml``, and every overlay of
``tests/configs/`` on the configuration it names), Snakemake's Python API builds the whole DAG
(``tests/dag_jobs.py``); each job's shell command, exactly as Snakemake formats it, is split with
:func:`shlex.split`, its wrappers (``taco gpu-slot``, ``torch.distributed.run``) are parsed with
their own parsers, and the ``taco`` command with ``build_parser()`` of the module that implements
it. The parsed values must equal what the configuration says, computed here independently of
``taco.workflow.commands`` (the path layout is the documented one of docs/results.md), and no option may
be set that the contract does not name. A rule without a contract here fails the test.
"""

from __future__ import annotations

import json
import copy
import importlib
import os
import re
import shlex
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

from dag_jobs import list_jobs
from shipped_configs import config_sets
from taco.cli import COMMANDS
from taco.data.glue import local_files
from taco.workflow.schema import schema_file

REPO = Path(__file__).resolve().parent.parent
SCHEMA = REPO / "workflow" / "schemas" / "config.schema.yaml"
#: every shipped configuration, as the lists of config files Snakemake is given (overlays after their bases)
CONFIGS = config_sets()
#: Linux limit for one argument of `bash -c <command>` (MAX_ARG_STRLEN, 32 pages)
MAX_ARG_STRLEN = 131072


def load_config(files: list[str], overrides: dict[str, Any]) -> dict[str, Any]:
    """The validated config as the workflow sees it: files merged in order, overrides, defaults."""
    from snakemake.utils import update_config, validate

    cfg: dict[str, Any] = {}
    for f in files:
        update_config(cfg, yaml.safe_load((REPO / f).read_text()))
    update_config(cfg, copy.deepcopy(overrides))
    validate(cfg, str(schema_file(SCHEMA)))
    return cfg


def fake_data_root(cfg: dict[str, Any], root: Path) -> dict[str, Any]:
    """Create every ``{data_root}`` file the config names (empty: the DAG only needs them to exist)."""
    def make(template: str, is_dir: bool = False) -> None:
        p = Path(template.replace("{data_root}", str(root)))
        if is_dir:
            p.mkdir(parents=True, exist_ok=True)
        else:
            p.parent.mkdir(parents=True, exist_ok=True)
            p.touch()

    uses = False
    if cfg["corpus"]["source"] == "local":
        for p in cfg["corpus"]["paths"]:
            uses |= "{data_root}" in p
            make(p)
    vocab = cfg["tokenizer"].get("vocab_file") or ""
    if cfg["tokenizer"]["kind"] == "vocab" and "{data_root}" in vocab:
        uses = True
        make(vocab)
    glue_dir = cfg["glue"].get("data_dir") or ""
    if cfg["glue"]["source"] == "local" and "{data_root}" in glue_dir:
        uses = True
        for task in cfg["glue"]["tasks"]:
            for f in local_files(task, glue_dir.replace("{data_root}", str(root))).values():
                make(str(f))
    return {"data_root": str(root)} if uses else {}


def config_id(files: list[str]) -> str:
    return "+".join(Path(f).stem for f in files)


@pytest.fixture(scope="module", params=CONFIGS, ids=[config_id(c) for c in CONFIGS])
def dag(request, tmp_path_factory):
    """(config, jobs) of one shipped configuration."""
    files = request.param
    tmp = tmp_path_factory.mktemp(config_id(files))
    raw = load_config(files, {})
    overrides = fake_data_root(raw, tmp / "data")
    cfg = load_config(files, overrides)
    jobs = list_jobs(tmp / "work", [REPO / f for f in files], overrides)
    return cfg, jobs


# ----------------------------------------------------------------------------- parsing a command
class Parsed:
    """A job's command taken apart: env assignments, wrappers (name -> namespace), the taco command."""

    def __init__(self, shellcmd: str):
        words = shlex.split(shellcmd)
        redirect = [i for i, w in enumerate(words) if w in (">", ">>")]
        assert redirect, f"no log redirect in {shellcmd!r}"
        self.log = words[redirect[0] + 1:]
        assert self.log[1:] == ["2>&1"], shellcmd
        words = words[:redirect[0]]
        self.env: dict[str, str] = {}
        while words and "=" in words[0] and not words[0].startswith("-"):
            k, v = words.pop(0).split("=", 1)
            self.env[k] = v
        self.wrappers: dict[str, Any] = {}
        words = self._interpreter(words)
        while True:
            assert words[:1] == ["-m"], f"expected `-m <module>` in {shellcmd!r}, got {words[:3]}"
            if words[1] == "taco.launch.forkserver":  # the fork server's client: the rest is the job's own command
                self.wrappers["forkserver"] = True
                words = words[2:]
                continue
            if words[1] == "taco.workflow.nodes":  # one torchrun agent per node (num_nodes > 1)
                from taco.workflow.nodes import build_parser as nodes_parser

                ns = self._parse(nodes_parser(), words[2:], shellcmd)
                assert ns.command[:1] == ["--"], shellcmd
                self.wrappers["nodes"] = ns
                words = ns.command[1:]
                continue
            if words[1] == "torch.distributed.run":
                from torch.distributed.run import get_args_parser

                ns = self._parse(get_args_parser(), words[2:], shellcmd)
                assert ns.module and ns.training_script == "taco", shellcmd
                self.wrappers["torch.distributed.run"] = ns
                words = ["-m", "taco", *ns.training_script_args]
                continue
            assert words[1] == "taco", shellcmd
            self.command = words[2]
            assert self.command in COMMANDS, f"unknown taco command {self.command!r} in {shellcmd!r}"
            self.module = importlib.import_module(COMMANDS[self.command][0])
            self.parser = self.module.build_parser()
            if self.command == "gpu-slot":
                ns = self._parse(self.parser, words[3:], shellcmd)
                assert ns.command[:1] == ["--"], shellcmd
                self.wrappers["gpu-slot"] = ns
                words = self._interpreter(ns.command[1:])
                continue
            self.args = self._parse(self.parser, words[3:], shellcmd)
            return

    @staticmethod
    def _interpreter(words: list[str]) -> list[str]:
        if words[:1] == ["env"]:  # per-rule conda environments: env PYTHONPATH=<checkout> python
            words = words[1:]
            while "=" in words[0]:
                words = words[1:]
        assert "python" in Path(words[0]).name, f"expected the Python interpreter, got {words[:2]}"
        return words[1:]

    @staticmethod
    def _parse(parser, argv: list[str], shellcmd: str):
        try:
            return parser.parse_args(argv)
        except SystemExit:
            pytest.fail(f"{parser.prog} rejects the arguments of: {shellcmd}")

    def given(self) -> dict[str, Any]:
        """Options whose value differs from the parser's default (what the command line set)."""
        return {k: v for k, v in vars(self.args).items() if v != self.parser.get_default(k)}


# ----------------------------------------------------------------------------- what each rule must receive
def run_dir(w: dict[str, str]) -> str:
    return f"{w['size']}/{w['objective']}/data-{w['fraction']}{w.get('pseed', '')}/step-{w['step']}"


def sub_root(value: str | None, cfg: dict[str, Any]) -> str | None:
    return value if value is None else value.replace("{data_root}", str(cfg.get("data_root")))


def expect_corpus(cfg, job):
    c, R = cfg["corpus"], cfg["results_dir"]
    out: dict[str, Any] = {"source": c["source"], "output": f"{R}/data/corpus"}
    if c["source"] == "synthetic":
        out.update(num_documents=c["num_documents"], seed=cfg["seed"])
    elif c["source"] == "local":
        split = c["split_by"]
        out.update(paths=[sub_root(p, cfg) for p in c["paths"]], split_by=[split] if isinstance(split, str) else split,
                   unk_policy=c["unk_policy"], wikitext_detokenize=c["wikitext_detokenize"],
                   encoding=c["encoding"])
        if c.get("rows", "document") == "sentence":
            out.update(rows="sentence", span_rows=c["span_rows"])
        if c.get("max_document_chars") is not None:
            out["max_document_chars"] = c["max_document_chars"]
    else:
        out.update(hub_dataset=[d["name"] for d in c["hub_datasets"]],
                   hub_config=[d.get("config") or "none" for d in c["hub_datasets"]],
                   hub_split=[d.get("split", "train") for d in c["hub_datasets"]],
                   hub_rows=[d.get("rows", "document") for d in c["hub_datasets"]])
        if any(d.get("rows") == "sentence" for d in c["hub_datasets"]):
            out["span_rows"] = c["span_rows"]
    return {**out, **data_workers(cfg, job)}


def data_workers(cfg, job):
    """Data jobs run `data_threads` workers (fewer when --cores caps the job's threads)."""
    assert job["threads"] == cfg["data_threads"] or job["threads"] < cfg["data_threads"]
    return {"workers": job["threads"]}


def check_corpus(cfg, job, parsed):
    c = cfg["corpus"]
    if c["source"] == "hub":  # what `taco corpus` makes of them: config null -> no config
        from taco.data.corpus import _hub_specs

        a = parsed.args
        specs = _hub_specs(a.hub_dataset, a.hub_config, a.hub_split, a.hub_revision, a.hub_preset)
        assert specs == [(d["name"], d.get("config"), d.get("split", "train"), None) for d in c["hub_datasets"]]


def expect_tokenizer(cfg, job):
    t, R = cfg["tokenizer"], cfg["results_dir"]
    out = {"kind": t["kind"], "lowercase": t["lowercase"], "corpus": f"{R}/data/corpus",
           "output": f"{R}/data/tokenizer"}
    if t["kind"] == "vocab":
        out["vocab_file"] = sub_root(t["vocab_file"], cfg)
    elif t["kind"] == "hub":
        out["hub_id"] = t["hub_id"]
    else:
        out["vocab_size"] = t["vocab_size"]
    return {**out, **data_workers(cfg, job)}


def expect_pack(cfg, job):
    R, w = cfg["results_dir"], job["wildcards"]
    # the data subset is a function of the data seed (top-level `seed`) only; no
    # pre-training seed or other wildcard reaches a pack job
    assert set(w) == {"fraction"}, w
    return {"max_seq_length": cfg["max_seq_length"], "fraction": float(w["fraction"]), "seed": cfg["seed"],
            "validation_blocks": cfg["validation_blocks"], "block_format": cfg["pack"]["format"],
            "corpus": f"{R}/data/corpus",
            "tokenizer": f"{R}/data/tokenizer", "output": f"{R}/data/blocks/data-{w['fraction']}",
            **data_workers(cfg, job)}


def expect_pretrain(cfg, job):
    from taco.workflow.config import pretrain_seed_of

    R, w = cfg["results_dir"], job["wildcards"]
    pre = cfg["pretrain"]
    s, tc = pre["sizes"][w["size"]], pre["tc"]
    budgets = s["budgets"]
    i = budgets.index(int(w["step"]))
    parent = None if i == 0 else f"{R}/pretrain/" + run_dir({**w, "step": str(budgets[i - 1])})
    return {
        "size": s["preset"], "size_name": w["size"], "objective": w["objective"], "max_steps": s["max_steps"],
        "warmup_steps": s.get("warmup_steps"), "per_device_batch_size": s["per_device_batch_size"],
        "grad_accum": s["grad_accum"], "lr": s["learning_rate"], "weight_decay": s["weight_decay"],
        "mlm_probability": pre["mlm_probability"], "precision": s["precision"],
        "seed": pretrain_seed_of(cfg, w.get("pseed", "")), "until": int(w["step"]), "save_every": s["save_every"],
        "logging_steps": pre["logging_steps"], "no_progress": True, "resume_from": parent,
        "blocks": f"{R}/data/blocks/data-{w['fraction']}", "output": f"{R}/pretrain/{run_dir(w)}",
        "state_dir": f"{R}/.state/pretrain/{run_dir(w)}",
        "eval_every": int(s.get("eval_every", 0) or 0),  # the parser's default 0 when not configured
        **expect_tc(cfg, w), **expect_tp(cfg, w), **expect_baselines(cfg, w), **expect_monitoring(cfg, "pretrain", w),
        **expect_architecture(s), **expect_tuned(cfg, w, s), **expect_glue_probe(cfg, every=True),
    }


def expect_tuned(cfg, w, s):
    """pretrain.tuning: a tuned arm's replicates leave out --lr, --warmup-steps and --dropout (the parser's
    defaults then) and read them from the arm's choice.json (that of the same objective on the size named by
    ``tuned_as``, if any); otherwise the size's values, and no file."""
    if cfg["pretrain"].get("tuning", {}).get("enabled"):
        size = s.get("tuned_as") or w["size"]
        tuned = [(r["size"], o) for r in cfg["pretrain"]["runs"] for o in r["objectives"]
                 if 1.0 in r.get("fractions", [1.0]) and not cfg["pretrain"]["sizes"][r["size"]].get("tuned_as")]
        if (size, w["objective"]) in tuned:
            return {"lr": 1e-4, "warmup_steps": None, "dropout": None,
                    "tuned_recipe": f"{cfg['results_dir']}/tuning/{size}/{w['objective']}/choice.json"}
    return {"dropout": s.get("dropout"), "tuned_recipe": None}


def expect_pretrain_trial(cfg, job):
    """A tuning trial: the size's recipe with the trial's setting, its own schedule to the horizon, the
    tuning seed, no parent, its own state and TensorBoard folders."""
    from taco.training.tuning import trial_settings

    R, w = cfg["results_dir"], job["wildcards"]
    pre, t = cfg["pretrain"], cfg["pretrain"]["tuning"]
    s = pre["sizes"][w["size"]]
    setting = trial_settings(s.get("tuning_space") or t["space"], int(t["trials"]), int(t["seed"]))[int(w["trial"])]
    horizon = int(t["horizon"])
    arm = f"{w['size']}/{w['objective']}/trial-{w['trial']}"
    every = int(s.get("eval_every", 0) or 0)
    m = cfg["monitoring"]
    return {
        "size": s["preset"], "size_name": w["size"], "objective": w["objective"], "max_steps": horizon,
        "warmup_steps": setting.get("warmup_steps", s["warmup_steps"]),
        "per_device_batch_size": s["per_device_batch_size"], "grad_accum": s["grad_accum"],
        "lr": setting.get("learning_rate", s["learning_rate"]), "weight_decay": s["weight_decay"],
        "dropout": setting.get("dropout", s.get("dropout")), "mlm_probability": pre["mlm_probability"],
        "precision": s["precision"], "seed": t["seed"], "until": horizon, "save_every": s["save_every"],
        "logging_steps": pre["logging_steps"], "no_progress": True, "resume_from": None, "tuned_recipe": None,
        "blocks": f"{R}/data/blocks/data-1.0", "output": f"{R}/tuning/{arm}/step-{horizon}",
        "state_dir": f"{R}/.state/tuning/{arm}", "eval_every": every if every < horizon else 0,
        "report_to": tuple(n for n in ("tensorboard", "wandb") if m[n]),
        **({"tensorboard_dir": f"{R}/tensorboard/tuning/{arm}"} if m["tensorboard"] else {}),
        **({"wandb_project": m["wandb_project"], "wandb_dir": f"{R}/wandb"} if m["wandb"] else {}),
        **expect_tc(cfg, w), **expect_tp(cfg, w), **expect_baselines(cfg, w), **expect_architecture(s),
    }


def expect_finetune_trial(cfg, job):
    """One job per (checkpoint, trial): the reported runs' words, the trial's setting after them, its own seeds."""
    from taco.evaluation.finetune_tuning import trial_settings

    w = job["wildcards"]
    t = cfg["finetune"]["tuning"]
    setting = trial_settings(t["space"])[int(w["trial"])]
    base = expect_finetune(cfg, {**job, "wildcards": {k: v for k, v in w.items() if k != "trial"}})
    base.update(lr=setting.get("learning_rate", base["lr"]), epochs=setting.get("epochs", base["epochs"]),
                warmup_steps=setting.get("warmup_steps", base["warmup_steps"]), tuned_recipe=None,
                seed=list(t["seeds"]), test_predictions=False,
                output=f"{cfg['results_dir']}/finetune_tuning/{run_dir(w)}/trial-{w['trial']}/{{task}}/seed-{{seed}}")
    base["task"] = [x for x in cfg["glue"]["tasks"] if any(f"/{x}/seed-" in o for o in job["output"])]
    return base


def expect_finetune_choice(cfg, job):
    from taco.evaluation.finetune_tuning import trial_settings

    R, w = cfg["results_dir"], job["wildcards"]
    n = len(trial_settings(cfg["finetune"]["tuning"]["space"]))
    tasks = sorted({m.split("/")[-3] for m in job["input"]["metrics"]})
    return {"trials": [f"{R}/finetune_tuning/{run_dir(w)}/trial-{i}" for i in range(n)], "tasks": tasks,
            "space": json.dumps(cfg["finetune"]["tuning"]["space"], separators=(",", ":")),
            "output": f"{R}/finetune_tuning/{run_dir(w)}/choice.json"}


def expect_tuning_choice(cfg, job):
    R, w = cfg["results_dir"], job["wildcards"]
    t = cfg["pretrain"]["tuning"]
    return {"trials": [f"{R}/tuning/{w['size']}/{w['objective']}/trial-{i}/step-{t['horizon']}"
                       for i in range(int(t["trials"]))],
            "output": f"{R}/tuning/{w['size']}/{w['objective']}/choice.json"}


def expect_monitoring(cfg, kind, w):
    """Config ``monitoring``: every run logs below <results_dir>/tensorboard/, a pre-training
    run in one folder for all its budget segments, a fine-tuning run per checkpoint, task and seed
    (``seed-{seed}`` when one job runs every seed); W&B's files in <results_dir>/wandb."""
    R, m = cfg["results_dir"], cfg["monitoring"]
    out = {"report_to": tuple(n for n in ("tensorboard", "wandb") if m[n])}
    if m["tensorboard"]:
        run = f"{w['size']}/{w['objective']}/data-{w['fraction']}{w.get('pseed', '')}"
        out["tensorboard_dir"] = (f"{R}/tensorboard/pretrain/{run}" if kind == "pretrain" else
                                  f"{R}/tensorboard/finetune/{run_dir(w)}/{w.get('task', '{task}')}/seed-{w.get('seed', '{seed}')}")
    if m["wandb"]:
        out.update(wandb_project=m["wandb_project"], wandb_dir=f"{R}/wandb")
    return out


def expect_tc(cfg, w):
    """The TC loss's options reach `taco pretrain` only for objectives that use the TC loss (registry
    flag uses_tc): for MLM and MLM+TP they cannot change the weights, so they are no params."""
    from taco.objectives import OBJECTIVE_SPECS

    if "tc" not in OBJECTIVE_SPECS[w["objective"]].terms:
        return {}
    tc = cfg["pretrain"]["tc"]
    return {"tc_weight": tc["weight"], "tc_temperature": tc["temperature"], "tc_window": tc["window"],
            "tc_num_negatives": tc["num_negatives"], "tc_negative_pool": tc.get("negative_pool", "rank")}


def expect_baselines(cfg, w):
    """BERT-NCE's options (pretrain.nce) reach BERT-NCE and INFOWORD, INFOWORD's (pretrain.infoword)
    INFOWORD only; the config's values or, where a key is absent, the declared defaults."""
    defaults = {"nce": {"negative_source": "batch", "num_negatives": 1024, "temperature": 1.0},
                "infoword": {"weight": 1.0, "span_min": 1, "span_max": 5, "temperature": 1.0}}
    groups = {"bert_nce": ("nce",), "infoword": ("nce", "infoword")}.get(w["objective"], ())
    out = {}
    for g in groups:
        section = {**defaults[g], **(cfg["pretrain"].get(g) or {})}
        # the config key negative_source kept its parameter name nce_negatives (finished runs' hashes)
        out.update({f"{g}_{'negatives' if k == 'negative_source' else k}": v for k, v in section.items()})
    return out


def expect_tp(cfg, w):
    """MLM+TP's weighting reaches `taco pretrain` only when pretrain.tp differs from its defaults."""
    tp = cfg["pretrain"].get("tp") or {}
    weight, mode = float(tp.get("weight", 1.0)), tp.get("mode", "separate")
    from taco.objectives import OBJECTIVE_SPECS

    if "tp" not in OBJECTIVE_SPECS[w["objective"]].terms or (weight == 1.0 and mode == "separate"):
        return {}
    return {"tp_weight": weight, "tp_mode": mode}


def test_tp_weighting_reaches_mlm_tp_only():
    from taco.workflow.commands import Commands

    class W:  # the wildcards of one pretrain job
        def __init__(self, objective):
            self.size, self.objective, self.fraction, self.step = "small", objective, "1.0", "10000"

    cfg = load_config(["config.yaml"], {})
    assert cfg["pretrain"]["tp"] == {"weight": 1.0, "mode": "separate"}
    assert "--tp-mode" not in Commands(cfg).pretrain_args(W("mlm_tp"))  # default: params unchanged
    cfg = load_config(["config.yaml"], {"pretrain": {"tp": {"weight": 1.0, "mode": "joint"}}})
    words = Commands(cfg).pretrain_args(W("mlm_tp"))
    assert words[words.index("--tp-mode") + 1] == "joint" and words[words.index("--tp-weight") + 1] == "1.0"
    assert "--tp-mode" not in Commands(cfg).pretrain_args(W("taco"))


def test_loss_options_reach_only_the_objectives_that_use_the_loss():
    """pretrain.tc reaches TC objectives only, pretrain.tp MLM+TP only (registry flags), so
    a TC temperature never changes an MLM segment's params; a TC run's params keep their old form."""
    from taco.objectives import OBJECTIVE_SPECS
    from taco.workflow.commands import Commands

    class W:  # the wildcards of one pretrain job
        def __init__(self, objective):
            self.size, self.objective, self.fraction, self.step = "small", objective, "1.0", "10000"

    base = load_config(["config.yaml"], {})
    hot = load_config(["config.yaml"], {"pretrain": {"tc": {"temperature": 0.5, "window": 7, "num_negatives": 9,
                                                             "weight": 2.0},
                                                      "tp": {"weight": 0.5, "mode": "separate"}}})
    for name, spec in OBJECTIVE_SPECS.items():
        before, after = Commands(base).pretrain_args(W(name)), Commands(hot).pretrain_args(W(name))
        assert ("--tc-temperature" in after) == ("tc" in spec.terms), (name, after)
        assert ("--tp-weight" in after) == ("tp" in spec.terms), (name, after)
        assert (before == after) == ("tc" not in spec.terms and "tp" not in spec.terms), name
    words = Commands(hot).pretrain_args(W("taco"))
    i = words.index("--mlm-probability")
    assert words[i + 2:i + 13] == ["--tc-weight", "2.0", "--tc-temperature", "0.5", "--tc-window", "7",
                                   "--tc-negatives", "9", "--tc-negative-pool", "all_ranks", "--precision"]
    assert "--tp-weight" not in words
    tp = Commands(hot).pretrain_args(W("mlm_tp"))
    assert tp[tp.index("--tp-weight") + 1] == "0.5" and "--tc-weight" not in tp


def test_tc_negative_pool_at_its_default_changes_no_command_and_no_hash():
    """``pretrain.tc.negative_pool: rank`` (the default) leaves a TC run's command words and config hash
    as they were before the option existed; ``all_ranks`` (config.yaml) adds the flag and a hash key."""
    from taco.objectives import hashed_options, option_defaults
    from taco.workflow.commands import Commands

    class W:  # the wildcards of one pretrain job
        def __init__(self, objective):
            self.size, self.objective, self.fraction, self.step = "small", objective, "1.0", "10000"

    assert load_config(["config.yaml"], {})["pretrain"]["tc"]["negative_pool"] == "all_ranks"
    rank = Commands(load_config(["config.yaml"], {"pretrain": {"tc": {"negative_pool": "rank"}}})).pretrain_args(W("taco"))
    assert "--tc-negative-pool" not in rank
    i = rank.index("--tc-negatives")
    assert rank[i + 2] == "--precision"  # the words of a TC run made before the option existed
    every = Commands(load_config(["config.yaml"], {})).pretrain_args(W("taco"))
    assert every[every.index("--tc-negative-pool") + 1] == "all_ranks"
    assert "--tc-negative-pool" not in Commands(load_config(["config.yaml"], {})).pretrain_args(W("mlm"))
    defaults = option_defaults()
    assert "tc_negative_pool" not in hashed_options("taco", defaults)
    assert hashed_options("taco", {**defaults, "tc_negative_pool": "all_ranks"})["tc_negative_pool"] == "all_ranks"
    assert "tc_negative_pool" not in hashed_options("mlm", {**defaults, "tc_negative_pool": "all_ranks"})


def check_pretrain(cfg, job, parsed):
    from taco.objectives import OBJECTIVE_SPECS
    from taco.training.pretrain import _objective_params

    tc = cfg["pretrain"]["tc"]
    s = cfg["pretrain"]["sizes"][job["wildcards"]["size"]]
    # the values reach the objective as the model's parameters (temperature tau, window W, K, ...)
    params = _objective_params(parsed.args)
    if "tc" in OBJECTIVE_SPECS[job["wildcards"]["objective"]].terms:
        assert params["tc_temperature"] == tc["temperature"] and params["tc_window"] == tc["window"]
        assert params["tc_num_negatives"] == tc["num_negatives"] and params["tc_weight"] == tc["weight"]
    else:
        assert "--tc-" not in job["shellcmd"], job["shellcmd"]
    assert params["mlm_probability"] == cfg["pretrain"]["mlm_probability"]
    # one process per GPU of the job: the global batch is per_device x grad_accum x num_gpus
    torchrun, nodes = parsed.wrappers.get("torch.distributed.run"), parsed.wrappers.get("nodes")
    assert job["resources"]["nodes"] == s["num_nodes"]  # sbatch --nodes on SLURM
    if s["num_nodes"] > 1:  # one agent per node (taco.workflow.nodes), max(num_gpus, 1) processes each
        assert torchrun is None and nodes is not None, job["shellcmd"]
        assert (nodes.nnodes, nodes.nproc_per_node, nodes.gpus_per_node) == (
            s["num_nodes"], max(1, s["num_gpus"]), s["num_gpus"])
    elif s["num_gpus"] > 1:
        assert torchrun is not None and int(torchrun.nproc_per_node) == s["num_gpus"], job["shellcmd"]
        assert nodes is None
    else:
        assert torchrun is None and nodes is None, job["shellcmd"]
    check_slots(cfg, parsed, s["num_gpus"])
    assert job["threads"] == s["threads"] or job["threads"] < s["threads"]  # capped by --cores
    assert parsed.env.get("OMP_NUM_THREADS") == str(job["threads"])


def check_slots(cfg, parsed, need):
    slot = parsed.wrappers.get("gpu-slot")
    if cfg["gpus"] and need:
        assert slot is not None and slot.gpus == cfg["gpus"] and slot.need == need
        # locks are per machine: the wrapper's own default folder unless gpu_lock_dir names one
        assert slot.lock_dir == cfg.get("gpu_lock_dir") and cfg["results_dir"] not in (slot.lock_dir or "")
    else:
        assert slot is None


def _finetune_hp(cfg, size):
    from taco.registry import FINETUNE_HYPERPARAMETERS  # the official scripts' defaults per preset

    preset = cfg["pretrain"]["sizes"][size]["preset"]
    hp = dict(FINETUNE_HYPERPARAMETERS[preset])
    hp.update(cfg["finetune"].get("hyperparameters", {}).get(preset, {}))
    return hp


#: finetune.mnli_start: the tasks started from the MNLI fine-tuned model (MosaicBERT, ModernBERT)
FROM_MNLI = ("rte", "mrpc", "stsb")


def mnli_start_roles(cfg, task):
    """(this task starts from MNLI's model, this task's jobs save it) under the config's finetune.mnli_start."""
    tasks = cfg["glue"]["tasks"]
    on = cfg["finetune"]["mnli_start"] and "mnli" in tasks and any(t in tasks for t in FROM_MNLI)
    return on and task in FROM_MNLI, on and task == "mnli"


def expect_finetune(cfg, job):
    from taco.registry import GLUE_TASK_SPECS

    R, w = cfg["results_dir"], job["wildcards"]
    ft, g = cfg["finetune"], cfg["glue"]
    hp = _finetune_hp(cfg, w["size"])
    # one job of every task and seed of a checkpoint (finetune.tasks_per_job: all): the tasks of its outputs
    tasks = [w["task"]] if "task" in w else [t for t in g["tasks"] if any(f"/{t}/seed-" in o for o in job["output"])]
    base = f"{R}/finetune/{run_dir(w)}/{w.get('task', '{task}')}"
    if "seed" in w:
        seeds, output = [int(w["seed"])], f"{base}/seed-{w['seed']}"
    else:
        seeds, output = list(ft["seeds"]), f"{base}/seed-{{seed}}"
    from_mnli, saves = mnli_start_roles(cfg, w["task"]) if "task" in w else (False, False)
    # every job gets the config's tasks' keys (the same params in every form; a run ignores other keys)
    keys = [k for t in g["tasks"] for k in GLUE_TASK_SPECS[t].score_keys]
    return {
        "checkpoint": f"{R}/pretrain/{run_dir(w)}", "task": tasks, "seed": seeds, "output": output,
        "init_from": f"{R}/finetune/{run_dir(w)}/mnli/seed-{w.get('seed', '{seed}')}/model" if from_mnli else None,
        "save_model": saves,
        **expect_monitoring(cfg, "finetune", w),
        "glue_source": g["source"], "glue_dir": sub_root(g.get("data_dir"), cfg) if g["source"] == "local" else None,
        "max_length": ft["max_length"], "batch_size": ft["batch_size"], "lr": hp["learning_rate"],
        "epochs": hp["epochs"], "warmup_steps": ft["warmup_steps"], "report_rule": ft["report_rule"],
        "dropout": ft["dropout"],
        # finetune.tuning: the checkpoint's choice.json (each task's chosen setting replaces lr/epochs/warm-up)
        "tuned_recipe": (f"{R}/finetune_tuning/{run_dir(w)}/choice.json"
                         if (ft.get("tuning") or {}).get("enabled") else None),
        "max_train_samples": ft["max_train_samples"] or None, "max_eval_samples": ft["max_eval_samples"] or None,
        # capped sets are a sample drawn with the top-level seed; rule best chooses by the analysis' metric
        **({"data_seed": cfg["seed"]} if ft["max_train_samples"] or ft["max_eval_samples"] else {}),
        **({"primary_metric": [f"{k}={m}" for k, m in cfg["analysis"]["primary_metric"].items() if k in keys]}
           if ft["report_rule"] == "best" and any(k in keys for k in cfg["analysis"]["primary_metric"]) else {}),
    }


def check_finetune(cfg, job, parsed):
    w = job["wildcards"]
    seeds = [int(w["seed"])] if "seed" in w else list(cfg["finetune"]["seeds"])
    tasks = [w["task"]] if "task" in w else list(parsed.args.task)
    from_mnli, saves = mnli_start_roles(cfg, w["task"]) if "task" in w else (False, False)
    files = ("metrics.json", "predictions.tsv") + (("model",) if saves else ())
    assert sorted(job["output"]) == sorted(f"{cfg['results_dir']}/finetune/{run_dir(w)}/{t}/seed-{s}/{f}"
                                           for t in tasks for s in seeds for f in files)
    # the MNLI model of the same checkpoint and seed is an input (the DAG's dependency), only with the option
    mnli = [f"{cfg['results_dir']}/finetune/{run_dir(w)}/mnli/seed-{s}/model" for s in seeds]
    assert sorted(job["input"].get("init", [])) == (sorted(mnli) if from_mnli else [])
    check_slots(cfg, parsed, cfg["finetune"]["num_gpus"])
    assert parsed.env.get("OMP_NUM_THREADS") == str(job["threads"])


def expect_dynamics(cfg, job):
    R, w, d = cfg["results_dir"], job["wildcards"], cfg["dynamics"]
    return {"num_blocks": d["num_blocks"], "max_pairs": d["max_pairs"], "seed": cfg["seed"],
            "checkpoint": f"{R}/pretrain/{run_dir(w)}", "blocks": f"{R}/data/blocks/data-1.0",
            "output": f"{R}/dynamics/{run_dir(w)}/dynamics.json"}


def expect_aggregate(cfg, job):
    R = cfg["results_dir"]
    return {"inputs_from": f"{R}/aggregate_inputs.txt", "analysis": f"{R}/analysis.json",
            "output_dir": f"{R}/aggregate"}


def expect_report(cfg, job):
    R = cfg["results_dir"]
    return {"aggregate_dir": f"{R}/aggregate", "analysis": f"{R}/analysis.json", "output_dir": R}


def expect_tables(cfg, job):
    """The report's options, and the pretrain_curves.csv of the GLUE probe's column when pretrain.glue_probe has
    tasks (independently of taco.workflow.config: the config's own key)."""
    probe = (cfg["pretrain"].get("glue_probe") or {}).get("tasks")
    return {**expect_report(cfg, job),
            **({"pretrain_curves": f"{cfg['results_dir']}/pretrain_curves.csv"} if probe else {})}


def expect_claims(cfg, job):
    return {**expect_report(cfg, job), "efficiency": f"{cfg['results_dir']}/efficiency.csv"}


def expect_deviations(cfg, job):
    R = cfg["results_dir"]
    return {"config": f"{R}/run_config.json", "analysis": f"{R}/analysis.json", "output": f"{R}/deviations.md"}


def expect_glue_submission(cfg, job):
    """One job per checkpoint: every fine-tuning seed, one zip each ({seed} filled in by the command)."""
    R, w = cfg["results_dir"], job["wildcards"]
    metrics = " ".join(job["input"]["metrics"])
    tasks = [t for t in cfg["glue"]["tasks"] if f"/{t}/seed-" in metrics]
    runs = [f"{R}/finetune/{run_dir(w)}/{task}/seed-{{seed}}" for task in tasks]
    return {"seed": [str(s) for s in cfg["finetune"]["seeds"]], "runs": runs,
            "output": f"{R}/glue_submission/{run_dir(w)}/seed-{{seed}}.zip"}


def expect_dynamics_figures(cfg, job):
    R, d = cfg["results_dir"], cfg["dynamics"]
    inputs = []
    for entry in cfg["pretrain"]["runs"]:
        for v in entry["objectives"]:
            if v in d["objectives"] and 1.0 in [float(f) for f in entry.get("fractions", [1.0])]:
                for s in cfg["pretrain"]["sizes"][entry["size"]]["budgets"]:
                    # the run of the top-level seed only (figures draw one run per objective and budget)
                    inputs.append(f"{R}/dynamics/{entry['size']}/{v}/data-1.0/step-{s}/dynamics.json")
    return {"inputs": sorted(set(inputs)), "analysis": f"{R}/analysis.json", "output_dir": R}


def expect_pretrain_control(cfg, job):
    R, w = cfg["results_dir"], job["wildcards"]
    s = cfg["pretrain"]["sizes"][w["size"]]
    from taco.workflow.config import pretrain_seed_of

    pseed = w.get("pseed", "")  # one control per pre-training replicate, with that replicate's seed
    return {"size": s["preset"], "size_name": w["size"], "seed": pretrain_seed_of(cfg, pseed),
            "mlm_probability": cfg["pretrain"]["mlm_probability"], "blocks": f"{R}/data/blocks/data-1.0",
            "output": f"{R}/pretrain/{w['size']}/control/data-1.0{pseed}/step-0", **expect_architecture(s),
            **expect_glue_probe(cfg, every=False)}


def expect_glue_probe(cfg, every: bool) -> dict:
    """pretrain.glue_probe: written only when it has tasks (the params of earlier runs unchanged); the glue
    block's data; a run's cadence (``every``), none for the control."""
    gp = cfg["pretrain"].get("glue_probe") or {}
    if not gp.get("tasks"):
        return {}
    g = cfg["glue"]
    out = {"glue_probe_tasks": ",".join(gp["tasks"]), "glue_probe_max_train_samples": gp["max_train_samples"],
           "glue_probe_max_eval_samples": gp["max_eval_samples"], "glue_source": g["source"]}
    if every:
        out["glue_probe_every"] = gp["every"]
    if g["source"] == "local":
        out["glue_dir"] = g["data_dir"].replace("{data_root}", str(cfg["data_root"]))
    return out


def expect_architecture(size: dict) -> dict:
    """pretrain.sizes.<size>.architecture: written (--architecture) only when not BERT, so BERT's commands
    are those of the runs made before the encoder families existed."""
    family = size.get("architecture", "bert")
    return {} if family == "bert" else {"architecture": family}


def _pseed_parts(cfg, entry):
    """The run-path parts of a pretrain.runs entry's replicates ("" for the top-level seed): its own
    ``seeds``, else pretrain.seeds, else the top-level seed."""
    seeds = entry.get("seeds") or cfg["pretrain"].get("seeds") or [cfg["seed"]]
    return ["" if int(s) == int(cfg["seed"]) else f"/pretrain-seed-{s}" for s in seeds]


def expect_pretrain_curves(cfg, job):
    R = cfg["results_dir"]
    ckpts = [f"{R}/pretrain/{entry['size']}/{v}/data-{float(f)!r}{p}/step-{s}"
             for entry in cfg["pretrain"]["runs"] for v in entry["objectives"]
             for f in entry.get("fractions", [1.0]) for s in cfg["pretrain"]["sizes"][entry["size"]]["budgets"]
             for p in _pseed_parts(cfg, entry)]
    if cfg["pretrain"].get("control"):
        ckpts += [f"{R}/pretrain/{entry['size']}/control/data-1.0{p}/step-0" for entry in cfg["pretrain"]["runs"]
                  if 1.0 in [float(f) for f in entry.get("fractions", [1.0])] for p in _pseed_parts(cfg, entry)]
    return {"checkpoints": sorted(set(ckpts)), "analysis": f"{R}/analysis.json", "output_dir": R}


def expect_efficiency(cfg, job):
    R = cfg["results_dir"]
    ckpts = [f"{R}/pretrain/{entry['size']}/{v}/data-{float(f)!r}{p}/step-{s}"
             for entry in cfg["pretrain"]["runs"] for v in entry["objectives"]
             for f in entry.get("fractions", [1.0]) for s in cfg["pretrain"]["sizes"][entry["size"]]["budgets"]
             for p in _pseed_parts(cfg, entry)]
    from taco.workflow.tuning_grid import tuning_arms

    tuning = [f"{R}/tuning/{size}/{obj}/choice.json" for size, obj in tuning_arms(cfg)]
    sizes = cfg["pretrain"]["sizes"]
    spaces = {size: sizes[size].get("tuning_space") or cfg["pretrain"]["tuning"]["space"]
              for size, _ in tuning_arms(cfg)}
    spaces = json.dumps(spaces, sort_keys=True, separators=(",", ":")) if tuning else None
    return {"checkpoints": sorted(set(ckpts)), "aggregate_dir": f"{R}/aggregate",
            "analysis": f"{R}/analysis.json", "output_dir": R, "tuning": tuning or None, "tuning_spaces": spaces}


#: rule -> (the taco command it runs, expected values, extra checks)
CONTRACT = {
    "corpus": ("corpus", expect_corpus, check_corpus),
    "tokenizer": ("tokenizer", expect_tokenizer, None),
    "pack": ("pack", expect_pack, None),
    "pretrain": ("pretrain", expect_pretrain, check_pretrain),
    "finetune": ("finetune", expect_finetune, check_finetune),
    "finetune_seeds": ("finetune", expect_finetune, check_finetune),
    "finetune_checkpoint": ("finetune", expect_finetune, check_finetune),
    "finetune_mnli": ("finetune", expect_finetune, check_finetune),
    "finetune_mnli_seeds": ("finetune", expect_finetune, check_finetune),
    "dynamics": ("dynamics", expect_dynamics, None),
    "aggregate": ("aggregate", expect_aggregate, None),
    "tables": ("tables", expect_tables, None),
    "figures": ("figures", expect_report, None),
    "claims": ("claims", expect_claims, None),
    "deviations": ("deviations", expect_deviations, None),
    "dynamics_figures": ("dynamics-figures", expect_dynamics_figures, None),
    "glue_submission": ("glue-submission", expect_glue_submission, None),
    "pretrain_control": ("init", expect_pretrain_control, None),
    "pretrain_curves": ("pretrain-curves", expect_pretrain_curves, None),
    "efficiency": ("efficiency", expect_efficiency, None),
    "pretrain_trial": ("pretrain", expect_pretrain_trial, None),
    "tuning_choice": ("tuning-choice", expect_tuning_choice, None),
    "finetune_trial": ("finetune", expect_finetune_trial, None),
    "finetune_choice": ("finetune-choice", expect_finetune_choice, None),
}
#: rules that run Python inside Snakemake (no command line)
LOCAL_RULES = {"all", "analysis_spec", "aggregate_inputs", "run_config", "plan"}


def _normalise(key: str, value: Any) -> Any:
    return sorted(value) if key in ("inputs", "runs", "checkpoints") and isinstance(value, list) else value


def test_every_job_runs_the_command_the_config_says(dag):
    cfg, jobs = dag
    counts = Counter()
    for job in jobs:
        rule = job["rule"]
        if job["shellcmd"] is None:
            assert rule in LOCAL_RULES, f"rule {rule} runs no shell command and is not a known local rule"
            continue
        assert rule in CONTRACT, (f"rule {rule} has no command contract in tests/test_commands.py "
                                  f"(add what its command must receive): {job['shellcmd'][:300]}")
        assert len(job["shellcmd"].encode()) < MAX_ARG_STRLEN, (
            f"{rule}: a {len(job['shellcmd'])}-byte command exceeds what `bash -c` accepts")
        command, expect, check = CONTRACT[rule]
        parsed = Parsed(job["shellcmd"])
        assert parsed.command == command, job["shellcmd"]
        want = expect(cfg, job)
        got = vars(parsed.args)
        for key, value in want.items():
            assert _normalise(key, got[key]) == _normalise(key, value), (
                f"{rule} {job['wildcards']}: {key} = {got[key]!r}, config says {value!r}\n{job['shellcmd']}")
        extra = set(parsed.given()) - set(want)
        assert not extra, f"{rule}: options outside the contract: {sorted(extra)}\n{job['shellcmd']}"
        if check is not None:
            check(cfg, job, parsed)
        counts[rule] += 1
    assert counts["pretrain"] and counts["finetune"] + counts["finetune_seeds"] + counts["finetune_checkpoint"]
    assert counts["corpus"] == 1
    if any(mnli_start_roles(cfg, t)[1] for t in cfg["glue"]["tasks"]):
        assert counts["finetune_mnli"] + counts["finetune_mnli_seeds"], "finetune.mnli_start: no MNLI job saves its model"


def test_every_taco_command_has_its_parser():
    """The contract needs each command's own parser: every module exposes build_parser()."""
    for name, (module, _) in COMMANDS.items():
        parser = importlib.import_module(module).build_parser()
        assert parser.prog == f"taco {name}", (name, parser.prog)


def test_hub_dataset_without_config_is_one_word():
    """`config: null` becomes the word `none` (an empty word would vanish in the shell)."""
    from taco.workflow.commands import Commands

    cfg = load_config(["config.yaml"], {})
    words = Commands(cfg, python=["python"]).corpus_args()
    i = words.index("--hub-config")
    assert words[i + 1:i + 3] == ["20231101.en", "none"]
    assert shlex.split(shlex.join(words)) == words


def test_values_with_spaces_stay_one_argument(tmp_path):
    """Paths are quoted once, at the end: a data_root with a space reaches `taco corpus` whole."""
    from taco.data.corpus import build_parser
    from taco.workflow.commands import Commands

    cfg = load_config(["configs/local.yaml"], {"data_root": str(tmp_path / "my data")})
    words = Commands(cfg, python=["python"]).corpus_args()
    ns = build_parser().parse_args(shlex.split(shlex.join(words))[3:] + ["--output", "x"])
    assert ns.paths == [p.replace("{data_root}", str(tmp_path / "my data")) for p in cfg["corpus"]["paths"]]
    assert os.sep in ns.paths[0]


def test_finetune_gets_the_data_seed_with_caps_and_the_primary_metric_with_rule_best():
    """capped sets are drawn with the top-level seed (--data-seed, only when a
    cap is set: params of uncapped runs unchanged); report_rule best chooses the epoch by the
    analysis' primary metric of the task (--primary-metric, only for keys the config sets)."""
    from taco.evaluation.finetune import build_parser, primary_metrics
    from taco.workflow.commands import Commands

    class W:  # the wildcards of one finetune job
        def __init__(self, task):
            self.size, self.objective, self.fraction, self.step, self.task = "small", "mlm", "1.0", "10000", task

    cfg = load_config(["config.yaml"], {})
    words = Commands(cfg).finetune_args(W("mrpc"))
    assert "--data-seed" not in words and "--primary-metric" not in words
    cfg = load_config(["config.yaml"], {"seed": 7, "finetune": {"max_train_samples": 500, "report_rule": "best"},
                                        "analysis": {"primary_metric": {"mrpc": "accuracy", "stsb": "pearson"}}})
    words = Commands(cfg).finetune_args(W("mrpc"))
    args = build_parser().parse_args(words[words.index("--glue-source"):] + ["--task", "mrpc", "--checkpoint", "c",
                                                                           "--output", "o"])
    assert args.data_seed == 7 and args.max_train_samples == 500
    # every fine-tuning job gets the keys of the config's tasks (the same params whatever the job's tasks)
    assert sorted(args.primary_metric) == ["mrpc=accuracy", "stsb=pearson"] and primary_metrics(args)["mrpc"] == "accuracy"
    assert Commands(cfg).finetune_args(W("rte")) == words
    assert "--task" not in words  # the task is one of the job's paths


def test_monitoring_follows_the_config_and_changes_no_param():
    """config ``monitoring`` reaches `taco pretrain` as settings and `taco finetune` as paths
    (neither is a param, so toggling it re-runs nothing) and is left out of run_config.json."""
    from taco.evaluation.finetune import build_parser as ft_parser
    from taco.training.pretrain import build_parser as pt_parser
    from taco.workflow.commands import Commands
    from taco.workflow.settings import run_config

    class W(dict):  # the wildcards of one job
        __getattr__ = dict.__getitem__

    w = W(size="small", objective="taco", fraction="1.0", step="10000", pseed="", task="rte", seed="3")

    class Files:
        checkpoint = "ck"
        metrics = ["R/finetune/x/rte/seed-3/metrics.json"]

    base = load_config(["config.yaml"], {"results_dir": "R"})
    for monitoring, report_to in (({}, ("tensorboard",)), ({"tensorboard": False}, ()),
                                  ({"wandb": True, "wandb_project": "p"}, ("tensorboard", "wandb"))):
        cfg = load_config(["config.yaml"], {"results_dir": "R", "monitoring": monitoring})
        cmd = Commands(cfg)
        assert cmd.pretrain_args(w) == Commands(base).pretrain_args(w)  # params: the same
        assert cmd.finetune_args(w) == Commands(base).finetune_args(w)
        assert run_config(cfg) == run_config(base) and "monitoring" not in run_config(cfg)
        pt = pt_parser().parse_args(["--blocks", "b", "--objective", "taco", "--size", "small", "--output", "o",
                                     *cmd.pretrain_settings(w)])
        ft = ft_parser().parse_args(["--task", "rte", *cmd.finetune_paths(w, Files, Files)])
        for args in (pt, ft):
            assert args.report_to == report_to
            assert (args.wandb_dir == "R/wandb" and args.wandb_project == "p") if "wandb" in report_to else \
                args.wandb_dir is None
        if "tensorboard" in report_to:
            assert pt.tensorboard_dir == "R/tensorboard/pretrain/small/taco/data-1.0"
            assert ft.tensorboard_dir == "R/tensorboard/finetune/small/taco/data-1.0/step-10000/rte/seed-3"
        else:
            assert pt.tensorboard_dir is None and ft.tensorboard_dir is None


def test_every_report_item_shown_inline_has_a_name(dag):
    """``snakemake --report`` lists each figure and page by its label (a name such as "Figure 5: ...",
    as the tables have), not by its path: every image and HTML page marked for the report has one."""
    _, jobs = dag
    shown = {path: rep for job in jobs for path, rep in job["report"].items() if path.endswith((".png", ".html"))}
    assert any(p.endswith("figure5.png") for p in shown) and any(p.endswith("claims.html") for p in shown)
    for path, rep in shown.items():
        key = "figure" if path.endswith(".png") else "page"
        assert set(rep["labels"]) == {key} and rep["labels"][key].strip(), (path, rep)


def test_the_glue_probe_reaches_the_runs_not_the_trials_and_is_checked():
    """pretrain.glue_probe (issue 51.3): its words in every run's params (the glue block's data), none without
    tasks (the params of the runs made before it stay), none in a tuning trial's; bad tasks or a cadence off
    the validation points are refused naming the key."""
    from taco.workflow.commands import Commands
    from taco.workflow.config import ConfigError
    from taco.workflow.config_checks import check_config

    class W:  # the wildcards of one pretrain job (and of a trial)
        size, objective, fraction, step, trial, pseed = "tiny", "taco", "1.0", "40", "0", ""

    base = ["configs/smoke.yaml"]
    plain = Commands(load_config(base, {})).pretrain_args(W())
    assert "--glue-probe-tasks" not in plain
    cfg = load_config(base, {"pretrain": {"glue_probe": {"tasks": ["sst2", "cola"], "every": 0}}})
    words = Commands(cfg).pretrain_args(W())
    assert words[len(plain):] == ["--glue-probe-tasks", "sst2,cola", "--glue-probe-every", "0",
                                  "--glue-probe-max-train-samples", "5000", "--glue-probe-max-eval-samples", "2000",
                                  "--glue-source", cfg["glue"]["source"]]
    if cfg["pretrain"].get("tuning", {}).get("enabled"):
        assert "--glue-probe-tasks" not in Commands(cfg).trial_args(W())
    for bad, key in (({"tasks": ["nope"]}, "pretrain.glue_probe.tasks"), ({"tasks": ["sst2"], "every": 7},
                                                                           "pretrain.glue_probe.every")):
        with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
            check_config(load_config(base, {"pretrain": {"glue_probe": bad}}))
