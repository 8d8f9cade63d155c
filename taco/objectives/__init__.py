"""Pre-training objectives: one module each, found by a package scan (and an entry-point group).

Each module declares ``DECLARED`` (:class:`taco.objectives.base.Objective`) and, for the loss term it
introduces, ``OPTIONS`` (:class:`taco.parameters.Parameter`, made by :func:`taco.parameters.objective_option`)
and optional cross-option ``check_*`` functions. Everything else derives from them:
``taco.registry.OBJECTIVES``, the ``taco pretrain`` flags and checks, the model's parameters, the workflow's
command words, the config schema's ``pretrain.<group>`` sections, the FLOPs of the plan, the figures' styles
and the deviations report. Torch-free: the bodies that need torch import it themselves.

Adding an objective: write ``taco/objectives/<name>.py`` with ``DECLARED`` (and ``OPTIONS`` if it adds
options); nothing else in taco names it, and its options are settable in the configuration
(``pretrain.<group>.<key>``: the workflow's schema adds every group,
:func:`taco.workflow.schema.workflow_schema`). Every module of this package except :mod:`base` (and
``_``-prefixed ones) is an objective module. Another package adds objectives without editing taco through the
entry-point group :data:`ENTRY_POINT_GROUP` (``[project.entry-points."taco.objectives"] myobjective =
"mypackage.myobjective"``, a module of the same form). Objectives are ordered as the paper's tables list them
(:data:`taco.paper.OBJECTIVE_ORDER`), the others after them by name.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import ModuleType
from typing import Any

from taco.objectives.base import MLM_PROBABILITY, Objective
from taco.paper import OBJECTIVE_ORDER
from taco.parameters import Parameter, check_values

#: entry-point group through which another installed package adds objective modules
ENTRY_POINT_GROUP = "taco.objectives"
#: modules of this package that declare no objective
_SUPPORT_MODULES = ("base",)


def _order(name: str) -> tuple[int, str]:
    return (OBJECTIVE_ORDER.index(name), "") if name in OBJECTIVE_ORDER else (len(OBJECTIVE_ORDER), name)


def _modules() -> list[ModuleType]:
    """The objective modules: this package's (a scan), then the entry points', in table order; a module that
    fails to import or declares no objective is left out and named (:func:`taco.plugins.load_modules`, kept in
    :data:`BROKEN`)."""
    from taco.plugins import load_modules

    def declares(mod: ModuleType) -> str | None:
        decl = getattr(mod, "DECLARED", None)
        ok = isinstance(decl, tuple) and decl and all(isinstance(o, Objective) for o in decl)
        return None if ok else ("an objective module must declare DECLARED (a tuple of "
                                "taco.objectives.base.Objective); helper modules start with '_'")

    mods, broken = load_modules(__name__, __path__, ENTRY_POINT_GROUP, "objective", _SUPPORT_MODULES, declares)
    BROKEN.update(broken)
    return sorted(mods, key=lambda m: min(_order(o.name) for o in m.DECLARED))


def _load(mods: list[ModuleType]):
    specs: dict[str, Objective] = {}
    options: dict[str, Parameter] = {}
    checks: list[Any] = []
    for mod in mods:
        where = getattr(mod, "__file__", mod.__name__)
        for opt in getattr(mod, "OPTIONS", ()):
            if opt.name in options:
                raise ValueError(f"{where}: option {opt.name!r} is declared twice")
            options[opt.name] = opt
        checks.extend(v for k, v in vars(mod).items() if k.startswith("check_") and callable(v))
        for o in mod.DECLARED:
            if o.name in specs:
                raise ValueError(f"{where}: objective {o.name!r} is declared twice")
            specs[o.name] = o
    for o in specs.values():
        unknown = [g for g in o.options if not any(opt.group == g for opt in options.values())]
        if unknown:
            raise ValueError(f"objective {o.name!r}: no option declares group(s) {unknown}")
    specs = dict(sorted(specs.items(), key=lambda kv: _order(kv[0])))
    return specs, options, tuple(checks)


#: objective modules left out (where -> why): they failed to import or declare no objective
BROKEN: dict[str, str] = {}
#: every pre-training objective, name -> declaration, in table order
OBJECTIVE_SPECS: dict[str, Objective]
#: every objective option, model parameter name -> declaration
OPTIONS: dict[str, Parameter]
OBJECTIVE_SPECS, OPTIONS, _CHECKS = _load(_modules())

#: every loss term some objective logs, in first-seen order (``mlm`` first): the ``<term>_loss``
#: fields of the model output and the columns of the training log
LOSS_TERMS: tuple[str, ...] = tuple(dict.fromkeys(t for o in OBJECTIVE_SPECS.values() for t in o.terms))


#: every objective parameter the model stores (``config.taco_<name>``) and its default: the options
#: declared by the objective modules, and the MLM selection probability all of them share (recorded
#: for provenance; the collator applies it)
DEFAULT_OBJECTIVE_PARAMS: dict[str, float | int | str] = {**{n: o.default for n, o in OPTIONS.items()},
                                                          "mlm_probability": MLM_PROBABILITY}


def get_objective(name: str) -> Objective:
    """Return the registered objective ``name``; ``ValueError`` lists the valid names otherwise."""
    try:
        return OBJECTIVE_SPECS[name]
    except (KeyError, TypeError):
        broken = "".join(f"; left out: {w} ({why})" for w, why in BROKEN.items())
        raise ValueError(
            f"unknown objective {name!r}; valid objectives: {', '.join(OBJECTIVE_SPECS)}{broken}"
        ) from None


def options_of(objective: Objective | str) -> tuple[Parameter, ...]:
    """The options ``objective`` uses (its groups'), in declaration order."""
    o = OBJECTIVE_SPECS[objective] if isinstance(objective, str) else objective
    return tuple(opt for opt in OPTIONS.values() if opt.group in o.options)


def option_defaults() -> dict[str, Any]:
    """Parameter name -> default, for every option of every objective."""
    return {name: opt.default for name, opt in OPTIONS.items()}


def check_options(values: Mapping[str, Any], where: Mapping[str, str] | None = None) -> list[str]:
    """Error messages for bad option ``values`` (parameter name -> value); empty when all are valid.

    ``where`` maps a parameter name to how the caller names it (a CLI flag or a config key);
    the default is the model parameter name. Cross-option rules (``check_*`` of the modules) too.
    """
    where = where or {}
    errors = check_values(tuple(OPTIONS.values()), dict(values), {name: where.get(name, name) for name in values})
    if not errors:
        errors.extend(msg for check in _CHECKS if (msg := check(dict(values), dict(where))))
    return errors


def hashed_options(objective: Objective | str, values: Mapping[str, Any]) -> dict[str, Any]:
    """The option values that enter a run's config hash (``taco pretrain``).

    Options with ``hash_always`` appear for every objective (at their default when the objective does
    not use them, so e.g. the TC temperature never changes an MLM run's hash, and the hashes of runs
    made before an option existed stay the same); the others only for objectives that use them
    (``hash_when_default=False``: only when not at the default).
    """
    o = OBJECTIVE_SPECS[objective] if isinstance(objective, str) else objective
    used = {opt.name for opt in options_of(o)}
    out: dict[str, Any] = {}
    for name, opt in OPTIONS.items():
        value = values.get(name, opt.default)
        if opt.hash_always:
            out[name] = value if name in used else opt.default
        elif name in used and (opt.hash_when_default or value != opt.default):
            out[name] = value
    return out


def schema_sections() -> dict[str, dict[str, Any]]:
    """``pretrain.<group>`` -> its JSON-schema object (``workflow/schemas/config.schema.yaml``)."""
    out: dict[str, dict[str, Any]] = {}
    for opt in OPTIONS.values():
        out.setdefault(opt.group, {})[opt.key] = opt.schema()
    return out
