"""taco.parameters: every parameter a command takes from the configuration is declared once, and its
flag, default, check and schema property come from that declaration (the objective options, the
pre-training recipe, the fine-tuning recipe)."""

from __future__ import annotations

from pathlib import Path

import pytest

from taco.evaluation.finetune import build_parser as finetune_parser
from taco.evaluation.finetune_recipe import FINETUNE_RECIPE
from taco.objectives import OPTIONS
from taco.parameters import PRESET, SIZE, Parameter, check_values
from taco.training.pretrain import build_parser as pretrain_parser
from taco.training.recipe import RECIPE, RECIPE_AFTER_OBJECTIVE
from taco.workflow.schema import workflow_schema

REPO = Path(__file__).resolve().parents[1]
SCHEMA = workflow_schema()  # the YAML file with the objectives' option groups added
PRETRAIN = (*RECIPE, *RECIPE_AFTER_OBJECTIVE, *OPTIONS.values())


def _schema_property(config_key: str) -> dict:
    node = SCHEMA
    for part in config_key.split("."):
        node = node["additionalProperties"] if part in (SIZE, PRESET) else node["properties"][part]
    return node


@pytest.mark.parametrize("param", [*PRETRAIN, *FINETUNE_RECIPE], ids=lambda p: p.config_key)
def test_the_schema_property_is_the_declarations(param):
    """Type or choices, bounds and default as declared (a default of None: none in the schema either)."""
    prop = _schema_property(param.config_key)
    declared = param.schema()
    for key in ("type", "enum", "minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum", "default"):
        assert prop.get(key) == declared.get(key), (param.config_key, key, prop.get(key), declared.get(key))


@pytest.mark.parametrize("parser,params", [(pretrain_parser, PRETRAIN), (finetune_parser, FINETUNE_RECIPE)],
                         ids=["pretrain", "finetune"])
def test_the_command_flag_has_the_declared_default_and_names_its_config_key(parser, params):
    actions = {a.option_strings[0]: a for a in parser()._actions if a.option_strings}
    for p in params:
        action = actions[p.flag]
        assert action.dest == p.name and action.default == p.default, p.flag
        assert action.choices == (list(p.choices) if isinstance(action.choices, list) else p.choices) or not p.choices
        if p in RECIPE or p in FINETUNE_RECIPE:
            assert p.config_key in action.help, p.flag


def test_one_declaration_per_name_and_per_flag():
    for params in (PRETRAIN, FINETUNE_RECIPE):
        assert len({p.name for p in params}) == len(params)
        assert len({p.flag for p in params}) == len(params)


def test_checks_name_the_flag_or_the_key():
    lr = next(p for p in RECIPE if p.name == "lr")
    assert lr.check(0.0) == "--lr must be > 0, got 0.0"
    assert lr.check(1e-4) is None
    mlm = next(p for p in RECIPE if p.name == "mlm_probability")
    assert mlm.check(1.0, "pretrain.mlm_probability") == "pretrain.mlm_probability must be < 1, got 1.0"
    assert check_values(FINETUNE_RECIPE, {"max_length": 4, "report_rule": "first", "batch_size": 8}) == [
        "--max-length must be >= 8, got 4", "--report-rule must be one of last, best, got 'first'"]
    window = OPTIONS["tc_window"]
    assert window.check(4, "pretrain.tc.window") == "pretrain.tc.window must be odd, got 4"


def test_a_renamed_config_key_keeps_its_flag_and_hashed_name():
    """`pretrain.tc.num_negatives` and `pretrain.nce.negative_source` (one word per concept) kept the
    flags and parameter names of finished runs' commands and config hashes."""
    assert (OPTIONS["tc_num_negatives"].config_key, OPTIONS["tc_num_negatives"].flag) == (
        "pretrain.tc.num_negatives", "--tc-negatives")
    assert (OPTIONS["nce_negatives"].config_key, OPTIONS["nce_negatives"].flag) == (
        "pretrain.nce.negative_source", "--nce-negatives")


def test_a_parameter_without_default_needs_a_type():
    with pytest.raises(ValueError, match="needs its type"):
        Parameter("--x", "pretrain.x", "x", None, "x")
    assert Parameter("--x", "pretrain.x", "x", None, "x", type=int).schema() == {"type": "integer", "description": "x"}


def test_value_reads_the_config_with_the_size_and_the_declared_default():
    config = {"pretrain": {"sizes": {"tiny": {"learning_rate": 3e-4}}, "tc": {}},
              "finetune": {"max_length": 64}}
    lr = next(p for p in RECIPE if p.name == "lr")
    assert lr.value(config, "tiny") == 3e-4 and lr.where("tiny") == "pretrain.sizes.tiny.learning_rate"
    assert OPTIONS["tc_window"].value(config) == 5
    assert FINETUNE_RECIPE[0].value(config) == 64 and FINETUNE_RECIPE[1].value(config) == 32


