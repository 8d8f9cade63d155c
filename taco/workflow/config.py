"""The workflow's view of a validated config: the run grid, budgets, paths and the analysis spec.

Pure Python on plain dicts (no Snakemake, no torch import), so the Snakefile stays thin and every
rule's input function is testable. The semantic checks that JSON-schema cannot express are
:mod:`taco.workflow.config_checks`; they raise :class:`ConfigError` naming the offending key before any job runs.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from taco import registry
from taco.families import DEFAULT_FAMILY
from taco.registry import MNLI_START_TASKS, budget_name


class ConfigError(ValueError):
    """A configuration value that cannot work; the message starts with the key's path."""


@dataclass(frozen=True)
class Run:
    """One pre-training run: a size key of ``pretrain.sizes``, an objective, a data fraction and the
    pre-training seed (None: the config's top-level ``seed``, whose runs keep the plain path)."""

    size: str
    objective: str
    fraction: float
    pretrain_seed: int | None = None

    @property
    def fraction_str(self) -> str:
        return fraction_str(self.fraction)

    @property
    def pseed(self) -> str:
        """The path part of the pre-training seed: "" or ``/pretrain-seed-<n>``."""
        return pseed_part(self.pretrain_seed)


#: wildcard regex of the optional pre-training seed part of a run path
PSEED_PATTERN = "(|/pretrain-seed-[0-9]+)"
#: wildcard regex of a size (a key of ``pretrain.sizes``, a part of every run path)
SIZE_PATTERN = "[A-Za-z0-9_]+"
#: characters Snakemake reads in an output path: ``{name}`` a wildcard, ``<name>`` a path variable
#: (Snakemake 9: UndefinedPathvarException)
SNAKEMAKE_PATH_CHARS = "{}<>"


def pseed_part(pretrain_seed: int | None) -> str:
    """"" for the default pre-training seed (None), else ``/pretrain-seed-<n>``."""
    return "" if pretrain_seed is None else f"/pretrain-seed-{int(pretrain_seed)}"


def pretrain_seed_of(config: dict[str, Any], pseed: str) -> int:
    """The pre-training seed of a run path's seed part ("" -> the top-level ``seed``)."""
    return int(pseed.rsplit("-", 1)[1]) if pseed else int(config["seed"])


def pretrain_seeds(config: dict[str, Any]) -> list[int | None]:
    """``pretrain.seeds`` as Run.pretrain_seed values: None stands for the top-level ``seed``."""
    seeds = config["pretrain"].get("seeds") or [config["seed"]]
    return [None if int(s) == int(config["seed"]) else int(s) for s in seeds]


def finetuned(config: dict[str, Any], run: "Run") -> bool:
    """Whether ``run``'s budget checkpoints are fine-tuned (``finetune.pretrain_seeds``: all, or a list
    of pre-training seeds; the run of the top-level ``seed`` is the plain path)."""
    sel = (config.get("finetune") or {}).get("pretrain_seeds", "all")
    if sel == "all":
        return True
    seed = int(config["seed"]) if run.pretrain_seed is None else int(run.pretrain_seed)
    return seed in {int(s) for s in sel}


def fraction_str(fraction: float) -> str:
    """The path form of a data fraction: 1.0 -> "1.0", 0.25 -> "0.25"."""
    return repr(float(fraction))


def substitute_root(value: str | None, config: dict[str, Any]) -> str | None:
    """Replace ``{data_root}`` in a path setting; ConfigError if it is used but unset."""
    if value is None or "{data_root}" not in value:
        return value
    root = config.get("data_root")
    if not root:
        raise ConfigError(f"data_root: {value!r} uses {{data_root}} but data_root is not set "
                          "(pass --config data_root=PATH)")
    return value.replace("{data_root}", str(root))


def entry_seeds(config: dict[str, Any], entry: dict[str, Any]) -> list[int | None]:
    """The pre-training seeds of one ``pretrain.runs`` entry as Run.pretrain_seed values: its own
    ``seeds`` where given (e.g. more replicates for one arm of a comparison), else ``pretrain.seeds``."""
    if not entry.get("seeds"):
        return pretrain_seeds(config)
    return [None if int(s) == int(config["seed"]) else int(s) for s in entry["seeds"]]


def size_seeds(config: dict[str, Any], size: str) -> list[int | None]:
    """The pre-training seeds of ``size``'s full-data runs (its controls' seeds), in run order."""
    out: list[int | None] = []
    for r in runs(config):
        if r.size == size and r.fraction == 1.0 and r.pretrain_seed not in out:
            out.append(r.pretrain_seed)
    return out


def runs(config: dict[str, Any]) -> list[Run]:
    """Every (size, objective, fraction, pre-training seed) run of ``pretrain.runs`` x its seeds
    (:func:`entry_seeds`), in config order (seeds innermost)."""
    out: list[Run] = []
    for entry in config["pretrain"]["runs"]:
        for objective in entry["objectives"]:
            for fraction in entry.get("fractions", [1.0]):
                for pseed in entry_seeds(config, entry):
                    run = Run(entry["size"], objective, float(fraction), pseed)
                    if run not in out:
                        out.append(run)
    return out


