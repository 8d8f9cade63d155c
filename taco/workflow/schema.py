"""The project's own check of a configuration against ``workflow/schemas/config.schema.yaml``, run before
Snakemake's ``validate``.

Snakemake's ``validate`` reports the first violation with the whole schema around it (about 1,240
lines for an unknown key) or, through ``taco plan``, only "Error validating config file".
:func:`check_schema` validates the same way (JSON Schema draft 2020-12, defaults filled first as
Snakemake fills them) but reports each violation in one line: the key (``pretrain.sizes.tiny.preset``,
``pretrain.runs[0].size``), the bad value and what is allowed (the enum's values, the known keys with
the closest one suggested, the type, the bounds). The Snakefile and ``taco plan`` call it first;
Snakemake's ``validate`` still runs afterwards and fills the defaults.

The objectives' option groups (``pretrain.tc``, ``pretrain.tp``, ... one per loss term) are not in the YAML
file: :func:`workflow_schema` adds them from the declarations (:func:`taco.objectives.schema_sections`), so a
new objective's options are settable in the configuration with no schema edit, and :func:`schema_file` writes
that whole schema where Snakemake's ``validate`` (which takes a path) reads it.
"""

from __future__ import annotations

import copy
import difflib
import hashlib
import json
import os
import re
import tempfile
from pathlib import Path
from typing import Any

#: The schema the workflow validates against.
SCHEMA = Path(__file__).resolve().parents[2] / "workflow" / "schemas" / "config.schema.yaml"

#: At most this many violations are listed (the rest are counted).
MAX_ERRORS = 8

#: Keys renamed once (one word per concept), by their place with list indices as ``[]``:
#: an old key is refused with a message naming the new one, never silently ignored or accepted.
RENAMED_KEYS = {
    "pretrain.runs[].variants": "objectives",
    "dynamics.variants": "objectives",
    # one word per concept: `negatives` was a count under tc and a source under nce (flags and the
    # hashed parameter names stay: --tc-negatives / tc_num_negatives, --nce-negatives / nce_negatives)
    "pretrain.tc.negatives": "num_negatives",
    "pretrain.nce.negatives": "negative_source",
}

_TYPE_NAMES = {"string": "a string", "integer": "an integer", "number": "a number", "boolean": "true/false",
               "array": "a list", "object": "a mapping", "null": "null"}


class SchemaError(ValueError):
    """A configuration that does not match the schema; the message names each key, value and what is
    allowed, one violation per line."""


