"""The analysis spec: what was run and how to compare it (read by aggregate, tables, figures, claims).

The Snakemake workflow writes this file from its config; a user can also write it by hand. It is a
JSON or YAML mapping with these keys (every key optional; defaults are the paper's grid):

``roles``
    ``{"small": <size name>, "base": <size name>}``: which run size plays the paper's BERT-small and
    which BERT-base; either may be ``null`` (not run).
``budget_names``
    ``{size: {"10k": 10000, ...}}``: the paper's budget names mapped to the pre-training steps that
    were actually run (a smoke config may map ``"250k"`` to step 60).
``variants``
    list of ``{size, objective, fraction[, budgets]}``: the pre-training variants run; ``budgets``
    (optional) restricts a variant to some budget names, default all budgets of its size.
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
    one supports the claim; see :mod:`taco.report.claims`).
``reduced_fraction``
    the data fraction of the paper's "25% data" runs (default 0.25).
``confidence_level``, ``n_resamples``, ``ci_method``, ``seed``, ``min_seeds``
    bootstrap / permutation settings and the fewest seeds per cell for a claim to be decidable.
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

Errors name the offending key (``AnalysisConfigError``, a ``ValueError``).
"""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from taco.registry import (DEFAULT_PRIMARY_METRIC, KNOWN_METRICS, OBJECTIVES, PAPER_BUDGET_NAMES,
                           TASK_SCORE_KEYS)

DEFAULTS: dict[str, Any] = {
    "roles": {"small": "small", "base": "base"},
    "budget_names": PAPER_BUDGET_NAMES,
    "variants": [
        {"size": "small", "objective": "mlm", "fraction": 1.0},
        {"size": "small", "objective": "taco", "fraction": 1.0},
        {"size": "small", "objective": "taco_concentrated", "fraction": 1.0},
        {"size": "small", "objective": "mlm_tp", "fraction": 1.0},
        {"size": "small", "objective": "mlm", "fraction": 0.25},
        {"size": "small", "objective": "taco", "fraction": 0.25},
        {"size": "base", "objective": "mlm", "fraction": 1.0},
        {"size": "base", "objective": "taco", "fraction": 1.0},
    ],
    "tasks": ["mnli", "qqp", "qnli", "sst2", "cola", "stsb", "mrpc", "rte"],
    "primary_metric": DEFAULT_PRIMARY_METRIC,
    "equivalence_margin": 0.5,
    "match_rule": "non_inferiority",
    "improvement_target": 1.2,
    "improvement_margin": 0.6,
    "reduced_fraction": 0.25,
    "confidence_level": 0.95,
    "n_resamples": 9999,
    "ci_method": "BCa",
    "seed": 0,
    "min_seeds": 3,
    "budgets": None,
    "finetuned_budgets": None,
    "missing_tasks": {},
    "seeds": None,
    "max_train_samples": None,
    "max_eval_samples": None,
    "controls": [],
}


class AnalysisConfigError(ValueError):
    """An invalid analysis spec; the message names the key."""


@dataclass(frozen=True)
class Variant:
    """One pre-training variant: size name, objective, data fraction, budget names it was run at."""

    size: str
    objective: str
    fraction: float
    budgets: tuple[str, ...] | None = None