def dynamics_checkpoints(config: dict[str, Any]) -> list[tuple["Run", int]]:
    """(run, budget step) of every checkpoint whose learning dynamics are measured.

    ``dynamics.objectives`` on full data, and of each objective one pre-training run only, that of the
    first ``pretrain.seeds`` entry: figures 2 and 6 draw one run per objective and budget. Empty when
    ``dynamics.enabled`` is false. The workflow's targets and ``taco plan``'s job count both use this.
    """
    d = config["dynamics"]
    if not d["enabled"]:
        return []
    first: dict[tuple[str, str], int | None] = {}
    for r in runs(config):  # each (size, objective)'s first seed (pretrain.seeds' first unless a run sets its own)
        first.setdefault((r.size, r.objective), r.pretrain_seed)
    return [(r, s) for r in runs(config)
            if r.objective in d["objectives"] and r.fraction == 1.0 and r.pretrain_seed == first[(r.size, r.objective)]
            for s in budgets(config, r.size)]


def budgets(config: dict[str, Any], size: str) -> list[int]:
    """The budget steps of ``pretrain.sizes.<size>``."""
    return list(config["pretrain"]["sizes"][size]["budgets"])


def previous_budget(config: dict[str, Any], size: str, step: int) -> int | None:
    """The budget before ``step`` (None for the first); KeyError-free: ValueError if not a budget."""
    b = budgets(config, size)
    if step not in b:
        raise ValueError(f"pretrain.sizes.{size}.budgets: {step} is not a budget ({b})")
    i = b.index(step)
    return None if i == 0 else b[i - 1]


def finetune_budgets(config: dict[str, Any], size: str, fraction: float = 1.0) -> list[int]:
    """Budget steps of ``size`` that are fine-tuned (``finetune.budgets``).

    Runs on part of the data (fraction < 1) follow ``finetune.reduced_data_budgets``: "same" as
    the full-data runs, or only the "last" of those.
    """
    sel = config["finetune"]["budgets"]
    b = budgets(config, size)
    if sel == "last":
        chosen = b[-1:]
    elif sel == "all":
        chosen = b
    else:
        chosen = [s for s in b if s in set(sel.get(size, []))]
    if fraction < 1.0 and config["finetune"].get("reduced_data_budgets", "same") == "last":
        return chosen[-1:]
    return chosen


def finetune_hyperparameters(config: dict[str, Any], size: str) -> dict[str, float]:
    """Learning rate and epochs for fine-tuning checkpoints of ``size``: :func:`taco.registry.finetune_hyperparameters`
    of its preset with the config's ``finetune.hyperparameters``."""
    return registry.finetune_hyperparameters(config["pretrain"]["sizes"][size]["preset"],
                                             config["finetune"].get("hyperparameters"))


def required_path(config: dict[str, Any], key: str, value: str | None, because: str,
                   exists, problem: str) -> str:
    """A path setting that must be set (``because`` says why) and pass ``exists``; ConfigError names ``key``."""
    path = substitute_root(value, config)
    if not path:
        raise ConfigError(f"{key}: {because} but no {key.rsplit('.', 1)[-1]} is set")
    if not exists(path):
        raise ConfigError(f"{key}: {path} {problem}")
    return path


def normalise_config(config: dict[str, Any]) -> None:
    """Put path settings in one spelling, in place: ``results_dir`` through :func:`os.path.normpath`
    (``results/tiny/`` and ``./results/tiny`` become ``results/tiny``). Every output path and command
    is built from it, so one spelling per folder keeps Snakemake's record of a job's outputs and
    params the same from run to run (a trailing slash re-planned jobs on every run). An empty
    ``results_dir`` is left for :func:`check_config` to reject."""
    r = config.get("results_dir")
    if isinstance(r, str) and r.strip():
        config["results_dir"] = os.path.normpath(r)


def mnli_start_tasks(config: dict[str, Any], tasks: list[str]) -> tuple[str, ...]:
    """The tasks of ``tasks`` (those that run) that start from the MNLI fine-tuned model of the same
    checkpoint and seed: :data:`MNLI_START_TASKS` with ``finetune.mnli_start`` on and MNLI among
    ``tasks``, else none."""
    if not (config.get("finetune") or {}).get("mnli_start", False) or "mnli" not in tasks:
        return ()
    return tuple(t for t in MNLI_START_TASKS if t in tasks)


#: the objective that figure 2 (``taco dynamics-figures``, paper Section 2.2) analyses
FIGURE2_OBJECTIVE = "mlm"


def effective_tasks(config: dict[str, Any], tasks_available: dict[str, str | None] | None) -> list[str]:
    """Configured tasks that can run (all of them unless a local folder lacks some)."""
    tasks = list(config["glue"]["tasks"])
    if tasks_available is None:
        return tasks
    return [t for t in tasks if tasks_available.get(t) is None]