def _key(path) -> str:
    """``pretrain.runs[0].size`` from a jsonschema path."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def _renamed_to(key: str) -> str | None:
    """The new name of a renamed key (``pretrain.runs[3].variants`` -> ``objectives``), else None."""
    return RENAMED_KEYS.get(re.sub(r"\[\d+\]", "[]", key))


def _value(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _type_of(value: Any) -> str:
    for name, py in (("null", type(None)), ("boolean", bool), ("integer", int), ("number", float), ("string", str),
                     ("array", list), ("object", dict)):
        if isinstance(value, py):
            return _TYPE_NAMES[name]
    return type(value).__name__


def _allowed(schema: dict[str, Any]) -> str:
    """What a (sub)schema allows, in words: enum values, const, type(s) with bounds, alternatives."""
    if not isinstance(schema, dict):
        return "anything" if schema is True else "nothing"
    if "enum" in schema:
        return "one of " + ", ".join(_value(v, 40) for v in schema["enum"])
    if "const" in schema:
        return f"exactly {_value(schema['const'], 40)}"
    alts = schema.get("anyOf") or schema.get("oneOf")
    if alts:
        return " or ".join(_allowed(a) for a in alts)
    types = schema.get("type")
    words = []
    if types:
        types = [types] if isinstance(types, str) else types
        words.append(" or ".join(_TYPE_NAMES.get(t, t) for t in types))
    bounds = [f">= {schema['minimum']}" if "minimum" in schema else "",
              f"> {schema['exclusiveMinimum']}" if "exclusiveMinimum" in schema else "",
              f"<= {schema['maximum']}" if "maximum" in schema else "",
              f"< {schema['exclusiveMaximum']}" if "exclusiveMaximum" in schema else ""]
    if any(bounds):
        words.append(" and ".join(b for b in bounds if b))
    if "pattern" in schema:
        words.append(f"matching {schema['pattern']!r}")
    if "minItems" in schema:
        words.append(f"at least {schema['minItems']} item(s)")
    if schema.get("type") == "array" and isinstance(schema.get("items"), dict) and "enum" in schema["items"]:
        words.append("items " + _allowed(schema["items"]))
    return ", ".join(words) or "see the schema"


def _describe(error) -> str:
    """One line for one jsonschema error: key, bad value, allowed."""
    key, inst, sch = _key(error.absolute_path), error.instance, error.schema
    kind = error.validator
    if kind == "additionalProperties":
        known = sorted(sch.get("properties", {}))
        extra = sorted(k for k in inst if k not in sch.get("properties", {}))
        lines = []
        for k in extra:
            where = f"{key}.{k}" if error.absolute_path else str(k)
            new = _renamed_to(where)
            if new is not None:
                lines.append(f"{where}: renamed to {where.rsplit('.', 1)[0]}.{new} (2026-12); rename the key "
                             "in your configuration, its meaning is unchanged")
                continue
            close = difflib.get_close_matches(str(k), known, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            lines.append(f"{where}: unknown key{hint}; allowed keys{' of ' + key if error.absolute_path else ''}: "
                         f"{', '.join(known)}")
        return "\n".join(lines)
    if kind == "required":
        missing = [k for k in error.validator_value if k not in inst
                   and not any(_renamed_to(f"{key}.{old}") == k for old in inst)]
        if not missing:  # only keys present under their old name: the "renamed to" line says it
            return ""
        return f"{key}: missing required key(s) {', '.join(missing)}"
    if kind == "enum":
        return f"{key}: {_value(inst)} is not allowed; allowed: {_allowed(sch)}"
    if kind == "type":
        return f"{key}: {_value(inst)} is {_type_of(inst)}; allowed: {_allowed(sch)}"
    if kind in ("anyOf", "oneOf"):
        return f"{key}: {_value(inst)} matches none of the alternatives; allowed: {_allowed(sch)}"
    if kind in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "pattern", "const",
                "minItems", "maxItems", "minLength"):
        return f"{key}: {_value(inst)} is not allowed; allowed: {_allowed(sch)}"
    return f"{key}: {_value(inst)}: {error.message[:200]}"


def _fill_defaults_validator(schema: dict[str, Any]):
    """A draft 2020-12 validator that fills ``default`` values into the instance while validating, as
    ``snakemake.utils.validate`` does, so a key the schema defaults is never reported missing."""
    from jsonschema import Draft202012Validator, validators

    properties = Draft202012Validator.VALIDATORS["properties"]

    def set_defaults(validator, props, instance, sch):
        if isinstance(instance, dict):
            for name, sub in props.items():
                if isinstance(sub, dict) and "default" in sub:
                    instance.setdefault(name, copy.deepcopy(sub["default"]))
        yield from properties(validator, props, instance, sch)

    return validators.extend(Draft202012Validator, {"properties": set_defaults})(schema)


def workflow_schema(schema_path: str | Path = SCHEMA) -> dict[str, Any]:
    """The configuration's JSON schema: the YAML file ``schema_path`` with every objective option group added
    under ``pretrain`` (``pretrain.<group>``: its keys, types, bounds and defaults from the option
    declarations, no other key; :func:`taco.objectives.schema_sections`), the pre-training recipe's properties
    (``pretrain.sizes.<size>.*``, ``pretrain.mlm_probability``; the encoder families' names as the values of
    ``architecture``) from :mod:`taco.training.recipe`, and the fine-tuning recipe's
    properties (``finetune.*``, ``finetune.hyperparameters.<preset>.*``) from their declarations
    (:data:`taco.evaluation.finetune_recipe.FINETUNE_RECIPE`). ValueError names a
    group or property that the YAML file declares itself (it would be declared twice)."""
    import yaml

    from taco.evaluation.finetune_recipe import FINETUNE_RECIPE
    from taco.objectives import OBJECTIVE_SPECS, schema_sections
    from taco.training.recipe import RECIPE, RECIPE_AFTER_OBJECTIVE

    schema = yaml.safe_load(Path(schema_path).read_text(encoding="utf-8"))
    pretrain = schema["properties"]["pretrain"]["properties"]
    size = pretrain["sizes"]["additionalProperties"]["properties"]
    finetune = schema["properties"]["finetune"]["properties"]
    per_preset = finetune["hyperparameters"]["additionalProperties"].setdefault("properties", {})
    for param in (*RECIPE, *RECIPE_AFTER_OBJECTIVE, *FINETUNE_RECIPE):  # the recipes, from their declarations
        where = (size if param.per_size else per_preset if param.per_preset
                 else finetune if param.config_key.startswith("finetune.") else pretrain)
        if param.key in where:
            raise ValueError(f"{schema_path}: {param.config_key} is added from its declaration (taco/training/recipe.py, "
                             "taco/evaluation/finetune_recipe.py); remove it from the schema file")
        where[param.key] = param.schema()
    for group, props in schema_sections().items():
        if group in pretrain:
            raise ValueError(f"{schema_path}: pretrain.{group} is an objective option group, declared by the "
                             "objective modules; remove it from the schema file")
        users = [o.label for o in OBJECTIVE_SPECS.values() if group in o.options]
        pretrain[group] = {"type": "object", "additionalProperties": False, "default": {},
                           "description": f"options of the {group} loss term, passed to {', '.join(users)} only "
                                          f"(flags --{group}-*; declared in the objective modules)",
                           "properties": props}
    return schema


def schema_file(schema_path: str | Path = SCHEMA) -> Path:
    """:func:`workflow_schema` written as JSON to a file named by its content's hash in the temporary folder
    (atomically, once per content), for Snakemake's ``validate``, which takes a path."""
    text = json.dumps(workflow_schema(schema_path), sort_keys=True, indent=1)
    target = Path(tempfile.gettempdir()) / f"taco-config-schema-{hashlib.sha256(text.encode()).hexdigest()[:16]}.json"
    if not target.is_file():
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".taco-config-schema-")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, target)
    return target


