"""Equal fine-tuning budgets (issue 51 item 2; taco.evaluation.finetune_tuning): the grid, the choice per task on
hand-made trial records, the edge note, the recipe the reported runs read, and the configuration checks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from taco.evaluation import finetune_tuning as ftt

REPO = Path(__file__).resolve().parent.parent


def _trial(root: Path, i: int, lr: float, scores: dict[str, list[float]], epochs: int = 3) -> Path:
    d = root / f"trial-{i}"
    metric = {"cola": "matthews_correlation", "sst2": "accuracy"}
    for task, values in scores.items():
        for seed, v in enumerate(values, start=101):
            f = d / task / f"seed-{seed}" / "metrics.json"
            f.parent.mkdir(parents=True)
            f.write_text(json.dumps({"task": task, "primary_metric": {task: metric[task]},
                                     "scores": {task: {metric[task]: v}},
                                     "hyperparameters": {"learning_rate": lr, "epochs": epochs, "warmup_steps": 30}}))
    return d


def test_the_grid_is_every_combination_first_key_slowest():
    assert ftt.trial_settings({"learning_rate": [1e-4, 3e-4], "epochs": [3, 6]}) == [
        {"learning_rate": 1e-4, "epochs": 3}, {"learning_rate": 1e-4, "epochs": 6},
        {"learning_rate": 3e-4, "epochs": 3}, {"learning_rate": 3e-4, "epochs": 6}]


@pytest.mark.parametrize("space, needle", [
    ({"learning_rate": [0.0]}, "learning_rate: every value > 0"), ({"epochs": [0, 3]}, "epochs: every value >= 1"),
    ({"epochs": [2.5]}, "epochs: a list of integers"), ({"momentum": [0.9]}, "momentum: not a tunable"),
    ({"learning_rate": [1e-4, 1e-4]}, "given twice"), ({}, "a mapping of at least one")])
def test_a_bad_grid_names_its_key(space, needle):
    assert any(needle in e for e in ftt.check_space(space)), ftt.check_space(space)


def test_each_task_gets_its_own_best_mean_and_a_tie_keeps_the_first(tmp_path, capsys):
    a = _trial(tmp_path, 0, 1e-4, {"sst2": [0.70, 0.72], "cola": [0.10, 0.10]})
    b = _trial(tmp_path, 1, 3e-4, {"sst2": [0.76, 0.74], "cola": [0.05, 0.15]})
    c = _trial(tmp_path, 2, 1e-3, {"sst2": [0.80, 0.60], "cola": [0.0, 0.0]})
    out = tmp_path / "choice.json"
    space = json.dumps({"learning_rate": [1e-4, 3e-4, 1e-3]})
    assert ftt.main(["--trials", str(a), str(b), str(c), "--tasks", "sst2", "cola", "--space", space,
                     "--output", str(out)]) == 0
    rec = json.loads(out.read_text())
    assert rec["chosen"]["sst2"]["trial"] == "trial-1" and rec["chosen"]["sst2"]["dev_mean"] == pytest.approx(0.75)
    assert rec["chosen"]["cola"]["trial"] == "trial-0"  # 0.10 = 0.10: the first
    assert rec["chosen"]["cola"]["at_edge"] == ["learning_rate 0.0001 is the lowest value of its grid "
                                                "[0.0001, 0.0003, 0.001]: the optimum may lie outside it"]
    assert rec["chosen"]["sst2"]["at_edge"] == []
    assert "note: cola: learning_rate 0.0001 is the lowest" in capsys.readouterr().out
    assert ftt.read_choice(out, "sst2") == {"learning_rate": 3e-4, "epochs": 3, "warmup_steps": 30}


def test_a_trial_missing_a_task_or_mixing_settings_is_named(tmp_path, capsys):
    a = _trial(tmp_path, 0, 1e-4, {"sst2": [0.7]})
    assert ftt.main(["--trials", str(a), "--tasks", "sst2", "cola", "--output", str(tmp_path / "c.json")]) == 2
    assert "no run of task(s) ['cola']" in capsys.readouterr().err
    b = _trial(tmp_path, 1, 3e-4, {"sst2": [0.7]})
    other = json.loads((b / "sst2" / "seed-101" / "metrics.json").read_text())
    other["hyperparameters"]["learning_rate"] = 1e-3
    f = b / "sst2" / "seed-102" / "metrics.json"
    f.parent.mkdir()
    f.write_text(json.dumps(other))
    assert ftt.main(["--trials", str(b), "--output", str(tmp_path / "c.json")]) == 2
    assert "differs from the trial's other runs" in capsys.readouterr().err


def test_the_recipe_names_a_task_without_a_choice(tmp_path):
    from taco.errors import UsageError

    p = tmp_path / "choice.json"
    p.write_text(json.dumps({"chosen": {"sst2": {"setting": {"learning_rate": 1e-4}}}}))
    with pytest.raises(UsageError, match="no choice for task 'cola'"):
        ftt.read_choice(p, "cola")
    with pytest.raises(UsageError, match="no such file"):
        ftt.read_choice(tmp_path / "nope.json", "sst2")


def _data_root(root: Path) -> dict:
    from taco.data.glue import local_files

    for f in ("corpus/wikitext-2/valid.txt", "corpus/wikitext-2/test.txt", "corpus/gutenberg/a.txt"):
        (root / f).parent.mkdir(parents=True, exist_ok=True)
        (root / f).write_text("text\n")
    for task in ("cola", "sst2", "mrpc", "stsb"):
        for path in local_files(task, root / "glue").values():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("")
    return {"data_root": str(root)}


def test_trial_seeds_that_are_reported_seeds_are_refused(tmp_path):
    from taco.workflow.plan.command import load_config
    from taco.workflow.plan.inputs import PlanError

    with pytest.raises(PlanError, match=r"finetune.tuning.seeds: \[1\] also in finetune.seeds"):
        load_config([str(REPO / "configs" / "cpu-real.yaml")],
                    {**_data_root(tmp_path), "finetune": {"tuning": {"seeds": [1]}}})


def test_the_plan_counts_and_prices_the_trials(tmp_path):
    from taco.workflow.plan.command import load_config
    from taco.workflow.plan.costs import compute_jobs

    cfg = load_config([str(REPO / "configs" / "cpu-real.yaml")], _data_root(tmp_path))
    jobs = compute_jobs(cfg, ["cola", "sst2", "mrpc", "stsb"])
    checkpoints = 2 * 3 + 1  # MLM and TACO at three budgets, and the control
    trials = len(cfg["finetune"]["tuning"]["space"]["learning_rate"])  # 4 learning rates, one seed each
    assert trials == 4
    assert jobs["finetune_trial"] == trials * checkpoints and jobs["finetune_choice"] == checkpoints
    from taco.workflow.plan.costs import Rates, finetune_costs

    rates = Rates(None, 1e12, 0.3, 0.3, 0.0)
    tasks = ["cola", "sst2", "mrpc", "stsb"]
    tuned = finetune_costs(cfg, tasks, rates)["flops"]
    cfg["finetune"]["tuning"]["enabled"] = False
    plain = finetune_costs(cfg, tasks, rates)["flops"]
    # 4 trials of one seed and the reported 3 seeds, at the same epochs: the trials add exactly 4/3
    assert tuned == pytest.approx((1 + 4 / 3) * plain)


def test_trials_that_do_not_belong_together_are_refused_by_name(tmp_path, capsys):
    """Fault sweep V, item 2: a metrics.json under rte/ holding SST-2's scores, a trial missing a seed, a trial of
    another checkpoint: each refused naming the file or trial and what was expected (exit 2); a trial with a
    non-finite seed is listed as left out; ties go to the lower trial index as a number (trial-2 before
    trial-10, whatever order the folders are given in)."""
    out = str(tmp_path / "c.json")
    # another task's record in rte/
    a = _trial(tmp_path / "x", 0, 1e-4, {"sst2": [0.8, 0.8]})
    wrong = a / "rte" / "seed-101" / "metrics.json"
    wrong.parent.mkdir(parents=True)
    wrong.write_text((a / "sst2" / "seed-101" / "metrics.json").read_text())
    assert ftt.main(["--trials", str(a), "--output", out]) == 2
    err = capsys.readouterr().err
    assert f"{wrong}: holds task 'sst2', but lies in the folder of task 'rte'" in err and "Traceback" not in err
    # a trial missing one seed's file
    b0 = _trial(tmp_path / "y", 0, 1e-4, {"sst2": [0.8, 0.8]})
    b1 = _trial(tmp_path / "y", 1, 3e-4, {"sst2": [0.9]})
    assert ftt.main(["--trials", str(b0), str(b1), "--output", out]) == 2
    assert "task sst2 has seeds [101], expected [101, 102]" in capsys.readouterr().err
    # a trial of another checkpoint
    c0 = _trial(tmp_path / "z", 0, 1e-4, {"sst2": [0.8]})
    c1 = _trial(tmp_path / "z", 1, 3e-4, {"sst2": [0.9]})
    for d, sha in ((c0, "a" * 64), (c1, "b" * 64)):
        f = d / "sst2" / "seed-101" / "metrics.json"
        f.write_text(json.dumps({**json.loads(f.read_text()), "checkpoint_manifest_sha256": sha}))
    assert ftt.main(["--trials", str(c0), str(c1), "--output", out]) == 2
    assert f"{c1}: a trial of another checkpoint" in capsys.readouterr().err
    # a NaN seed: left out and listed; a tie between trial-2 and trial-10 goes to trial-2
    root = tmp_path / "w"
    t2 = _trial(root, 2, 1e-4, {"sst2": [0.8, 0.8]})
    t10 = _trial(root, 10, 3e-4, {"sst2": [0.8, 0.8]})
    t3 = _trial(root, 3, 1e-3, {"sst2": [float("nan"), 0.99]})
    assert ftt.main(["--trials", str(t10), str(t3), str(t2), "--output", out]) == 0
    rec = json.loads(Path(out).read_text())
    assert rec["chosen"]["sst2"]["trial"] == "trial-2"
    assert rec["left_out"] == [{"trial": "trial-3", "task": "sst2", "why": "a seed's dev score is not finite"}]
    assert "sst2: trial-3 left out" in capsys.readouterr().out
