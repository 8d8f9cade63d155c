"""The semantic checks of a configuration that JSON-schema cannot express, and the notes a run prints.

:func:`check_config` raises :class:`taco.workflow.config.ConfigError` naming the offending key before any job
runs; :func:`config_notes` and :func:`gpu_resource_note` are what the workflow prints at its start;
:func:`local_glue_availability` says which GLUE tasks have local files. Pure Python on plain dicts (no
Snakemake, no torch import): the Snakefile and ``taco plan`` call them on the validated config.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping
from typing import Any

from taco.families import DEFAULT_FAMILY
from taco.objectives import OBJECTIVE_SPECS, OPTIONS, check_options
from taco.registry import GLUE_TASK_NAMES, MNLI_START_TASKS, OBJECTIVES, PRESETS, PRETRAIN_SCHEDULE
from taco.workflow.config import (
    ConfigError,
    FIGURE2_OBJECTIVE,
    SIZE_PATTERN,
    SNAKEMAKE_PATH_CHARS,
    effective_tasks,
    finetune_budgets,
    mnli_start_tasks,
    normalise_config,
    required_path,
    runs,
    substitute_root,
)
from taco.workflow.tuning_grid import check_tuning


def _check_results_dir(results_dir: str | None) -> None:
    """``results_dir`` must be a folder below the filesystem root, or creatable as one: not empty,
    not ``/``, neither it nor a parent an existing file, and none of :data:`SNAKEMAKE_PATH_CHARS`
    (Snakemake would read them as wildcards or path variables in every output)."""
    if results_dir is None:
        return  # the schema's default fills it in
    if not results_dir.strip():
        raise ConfigError(f"results_dir: {results_dir!r} is empty; every output would land at the filesystem "
                          "root (/run_config.json, /analysis.json, ...): give a folder, e.g. results")
    special = sorted({c for c in results_dir if c in SNAKEMAKE_PATH_CHARS})
    if special:
        raise ConfigError(f"results_dir: {results_dir!r} contains {' '.join(special)}, which Snakemake reads in every "
                          "output path ({name}: a wildcard, <name>: a path variable); give a folder name without "
                          f"{' '.join(SNAKEMAKE_PATH_CHARS)}")
    root = os.path.abspath(results_dir)
    if os.path.dirname(root) == root:
        raise ConfigError(f"results_dir: {results_dir!r} is the filesystem root; give a folder, e.g. results")
    path = os.path.abspath(results_dir)
    while True:
        if os.path.exists(path):
            if not os.path.isdir(path):
                what = "is" if path == os.path.abspath(results_dir) else f"lies under {path}, which is"
                raise ConfigError(f"results_dir: {results_dir} {what} an existing file, not a folder; "
                                  "choose another results_dir or move the file away")
            return
        parent = os.path.dirname(path)
        if parent == path:
            return
        path = parent


def _undecidable_pretrain_seeds_note(config: dict[str, Any]) -> str | None:
    """The note for pre-training seeds (``pretrain.seeds``, or an entry's ``pretrain.runs[i].seeds``) with two
    or more entries, so that the pre-training run is the statistical unit, but too few for any claim to be
    decided: with n runs per arm the smallest one-sided p of the exact permutation test is 1 / C(2n, n)
    (two runs: 1/6 > alpha 0.05). None when it applies nowhere."""
    alpha = round(1.0 - float(config.get("analysis", {}).get("confidence_level", 0.95)), 12)
    sources = [("pretrain.seeds", config["pretrain"].get("seeds") or [])]
    sources += [(f"pretrain.runs[{i}].seeds", r["seeds"]) for i, r in enumerate(config["pretrain"].get("runs") or [])
                if r.get("seeds")]
    for key, seeds in sources:
        n = len(seeds)
        if n < 2 or 1.0 / math.comb(2 * n, n) <= alpha:
            continue
        need = next(k for k in range(n, 50) if 1.0 / math.comb(2 * k, k) <= alpha)
        return (f"{key}: {n} pre-training runs per arm make the pre-training run the statistical "
                f"unit, and with {n} the smallest attainable p is 1 / C({2 * n}, {n}) = "
                f"{1.0 / math.comb(2 * n, n):.3g} > alpha {alpha:g}: no claim can be decided. Give at least "
                f"{need} seeds, or none (one run; fine-tuning seeds as the unit).")
    return None


def config_notes(config: dict[str, Any]) -> list[str]:
    """What a valid configuration should know before the first job but that stops nothing, one line
    each, starting with the key (today: ``pretrain.seeds`` too few to decide a claim). The workflow
    prints each as ``NOTE: ...`` from its main process (``workflow/rules/common.smk``), ``taco plan`` as
    ``taco plan: note: ...``; call after :func:`check_config`."""
    return [n for n in (_undecidable_pretrain_seeds_note(config), _tasks_per_job_note(config),
                        _multi_node_note(config), *_corpus_size_notes(config)) if n]


#: bytes of local text per word piece: configs/cpu-real.yaml's corpus, 14.2 MB of text in 3.4 M word pieces of
#: its own 8,192-entry WordPiece (docs/cpu-experiment.md); an estimate for the notes below, not a measurement
BYTES_PER_TOKEN = 4.2
#: passes over the training data above which a configuration is noted as repeating its corpus
MANY_EPOCHS = 10.0
#: share of the corpus the validation blocks may take before they are noted
VALIDATION_SHARE = 0.2


def _corpus_size_notes(config: dict[str, Any]) -> list[str]:
    """For a local corpus (``corpus.source: local``): a corpus whose validation blocks would take more than
    :data:`VALIDATION_SHARE` of it, or which a size's schedule would read more than :data:`MANY_EPOCHS` times,
    estimated from the files' bytes (:data:`BYTES_PER_TOKEN`) before anything is tokenized. Files that do not
    exist yet are left to the workflow's own error."""
    from taco.data.local_text import local_input_files_split

    corpus = config.get("corpus") or {}
    if corpus.get("source") != "local" or not corpus.get("paths"):
        return []
    paths = [substitute_root(p, config) for p in corpus["paths"]]
    try:
        files = local_input_files_split(paths, "blank_line")
    except (FileNotFoundError, ValueError):
        return []
    tokens = sum(f.stat().st_size for f, _ in files) / BYTES_PER_TOKEN
    if tokens <= 0:
        return []
    seq = int(config["max_seq_length"])
    val = int(config.get("validation_blocks", 0) or 0) * seq
    out = []
    if val > VALIDATION_SHARE * tokens:
        out.append(f"validation_blocks: {config['validation_blocks']} blocks of {seq} tokens are ~{val / tokens:.0%} of "
                   f"the corpus (~{tokens:,.0f} word pieces estimated from corpus.paths' bytes); fewer validation "
                   "blocks or more text")
    train = max(tokens - val, 1.0)
    sizes = config["pretrain"]["sizes"]
    for name in sorted({e["size"] for e in config["pretrain"]["runs"]}):
        s = sizes[name]
        per_step = int(s["per_device_batch_size"]) * int(s.get("grad_accum", 1) or 1) * max(1, int(s.get("num_gpus", 0) or 0)) * seq
        epochs = int(s["max_steps"]) * per_step / train
        if epochs > MANY_EPOCHS:
            out.append(f"pretrain.sizes.{name}: {s['max_steps']:,} steps read ~{epochs:.0f} passes over the corpus "
                       f"(~{train:,.0f} training word pieces estimated from corpus.paths' bytes): the later budgets "
                       "measure memorising this text as much as learning; more text or fewer steps")
    return out


def multi_node_sizes(config: dict[str, Any]) -> dict[str, int]:
    """Size key -> ``pretrain.sizes.<size>.num_nodes`` of every size a pre-training run uses with more
    than one node (empty when none does)."""
    pre = config["pretrain"]
    used = {r["size"] for r in pre.get("runs") or []}
    return {size: int(s["num_nodes"]) for size, s in pre["sizes"].items()  # the schema fills it (default 1)
            if size in used and int(s["num_nodes"]) > 1}


def _multi_node_note(config: dict[str, Any]) -> str | None:
    sizes = multi_node_sizes(config)
    if not sizes:
        return None
    keys = ", ".join(f"pretrain.sizes.{k}.num_nodes: {n}" for k, n in sizes.items())
    return (f"{keys}: several nodes need a SLURM allocation (--workflow-profile workflow/profiles/slurm); "
            "a run on the local executor refuses to start")


def multi_node_refusal(config: dict[str, Any], local_exec: bool) -> str | None:
    """The error that stops a run on the local executor before any job when a pre-training size asks
    for several nodes (the launcher :mod:`taco.workflow.nodes` needs ``SLURM_JOB_ID``), or None."""
    sizes = multi_node_sizes(config)
    if not local_exec or not sizes:
        return None
    keys = ", ".join(f"pretrain.sizes.{k}.num_nodes: {n}" for k, n in sizes.items())
    return (f"{keys} on the local executor: several nodes need a SLURM allocation; run with "
            "--workflow-profile workflow/profiles/slurm, or set num_nodes: 1. Nothing was run.")


def _tasks_per_job_note(config: dict[str, Any]) -> str | None:
    ft = config.get("finetune") or {}
    if ft.get("tasks_per_job", "one") == "all" and ft.get("mnli_start", False):
        return ("finetune.tasks_per_job: all is not used with finetune.mnli_start: true (RTE, MRPC and STS-B wait "
                "for MNLI's own job): one job per (checkpoint, task), as finetune.seeds_per_job says")
    return None


def profile_gpu_notes(set_resources: Mapping[str, Mapping[str, Any]] | None, config: dict[str, Any]) -> list[str]:
    """Where a profile's ``set-resources`` (Snakemake's per-rule overrides, e.g. the SLURM profile's
    ``pretrain: {gpu: 2}``) gives a GPU rule another ``gpu`` count than the configuration's ``num_gpus``: the
    cluster then allocates that many GPUs while the job launches one process per configured GPU, silently
    idle or short. One line per (rule, size); empty where they agree or nothing is overridden."""
    out = []
    set_resources = set_resources or {}
    sizes = config["pretrain"]["sizes"]
    run_sizes = sorted({e["size"] for e in config["pretrain"]["runs"]})
    wants = {rule: [(f"pretrain.sizes.{n}.num_gpus", int(sizes[n].get("num_gpus", 0) or 0)) for n in run_sizes]
             for rule in ("pretrain", "pretrain_trial", "pretrain_control")}
    ft = int((config.get("finetune") or {}).get("num_gpus", 0) or 0)
    for rule in ("finetune", "finetune_seeds", "finetune_checkpoint", "finetune_trial"):
        wants[rule] = [("finetune.num_gpus", min(ft, 1) if ft else 0)]
    for rule, keys in wants.items():
        given = (set_resources.get(rule) or {}).get("gpu")
        try:
            given = int(getattr(given, "raw", given))
        except (TypeError, ValueError):
            continue
        for key, want in keys:
            if want and given != want:
                out.append(f"the profile's set-resources gives rule {rule} gpu={given}, but {key} is {want}: the "
                           f"cluster allocates {given} GPU(s) and the job uses {want}; set one to the other")
    return out


def warn_profile_gpus(set_resources: Mapping[str, Mapping[str, Any]] | None, config: dict[str, Any]) -> None:
    """Print :func:`profile_gpu_notes` to stderr, one ``WARNING:`` line each (the workflow's start)."""
    import sys

    for line in profile_gpu_notes(set_resources, config):
        print(f"WARNING: {line}", file=sys.stderr)


def gpu_resource_note(provided_gpu: int | None, gpus: int) -> str | None:
    """What Snakemake's ``Provided resources: gpu=N`` means for this run, or None where it is plain.

    ``provided_gpu`` is Snakemake's global ``gpu`` resource (the profile's ``resources:`` or
    ``--resources``; None if not given), ``gpus`` the config key. Snakemake only counts that
    resource: it is a limit on GPUs in use at once, never GPUs found on the machine. The note
    applies when it differs from ``gpus`` (``gpus: 0``: no job requests one; else jobs wait in
    ``taco gpu-slot`` for the ``gpus`` slots whatever Snakemake's limit lets start)."""
    provided = None if provided_gpu is None else int(provided_gpu)
    if provided == int(gpus) or (provided is None and not gpus):
        return None
    if not gpus:
        return (f"Snakemake's \"Provided resources: gpu={provided}\" is a limit from the profile's resources "
                "(or --resources), not GPUs found on this machine; with gpus: 0 no job requests a gpu")
    limit = "no gpu limit" if provided is None else f"a gpu limit of {provided} (the profile's resources or --resources)"
    return (f"gpus: {gpus} GPU slots, but Snakemake has {limit}: it starts GPU jobs up to its limit and "
            f"taco gpu-slot runs them on the {gpus} slots, the rest waiting; keep them equal (--resources gpu={gpus})")


def _check_finetune_tuning(config: dict[str, Any]) -> None:
    """``finetune.tuning`` (when on): a good grid, and trial seeds apart from the reported seeds."""
    ft_tuning = (config.get("finetune") or {}).get("tuning") or {}
    if ft_tuning.get("enabled"):
        from taco.evaluation.finetune_tuning import check_space as check_finetune_space

        errors = check_finetune_space(ft_tuning.get("space"))
        if errors:
            raise ConfigError("; ".join(errors))
        clash = sorted(set(ft_tuning.get("seeds") or []) & set(config["finetune"]["seeds"]))
        if clash:
            raise ConfigError(f"finetune.tuning.seeds: {clash} also in finetune.seeds; the trials' seeds are kept apart "
                              "from the reported runs' (a score that chose its setting would be reported)")


def _check_glue_probe(config: dict[str, Any]) -> None:
    """``pretrain.glue_probe`` (when it has tasks): known GLUE tasks, and a cadence on every size's validation
    points (``every`` a multiple of ``eval_every``; a size without validation points would never probe inside
    its segments)."""
    from taco.registry import GLUE_TASK_SPECS

    gp = config["pretrain"].get("glue_probe") or {}
    if not gp.get("tasks"):
        return
    unknown = [t for t in gp["tasks"] if t not in GLUE_TASK_SPECS]
    if unknown:
        raise ConfigError(f"pretrain.glue_probe.tasks: unknown GLUE task(s) {unknown}; expected some of "
                          f"{', '.join(GLUE_TASK_SPECS)}")
    every = int(gp.get("every", 0) or 0)
    for name, s in config["pretrain"]["sizes"].items():
        ev = int(s.get("eval_every", 0) or 0)
        if every and (not ev or every % ev):
            raise ConfigError(f"pretrain.glue_probe.every: {every} is not a multiple of pretrain.sizes.{name}."
                              f"eval_every ({ev}): the probe runs at validation points")


def _check_runs(pre: dict[str, Any]) -> None:
    """``pretrain.runs``: at least one entry, each with a known size, known objectives and fractions in (0, 1]."""
    sizes = pre["sizes"]
    if not pre["runs"]:
        raise ConfigError("pretrain.runs: no runs configured")
    for i, entry in enumerate(pre["runs"]):
        if entry["size"] not in sizes:
            raise ConfigError(f"pretrain.runs[{i}].size: unknown size {entry['size']!r}; "
                              f"defined in pretrain.sizes: {sorted(sizes)}")
        for v in entry["objectives"]:
            if v not in OBJECTIVES:
                raise ConfigError(f"pretrain.runs[{i}].objectives: unknown objective {v!r}; allowed: "
                                  f"{', '.join(OBJECTIVES)}")
        for f in entry.get("fractions", [1.0]):
            if not 0 < float(f) <= 1:
                raise ConfigError(f"pretrain.runs[{i}].fractions: {f} is outside (0, 1]")


def check_config(config: dict[str, Any], tasks_available: dict[str, str | None] | None = None) -> None:
    """Semantic checks after JSON-schema validation. Raises ConfigError naming the key.

    First normalises the config in place (:func:`normalise_config`: ``results_dir`` in one spelling).
    Besides each key's own checks, the requirements that span keys are checked here, before the first
    job: those of the report steps too (:func:`_check_report_steps`), so that no valid configuration
    fails after the compute.

    ``tasks_available`` (task -> None if present, else the reason it is absent) comes from
    :func:`local_glue_availability` for a local GLUE folder; all-absent is an error. What stops
    nothing is not checked here: :func:`config_notes`.
    """
    normalise_config(config)
    _check_results_dir(config.get("results_dir"))
    pre = config["pretrain"]
    sizes = pre["sizes"]
    _check_runs(pre)

    check_tuning(config)
    _check_finetune_tuning(config)
    _check_glue_probe(config)
    sel = (config.get("finetune") or {}).get("pretrain_seeds", "all")
    if sel != "all":
        known = {int(x) for x in (pre.get("seeds") or [config["seed"]])} | {
            int(x) for e in pre["runs"] for x in (e.get("seeds") or [])}
        unknown = sorted({int(x) for x in sel} - known)
        if unknown:
            raise ConfigError(f"finetune.pretrain_seeds: {unknown} not among pretrain.seeds {sorted(known)}")
    for name, s in sizes.items():
        key = f"pretrain.sizes.{name}"
        if not re.fullmatch(SIZE_PATTERN, str(name)):
            raise ConfigError(f"pretrain.sizes: size name {name!r} is part of every output path and must match "
                              f"{SIZE_PATTERN} (letters, digits, _)")
        if s["preset"] not in PRESETS:
            raise ConfigError(f"{key}.preset: unknown size preset {s['preset']!r}; valid: {PRESETS}")
        b = s["budgets"]
        if any(b2 <= b1 for b1, b2 in zip(b, b[1:])):
            raise ConfigError(f"{key}.budgets: must be strictly increasing, got {b}")
        if b[-1] > s["max_steps"]:
            raise ConfigError(f"{key}.budgets: budget {b[-1]} is beyond max_steps={s['max_steps']}")
        warmup = s.get("warmup_steps")
        if warmup is None:  # the preset's, as taco pretrain applies it
            warmup = PRETRAIN_SCHEDULE[s["preset"]]["warmup_steps"]
        if warmup >= s["max_steps"]:
            raise ConfigError(f"{key}.warmup_steps: {warmup}{'' if 'warmup_steps' in s else ' (the preset default)'} "
                              f">= max_steps={s['max_steps']}")
    for i, entry in enumerate(pre["runs"]):
        batch = sizes[entry["size"]].get("per_device_batch_size")
        short = [v for v in entry["objectives"]
                 if v in OBJECTIVE_SPECS and batch is not None and batch < OBJECTIVE_SPECS[v].min_device_batch]
        if short:
            need = max(OBJECTIVE_SPECS[v].min_device_batch for v in short)
            raise ConfigError(f"pretrain.sizes.{entry['size']}.per_device_batch_size: {batch}, but "
                              f"pretrain.runs[{i}] trains {', '.join(short)}, whose negatives come from the "
                              f"other sequences of the device batch: it needs >= {need}")
        arch = sizes[entry["size"]].get("architecture", DEFAULT_FAMILY)
        other = [v for v in entry["objectives"] if v in OBJECTIVE_SPECS and arch not in OBJECTIVE_SPECS[v].architectures]
        if other:
            raise ConfigError(f"pretrain.runs[{i}]: {', '.join(other)} on size {entry['size']!r}, whose "
                              f"pretrain.sizes.{entry['size']}.architecture is {arch}: "
                              + "; ".join(f"{v} works on {', '.join(OBJECTIVE_SPECS[v].architectures)} only"
                                          for v in other) + " (it reaches those models' own modules)")
    values, where = {}, {}
    for opt in OPTIONS.values():  # the option checks declared by the objective modules
        values[opt.name] = (pre.get(opt.group) or {}).get(opt.key, opt.default)
        where[opt.name] = opt.config_key
    errors = check_options(values, where)
    if errors:
        raise ConfigError("; ".join(errors))
    sel = config["finetune"]["budgets"]
    if isinstance(sel, dict):
        for size, steps in sel.items():
            if size not in sizes:
                raise ConfigError(f"finetune.budgets.{size}: unknown size; defined: {sorted(sizes)}")
            missing = sorted(set(steps) - set(sizes[size]["budgets"]))
            if missing:
                raise ConfigError(f"finetune.budgets.{size}: {missing} are not budgets of pretrain.sizes.{size}")
    for role, spec in config["analysis"]["roles"].items():
        if spec is not None and spec not in sizes:
            raise ConfigError(f"analysis.roles.{role}: {spec!r} is not a key of pretrain.sizes ({sorted(sizes)})")
    for size, names in config["analysis"].get("budget_names", {}).items():
        if size not in sizes:
            raise ConfigError(f"analysis.budget_names.{size}: unknown size; defined: {sorted(sizes)}")
        bad = {n: s for n, s in names.items() if s not in sizes[size]["budgets"]}
        if bad:
            raise ConfigError(f"analysis.budget_names.{size}: {bad} are not budgets of pretrain.sizes.{size}")
    for d in config["dynamics"]["objectives"]:
        if d not in OBJECTIVES:
            raise ConfigError(f"dynamics.objectives: unknown objective {d!r}; allowed: {', '.join(OBJECTIVES)}")
    _check_report_steps(config)
    _check_local_inputs(config, tasks_available)
    _check_mnli_start(config, tasks_available)


def _check_mnli_start(config: dict[str, Any], tasks_available: dict[str, str | None] | None) -> None:
    """``finetune.mnli_start`` needs MNLI and one of RTE, MRPC, STS-B among the tasks that run (ConfigError
    naming the key otherwise; part of :func:`check_config`)."""
    if not config["finetune"].get("mnli_start", False):
        return
    tasks = effective_tasks(config, tasks_available)
    if "mnli" not in tasks:
        why = " (absent from glue.data_dir)" if "mnli" in config["glue"]["tasks"] else ""
        raise ConfigError(f"finetune.mnli_start: true needs mnli among the GLUE tasks run{why}; glue.tasks is "
                          f"{config['glue']['tasks']}: add mnli, or set finetune.mnli_start: false")
    if not mnli_start_tasks(config, tasks):
        raise ConfigError(f"finetune.mnli_start: true starts {', '.join(MNLI_START_TASKS)} from MNLI, but none of "
                          f"them is among the GLUE tasks run ({', '.join(tasks)}): add one, or set "
                          "finetune.mnli_start: false")


def local_glue_availability(config: dict[str, Any]) -> dict[str, str | None] | None:
    """For ``glue.source: local``: task -> None if its files are in ``glue.data_dir``, else why not
    (``taco.data.glue.available_local_tasks``); None for other sources. The ``tasks_available`` of
    :func:`check_config`, as the workflow (``workflow/rules/common.smk``) and ``taco plan`` pass it.
    None too when ``glue.data_dir`` is unset or no folder (:func:`check_config` names the key). Raises
    ConfigError naming ``glue.data_dir`` (or ``data_root``) when the folder cannot be read."""
    if config["glue"]["source"] != "local":
        return None
    from taco.data.glue import available_local_tasks

    data_dir = substitute_root(config["glue"].get("data_dir"), config)
    if not data_dir or not os.path.isdir(data_dir):
        return None  # check_config names glue.data_dir: unset, or not a folder
    try:
        return available_local_tasks(data_dir)
    except OSError as err:
        raise ConfigError(f"glue.data_dir: {err}") from None


def _check_local_inputs(config: dict[str, Any], tasks_available: dict[str, str | None] | None) -> None:
    """The local files a configuration reads (corpus paths, vocabulary, GLUE folder) exist, and the GLUE
    tasks are known and not all absent. Raises ConfigError naming the key (part of :func:`check_config`)."""
    corpus = config["corpus"]
    if corpus["source"] == "local":
        if not corpus["paths"]:
            raise ConfigError("corpus.paths: corpus.source is 'local' but no paths are given")
        for p in corpus["paths"]:
            p = substitute_root(p, config)
            if not os.path.exists(p):
                raise ConfigError(f"corpus.paths: {p} does not exist")
    tok = config["tokenizer"]
    if tok["kind"] == "vocab":
        required_path(config, "tokenizer.vocab_file", tok.get("vocab_file"), "tokenizer.kind is 'vocab'",
                       os.path.isfile, "does not exist")
    glue = config["glue"]
    for i, t in enumerate(glue["tasks"]):
        if t not in GLUE_TASK_NAMES:
            raise ConfigError(f"glue.tasks[{i}]: unknown GLUE task {t!r}; valid: {', '.join(GLUE_TASK_NAMES)}")
    if glue["source"] == "local":
        d = required_path(config, "glue.data_dir", glue.get("data_dir"), "glue.source is 'local'",
                           os.path.isdir, "is not a folder (expected the GLUE layout CoLA/, SST-2/, ...)")
        if tasks_available is not None and not any(
            tasks_available.get(t) is None for t in glue["tasks"]
        ):
            raise ConfigError(f"glue.tasks: none of {glue['tasks']} is present in {d}")


def _check_report_steps(config: dict[str, Any]) -> None:
    """What the report steps need from the grid, checked before the first job (each error names keys).

    - ``aggregate`` (and the tables, figures and claims after it) needs at least one fine-tuned budget
      checkpoint: ``finetune.budgets`` must select a budget of some run of ``pretrain.runs``.
    - ``dynamics_figures`` (figures 6 and 2), with ``dynamics.enabled``: its inputs are the full-data
      runs whose objective is in ``dynamics.objectives``; there must be some, and figure 2 needs MLM's.

    Tables, figures and claims themselves take any grid (a cell that was not run is reported "not
    run"); the analysis keys are checked by :func:`analysis_spec`.
    """
    grid = runs(config)
    if not any(finetune_budgets(config, r.size, r.fraction) for r in grid):
        sizes = sorted({r.size for r in grid})
        raise ConfigError(f"finetune.budgets: {config['finetune']['budgets']!r} selects no budget of the sizes "
                          f"that pretrain.runs trains ({', '.join(sizes)}); aggregate, tables, figures and claims "
                          "need at least one fine-tuned checkpoint")
    dyn = config["dynamics"]
    if not dyn["enabled"]:
        return
    measured = sorted({r.objective for r in grid if r.objective in dyn["objectives"] and r.fraction == 1.0},
                      key=OBJECTIVES.index)
    full = sorted({r.objective for r in grid if r.fraction == 1.0}, key=OBJECTIVES.index)
    if not measured:
        raise ConfigError(f"dynamics.objectives: {dyn['objectives']} has no full-data run in pretrain.runs (full-data "
                          f"objectives: {', '.join(full) or 'none'}), so dynamics_figures would have no input; "
                          "list some of them, or set dynamics.enabled: false")
    if FIGURE2_OBJECTIVE not in measured:
        why = (f"add {FIGURE2_OBJECTIVE} to dynamics.objectives" if FIGURE2_OBJECTIVE in full else
               f"add a full-data {FIGURE2_OBJECTIVE} run to pretrain.runs and {FIGURE2_OBJECTIVE} to dynamics.objectives")
        raise ConfigError(f"dynamics.objectives: {dyn['objectives']} measures {', '.join(measured)}, but figure 2 of "
                          f"dynamics_figures needs {FIGURE2_OBJECTIVE.upper()} checkpoints (a full-data "
                          f"{FIGURE2_OBJECTIVE} run of pretrain.runs); {why}, or set dynamics.enabled: false")