def schema_errors(config: dict[str, Any], schema_path: str | Path = SCHEMA) -> list[str]:
    """One line per violation of the schema (:func:`workflow_schema` of ``schema_path``) by ``config`` (not
    modified), in the config's key order; empty if it matches."""
    schema = workflow_schema(schema_path)
    validator = _fill_defaults_validator(schema)
    instance = copy.deepcopy(config)
    errors = sorted(validator.iter_errors(instance), key=lambda e: [str(p) for p in e.absolute_path])
    lines: list[str] = [f"{key}: {value!r} is not a finite number (YAML's .nan / .inf)"
                        for key, value in _non_finite(config)]
    for err in errors:
        for line in filter(None, _describe(err).splitlines()):
            if line not in lines:
                lines.append(line)
    return lines


def _non_finite(node: Any, key: str = "") -> list[tuple[str, float]]:
    """(dotted key, value) of every NaN or infinite float below ``node`` (JSON Schema's bounds let them pass:
    every comparison with NaN is false)."""
    import math

    if isinstance(node, float) and not math.isfinite(node):
        return [(key, node)]
    if isinstance(node, dict):
        return [x for k, v in node.items() for x in _non_finite(v, f"{key}.{k}" if key else str(k))]
    if isinstance(node, list):
        return [x for i, v in enumerate(node) for x in _non_finite(v, f"{key}[{i}]")]
    return []


def check_schema(config: dict[str, Any], schema_path: str | Path = SCHEMA) -> None:
    """Raise :class:`SchemaError` listing every violation (at most :data:`MAX_ERRORS`, one a line) of
    ``config`` against the schema; return quietly if it matches."""
    lines = schema_errors(config, schema_path)
    if not lines:
        return
    shown = lines[:MAX_ERRORS] + ([f"... and {len(lines) - MAX_ERRORS} more"] if len(lines) > MAX_ERRORS else [])
    raise SchemaError(f"configuration does not match {Path(schema_path).name}:\n  " + "\n  ".join(shown))


if __name__ == "__main__":  # python -m taco.workflow.schema: the whole schema, declared properties included
    import yaml

    print(yaml.safe_dump(workflow_schema(), sort_keys=False, width=120))