@dataclass(frozen=True)
class AnalysisConfig:
    """The validated analysis spec (see the module docstring for each field's meaning and unit)."""

    roles: dict[str, str | None]
    budget_names: dict[str, dict[str, int]]
    variants: tuple[Variant, ...]
    tasks: tuple[str, ...]
    primary_metric: dict[str, str]
    equivalence_margin: float = 0.5
    match_rule: str = "non_inferiority"
    improvement_target: float = 1.2
    improvement_margin: float = 0.6
    reduced_fraction: float = 0.25
    confidence_level: float = 0.95
    n_resamples: int = 9999
    ci_method: str = "BCa"
    seed: int = 0
    min_seeds: int = 3
    budgets: dict[str, tuple[int, ...]] | None = None
    finetuned_budgets: dict[str, tuple[int, ...]] | None = None
    missing_tasks: dict[str, str] = field(default_factory=dict)
    seeds: tuple[int, ...] | None = None
    max_train_samples: int | None = None
    max_eval_samples: int | None = None
    controls: tuple[str, ...] = ()
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

    def variant_budgets(self, variant: Variant) -> dict[str, int]:
        """Budget name -> step for one variant (its own list, else every named budget of its size)."""
        allb = self.budget_names.get(variant.size, {})
        if variant.budgets is None:
            return dict(allb)
        return {b: allb[b] for b in variant.budgets}

    def variant_steps(self, variant: Variant) -> list[int]:
        """Steps a variant was fine-tuned at: ``finetuned_budgets`` of its size when the spec has it
        (restricted to the variant's own ``budgets`` list if any), else its named budgets."""
        named = sorted(self.variant_budgets(variant).values())
        if self.finetuned_budgets is not None and variant.size in self.finetuned_budgets:
            ft = list(self.finetuned_budgets[variant.size])
            return sorted(s for s in ft if variant.budgets is None or s in named)
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

    def has_variant(self, size: str | None, objective: str, fraction: float) -> bool:
        """Whether the spec lists this variant as run."""
        return size is not None and any(
            v.size == size and v.objective == objective and math.isclose(v.fraction, fraction)
            for v in self.variants
        )

    def to_dict(self) -> dict[str, Any]:
        """Plain-dict form (for manifests)."""
        return {
            "roles": dict(self.roles),
            "budget_names": {k: dict(v) for k, v in self.budget_names.items()},
            "variants": [
                {"size": v.size, "objective": v.objective, "fraction": v.fraction,
                 **({"budgets": list(v.budgets)} if v.budgets is not None else {})}
                for v in self.variants
            ],
            "tasks": list(self.tasks),
            "budgets": None if self.budgets is None else {k: list(v) for k, v in self.budgets.items()},
            "finetuned_budgets": None if self.finetuned_budgets is None
            else {k: list(v) for k, v in self.finetuned_budgets.items()},
            "missing_tasks": dict(self.missing_tasks),
            "seeds": None if self.seeds is None else list(self.seeds),
            "max_train_samples": self.max_train_samples, "max_eval_samples": self.max_eval_samples,
            "controls": list(self.controls),
            "primary_metric": dict(self.primary_metric),
            **{k: getattr(self, k) for k in (
                "equivalence_margin", "match_rule", "improvement_target", "improvement_margin",
                "reduced_fraction", "confidence_level", "n_resamples", "ci_method", "seed",
                "min_seeds")},
        }


def _err(key: str, msg: str) -> AnalysisConfigError:
    return AnalysisConfigError(f"analysis spec key '{key}': {msg}")


def _number(raw: Mapping[str, Any], key: str, lo: float | None = None, hi: float | None = None,
            integer: bool = False, lo_open: bool = False, hi_open: bool = False) -> Any:
    val = raw[key]
    if isinstance(val, bool) or not isinstance(val, (int, float)) or (
            isinstance(val, float) and not math.isfinite(val)):
        raise _err(key, f"expected a {'whole ' if integer else ''}number, got {val!r}")
    if integer and int(val) != val:
        raise _err(key, f"expected a whole number, got {val!r}")
    if lo is not None and (val < lo or (lo_open and val == lo)):
        raise _err(key, f"must be {'>' if lo_open else '>='} {lo}, got {val!r}")
    if hi is not None and (val > hi or (hi_open and val == hi)):
        raise _err(key, f"must be {'<' if hi_open else '<='} {hi}, got {val!r}")
    return int(val) if integer else float(val)


def _optional_count(raw: Mapping[str, Any], key: str) -> int | None:
    """A positive whole number or None (e.g. a cap on examples)."""
    return None if raw[key] is None else _number(raw, key, 1, integer=True)


