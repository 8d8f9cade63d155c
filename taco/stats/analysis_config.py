"""The analysis spec: what was run and how to compare it (read by aggregate, tables, figures, claims).

The Snakemake workflow writes this file from its config; a user can also write it by hand. It is a
JSON or YAML mapping with these keys (every key optional; defaults are the paper's grid):

``roles``
    ``{"small": <size name>, "base": <size name>}``: which run size plays the paper's BERT-small and
    which BERT-base; either may be ``null`` (not run).
``budget_names``
    ``{size: {"10k": 10000, ...}}``: the paper's budget names mapped to the pre-training steps that
    were actually run (a smoke config may map ``"250k"`` to step 60).
``runs``
    list of ``{size, objective, fraction[, budgets]}``: the pre-training runs; ``budgets``
    (optional) restricts a run to some budget names, default all budgets of its size. (Called
    ``variants`` before 2026-12: a spec with that key is refused with a message naming ``runs``.)
``tasks``
    the GLUE tasks fine-tuned (``mnli`` gives the score keys ``mnli_m`` and ``mnli_mm``).
``primary_metric``
    ``{score_key: metric}`` reported in tables and averaged; ``"mean"`` means the mean of every metric
    recorded for that key (Hugging Face's ``combined_score``). The paper does not say which metric it
    printed (UNKNOWN, see docs/paper-facts.md), so this is a setting.
``equivalence_margin``
    GLUE points (x100): two cells "match" when their difference is shown to lie within +-margin.
``match_rule``
    ``"non_inferiority"`` (default: "TACO-50k matches MLM-250k" means TACO reaches MLM's level, so
    being better never counts against it; equivalence is reported as a detail) or
    ``"equivalence"`` (TOST decides) for the "matches" claims; "competitive" is always
    non-inferiority.
``improvement_target`` / ``improvement_margin``
    GLUE points: "beats by about 1.2" means an improvement of at least target - margin (a larger
    one supports the claim; see :mod:`taco.stats.claims`).
``efficiency_margin``
    the minimum steps-to-target speedup (dimensionless, > 1; default 1.2: a fifth fewer steps) that
    ``taco efficiency``'s claims (E1-E3) must show: supported when the speedup interval's lower bound
    exceeds it, not supported when its upper bound is below it (the paper claims 5x for small, 2x for base).
``reduced_fraction``
    the data fraction of the paper's "25% data" runs (default 0.25).
``confidence_level``, ``n_resamples``, ``ci_method``, ``seed``, ``min_seeds``
    interval / permutation settings and the fewest seeds per cell for a claim to be decidable;
    ``ci_method`` ``"t"`` (default: Student / Welch t, whose coverage holds at 3-5 seeds) or a
    bootstrap method (``"BCa"``, ``"percentile"``, ``"basic"``).
``budgets``, ``finetuned_budgets``
    (written by the workflow) ``{size: [steps]}`` pre-trained and fine-tuned; when
    ``finetuned_budgets`` is given, the expected cells are its steps (named or not).
``missing_tasks``
    (written by the workflow) ``{task: reason}`` for tasks that could not be fine-tuned; tables
    print their columns as n/a with the reason.
``seeds``
    (written by the workflow) the fine-tuning seeds asked for; cells note the ones missing.
``max_train_samples``, ``max_eval_samples``
    (written by the workflow) the caps on training / dev examples per task that fine-tuning ran
    with (``null``: the whole set); the tables' notes say so.
``controls``
    sizes whose no-pre-training control (objective ``control``, step 0: the randomly initialised
    architecture, fine-tuned like the checkpoints) was run; Table 1 and Figure 5 show it and the
    sanity claim "pre-training helps" compares the final MLM checkpoint with it. Default none.
``corpus_source``, ``glue_source``
    (written by the workflow) where the pre-training corpus and the GLUE tasks came from: ``"hub"``,
    ``"local"`` or ``"synthetic"`` (``null``: not said, read as real data). With synthetic tasks every
    title, axis, caption and claim says so and nothing is compared with the paper's numbers.
``presets``
    (written by the workflow) ``{size: model preset}``. A size whose preset is not the paper's size
    it plays (the tiny preset in the role of BERT-small) prints no difference against the published
    numbers. A size missing here counts as the paper's size only when it is named ``small``/``base``.
``architectures``
    (written by the workflow where a size is not BERT) ``{size: encoder family}`` (``bert``, ``roberta``,
    ``modernbert``) of every size; a configuration without families has no such key, and a size missing from it
    counts as one family with the others missing. A size with the preset of a role's size and another family
    (ModernBERT-tiny beside BERT-tiny, ``configs/cpu-real-families.yaml``) gets that role's GLUE claims too, as
    rows of its own (:meth:`AnalysisConfig.family_sizes`).

Errors name the offending key (``AnalysisConfigError``, a ``ValueError``).
"""

