"""Every rule's command line, built in one place from the validated config and the job's wildcards.

The ``.smk`` rules never format command-line options themselves: each rule's shell is

    {resources.launch} {params.args} [{resources.settings}] {params.paths} > {log} 2>&1

where the rule names its builders (``args=CMD.args(CMD.pretrain_args)``) and every part comes from
:class:`Commands`, as a list of strings quoted with :func:`shlex.join` only at the very end (a value with a space or a quote stays one argument). The parts differ in
what Snakemake does when they change:

``args`` (``params.args``)
    What changes the result: the module that runs (``-m taco pretrain``, or
    ``-m torch.distributed.run --nproc_per_node N -m taco pretrain``) and the config values it
    takes. Params are one of Snakemake's rerun triggers, so a finished job is redone when one of
    these changes ("Params have changed").
``settings`` (``resources.settings``)
    Options of the command that change no result (``--logging-steps``, ``--save-every``, the
    ``--workers`` of a data job).
    Resources are no rerun trigger: changing them re-runs nothing.
``launch`` (``resources.launch``)
    How and where the job runs, none of which changes a result: ``OMP_NUM_THREADS`` (the rule's
    threads), the GPU-slot wrapper of a local GPU box (config ``gpus``, ``*.num_gpus`` of jobs that
    run one process, ``gpu_lock_dir``), and the Python interpreter (this environment's, or the rule's conda
    environment's with this checkout on ``PYTHONPATH``).
``paths`` (``params.paths``)
    The job's input and output paths. A param function of ``input``/``output``: Snakemake follows
    files through its own input and output triggers and does not compare these as params.
``monitoring`` (config ``monitoring``, :meth:`Commands.monitoring_words`)
    Where the training curves go (``--report-to``, ``--tensorboard-dir`` under
    ``<results_dir>/tensorboard/``, ``--wandb-project``, ``--wandb-dir``): changes no result. Part of
    ``settings`` for pre-training and of ``paths`` for fine-tuning, whose rule has no settings part in
    its shell (Snakemake re-runs a job whose shell text changed, so adding one would re-run every
    finished fine-tuning job once).

Settings that change no result and therefore stay out of ``params`` (tested by
``tests/test_rerun.py``): ``pretrain.logging_steps``, ``pretrain.sizes.<size>.{save_every, threads,
mem_mb, runtime}``, ``finetune.{threads, mem_mb, runtime, num_gpus, seeds_per_job}``,
``data_threads``, ``gpus``, ``gpu_lock_dir``, ``monitoring`` and the interpreter; and a loss's options for the objectives
that do not use that loss: ``pretrain.<group>`` reaches only the objectives that declare the option
group (``taco.objectives``: ``tc`` the TACO family, ``tp`` MLM+TP, ``nce`` BERT-NCE and INFOWORD,
``infoword`` INFOWORD). ``pretrain.sizes.<size>.num_gpus`` is
result-changing: it sets the number of processes and so the global batch
(``per_device_batch_size x grad_accum x num_gpus``).

A Hub dataset without a config (``config: null``) is passed as the token ``none`` to
``--hub-config`` (an empty shell word would vanish); ``taco corpus`` reads ``none`` as no config.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from collections.abc import Callable, Sequence
from typing import Any

from taco.objectives import OBJECTIVE_SPECS, OPTIONS
from taco.evaluation.finetune_recipe import FINETUNE_RECIPE
from taco.parameters import Parameter
from taco.training.recipe import RECIPE, RECIPE_AFTER_OBJECTIVE
from taco.training.tuning import TUNABLE
from taco.workflow import config as wc
from taco.workflow import tuning_grid as tg

#: The path of one budget checkpoint of one run below ``pretrain/``, ``finetune/``, ``dynamics/``,
#: ``logs/...`` and ``benchmarks/...`` (Snakemake wildcards).
#: ``{pseed}`` is "" for the default pre-training seed or ``/pretrain-seed-<n>`` (``pretrain.seeds``).
RUN_PATH = "{size}/{objective}/data-{fraction}{pseed}/step-{step}"
#: ``--hub-config`` value of a Hub dataset without a config (``config: null``).
NO_HUB_CONFIG = "none"


def run_path(size: str, objective: str, fraction: str, step: int | str, pseed: str = "") -> str:
    """``RUN_PATH`` filled in: ``small/taco/data-1.0/step-10000`` (``pseed`` "" or ``/pretrain-seed-3``)."""
    return RUN_PATH.format(size=size, objective=objective, fraction=fraction, step=step, pseed=pseed)


def _s(value: Any) -> str:
    """A config value as one command-line word (floats keep their exact repr)."""
    return str(value)


def _same(value: Any, default: Any) -> bool:
    """A config value equals an option's default (numbers compared as numbers: 1 == 1.0)."""
    if isinstance(default, (int, float)) and not isinstance(default, bool):
        try:
            return float(value) == float(default)
        except (TypeError, ValueError):
            return False
    return value == default