def test_the_mlm_rate_is_declared_once_with_one_range():
    """``--mlm-probability`` of taco pretrain, taco init and taco dynamics and the config key
    ``pretrain.mlm_probability`` all come from one declaration, with one range (0, 1): each command refuses 0
    and 1 with the declaration's message."""
    import argparse

    from taco.evaluation import dynamics
    from taco.objectives.base import MLM_PROBABILITY_PARAMETER as rate
    from taco.training import control, pretrain

    prop = _schema_property(rate.config_key)
    assert {k: prop.get(k) for k in ("exclusiveMinimum", "exclusiveMaximum", "default")} == {
        "exclusiveMinimum": 0, "exclusiveMaximum": 1, "default": rate.default}
    for build in (pretrain.build_parser, control.build_parser, dynamics.build_parser):
        (action,) = [a for a in build()._actions if rate.flag in a.option_strings]
        assert action.dest == rate.name and action.help.startswith(rate.help), build.__module__
    args = argparse.Namespace(init_objective="mlm", mlm_probability=1.0, blocks="/nonexistent")
    with pytest.raises(Exception, match=r"--mlm-probability must be < 1, got 1.0"):
        control.check_inputs(args)
    assert rate.check(0.0) == "--mlm-probability must be > 0, got 0.0"


def test_the_finetuning_learning_rate_and_epochs_are_declared_with_the_presets_defaults():
    """--lr and --epochs are recipe Parameters (no default of their own: the preset's, from the presets' table
    taco.registry.FINETUNE_HYPERPARAMETERS, named in their help); the schema's per-preset properties come from them."""
    from taco.registry import FINETUNE_HYPERPARAMETERS

    by_key = {p.key: p for p in FINETUNE_RECIPE if p.per_preset}
    assert sorted(by_key) == ["epochs", "learning_rate"] and {p.default for p in by_key.values()} == {None}
    for key, p in by_key.items():
        for preset, values in FINETUNE_HYPERPARAMETERS.items():
            assert f"{values[key]:g} ({preset})" in p.help
    assert by_key["epochs"].check(0) == "--epochs must be >= 1, got 0" and by_key["learning_rate"].check(0.0)
    assert [p.flag for p in FINETUNE_RECIPE] == ["--max-length", "--batch-size", "--lr", "--epochs", "--warmup-steps",
                                                 "--dropout", "--report-rule"]  # the order of the workflow's words


def test_a_new_finetuning_option_is_one_declaration(monkeypatch):
    """As a maintainer adding finetune.pooling (the readout the ModernBERT CoLA diagnosis needed) would: its
    declaration alone reaches taco finetune's flags and help, the config schema, the workflow's command and the
    metrics.json record; at its default the word is not written (pass_default=False), so finished jobs keep
    their commands."""
    import sys

    from taco.evaluation import finetune, finetune_recipe
    from taco.workflow import commands

    sys.path.insert(0, str(REPO / "tests"))
    from test_commands import load_config

    pooling = Parameter("--pooling", "finetune.pooling", "pooling", "cls", "sentence readout of the classifier",
                        choices=("cls", "mean"), pass_default=False)
    recipe = (*FINETUNE_RECIPE, pooling)
    for module in (finetune_recipe, finetune, commands):
        monkeypatch.setattr(module, "FINETUNE_RECIPE", recipe)
    assert "--pooling" in finetune.build_parser().format_help()
    assert workflow_schema()["properties"]["finetune"]["properties"]["pooling"] == {
        "enum": ["cls", "mean"], "default": "cls", "description": "sentence readout of the classifier"}

    class W:  # the wildcards of one finetune job
        size, objective, fraction, step, task = "small", "mlm", "1.0", "10000", "mrpc"

    base = load_config(["config.yaml"], {})
    words = commands.Commands(base).finetune_args(W())
    monkeypatch.setattr(commands, "FINETUNE_RECIPE", FINETUNE_RECIPE)
    assert commands.Commands(base).finetune_args(W()) == words  # at its default: the command as today
    monkeypatch.setattr(commands, "FINETUNE_RECIPE", recipe)
    mean = commands.Commands(load_config(["config.yaml"], {"finetune": {"pooling": "mean"}})).finetune_args(W())
    i = mean.index("--report-rule")
    assert mean[i + 2:i + 4] == ["--pooling", "mean"] and [w for w in mean if w not in ("--pooling", "mean")] == words
    args = finetune.build_parser().parse_args(mean[mean.index("--glue-source"):] + ["--task", "mrpc", "--checkpoint",
                                                                                   "c", "--output", "o"])
    assert args.pooling == "mean" and finetune.declared_options(args) == {"pooling": "mean"}
    monkeypatch.setattr(finetune, "FINETUNE_RECIPE", FINETUNE_RECIPE)
    assert finetune.declared_options(args) == {}  # today's recipe: metrics.json's keys as before
