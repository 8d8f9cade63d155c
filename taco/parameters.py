"""One declaration type for every parameter a command takes from the configuration.

A :class:`Parameter` is declared once, beside the code it configures: the objective options in their
objective's module (``taco/objectives/*.py``; the TC options beside the TC loss, :mod:`taco.tc.options`),
the pre-training recipe in :mod:`taco.training.recipe`,
the fine-tuning recipe in :mod:`taco.evaluation.finetune_recipe`. From the declaration come

- the command's flag (:meth:`Parameter.add_to`: type or choices, default, help naming the config key),
- the check of a value, by the command and by the workflow before any job (:meth:`Parameter.check`),
- the config schema's property (:meth:`Parameter.schema`; ``workflow/schemas/config.schema.yaml``
  holds it, and ``tests/test_parameters.py`` checks that every declared property agrees),
- the workflow's command words (:meth:`Parameter.value` read from the validated config, then ``flag``),
- the default: the same for the command run by hand and for the workflow.

In the spirit of Hugging Face's argument dataclasses, without their parser: the suite's commands keep
argparse, and a parameter's three names (config key, flag, ``name``) are written side by side.
``name`` is the argparse destination and, for the objective options, the model's parameter
(``config.taco_<name>``) and the key in a run's config hash; a word renamed in the config keeps its
hashed ``name`` and its flag, so finished runs keep their hashes and their commands (``docs/glossary.md``).
Torch-free.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any

#: the placeholder of a per-size key: ``pretrain.sizes.<size>.learning_rate``
SIZE = "<size>"
#: the placeholder of a per-preset key: ``finetune.hyperparameters.<preset>.learning_rate`` (its default is the
#: model preset's, :data:`taco.registry.FINETUNE_HYPERPARAMETERS`; the workflow reads it per checkpoint)
PRESET = "<preset>"


@dataclass(frozen=True)
class Parameter:
    """One parameter, declared once.

    Attributes:
        flag: the command-line flag (``--tc-temperature``).
        config_key: the dotted configuration key (``pretrain.tc.temperature``;
            ``pretrain.sizes.<size>.learning_rate`` for a per-size key).
        name: the argparse destination; for objective options also the model parameter
            (``config.taco_<name>``) and the key in the run's config hash.
        default: the value when neither the configuration nor the command line sets it (the same for
            both); ``None`` for a parameter whose default the command derives (the preset's schedule).
        help: one line for the command's help and the schema's description.
        type: ``int``, ``float``, ``str`` or ``bool``; the default's type when not given.
        minimum / exclusive_minimum / maximum / exclusive_maximum: numeric bounds.
        choices: allowed values of a string parameter.
        odd: an odd integer is required (the TC window).
        hash_always / hash_when_default / pass_default: how an objective option enters the config
            hash and the workflow's command (``taco.objectives.hashed_options``,
            ``taco.workflow.commands.Commands.pretrain_args``): ``hash_always`` keeps it in every run's
            hash at its default (the options that existed when the hash was introduced);
            ``hash_when_default=False`` leaves it out while at its default (options added later);
            ``pass_default=False`` writes its flag only when the value differs from the default.
    """

    flag: str
    config_key: str
    name: str
    default: Any
    help: str
    type: type | None = None
    minimum: float | None = None
    exclusive_minimum: float | None = None
    maximum: float | None = None
    exclusive_maximum: float | None = None
    choices: tuple[str, ...] | None = None
    odd: bool = False
    hash_always: bool = False
    hash_when_default: bool = True
    pass_default: bool = True

    def __post_init__(self) -> None:
        if self.type is None:
            if self.default is None:
                raise ValueError(f"{self.config_key}: a parameter without a default needs its type")
            object.__setattr__(self, "type", type(self.default))

    # ---- names -------------------------------------------------------------------------------------
    @property
    def group(self) -> str:
        """The config section below ``pretrain`` of an objective option (``tc``)."""
        return self.config_key.split(".")[1]

    @property
    def key(self) -> str:
        """The last part of the config key (``temperature``)."""
        return self.config_key.rsplit(".", 1)[1]

    @property
    def per_size(self) -> bool:
        """Whether the key is under ``pretrain.sizes.<size>``."""
        return f".{SIZE}." in self.config_key

    @property
    def per_preset(self) -> bool:
        """Whether the key is under ``finetune.hyperparameters.<preset>`` (a value per model preset)."""
        return f".{PRESET}." in self.config_key

    def where(self, size: str = SIZE) -> str:
        """The config key with the size filled in (``pretrain.sizes.tiny.learning_rate``)."""
        return self.config_key.replace(SIZE, size)

    def value(self, config: dict[str, Any], size: str | None = None) -> Any:
        """This parameter's value in a schema-validated workflow configuration (defaults filled in;
        a key absent from its section has the declared default)."""
        node: Any = config
        parts = self.where(size or SIZE).split(".")
        for part in parts[:-1]:
            node = node.get(part) or {}
        return node.get(parts[-1], self.default)

    # ---- what comes from the declaration -----------------------------------------------------------
    def add_to(self, parser: argparse.ArgumentParser | Any, help_suffix: str | None = None) -> None:
        """Add the flag to an argparse parser or group: type (or choices), default, help ending in the
        config key."""
        kw: dict[str, Any] = {"choices": self.choices} if self.choices else {"type": self.type}
        suffix = f" (config {self.config_key})" if help_suffix is None else help_suffix
        parser.add_argument(self.flag, dest=self.name, default=self.default, help=self.help + suffix, **kw)

    def check(self, value: Any, where: str | None = None) -> str | None:
        """The error message for a bad ``value`` (naming ``where``, default the flag), or ``None``."""
        where = where or self.flag
        if value is None and self.default is None:
            return None
        if self.choices is not None:
            return None if value in self.choices else f"{where} must be one of {', '.join(self.choices)}, got {value!r}"
        if self.type is str:
            return None if isinstance(value, str) else f"{where} must be a string, got {value!r}"
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return f"{where} must be a number, got {value!r}"
        if self.type is int and int(value) != value:
            return f"{where} must be an integer, got {value!r}"
        if self.minimum is not None and value < self.minimum:
            return f"{where} must be >= {self.minimum:g}, got {value}"
        if self.exclusive_minimum is not None and not value > self.exclusive_minimum:
            return f"{where} must be > {self.exclusive_minimum:g}, got {value}"
        if self.maximum is not None and value > self.maximum:
            return f"{where} must be <= {self.maximum:g}, got {value}"
        if self.exclusive_maximum is not None and not value < self.exclusive_maximum:
            return f"{where} must be < {self.exclusive_maximum:g}, got {value}"
        if self.odd and int(value) % 2 == 0:
            return f"{where} must be odd, got {value}"
        return None

    def schema(self) -> dict[str, Any]:
        """This parameter's JSON-schema property (``workflow/schemas/config.schema.yaml`` holds it)."""
        if self.choices is not None:
            out: dict[str, Any] = {"enum": list(self.choices)}
        else:
            out = {"type": {int: "integer", float: "number", str: "string", bool: "boolean"}[self.type]}
            for k, v in (("minimum", self.minimum), ("exclusiveMinimum", self.exclusive_minimum),
                         ("maximum", self.maximum), ("exclusiveMaximum", self.exclusive_maximum)):
                if v is not None:
                    out[k] = v
        if self.default is not None:
            out["default"] = self.default
        out["description"] = self.help
        return out


def check_values(parameters: tuple[Parameter, ...] | list[Parameter], values: dict[str, Any],
                 where: dict[str, str] | None = None) -> list[str]:
    """Error messages for bad ``values`` (parameter name -> value) of ``parameters``; ``where`` maps a
    name to how the caller names it (default: the flag)."""
    where = where or {}
    by_name = {p.name: p for p in parameters}
    return [msg for name, value in values.items() if name in by_name
            if (msg := by_name[name].check(value, where.get(name)))]


def objective_option(group: str, key: str, name: str, default: Any, help: str, *, flag: str | None = None,
                     **kw: Any) -> Parameter:
    """An objective option: a :class:`Parameter` with config key ``pretrain.<group>.<key>`` and flag
    ``--<group>-<key>`` (``flag`` keeps the old flag of a renamed key, so finished runs keep their
    commands); ``name`` is the model parameter (``config.taco_<name>``) and the config hash's key."""
    return Parameter(flag or f"--{group}-{key}".replace("_", "-"), f"pretrain.{group}.{key}", name, default, help,
                     **kw)
