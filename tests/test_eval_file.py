"""Fault sweep IV, item 6: a validation set that draws no masked token wrote bare NaN into eval.json (not strict
JSON) with no warning. eval.json is strict JSON, the empty set is named on stderr and in the file."""

from __future__ import annotations

import json
import math

import pytest

from taco.training.validation import write_eval


def _strict(text: str):
    def refuse(token):
        raise ValueError(f"not strict JSON: {token}")

    return json.loads(text, parse_constant=refuse)


def test_no_masked_token_gives_strict_json_and_a_warning(tmp_path, capsys):
    path = write_eval(tmp_path, {"mlm_loss": math.nan, "mlm_accuracy": math.nan, "n_masked_tokens": 0,
                                 "points": [{"step": 2, "mlm_loss": math.inf}]}, step=4)
    rec = _strict(path.read_text())
    assert rec["mlm_loss"] is None and rec["points"][0]["mlm_loss"] is None and rec["step"] == 4
    assert "drew no masked token" in rec["note"]
    assert "drew no masked token" in capsys.readouterr().err


def test_a_normal_result_is_unchanged(tmp_path, capsys):
    path = write_eval(tmp_path, {"mlm_loss": 5.25, "n_masked_tokens": 100}, step=4)
    assert _strict(path.read_text()) == {"mlm_loss": pytest.approx(5.25), "n_masked_tokens": 100, "step": 4}
    assert capsys.readouterr().err == ""
