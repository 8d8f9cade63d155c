"""Pre-training objectives: one module each, registered in one place (:data:`MODULES`).

Each module declares ``DECLARED`` (:class:`taco.objectives.base.Objective`) and, for the loss term
it introduces, ``OPTIONS`` (:class:`taco.objectives.base.Option`) and optional cross-option
``CHECKS``. Everything else derives from them: ``taco.registry.OBJECTIVE_SPECS``, the ``taco
pretrain`` flags and checks, the model's parameters, the workflow's command words, the config
schema's ``pretrain.<group>`` sections (checked by a test), the FLOPs of the plan, the figures'
styles and the deviations report. Torch-free: the bodies that need torch import it themselves.

Adding an objective: write ``taco/objectives/<name>.py`` with ``DECLARED`` (and ``OPTIONS`` if it
adds options), add its module name to :data:`MODULES`, and (with new options) run
``python -m taco.objectives --schema`` to print the schema section to paste.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

from taco.objectives.base import MLM_PROBABILITY, Objective, Option


#: the objective modules, in the order tables list their objectives
MODULES: tuple[str, ...] = ("mlm", "taco", "mlm_tp", "bert_nce", "infoword")


def _load(modules: tuple[str, ...]):
    specs: dict[str, Objective] = {}
    options: dict[str, Option] = {}
    checks: list[Any] = []
    for m in modules:
        mod = importlib.import_module(f"{__name__}.{m}")
        for opt in getattr(mod, "OPTIONS", ()):
            if opt.name in options:
                raise ValueError(f"taco/objectives/{m}.py: option {opt.name!r} is declared twice")
            options[opt.name] = opt
        checks.extend(v for k, v in vars(mod).items() if k.startswith("check_") and callable(v))
        for o in mod.DECLARED:
            if o.name in specs:
                raise ValueError(f"taco/objectives/{m}.py: objective {o.name!r} is declared twice")
            specs[o.name] = o
    for o in specs.values():
        unknown = [g for g in o.options if not any(opt.group == g for opt in options.values())]
        if unknown:
            raise ValueError(f"objective {o.name!r}: no option declares group(s) {unknown}")
    return specs, options, tuple(checks)


#: every pre-training objective, name -> declaration, in table order
OBJECTIVE_SPECS: dict[str, Objective]
#: every objective option, model parameter name -> declaration
OPTIONS: dict[str, Option]
OBJECTIVE_SPECS, OPTIONS, _CHECKS = _load(MODULES)

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
        raise ValueError(
            f"unknown objective {name!r}; valid objectives: {', '.join(OBJECTIVE_SPECS)}"
        ) from None


def options_of(objective: Objective | str) -> tuple[Option, ...]:
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
    errors = []
    for name, value in values.items():
        opt = OPTIONS.get(name)
        if opt is not None:
            msg = opt.check(value, where.get(name, name))
            if msg:
                errors.append(msg)
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