def _files(value: Any) -> list[str]:
    """Snakemake's input/output (a path, a list of paths, or a named list) as a list of str."""
    if isinstance(value, (str, os.PathLike)):
        return [os.fspath(value)]
    return [os.fspath(v) for v in value]


class Commands:
    """The command of every rule for one validated config (see the module docstring).

    Args:
        config: the validated config (schema defaults filled in).
        python: the interpreter, as a list of words (default: this one). With per-rule conda
            environments: ``["env", "PYTHONPATH=<checkout>", "python"]``.
    """

    def __init__(self, config: dict[str, Any], python: Sequence[str] | None = None):
        self.config = config
        self.python = list(python) if python is not None else [sys.executable]
        self.results = config["results_dir"]

    # ------------------------------------------------------------------ Snakemake adaptors
    # A rule names its builders: ``params: args=CMD.args(CMD.pretrain_args)``; each adaptor turns a
    # builder's list of words into the function of the job that Snakemake calls, quoted at the end.
    @staticmethod
    def args(build: Callable[[Any], list[str]]) -> Callable[..., str]:
        """``params.args`` from a ``*_args`` builder: a function of the wildcards."""
        return lambda wildcards: shlex.join(build(wildcards))

    @staticmethod
    def paths(build: Callable[[Any, Any, Any], list[str]]) -> Callable[..., str]:
        """``params.paths`` from a ``*_paths`` builder: a function of the wildcards, input and output."""
        return lambda wildcards, input, output: shlex.join(build(wildcards, input, output))

    @staticmethod
    def settings(build: Callable[[Any, int], list[str]]) -> Callable[..., str]:
        """``resources.settings`` from a ``*_settings`` builder: a function of the wildcards and threads."""
        return lambda wildcards, threads: shlex.join(build(wildcards, threads))

    def launch(self, rule: str, omp: bool = False) -> Callable[..., str]:
        """``resources.launch`` of ``rule`` (its GPU slots: :meth:`devices`): a function of the wildcards
        and threads."""
        return lambda wildcards, threads: shlex.join(self.launch_words(rule, wildcards, threads if omp else None))

    # ------------------------------------------------------------------ launch
    def devices(self, rule: str, wildcards: Any) -> int:
        """GPUs one job of ``rule`` takes from the local GPU slots (0: none, or no ``gpus`` set)."""
        if not self.config["gpus"]:
            return 0
        if rule in ("pretrain", "pretrain_trial"):
            return int(self.config["pretrain"]["sizes"][wildcards.size]["num_gpus"])
        if rule == "finetune":
            return int(self.config["finetune"]["num_gpus"])
        return 0

    def launch_words(self, rule: str, wildcards: Any, threads: int | None = None) -> list[str]:
        """``OMP_NUM_THREADS=<threads>`` (when given), the GPU-slot wrapper, the interpreter, and for a job
        outside the GPU-slot wrapper (config ``fork_server``, default on) the fork server's client
        ``-m taco.launch.forkserver``: the job forks from the run's server where there is one, else the client
        runs it as a fresh process (:mod:`taco.launch.forkserver`)."""
        words = [f"OMP_NUM_THREADS={int(threads)}"] if threads is not None else []
        need = self.devices(rule, wildcards)
        if need:
            # slot locks are per machine: `taco gpu-slot`'s own default folder ($TACO_GPU_LOCK_DIR, else
            # /tmp/taco-gpu-slots), whatever the results_dir; config gpu_lock_dir overrides it
            lock_dir = self.config.get("gpu_lock_dir")
            words += [*self.python, "-m", "taco", "gpu-slot", "--gpus", _s(self.config["gpus"]),
                      "--need", _s(need), *(["--lock-dir", lock_dir] if lock_dir else []), "--"]
            return words + self.python
        if self.config["fork_server"]:
            return words + self.python + ["-m", "taco.launch.forkserver"]
        return words + self.python

    @staticmethod
    def _taco(command: str) -> list[str]:
        return ["-m", "taco", command]

    # ------------------------------------------------------------------ data
    def corpus_args(self, wildcards: Any = None) -> list[str]:
        c = self.config["corpus"]
        args = self._taco("corpus") + ["--source", c["source"]]
        if c["source"] == "synthetic":
            return args + ["--num-documents", _s(c["num_documents"]), "--seed", _s(self.config["seed"])]
        if c["source"] == "local":
            args += ["--paths", *(wc.substitute_root(p, self.config) for p in c["paths"]),
                     "--split-by", *self._split_by(c), "--unk-policy", c["unk_policy"],
                     "--encoding", c.get("encoding", "utf-8")]
            if c.get("rows", "document") == "sentence":
                args += ["--rows", "sentence", "--span-rows", _s(c.get("span_rows", 50))]
            if c.get("max_document_chars") is not None:  # absent when unset: uncapped corpora keep their params
                args += ["--max-document-chars", _s(c["max_document_chars"])]
            return args + (["--wikitext-detokenize"] if c["wikitext_detokenize"] else [])
        specs = c["hub_datasets"]
        rows = [d.get("rows", "document") for d in specs]
        return args + [
            "--hub-dataset", *(d["name"] for d in specs),
            "--hub-config", *(d.get("config") or NO_HUB_CONFIG for d in specs),
            "--hub-split", *(d.get("split", "train") for d in specs),
            "--hub-rows", *rows,
        ] + (["--span-rows", _s(c.get("span_rows", 50))] if "sentence" in rows else [])

    @staticmethod
    def _split_by(corpus: dict[str, Any]) -> list[str]:
        """``corpus.split_by`` as ``--split-by`` values: one for all paths, or one per path (a list
        whose length is not 1 or that of ``corpus.paths`` is a ConfigError naming the key)."""
        split = corpus["split_by"]
        if isinstance(split, str):
            return [split]
        if len(split) not in (1, len(corpus["paths"])):
            raise wc.ConfigError(f"corpus.split_by: {len(split)} values for {len(corpus['paths'])} paths "
                                 "(give one value, or one per entry of corpus.paths)")
        return [str(s) for s in split]

    @staticmethod
    def _workers(wildcards: Any, threads: int = 1) -> list[str]:
        """Worker processes of a data job: its threads (the artifact is the same for any number)."""
        return ["--workers", _s(threads)]

    corpus_settings = tokenizer_settings = pack_settings = _workers

    def corpus_paths(self, wildcards: Any, input: Any, output: Any) -> list[str]:
        return ["--output", _files(output)[0]]

    def tokenizer_args(self, wildcards: Any = None) -> list[str]:
        t = self.config["tokenizer"]
        args = self._taco("tokenizer") + ["--kind", t["kind"], "--lowercase" if t["lowercase"] else "--no-lowercase"]
        if t["kind"] == "vocab":
            return args + ["--vocab-file", wc.substitute_root(t["vocab_file"], self.config)]
        if t["kind"] == "hub":
            return args + ["--hub-id", t["hub_id"]]
        return args + ["--vocab-size", _s(t["vocab_size"])]

    def tokenizer_paths(self, wildcards: Any, input: Any, output: Any) -> list[str]:
        return ["--corpus", input.corpus, "--output", _files(output)[0]]

    def pack_args(self, wildcards: Any) -> list[str]:
        """``taco pack`` with what changes the blocks. ``--block-format`` only for ``pack.format:
        official``: the framed format is ``taco pack``'s default, so the params of every framed
        configuration stay as they were and nothing packed before re-runs."""
        c = self.config
        fmt = (c.get("pack") or {}).get("format", "framed")
        return self._taco("pack") + [
            "--max-seq-length", _s(c["max_seq_length"]), "--fraction", wildcards.fraction,
            "--seed", _s(c["seed"]), "--validation-blocks", _s(c["validation_blocks"])] + (
            ["--block-format", fmt] if fmt != "framed" else [])

    def pack_paths(self, wildcards: Any, input: Any, output: Any) -> list[str]:
        return ["--corpus", input.corpus, "--tokenizer", input.tokenizer, "--output", _files(output)[0]]

    # ------------------------------------------------------------------ pre-training
    def pretrain_args(self, wildcards: Any) -> list[str]:
        """``taco pretrain`` with what changes the weights of this run: schedule, batch, optimiser, seed,
        the recipe (``taco.training.recipe``) and the options of the losses its objective uses (:meth:`_objective_args`)."""
        s = self.config["pretrain"]["sizes"][wildcards.size]
        return self._distributed(s) + self._taco("pretrain") + [
            "--size", s["preset"], "--size-name", wildcards.size, "--objective", wildcards.objective,
            *self._recipe_args(RECIPE, wildcards), *self._objective_args(wildcards),
            *self._recipe_args(RECIPE_AFTER_OBJECTIVE, wildcards),
            "--seed", _s(wc.pretrain_seed_of(self.config, getattr(wildcards, "pseed", ""))),
            "--until", wildcards.step] + (
            ["--eval-every", _s(s["eval_every"])] if int(s.get("eval_every", 0) or 0) > 0 else []) + wc.glue_probe_words(self.config)

    @staticmethod
    def _distributed(size: dict[str, Any]) -> list[str]:
        """The launcher before ``-m taco pretrain`` of a size: none for one process; several GPUs of one node
        (local slots or a SLURM allocation): ``torch.distributed.run --standalone``, one process per GPU;
        ``num_nodes`` > 1: :mod:`taco.workflow.nodes` (one torchrun agent per node, c10d rendezvous), with
        ``max(num_gpus, 1)`` processes per node. One node's words are those of the runs made before
        ``num_nodes`` existed."""
        n, nodes = int(size["num_gpus"]), int(size["num_nodes"])  # the schema fills it (default 1)
        if nodes > 1:
            return ["-m", "taco.workflow.nodes", "--nnodes", _s(nodes), "--nproc-per-node", _s(max(n, 1)),
                    "--gpus-per-node", _s(n), "--"]
        return ["-m", "torch.distributed.run", "--standalone", "--nproc_per_node", _s(n)] if n > 1 else []

    def _recipe_args(self, flags: Sequence[Parameter], wildcards: Any,
                     overrides: dict[str, Any] | None = None) -> list[str]:
        """``--max-steps 150 --warmup-steps 15 ...``: the recipe parameters (``taco.training.recipe``)
        from the configuration, in declaration order; a parameter the configuration leaves at a ``None``
        default (the preset's), or a ``pass_default=False`` one at its default (``--architecture bert``), is
        not written, and ``taco pretrain`` applies the same default. ``overrides`` (parameter name ->
        value) replace the configuration's values (a tuning trial's); a tuned arm's replicates leave out
        the tuned parameters, which ``--tuned-recipe`` sets (:mod:`taco.training.tuning`)."""
        overrides = overrides or {}
        objective = getattr(wildcards, "objective", None)
        skip = (set(TUNABLE.values()) if not overrides and objective is not None
                and tg.tuned_arm(self.config, wildcards.size, objective) else set())
        words = []
        for f in flags:
            if f.name in skip:
                continue
            v = overrides[f.name] if f.name in overrides else f.value(self.config, wildcards.size)
            if v is not None and (f.pass_default or not _same(v, f.default)):
                words += [f.flag, _s(v)]
        return words

    def _objective_args(self, wildcards: Any) -> list[str]:
        """The option flags of the run's objective (``taco.objectives``: its option groups, from
        ``pretrain.<group>.<key>``, schema defaults for missing keys), in declaration order; none for
        the options of losses it does not use (``pretrain.tc`` never reaches MLM or MLM+TP, so changing
        it re-runs none of their segments). A group whose options have ``pass_default=False`` (``tp``)
        is passed only when a value differs from its default, which ``taco pretrain`` applies itself:
        the params of every run trained before the setting existed stay the same. The same holds for a
        ``pass_default=False`` option inside a group that is always passed (``tc.negative_pool``): its
        flag appears only when it is not at its default."""
        words: list[str] = []
        for group in OBJECTIVE_SPECS[wildcards.objective].options:
            opts = [o for o in OPTIONS.values() if o.group == group]
            section = self.config["pretrain"].get(group) or {}
            values = [(o, section.get(o.key, o.default)) for o in opts]
            if all(not o.pass_default and _same(v, o.default) for o, v in values):
                continue
            always = any(o.pass_default for o in opts)
            for o, v in values:
                if always and not o.pass_default and _same(v, o.default):
                    continue
                words += [o.flag, _s(v)]
        return words

    def pretrain_settings(self, wildcards: Any, threads: int = 1) -> list[str]:
        s = self.config["pretrain"]["sizes"][wildcards.size]
        # --no-progress: the log file gets one readable progress line per logging event
        # (taco.training.runlog.ProgressCallback: step, loss, examples/s, time left), not tqdm bars
        return ["--save-every", _s(s["save_every"]), "--logging-steps", _s(self.config["pretrain"]["logging_steps"]),
                "--no-progress", *self.monitoring_words("pretrain", wildcards)]

    # ------------------------------------------------------------------ monitoring
    def tensorboard_dir(self, rule: str, wildcards: Any) -> str:
        """The TensorBoard folder of a job below ``<results_dir>/tensorboard/``: a pre-training run's
        (``pretrain/<size>/<objective>/data-<fraction>[/pretrain-seed-<n>]``, shared by its budget
        segments, so they draw one curve) or a fine-tuning run's (``finetune/<run path>/<task>/seed-<s>``;
        ``seed-{seed}`` when one job runs every seed: ``taco finetune`` fills it in)."""
        pseed = getattr(wildcards, "pseed", "")
        if rule == "pretrain_trial":
            return f"{self.results}/tensorboard/tuning/{wildcards.size}/{wildcards.objective}/trial-{wildcards.trial}"
        if rule == "pretrain":
            return f"{self.results}/tensorboard/pretrain/{wildcards.size}/{wildcards.objective}/data-{wildcards.fraction}{pseed}"
        seed = wildcards.seed if "seed" in wildcards.keys() else "{seed}"
        task = wildcards.task if hasattr(wildcards, "task") else "{task}"
        return (f"{self.results}/tensorboard/finetune/"
                + run_path(wildcards.size, wildcards.objective, wildcards.fraction, wildcards.step, pseed)
                + f"/{task}/seed-{seed}")

    def monitoring_words(self, rule: str, wildcards: Any) -> list[str]:
        """``--report-to`` and its folders from config ``monitoring`` (``tensorboard`` on by default,
        ``wandb`` off; W&B's local files in ``<results_dir>/wandb``). Changes no result."""
        m = {"tensorboard": True, "wandb": False, "wandb_project": "taco", **(self.config.get("monitoring") or {})}
        report = [name for name in ("tensorboard", "wandb") if m[name]]
        words = ["--report-to", ",".join(report) or "none"]
        if m["tensorboard"]:
            words += ["--tensorboard-dir", self.tensorboard_dir(rule, wildcards)]
        if m["wandb"]:
            words += ["--wandb-project", _s(m["wandb_project"]), "--wandb-dir", f"{self.results}/wandb"]
        return words

    def state_dir(self, wildcards: Any) -> str:
        """Resumable scratch state of a segment: outside the declared outputs (``.state/``)."""
        return f"{self.results}/.state/pretrain/" + run_path(
            wildcards.size, wildcards.objective, wildcards.fraction, wildcards.step, getattr(wildcards, "pseed", ""))

    def pretrain_paths(self, wildcards: Any, input: Any, output: Any) -> list[str]:
        parent = _files(input.parent) if input.parent else []
        recipe = _files(input.recipe) if getattr(input, "recipe", None) else []
        return (["--blocks", input.blocks] + (["--resume-from", parent[0]] if parent else [])
                + (["--tuned-recipe", recipe[0]] if recipe else [])
                + ["--state-dir", self.state_dir(wildcards), "--output", _files(output)[0]])

    # ------------------------------------------------------------------ tuning (pretrain.tuning)
    def trial_args(self, wildcards: Any) -> list[str]:
        """``taco pretrain`` of tuning trial ``wildcards.trial`` of an arm: the size's recipe with the trial's
        setting (:func:`taco.workflow.tuning_grid.tuning_trials`), its own schedule to the horizon (max_steps =
        until = horizon), the tuning seed, validation points as the size's."""
        s = self.config["pretrain"]["sizes"][wildcards.size]
        t = self.config["pretrain"]["tuning"]
        setting = tg.tuning_trials(self.config, wildcards.size)[int(wildcards.trial)]
        horizon = int(t["horizon"])
        over = {"max_steps": horizon, **{TUNABLE[k]: v for k, v in setting.items()}}
        every = int(s.get("eval_every", 0) or 0)
        return self._distributed(s) + self._taco("pretrain") + [
            "--size", s["preset"], "--size-name", wildcards.size, "--objective", wildcards.objective,
            *self._recipe_args(RECIPE, wildcards, over), *self._objective_args(wildcards),
            *self._recipe_args(RECIPE_AFTER_OBJECTIVE, wildcards, over),
            "--seed", _s(t["seed"]), "--until", _s(horizon)] + (
            ["--eval-every", _s(every)] if 0 < every < horizon else [])

    def trial_paths(self, wildcards: Any, input: Any, output: Any) -> list[str]:
        state = f"{self.results}/.state/tuning/{wildcards.size}/{wildcards.objective}/trial-{wildcards.trial}"
        return ["--blocks", input.blocks, "--state-dir", state, "--output", _files(output)[0]]

    def trial_settings(self, wildcards: Any, threads: int = 1) -> list[str]:
        s = self.config["pretrain"]["sizes"][wildcards.size]
        return ["--save-every", _s(s["save_every"]), "--logging-steps", _s(self.config["pretrain"]["logging_steps"]),
                "--no-progress", *self.monitoring_words("pretrain_trial", wildcards)]

    def tuning_choice_args(self, wildcards: Any = None) -> list[str]:
        return self._taco("tuning-choice")

    def tuning_choice_paths(self, wildcards: Any, input: Any, output: Any) -> list[str]:
        recorded = _files(getattr(input, "recorded", []))  # pretrain.tuning.recorded: the record's choice.json
        source = ["--recorded", recorded[0]] if recorded else ["--trials", *_files(input.trials)]
        return [*source, "--output", _files(output)[0]]

    def pretrain_control_args(self, wildcards: Any) -> list[str]:
        """``taco init``: the no-pre-training control of a size (``taco.workflow.control``)."""
        from taco.workflow.control import init_args

        return init_args(self.config, wildcards.size, getattr(wildcards, "pseed", ""))

    def pretrain_control_paths(self, wildcards: Any, input: Any, output: Any) -> list[str]:
        return ["--blocks", input.blocks, "--output", _files(output)[0]]

    # ------------------------------------------------------------------ fine-tuning
    def finetune_args(self, wildcards: Any) -> list[str]:
        ft = self.config["finetune"]
        g = self.config["glue"]
        hp = wc.finetune_hyperparameters(self.config, wildcards.size)
        # the task(s) are the job's outputs, so they go with its paths (finetune_paths): one job per task, per
        # seed or per checkpoint (finetune.tasks_per_job) then has the same params, and switching re-runs nothing
        args = self._taco("finetune") + ["--glue-source", g["source"]]
        if g["source"] == "local":
            args += ["--glue-dir", wc.substitute_root(g["data_dir"], self.config)]
        # the recipe, declaration by declaration (taco.evaluation.finetune_recipe): a per-preset value from the
        # checkpoint's preset (the learning rate, the epochs), a setting at its default left out where it says so
        for p in FINETUNE_RECIPE:
            value = hp[p.key] if p.per_preset else p.value(self.config)
            if value is None or (not p.pass_default and value == p.default):
                continue
            args += [p.flag, _s(value)]
        if ft["max_train_samples"]:
            args += ["--max-train-samples", _s(ft["max_train_samples"])]
        if ft["max_eval_samples"]:
            args += ["--max-eval-samples", _s(ft["max_eval_samples"])]
        if ft["max_train_samples"] or ft["max_eval_samples"]:  # capped sets: a sample drawn with the data seed
            args += ["--data-seed", _s(self.config["seed"])]
        if ft["report_rule"] == "best":  # the epoch is chosen by the metric the analysis reports
            from taco.registry import GLUE_TASK_SPECS

            prim = (self.config.get("analysis") or {}).get("primary_metric") or {}
            tasks = list(self.config["glue"]["tasks"])  # every job the same words; a task's run ignores other keys
            keys = [k for t in tasks for k in GLUE_TASK_SPECS[t].score_keys if k in prim]
            if keys:
                args += ["--primary-metric", *(f"{k}={prim[k]}" for k in keys)]
        return args

    def finetune_paths(self, wildcards: Any, input: Any, output: Any) -> list[str]:
        """One seed per job (``seed`` wildcard), or every seed of the config in one job (``{seed}``
        in ``--output``); the seeds belong to the paths, so the two forms share their params. Then the
        monitoring options (:meth:`monitoring_words`; here, not in a settings part, see the module
        docstring)."""
        metrics = _files(output.metrics)
        # the task(s): the wildcard, or every task of the checkpoint (tasks_per_job: all) from the outputs
        one_task = hasattr(wildcards, "task")
        tasks = [wildcards.task] if one_task else list(
            dict.fromkeys(os.path.basename(os.path.dirname(os.path.dirname(m))) for m in metrics))
        if "seed" in wildcards.keys():
            seeds, out = [wildcards.seed], os.path.dirname(metrics[0])
        else:
            seeds = [_s(s) for s in self.config["finetune"]["seeds"]]
            out = os.path.join(os.path.dirname(os.path.dirname(metrics[0])), "seed-{seed}")
            if not one_task:
                out = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(metrics[0]))), "{task}", "seed-{seed}")
        # finetune.mnli_start: the MNLI model(s) this job starts from (input ``init``) / that it saves
        # (output ``model``); neither exists with the option off, and the command is as without it
        init = _files(getattr(input, "init", None) or [])
        if init and "seed" not in wildcards.keys():  # every seed of the job: each from its own seed's model
            init = [os.path.join(os.path.dirname(os.path.dirname(init[0])), "seed-{seed}", os.path.basename(init[0]))]
        recipe = _files(getattr(input, "recipe", None) or [])  # finetune.tuning: the checkpoint's choice.json
        return (["--task", *tasks, "--checkpoint", input.checkpoint,
                 *(["--init-from", init[0]] if init else []), *(["--tuned-recipe", recipe[0]] if recipe else []),
                 "--seed", *seeds, "--output", out, *(["--save-model"] if getattr(output, "model", None) else [])]
                + self.monitoring_words("finetune", wildcards))

    # ---- finetune.tuning: the same grid of trials for every checkpoint (taco.evaluation.finetune_tuning)
    def finetune_trial_args(self, wildcards: Any) -> list[str]:
        """``taco finetune`` of one trial: the reported runs' words with the trial's learning rate, epochs and
        warm-up (the later flag wins in argparse) and no test predictions."""
        from taco.evaluation.finetune_tuning import trial_settings

        setting = trial_settings(self.config["finetune"]["tuning"]["space"])[int(wildcards.trial)]
        flags = {p.key: p.flag for p in FINETUNE_RECIPE}  # learning_rate -> --lr, epochs, warmup_steps
        return (self.finetune_args(wildcards) + [w for k, v in setting.items() for w in (flags[k], _s(v))]
                + ["--no-test-predictions"])

    def finetune_trial_paths(self, wildcards: Any, input: Any, output: Any) -> list[str]:
        """Every task and trial seed of one (checkpoint, trial) in one process."""
        metrics = _files(output.metrics)
        tasks = list(dict.fromkeys(os.path.basename(os.path.dirname(os.path.dirname(m))) for m in metrics))
        out = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(metrics[0]))), "{task}", "seed-{seed}")
        seeds = [_s(s) for s in self.config["finetune"]["tuning"]["seeds"]]
        return (["--task", *tasks, "--checkpoint", input.checkpoint, "--seed", *seeds, "--output", out]
                + self.monitoring_words("finetune", wildcards))

    def finetune_choice_args(self, wildcards: Any = None) -> list[str]:
        space = json.dumps(self.config["finetune"]["tuning"]["space"], separators=(",", ":"))
        return self._taco("finetune-choice") + ["--space", space]

    def finetune_choice_paths(self, wildcards: Any, input: Any, output: Any) -> list[str]:
        trials = sorted({os.path.dirname(os.path.dirname(os.path.dirname(m))) for m in _files(input.metrics)})
        tasks = sorted({os.path.basename(os.path.dirname(os.path.dirname(m))) for m in _files(input.metrics)})
        return ["--trials", *trials, "--tasks", *tasks, "--output", _files(output)[0]]

    def glue_submission_args(self, wildcards: Any = None) -> list[str]:
        return self._taco("glue-submission")

    def glue_submission_paths(self, wildcards: Any, input: Any, output: Any) -> list[str]:
        """One job per checkpoint: its seeds (``--seed``, one zip each), the fine-tuning run folders of
        every task (``.../<task>/seed-{seed}``; each holds ``metrics.json`` and ``test_predictions.tsv``)
        and the zips (``.../seed-{seed}.zip``)."""
        zips = _files(output)
        seeds = [os.path.basename(z)[len("seed-"):-len(".zip")] for z in zips]
        runs = list(dict.fromkeys(os.path.join(os.path.dirname(os.path.dirname(m)), "seed-{seed}")
                                  for m in _files(input.metrics)))
        return ["--seed", *seeds, "--runs", *runs, "--output", os.path.join(os.path.dirname(zips[0]), "seed-{seed}.zip")]

    # ------------------------------------------------------------------ analysis and report
    def dynamics_args(self, wildcards: Any) -> list[str]:
        d = self.config["dynamics"]
        return self._taco("dynamics") + [
            "--num-blocks", _s(d["num_blocks"]), "--max-pairs", _s(d["max_pairs"]),
            "--seed", _s(self.config["seed"])]

    def dynamics_paths(self, wildcards: Any, input: Any, output: Any) -> list[str]:
        return ["--checkpoint", input.checkpoint, "--blocks", input.blocks, "--output", _files(output)[0]]

    def aggregate_args(self, wildcards: Any = None) -> list[str]:
        return self._taco("aggregate")

    def aggregate_paths(self, wildcards: Any, input: Any, output: Any) -> list[str]:
        # a file listing the metrics.json paths: the paper's grid has ~3000 of them, more than one
        # shell command line may hold (the kernel's 128 KiB limit per argument of `bash -c`)
        return ["--inputs-from", input.metrics_list, "--analysis", input.spec,
                "--output-dir", os.path.dirname(output.cells)]

    def _report_args(self, command: str) -> list[str]:
        return self._taco(command)

    def _report_paths(self, input: Any, output: Any) -> list[str]:
        return ["--aggregate-dir", os.path.dirname(input.cells), "--analysis", input.spec,
                "--output-dir", os.path.dirname(_files(output)[0])]

    def tables_args(self, wildcards: Any = None) -> list[str]:
        return self._report_args("tables")

    def tables_paths(self, wildcards: Any, input: Any, output: Any) -> list[str]:
        curves = ["--pretrain-curves", input.curves] if "curves" in input.keys() else []
        return self._report_paths(input, output) + curves

    def figures_args(self, wildcards: Any = None) -> list[str]:
        return self._report_args("figures")

    def figures_paths(self, wildcards: Any, input: Any, output: Any) -> list[str]:
        return self._report_paths(input, output)

    def claims_args(self, wildcards: Any = None) -> list[str]:
        return self._report_args("claims")

    def claims_paths(self, wildcards: Any, input: Any, output: Any) -> list[str]:
        return self._report_paths(input, output) + ["--efficiency", input.efficiency]

    def deviations_args(self, wildcards: Any = None) -> list[str]:
        return self._taco("deviations")

    def deviations_paths(self, wildcards: Any, input: Any, output: Any) -> list[str]:
        return ["--config", input.config, "--analysis", input.spec, "--output", _files(output)[0]]

    def pretrain_curves_args(self, wildcards: Any = None) -> list[str]:
        return self._taco("pretrain-curves")

    def pretrain_curves_paths(self, wildcards: Any, input: Any, output: Any) -> list[str]:
        return ["--checkpoints", *_files(input.checkpoints), "--analysis", input.spec,
                "--output-dir", os.path.dirname(output.png)]

    def efficiency_args(self, wildcards: Any = None) -> list[str]:
        """``taco efficiency``: its options come from the analysis spec (a file input) and, with
        ``pretrain.tuning`` on, each tuned size's search space (a choice at its edge is noted on the page)."""
        from taco.workflow.tuning_grid import tuning_arms, tuning_space

        sizes = dict.fromkeys(size for size, _ in tuning_arms(self.config))
        if not sizes:
            return self._taco("efficiency")
        spaces = json.dumps({size: tuning_space(self.config, size) for size in sizes}, sort_keys=True,
                            separators=(",", ":"))
        return self._taco("efficiency") + ["--tuning-spaces", spaces]

    def efficiency_paths(self, wildcards: Any, input: Any, output: Any) -> list[str]:
        tuning = _files(input.tuning) if getattr(input, "tuning", None) else []
        return ["--checkpoints", *_files(input.checkpoints), "--aggregate-dir", os.path.dirname(input.per_seed),
                "--analysis", input.spec, *(["--tuning", *tuning] if tuning else []),
                "--output-dir", os.path.dirname(output.csv)]

    def dynamics_figures_args(self, wildcards: Any = None) -> list[str]:
        return self._taco("dynamics-figures")

    def dynamics_figures_paths(self, wildcards: Any, input: Any, output: Any) -> list[str]:
        return ["--inputs", *_files(input.dynamics), "--analysis", input.spec,
                "--output-dir", os.path.dirname(_files(output)[0])]
