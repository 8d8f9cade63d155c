"""Fault sweep IV, items 4 and 7, and issue 51 item 6: no silent choice among damaged or mixed trials, search
spaces checked at configuration time, no repeated quasi-random settings while unused points remain, and a
choice at the edge of its space noted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from taco.training import tuning
from taco.training.tuning import check_space, edge_notes, trial_settings

REPO = Path(__file__).resolve().parent.parent


def _trial(root: Path, i: int, loss, step=4, manifest_step=4, objective="mlm", max_steps=4, lr=1e-3) -> Path:
    d = root / f"trial-{i}" / f"step-{manifest_step}"
    d.mkdir(parents=True)
    (d / "manifest.json").write_text(json.dumps({"kind": "pretrain", "step": manifest_step, "objective": objective,
                                                 "hash_inputs": {"lr": lr, "warmup_steps": 1, "dropout": 0.0,
                                                                 "max_steps": max_steps}}))
    ev = {"step": step} if loss == "absent" else {"step": step, "mlm_loss": loss}
    (d / "eval.json").write_text(json.dumps(ev))
    return d


def _choose(tmp_path, *trials, capsys=None):
    out = tmp_path / "choice.json"
    rc = tuning.main(["--trials", *map(str, trials), "--output", str(out)])
    return rc, out


@pytest.mark.parametrize("loss, needle", [("absent", "no mlm_loss"), ("5.1", "mlm_loss '5.1' is not a number"),
                                          (True, "mlm_loss True is not a number")])
def test_a_trial_without_a_numeric_loss_is_named_not_taken_as_diverged(tmp_path, capsys, loss, needle):
    a, b = _trial(tmp_path, 0, 5.0), _trial(tmp_path, 1, loss)
    rc, out = _choose(tmp_path, a, b)
    err = capsys.readouterr().err
    assert rc == 2 and needle in err and str(b / "eval.json") in err, err
    assert not out.exists()


def test_a_null_loss_is_a_diverged_trial_listed_and_never_chosen(tmp_path):
    a, b = _trial(tmp_path, 0, 5.0), _trial(tmp_path, 1, None)
    rc, out = _choose(tmp_path, a, b)
    rec = json.loads(out.read_text())
    assert rc == 0 and rec["chosen"]["path"] == str(a) and rec["left_out"] == [str(b)]


def test_a_validation_result_of_another_step_is_refused(tmp_path, capsys):
    a, b = _trial(tmp_path, 0, 5.0), _trial(tmp_path, 1, 4.0, step=2, manifest_step=4)
    rc, _ = _choose(tmp_path, a, b)
    err = capsys.readouterr().err
    assert rc == 2 and "step 2, but" in err and "says step 4" in err, err


@pytest.mark.parametrize("kw, what", [({"objective": "taco"}, "2 objectives"), ({"max_steps": 8}, "2 schedules")])
def test_trials_of_two_arms_or_schedules_are_not_compared(tmp_path, capsys, kw, what):
    a, b = _trial(tmp_path, 0, 5.0), _trial(tmp_path, 1, 4.0, **kw)
    rc, _ = _choose(tmp_path, a, b)
    err = capsys.readouterr().err
    assert rc == 2 and what in err, err


@pytest.mark.parametrize("space, needle", [
    ({"learning_rate": [-1e-3, 1e-3]}, "space.learning_rate: every value in (0, inf)"),
    ({"dropout": [0.1, 1.5]}, "space.dropout: every value in [0, 1)"),
    ({"dropout": {"uniform": [0.0, 1.5]}}, "space.dropout.uniform: both ends in [0, 1)"),
    ({"warmup_steps": [2, 400]}, "space.warmup_steps: every value below the trials' horizon (8 steps"),
])
def test_a_space_outside_its_parameters_bounds_is_refused_naming_the_key(space, needle):
    errors = check_space(space, "pretrain.tuning.space", horizon=8)
    assert any(needle in e for e in errors), errors


@pytest.mark.parametrize("space, needle", [("{dropout: [0.0, 1.5]}", r"space.dropout: every value in \[0, 1\)"),
                                          ("{warmup_steps: [2, 10]}", r"space.warmup_steps: every value below")])
def test_a_bad_space_stops_the_workflows_configuration(tmp_path, space, needle):
    """Before, a negative lr or a dropout of 1.5 passed the dry run and taco plan and failed inside a trial job,
    and a warm-up at the horizon failed nowhere."""
    from taco.workflow.plan.command import load_config
    from taco.workflow.plan.inputs import PlanError

    bad = tmp_path / "bad.yaml"
    bad.write_text(f"pretrain: {{tuning: {{enabled: true, horizon: 10, space: {space}}}}}\n")
    with pytest.raises(PlanError, match=needle):
        load_config([str(REPO / "configs" / "smoke.yaml"), str(bad)])


def test_a_true_warmup_in_a_tuned_recipe_is_refused(tmp_path):
    import argparse

    from taco.errors import UsageError

    p = tmp_path / "choice.json"
    p.write_text(json.dumps({"chosen": {"setting": {"learning_rate": 1e-3, "warmup_steps": True, "dropout": 0.0}}}))
    with pytest.raises(UsageError, match="integer warmup_steps"):
        tuning.apply_choice(argparse.Namespace(), p)


def test_quasi_random_trials_repeat_no_setting_while_unused_points_remain():
    """Before: an all-list space gave two equal trials for 14 of 100 seeds, 4 trials over 4 lr values a repeat
    for 54 of 100."""
    two = {"warmup_steps": [1, 2], "dropout": [0.0, 0.1]}
    four = {"learning_rate": [1e-4, 3e-4, 1e-3, 3e-3]}
    for seed in range(100):
        for space, n in ((two, 2), (two, 4), (four, 4)):
            settings = [tuple(s.values()) for s in trial_settings(space, n, seed)]
            assert len(set(settings)) == n, (seed, space, settings)
    assert len(trial_settings(four, 6, 0)) == 6  # more trials than points: repeats then, as they must


def test_a_continuous_space_draws_as_before():
    """cpu-real's space (log-uniform lr) gave its recorded trials; they must not move (docs/records/
    2026-12-04-cpu-real-tuning: trial 3 = lr 2.8e-3, warmup 200, dropout 0)."""
    space = {"learning_rate": {"log_uniform": [3.0e-4, 3.0e-3]}, "warmup_steps": [200, 400], "dropout": [0.0, 0.1]}
    assert trial_settings(space, 4, 0) == [
        {"learning_rate": 0.000663, "warmup_steps": 200, "dropout": 0.1},
        {"learning_rate": 0.000373, "warmup_steps": 200, "dropout": 0.1},
        {"learning_rate": 0.00118, "warmup_steps": 400, "dropout": 0.0},
        {"learning_rate": 0.0028, "warmup_steps": 200, "dropout": 0.0}]


def test_a_choice_at_the_edge_of_its_space_is_noted(tmp_path, capsys):
    space = {"learning_rate": {"log_uniform": [3.0e-4, 3.0e-3]}, "warmup_steps": [200, 400], "dropout": [0.0, 0.1]}
    notes = edge_notes({"learning_rate": 2.8e-3, "warmup_steps": 400, "dropout": 0.0}, space)
    assert len(notes) == 2 and notes[0].startswith("learning_rate 0.0028 lies at the highest edge")
    assert "warmup_steps 400 lies at the highest edge" in notes[1]  # dropout 0 is its bound, not an edge
    assert edge_notes({"learning_rate": 1e-3, "warmup_steps": 300, "dropout": 0.05},
                      {**space, "warmup_steps": [200, 300, 400]}) == []
    a = _trial(tmp_path, 0, 5.0, lr=2.8e-3)
    out = tmp_path / "c.json"
    assert tuning.main(["--trials", str(a), "--output", str(out), "--space", json.dumps(space)]) == 0
    assert "lies at the highest edge" in capsys.readouterr().out
    assert json.loads(out.read_text())["at_edge"][0].startswith("learning_rate 0.0028")