from __future__ import annotations

import copy
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from taco.paper import PAPER_GRID, PAPER_TASKS
from taco.registry import (DEFAULT_PRIMARY_METRIC, KNOWN_METRICS, OBJECTIVES, PAPER_BUDGET_NAMES,
                           TASK_SCORE_KEYS)

DEFAULTS: dict[str, Any] = {
    "roles": {"small": "small", "base": "base"},
    "budget_names": PAPER_BUDGET_NAMES,
    "runs": [{"size": role, "objective": o, "fraction": fraction}
             for role, by_fraction in PAPER_GRID.items() for fraction, objectives in by_fraction.items()
             for o in objectives],
    "tasks": list(PAPER_TASKS),
    "primary_metric": DEFAULT_PRIMARY_METRIC,
    "equivalence_margin": 0.5,
    "match_rule": "non_inferiority",
    "improvement_target": 1.2,
    "improvement_margin": 0.6,
    "efficiency_margin": 1.2,
    "reduced_fraction": 0.25,
    "confidence_level": 0.95,
    "n_resamples": 9999,
    "ci_method": "t",
    "seed": 0,
    "min_seeds": 3,
    "budgets": None,
    "finetuned_budgets": None,
    "missing_tasks": {},
    "seeds": None,
    "max_train_samples": None,
    "max_eval_samples": None,
    "controls": [],
    "corpus_source": None,
    "glue_source": None,
    "presets": {},
    "architectures": {},
}


class AnalysisConfigError(ValueError):
    """An invalid analysis spec; the message names the key."""


@dataclass(frozen=True)
class Run:
    """One pre-training run: size name, objective, data fraction, budget names it was run at (its
    pre-training replicates share one entry)."""

    size: str
    objective: str
    fraction: float
    budgets: tuple[str, ...] | None = None