def validate_analysis(spec: Mapping[str, Any] | None) -> AnalysisConfig:
    """Validate a spec mapping, fill defaults, and return an :class:`AnalysisConfig`.

    Raises :class:`AnalysisConfigError` naming the key on an unknown key, a wrong type or a value
    out of range (e.g. a budget step that is not a positive integer, an unknown task or objective,
    a role naming a size with no budgets).
    """
    if spec is None:
        spec = {}
    if not isinstance(spec, Mapping):
        raise AnalysisConfigError(f"analysis spec: expected a mapping at top level, got {type(spec).__name__}")
    unknown = sorted(set(spec) - set(DEFAULTS))
    if unknown:
        raise _err(unknown[0], f"unknown key (known: {', '.join(sorted(DEFAULTS))})")
    raw = copy.deepcopy(DEFAULTS)
    for k, v in spec.items():
        raw[k] = copy.deepcopy(v)
    # primary_metric merges with the defaults (a spec may name only the keys it changes)
    pm = dict(DEFAULT_PRIMARY_METRIC)
    if spec.get("primary_metric") is not None:
        if not isinstance(spec["primary_metric"], Mapping):
            raise _err("primary_metric", "expected a mapping score_key -> metric")
        pm.update(spec["primary_metric"])
    for key, metric in pm.items():
        if key not in DEFAULT_PRIMARY_METRIC:
            raise _err(f"primary_metric.{key}", f"unknown score key (known: {', '.join(DEFAULT_PRIMARY_METRIC)})")
        if metric not in KNOWN_METRICS:
            raise _err(f"primary_metric.{key}", f"unknown metric {metric!r} (known: {', '.join(KNOWN_METRICS)})")

    # budget_names
    bn = raw["budget_names"]
    if not isinstance(bn, Mapping):
        raise _err("budget_names", "expected a mapping size -> {budget name: step}")
    budget_names: dict[str, dict[str, int]] = {}
    for size, names in bn.items():
        if not isinstance(names, Mapping):
            raise _err(f"budget_names.{size}", "expected a mapping budget name -> step")
        budget_names[str(size)] = {}
        for name, step in names.items():
            if isinstance(step, bool) or not isinstance(step, int) or step <= 0:
                raise _err(f"budget_names.{size}.{name}", f"expected a positive integer step, got {step!r}")
            budget_names[str(size)][str(name)] = int(step)
        steps = list(budget_names[str(size)].values())
        if len(set(steps)) != len(steps):
            raise _err(f"budget_names.{size}", "two budget names map to the same step")

    # roles
    roles = raw["roles"]
    if not isinstance(roles, Mapping):
        raise _err("roles", "expected a mapping {small: size, base: size}")
    bad = sorted(set(roles) - {"small", "base"})
    if bad:
        raise _err(f"roles.{bad[0]}", "unknown role (known: small, base)")
    roles = {"small": roles.get("small"), "base": roles.get("base")}
    for role, size in roles.items():
        if size is not None and not isinstance(size, str):
            raise _err(f"roles.{role}", f"expected a size name or null, got {size!r}")
        if size is not None and size not in budget_names:
            raise _err(f"roles.{role}", f"size {size!r} has no entry in budget_names")

    # variants
    if not isinstance(raw["variants"], list):
        raise _err("variants", "expected a list of {size, objective, fraction}")
    variants = []
    for i, v in enumerate(raw["variants"]):
        key = f"variants[{i}]"
        if not isinstance(v, Mapping):
            raise _err(key, "expected a mapping {size, objective, fraction}")
        extra = sorted(set(v) - {"size", "objective", "fraction", "budgets"})
        if extra:
            raise _err(f"{key}.{extra[0]}", "unknown key (known: size, objective, fraction, budgets)")
        for req in ("size", "objective"):
            if req not in v:
                raise _err(f"{key}.{req}", "missing")
        if v["size"] not in budget_names:
            raise _err(f"{key}.size", f"size {v['size']!r} has no entry in budget_names")
        if v["objective"] not in OBJECTIVES:
            raise _err(f"{key}.objective", f"unknown objective {v['objective']!r} (known: {', '.join(OBJECTIVES)})")
        frac = _number({f"{key}.fraction": v.get("fraction", 1.0)}, f"{key}.fraction", 0.0, 1.0, lo_open=True)
        budgets = v.get("budgets")
        if budgets is not None:
            if not isinstance(budgets, list):
                raise _err(f"{key}.budgets", "expected a list of budget names")
            for b in budgets:
                if b not in budget_names[v["size"]]:
                    raise _err(f"{key}.budgets", f"budget {b!r} not in budget_names.{v['size']}")
            budgets = tuple(str(b) for b in budgets)
        variants.append(Variant(str(v["size"]), str(v["objective"]), frac, budgets))

    # tasks
    tasks = raw["tasks"]
    if not isinstance(tasks, list) or not tasks:
        raise _err("tasks", "expected a non-empty list of GLUE task names")
    for i, t in enumerate(tasks):
        if t not in TASK_SCORE_KEYS:
            raise _err(f"tasks[{i}]", f"unknown task {t!r} (known: {', '.join(TASK_SCORE_KEYS)})")
    if len(set(tasks)) != len(tasks):
        raise _err("tasks", "a task is listed twice")

    steps_by_size = {}
    for key in ("budgets", "finetuned_budgets"):
        val = raw[key]
        if val is None:
            steps_by_size[key] = None
            continue
        if not isinstance(val, Mapping):
            raise _err(key, "expected a mapping size -> list of steps")
        steps_by_size[key] = {}
        for size, steps in val.items():
            if not isinstance(steps, list) or any(
                    isinstance(x, bool) or not isinstance(x, int) or x <= 0 for x in steps):
                raise _err(f"{key}.{size}", f"expected a list of positive integer steps, got {steps!r}")
            steps_by_size[key][str(size)] = tuple(int(x) for x in steps)
    missing_tasks = raw["missing_tasks"] or {}
    if not isinstance(missing_tasks, Mapping):
        raise _err("missing_tasks", "expected a mapping task -> reason")
    for t in missing_tasks:
        if t not in TASK_SCORE_KEYS:
            raise _err(f"missing_tasks.{t}", f"unknown task (known: {', '.join(TASK_SCORE_KEYS)})")
    seeds = raw["seeds"]
    if seeds is not None and (not isinstance(seeds, list) or any(
            isinstance(x, bool) or not isinstance(x, int) for x in seeds)):
        raise _err("seeds", f"expected a list of integer seeds, got {seeds!r}")

    controls = raw["controls"] or []
    if not isinstance(controls, list) or any(not isinstance(c, str) for c in controls):
        raise _err("controls", f"expected a list of size names, got {controls!r}")
    for c in controls:
        if c not in budget_names:
            raise _err("controls", f"size {c!r} has no entry in budget_names")

    match_rule = raw["match_rule"]
    if match_rule not in ("equivalence", "non_inferiority"):
        raise _err("match_rule", f"expected 'equivalence' or 'non_inferiority', got {match_rule!r}")
    ci_method = raw["ci_method"]
    if ci_method not in ("BCa", "percentile", "basic"):
        raise _err("ci_method", f"expected 'BCa', 'percentile' or 'basic', got {ci_method!r}")

    return AnalysisConfig(
        roles=roles,
        budget_names=budget_names,
        variants=tuple(variants),
        tasks=tuple(tasks),
        primary_metric=pm,
        equivalence_margin=_number(raw, "equivalence_margin", 0.0, lo_open=True),
        match_rule=match_rule,
        improvement_target=_number(raw, "improvement_target"),
        improvement_margin=_number(raw, "improvement_margin", 0.0),
        reduced_fraction=_number(raw, "reduced_fraction", 0.0, 1.0, lo_open=True),
        confidence_level=_number(raw, "confidence_level", 0.0, 1.0, lo_open=True, hi_open=True),
        n_resamples=_number(raw, "n_resamples", 1, integer=True),
        ci_method=ci_method,
        seed=_number(raw, "seed", 0, integer=True),
        min_seeds=_number(raw, "min_seeds", 2, integer=True),
        budgets=steps_by_size["budgets"],
        finetuned_budgets=steps_by_size["finetuned_budgets"],
        missing_tasks={str(k): str(v) for k, v in missing_tasks.items()},
        seeds=None if seeds is None else tuple(int(x) for x in seeds),
        max_train_samples=_optional_count(raw, "max_train_samples"),
        max_eval_samples=_optional_count(raw, "max_eval_samples"),
        controls=tuple(controls),
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
    from taco.data.textfile import read_utf8

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