def _run_spec(config: dict[str, Any], run: Run, names: dict[str, dict[str, int]]) -> dict[str, Any]:
    """One run of the analysis spec; lists its fine-tuned budgets by name where they differ
    from its size's (runs on part of the data with ``finetune.reduced_data_budgets: last``)."""
    spec: dict[str, Any] = {"size": run.size, "objective": run.objective, "fraction": run.fraction}
    steps = finetune_budgets(config, run.size, run.fraction)
    if steps != finetune_budgets(config, run.size):
        by_step = {s: n for n, s in names[run.size].items()}
        spec["budgets"] = [by_step[s] for s in steps if s in by_step]
    return spec


def control_enabled(config: dict[str, Any]) -> bool:
    """Whether the config asks for the no-pre-training control (``pretrain.control``, default false)."""
    return bool(config["pretrain"].get("control", False))


def control_sizes(config: dict[str, Any]) -> list[str]:
    """Sizes (keys of ``pretrain.sizes``) that get a no-pre-training control (``taco.workflow.control``):
    those with a full-data run, in run order; none when ``pretrain.control`` is false. Here, not in
    ``taco.workflow.control``, so that module imports this one and not the other way round."""
    if not control_enabled(config):
        return []
    out: list[str] = []
    for r in runs(config):
        if r.fraction == 1.0 and r.size not in out:
            out.append(r.size)
    return out


def _unique(items: list[Any]) -> list[Any]:
    """``items`` without repeats, first occurrence kept (replicate runs share one entry)."""
    out: list[Any] = []
    for x in items:
        if x not in out:
            out.append(x)
    return out


def analysis_spec(config: dict[str, Any], tasks: list[str],
                  missing_tasks: dict[str, str] | None = None) -> dict[str, Any]:
    """The analysis spec consumed by ``taco aggregate/tables/figures/claims`` (JSON-serialisable)."""
    a = config["analysis"]
    names: dict[str, dict[str, int]] = {}
    for size in config["pretrain"]["sizes"]:
        given = a.get("budget_names", {}).get(size)
        names[size] = dict(given) if given else {budget_name(s): s for s in budgets(config, size)}
    spec = {
        "roles": dict(a["roles"]),
        "budget_names": names,
        "runs": _unique([_run_spec(config, r, names) for r in runs(config)]),
        "budgets": {size: budgets(config, size) for size in config["pretrain"]["sizes"]},
        "finetuned_budgets": {size: finetune_budgets(config, size) for size in config["pretrain"]["sizes"]},
        "tasks": tasks,
        "missing_tasks": dict(missing_tasks or {}),
        "seeds": list(config["finetune"]["seeds"]),
        "controls": control_sizes(config),
        "corpus_source": config["corpus"]["source"],
        "glue_source": config["glue"]["source"],
        "presets": {size: s["preset"] for size, s in config["pretrain"]["sizes"].items()},

        "max_train_samples": config["finetune"].get("max_train_samples"),
        "max_eval_samples": config["finetune"].get("max_eval_samples"),
        "primary_metric": dict(a.get("primary_metric", {})),
        "equivalence_margin": a["equivalence_margin"],
        "improvement_margin": a["improvement_margin"],
        "match_rule": a["match_rule"],
        "improvement_target": a["improvement_target"],
        "efficiency_margin": a["efficiency_margin"],
        "ci_method": a["ci_method"],
        "confidence_level": a["confidence_level"],
        "n_resamples": a["n_resamples"],
        "min_seeds": a["min_seeds"],
        "seed": config["seed"],
    }
    # the encoder family of each size that is not BERT (configs/cpu-real-families.yaml): its GLUE claims are
    # evaluated beside its preset's role size; a configuration without families writes the spec it wrote before
    families = {size: s.get("architecture", DEFAULT_FAMILY) for size, s in config["pretrain"]["sizes"].items()}
    if set(families.values()) != {DEFAULT_FAMILY}:
        spec["architectures"] = families
    # the spec is the validated AnalysisConfig (the same schema `taco aggregate/tables/claims` apply)
    from taco.stats.analysis_config import AnalysisConfigError, validate_analysis

    try:
        return validate_analysis(spec).to_dict()
    except AnalysisConfigError as exc:
        raise ConfigError(f"analysis: {exc}") from None


def glue_probe_words(config: dict[str, Any], every: bool = True) -> list[str]:
    """``--glue-probe-tasks ...`` of config ``pretrain.glue_probe`` for ``taco pretrain`` (``every``: with
    ``--glue-probe-every``) and ``taco init`` (the control); nothing when it has no task, so the params of
    every run made before the probe existed stay as they were. The data are the glue block's."""
    gp = config["pretrain"].get("glue_probe") or {}
    if not gp.get("tasks"):
        return []
    g = config["glue"]
    return (["--glue-probe-tasks", ",".join(gp["tasks"])]
            + (["--glue-probe-every", str(gp.get("every", 0))] if every else [])
            + ["--glue-probe-max-train-samples", str(gp.get("max_train_samples", 5000)),
               "--glue-probe-max-eval-samples", str(gp.get("max_eval_samples", 2000)), "--glue-source", g["source"]]
            + (["--glue-dir", substitute_root(g["data_dir"], config)] if g["source"] == "local" else []))