@dataclass(frozen=True)
class AnalysisConfig:
    """The validated analysis spec (see the module docstring for each field's meaning and unit)."""

    roles: dict[str, str | None]
    budget_names: dict[str, dict[str, int]]
    runs: tuple[Run, ...]
    tasks: tuple[str, ...]
    primary_metric: dict[str, str]
    equivalence_margin: float = 0.5
    match_rule: str = "non_inferiority"
    improvement_target: float = 1.2
    improvement_margin: float = 0.6
    efficiency_margin: float = 1.2
    reduced_fraction: float = 0.25
    confidence_level: float = 0.95
    n_resamples: int = 9999
    ci_method: str = "t"
    seed: int = 0
    min_seeds: int = 3
    budgets: dict[str, tuple[int, ...]] | None = None
    finetuned_budgets: dict[str, tuple[int, ...]] | None = None
    missing_tasks: dict[str, str] = field(default_factory=dict)
    seeds: tuple[int, ...] | None = None
    max_train_samples: int | None = None
    max_eval_samples: int | None = None
    controls: tuple[str, ...] = ()
    corpus_source: str | None = None
    glue_source: str | None = None
    presets: dict[str, str] = field(default_factory=dict)
    architectures: dict[str, str] = field(default_factory=dict)
    raw: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    # ---- derived views -------------------------------------------------------------------------
    @property
    def alpha(self) -> float:
        """Significance level ``1 - confidence_level`` (rounded to 12 digits to avoid 0.0500000001)."""
        return round(1.0 - self.confidence_level, 12)

    @property
    def score_keys(self) -> tuple[str, ...]:
        """Score keys of the configured tasks, in task order (``mnli`` -> ``mnli_m``, ``mnli_mm``)."""
        return tuple(k for t in self.tasks for k in TASK_SCORE_KEYS[t])

    def budget_name(self, size: str, step: int) -> str | None:
        """The paper budget name that ``step`` plays for ``size`` (None if the step is not mapped)."""
        for name, s in self.budget_names.get(size, {}).items():
            if int(s) == int(step):
                return name
        return None

    def budget_step(self, size: str | None, name: str) -> int | None:
        """The step run for paper budget ``name`` at ``size`` (None if that budget was not run)."""
        if size is None:
            return None
        return self.budget_names.get(size, {}).get(name)

    def run_budgets(self, run: Run) -> dict[str, int]:
        """Budget name -> step for one run (its own list, else every named budget of its size)."""
        allb = self.budget_names.get(run.size, {})
        if run.budgets is None:
            return dict(allb)
        return {b: allb[b] for b in run.budgets}

    def run_steps(self, run: Run) -> list[int]:
        """Steps a run was fine-tuned at: ``finetuned_budgets`` of its size when the spec has it
        (restricted to the run's own ``budgets`` list if any), else its named budgets."""
        named = sorted(self.run_budgets(run).values())
        if self.finetuned_budgets is not None and run.size in self.finetuned_budgets:
            ft = list(self.finetuned_budgets[run.size])
            return sorted(s for s in ft if run.budgets is None or s in named)
        return named

    def size_steps(self, size: str | None) -> list[tuple[str, int]]:
        """(budget name or '', step) for every named or fine-tuned step of ``size``, by step."""
        if size is None:
            return []
        steps = dict((s, n) for n, s in self.budget_names.get(size, {}).items())
        for s in (self.finetuned_budgets or {}).get(size, ()):
            steps.setdefault(int(s), "")
        return [(n, s) for s, n in sorted(steps.items())]

    def has_control(self, size: str | None) -> bool:
        """Whether the no-pre-training control of ``size`` was run (objective ``control``, step 0)."""
        return size is not None and size in self.controls

    def has_run(self, size: str | None, objective: str, fraction: float) -> bool:
        """Whether the spec lists this (size, objective, fraction) as run."""
        return size is not None and any(
            v.size == size and v.objective == objective and math.isclose(v.fraction, fraction)
            for v in self.runs
        )

    @property
    def synthetic_tasks(self) -> bool:
        """Whether the fine-tuning tasks are this suite's synthetic GLUE-format tasks (a smoke test)."""
        return self.glue_source == "synthetic"

    @property
    def synthetic_corpus(self) -> bool:
        """Whether the pre-training corpus is synthetic."""
        return self.corpus_source == "synthetic"

    def preset_of(self, size: str | None) -> str | None:
        """The model preset of run size ``size`` (``presets``; a size named ``small``/``base`` without
        an entry is that preset; None when unknown)."""
        if size is None:
            return None
        return self.presets.get(size) or (size if size in ("small", "base") else None)

    def family_sizes(self, size: str | None) -> list[str]:
        """The other encoder families run at ``size``'s model preset (``architectures``), in ``budget_names``
        order: the sizes whose claims are evaluated beside ``size``'s (ModernBERT-tiny and RoBERTa-tiny beside
        BERT-tiny). Empty when ``size`` is None or has no recorded preset."""
        preset = self.preset_of(size)
        if size is None or preset is None:
            return []
        family = self.architectures.get(size)
        return [s for s in self.budget_names if s != size and self.preset_of(s) == preset
                and self.architectures.get(s) != family]

    def paper_comparison_blocker(self, size: str | None, role: str) -> str:
        """Why the numbers of ``size`` in the role of BERT-``role`` must not be differenced against the
        paper's published ones ('' when they may): synthetic tasks, or a model that is not that size."""
        if self.synthetic_tasks:
            return "synthetic GLUE-format tasks: no difference against the paper's GLUE numbers"
        preset = self.preset_of(size)
        if size is not None and preset != role:
            what = f"model preset {preset!r}" if preset else f"size {size!r} (preset not recorded)"
            return f"{what} is not BERT-{role}: no difference against BERT-{role}'s published numbers"
        return ""

    def to_dict(self) -> dict[str, Any]:
        """Plain-dict form (for manifests)."""
        return {
            "roles": dict(self.roles),
            "budget_names": {k: dict(v) for k, v in self.budget_names.items()},
            "runs": [
                {"size": v.size, "objective": v.objective, "fraction": v.fraction,
                 **({"budgets": list(v.budgets)} if v.budgets is not None else {})}
                for v in self.runs
            ],
            "tasks": list(self.tasks),
            "budgets": None if self.budgets is None else {k: list(v) for k, v in self.budgets.items()},
            "finetuned_budgets": None if self.finetuned_budgets is None
            else {k: list(v) for k, v in self.finetuned_budgets.items()},
            "missing_tasks": dict(self.missing_tasks),
            "seeds": None if self.seeds is None else list(self.seeds),
            "max_train_samples": self.max_train_samples, "max_eval_samples": self.max_eval_samples,
            "controls": list(self.controls),
            "corpus_source": self.corpus_source, "glue_source": self.glue_source,
            "presets": dict(self.presets),
            **({"architectures": dict(self.architectures)} if self.architectures else {}),
            "primary_metric": dict(self.primary_metric),
            **{k: getattr(self, k) for k in (
                "equivalence_margin", "match_rule", "improvement_target", "improvement_margin",
                "efficiency_margin", "reduced_fraction", "confidence_level", "n_resamples", "ci_method", "seed",
                "min_seeds")},
        }


def _err(key: str, msg: str) -> AnalysisConfigError:
    return AnalysisConfigError(f"analysis spec key '{key}': {msg}")


def analysis_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of an analysis spec; enums come from :mod:`taco.registry`.

    Types, ranges and names are checked here; the cross-references a schema cannot express (a role,
    run or control naming a size of ``budget_names``, a run's budgets among its size's) are
    checked by :func:`validate_analysis`.
    """
    pos_int = {"type": "integer", "minimum": 1}
    steps = {"type": ["object", "null"], "additionalProperties": {"type": "array", "items": pos_int}}
    count = {"type": ["integer", "null"], "minimum": 1}
    tasks = {"enum": list(TASK_SCORE_KEYS)}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "roles": {"type": "object", "additionalProperties": False,
                      "properties": {r: {"type": ["string", "null"]} for r in ("small", "base")}},
            "budget_names": {"type": "object",
                             "additionalProperties": {"type": "object", "additionalProperties": pos_int}},
            "runs": {"type": "array", "items": {
                "type": "object", "additionalProperties": False, "required": ["size", "objective"],
                "properties": {"size": {"type": "string"}, "objective": {"enum": list(OBJECTIVES)},
                               "fraction": {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
                               "budgets": {"type": "array", "items": {"type": "string"}}}}},
            "tasks": {"type": "array", "minItems": 1, "uniqueItems": True, "items": tasks},
            "primary_metric": {"type": ["object", "null"], "additionalProperties": False,
                               "properties": {k: {"enum": list(KNOWN_METRICS)} for k in DEFAULT_PRIMARY_METRIC}},
            "equivalence_margin": {"type": "number", "exclusiveMinimum": 0},
            "match_rule": {"enum": ["equivalence", "non_inferiority"]},
            "improvement_target": {"type": "number"},
            "improvement_margin": {"type": "number", "minimum": 0},
            "efficiency_margin": {"type": "number", "exclusiveMinimum": 1},
            "reduced_fraction": {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
            "confidence_level": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
            "n_resamples": pos_int,
            "ci_method": {"enum": ["t", "BCa", "percentile", "basic"]},
            "seed": {"type": "integer", "minimum": 0},
            "min_seeds": {"type": "integer", "minimum": 2},
            "budgets": steps,
            "finetuned_budgets": steps,
            "missing_tasks": {"type": ["object", "null"], "propertyNames": tasks,
                              "additionalProperties": {"type": "string"}},
            "seeds": {"type": ["array", "null"], "items": {"type": "integer"}},
            "max_train_samples": count,
            "max_eval_samples": count,
            "controls": {"type": ["array", "null"], "items": {"type": "string"}},
            "corpus_source": {"enum": ["hub", "local", "synthetic", None]},
            "glue_source": {"enum": ["hub", "local", "synthetic", None]},
            "presets": {"type": ["object", "null"], "additionalProperties": {"type": "string"}},
            "architectures": {"type": ["object", "null"], "additionalProperties": {"type": "string"}},
        },
    }


def _key_path(path) -> str:
    """A jsonschema error path as the key the message names: ``runs[0].objective``."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _schema_check(spec: Mapping[str, Any]) -> None:
    """Raise AnalysisConfigError naming the key of the first schema violation (in key order)."""
    import jsonschema

    validator = jsonschema.Draft202012Validator(analysis_schema())
    errors = sorted(validator.iter_errors(spec), key=lambda e: [str(x) for x in e.absolute_path])
    if not errors:
        return
    err = errors[0]
    key = _key_path(err.absolute_path)
    if err.validator == "additionalProperties" and not err.absolute_path and isinstance(err.instance, Mapping):
        extra = sorted(set(err.instance) - set(err.schema.get("properties", {})))
        if extra[0] == "variants":
            raise _err("variants", "renamed to runs (2026-12); rebuild the spec (the workflow's analysis_spec "
                       "rule writes it) or rename the key")
        raise _err(extra[0], f"unknown key (known: {', '.join(sorted(DEFAULTS))})")
    if err.validator == "additionalProperties" and isinstance(err.instance, Mapping):
        extra = sorted(set(err.instance) - set(err.schema.get("properties", {})))
        if extra:
            key = f"{key}.{extra[0]}"
    if "propertyNames" in err.schema_path:  # the error is about a key itself: name it
        key = f"{key}.{err.instance}"
    raise _err(key or "(top level)", err.message)


def _check_references(raw: Mapping[str, Any]) -> None:
    """The cross-references of a schema-valid spec; AnalysisConfigError names the key."""
    names = raw["budget_names"]
    for size, by_name in names.items():
        if len(set(by_name.values())) != len(by_name):
            raise _err(f"budget_names.{size}", "two budget names map to the same step")
    for role, size in raw["roles"].items():
        if size is not None and size not in names:
            raise _err(f"roles.{role}", f"size {size!r} has no entry in budget_names")
    for i, v in enumerate(raw["runs"]):
        if v["size"] not in names:
            raise _err(f"runs[{i}].size", f"size {v['size']!r} has no entry in budget_names")
        for b in v.get("budgets") or ():
            if b not in names[v["size"]]:
                raise _err(f"runs[{i}].budgets", f"budget {b!r} not in budget_names.{v['size']}")
    for c in raw["controls"] or ():
        if c not in names:
            raise _err("controls", f"size {c!r} has no entry in budget_names")


def validate_analysis(spec: Mapping[str, Any] | None) -> AnalysisConfig:
    """Validate a spec mapping against :func:`analysis_schema`, fill defaults, check the
    cross-references, and return an :class:`AnalysisConfig`.

    Raises :class:`AnalysisConfigError` naming the key on an unknown key, a wrong type or a value
    out of range (e.g. a budget step that is not a positive integer, an unknown task or objective,
    a role naming a size with no budgets).
    """
    if spec is None:
        spec = {}
    if not isinstance(spec, Mapping):
        raise AnalysisConfigError(f"analysis spec: expected a mapping at top level, got {type(spec).__name__}")
    _schema_check(spec)
    raw = copy.deepcopy(DEFAULTS)
    raw.update(copy.deepcopy(dict(spec)))
    raw["roles"] = {"small": raw["roles"].get("small"), "base": raw["roles"].get("base")}
    _check_references(raw)
    # primary_metric merges with the defaults (a spec may name only the keys it changes)
    pm = {**DEFAULT_PRIMARY_METRIC, **(spec.get("primary_metric") or {})}
    steps = {k: None if raw[k] is None else {str(s): tuple(int(x) for x in v) for s, v in raw[k].items()}
             for k in ("budgets", "finetuned_budgets")}
    return AnalysisConfig(
        roles=raw["roles"],
        budget_names={str(s): {str(n): int(x) for n, x in b.items()} for s, b in raw["budget_names"].items()},
        runs=tuple(Run(str(v["size"]), str(v["objective"]), float(v.get("fraction", 1.0)),
                       None if v.get("budgets") is None else tuple(str(b) for b in v["budgets"]))
                   for v in raw["runs"]),
        tasks=tuple(raw["tasks"]),
        primary_metric=pm,
        equivalence_margin=float(raw["equivalence_margin"]),
        match_rule=raw["match_rule"],
        improvement_target=float(raw["improvement_target"]),
        improvement_margin=float(raw["improvement_margin"]),
        efficiency_margin=float(raw["efficiency_margin"]),
        reduced_fraction=float(raw["reduced_fraction"]),
        confidence_level=float(raw["confidence_level"]),
        n_resamples=int(raw["n_resamples"]),
        ci_method=raw["ci_method"],
        seed=int(raw["seed"]),
        min_seeds=int(raw["min_seeds"]),
        budgets=steps["budgets"],
        finetuned_budgets=steps["finetuned_budgets"],
        missing_tasks={str(k): str(v) for k, v in (raw["missing_tasks"] or {}).items()},
        seeds=None if raw["seeds"] is None else tuple(int(x) for x in raw["seeds"]),
        max_train_samples=raw["max_train_samples"],
        max_eval_samples=raw["max_eval_samples"],
        controls=tuple(raw["controls"] or ()),
        corpus_source=raw["corpus_source"],
        glue_source=raw["glue_source"],
        presets={str(k): str(v) for k, v in (raw["presets"] or {}).items()},
        architectures={str(k): str(v) for k, v in (raw["architectures"] or {}).items()},
        raw=raw,
    )


def load_analysis(path: str | Path | None) -> AnalysisConfig:
    """Read and validate an analysis spec file (``.json``, or YAML for any other suffix).

    ``None`` gives the defaults (the paper's grid). Raises FileNotFoundError naming the path, and
    :class:`AnalysisConfigError` naming the file and key on invalid content.
    """
    if path is None:
        return validate_analysis({})
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"analysis spec {path}: no such file")
    from taco.textfile import read_utf8

    text = read_utf8(path, "analysis spec", error=AnalysisConfigError)
    try:
        if path.suffix.lower() == ".json":
            data = json.loads(text)
        else:
            import yaml

            data = yaml.safe_load(text)
    except Exception as exc:  # noqa: BLE001 - re-raised with the file named
        raise AnalysisConfigError(f"analysis spec {path}: cannot parse: {exc}") from exc
    try:
        return validate_analysis(data)
    except AnalysisConfigError as exc:
        raise AnalysisConfigError(f"{path}: {exc}") from None


def budget_steps_from_name(name: str) -> int | None:
    """``'250k'`` -> 250000, ``'1M'`` -> 1000000; None if the name is not of that form."""
    m = re.fullmatch(r"(\d+(?:\.\d+)?)([kKmM]?)", name or "")
    if not m:
        return None
    mult = {"": 1, "k": 1000, "m": 1_000_000}[m.group(2).lower()]
    return int(round(float(m.group(1)) * mult))
