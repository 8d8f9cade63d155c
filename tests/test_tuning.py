"""Equal tuning budgets (taco.training.tuning): the trials' settings, the choice, its use by taco pretrain,
and the workflow's two stages (trials, then the arms' replicates reading the choice)."""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import pytest

from taco.training.tuning import TuningError, apply_choice, check_space, choose, trial_settings

sys.path.insert(0, str(Path(__file__).resolve().parent))
REPO = Path(__file__).resolve().parent.parent
SPACE = {"learning_rate": {"log_uniform": [3e-4, 3e-3]}, "warmup_steps": [200, 400], "dropout": [0.0, 0.1]}


def test_trials_are_deterministic_inside_the_space_and_spread_over_it():
    a = trial_settings(SPACE, 8, seed=0)
    assert a == trial_settings(SPACE, 8, seed=0) and a != trial_settings(SPACE, 8, seed=1)
    assert all(3e-4 <= t["learning_rate"] <= 3e-3 and t["warmup_steps"] in (200, 400) and t["dropout"] in (0.0, 0.1)
               for t in a)
    assert all(isinstance(t["warmup_steps"], int) for t in a)
    # a low-discrepancy sequence: 8 points cover every quarter of the log-lr range, both warmups, both dropouts
    quarters = {min(int(4 * math.log(t["learning_rate"] / 3e-4) / math.log(10)), 3) for t in a}
    assert quarters == {0, 1, 2, 3}
    assert {t["warmup_steps"] for t in a} == {200, 400} and {t["dropout"] for t in a} == {0.0, 0.1}
    # the first n trials are those of a longer search: adding trials keeps the earlier ones
    assert trial_settings(SPACE, 4, seed=0) == a[:4]


@pytest.mark.parametrize("space, word", [
    ({}, "empty"), ({"momentum": [0.9]}, "not a tunable"), ({"learning_rate": {"log_uniform": [0, 1]}}, "low > 0"),
    ({"learning_rate": {"uniform": [2, 1]}}, "low < high"), ({"dropout": []}, "finite numbers"),
    ({"dropout": "0.1"}, "a list of values")])
def test_a_bad_space_is_named(space, word):
    errors = check_space(space)
    assert errors and word in " ".join(errors)
    with pytest.raises(TuningError):
        trial_settings(space, 2, 0)


def test_the_choice_is_the_lowest_finite_loss_and_names_the_rest():
    recs = [{"trial": "trial-0", "path": "a", "setting": {}, "mlm_loss": 6.1},
            {"trial": "trial-1", "path": "b", "setting": {}, "mlm_loss": float("nan")},
            {"trial": "trial-2", "path": "c", "setting": {}, "mlm_loss": 5.9},
            {"trial": "trial-3", "path": "d", "setting": {}, "mlm_loss": 5.9}]
    out = choose(recs)
    assert out["chosen"]["path"] == "c" and out["left_out"] == ["b"] and len(out["trials"]) == 4
    with pytest.raises(TuningError, match="no trial has a finite"):
        choose([recs[1]])


def test_apply_choice_sets_the_recipe_and_names_a_bad_file(tmp_path):
    from taco.errors import UsageError

    f = tmp_path / "choice.json"
    f.write_text(json.dumps({"chosen": {"setting": {"learning_rate": 2e-3, "warmup_steps": 400, "dropout": 0.0}}}))
    args = argparse.Namespace(lr=1e-3, warmup_steps=200, dropout=None)
    apply_choice(args, f)
    assert (args.lr, args.warmup_steps, args.dropout) == (2e-3, 400, 0.0)
    f.write_text("[]")
    with pytest.raises(UsageError, match="choice.json"):
        apply_choice(args, f)
    with pytest.raises(UsageError, match="no such file"):
        apply_choice(args, tmp_path / "none.json")


def test_trials_choice_and_a_tuned_segment_through_taco(tmp_path, capsys):
    """Two trials of taco pretrain (their own schedule), taco tuning-choice, then a replicate with
    --tuned-recipe: it trains with the chosen setting (its manifest's hash inputs), and --dropout enters the
    hash only when set (a run without it keeps the hash it had before the flag existed)."""
    pytest.importorskip("torch")
    from tiny_blocks import write_blocks

    from taco.manifest import read_manifest
    from taco.training import pretrain
    from taco.training.tuning import main as choice_main

    blocks = write_blocks(tmp_path)

    def run(out, *extra):
        return pretrain.main(["--blocks", str(blocks), "--objective", "mlm", "--size", "tiny", "--max-steps", "4",
                              "--until", "4", "--per-device-batch-size", "4", "--device", "cpu", "--no-progress",
                              "--report-to", "none", "--save-every", "0", "--seed", "3", "--output", str(out),
                              "--state-dir", str(out) + ".state", *extra])

    trials = []
    for i, (lr, warm, drop) in enumerate(((1e-3, 1, 0.0), (3e-3, 2, 0.1))):
        out = tmp_path / "tuning" / f"trial-{i}" / "step-4"
        assert run(out, "--lr", str(lr), "--warmup-steps", str(warm), "--dropout", str(drop)) == 0
        trials.append(out)
    choice = tmp_path / "choice.json"
    assert choice_main(["--trials", *map(str, trials), "--output", str(choice)]) == 0
    rec = json.loads(choice.read_text())
    losses = [json.loads((t / "eval.json").read_text())["mlm_loss"] for t in trials]
    best = int(min(range(2), key=lambda i: losses[i]))
    assert rec["chosen"]["path"] == str(trials[best]) and [t["mlm_loss"] for t in rec["trials"]] == losses
    assert rec["chosen"]["setting"]["dropout"] == (0.0, 0.1)[best]
    rep = tmp_path / "replicate"
    assert run(rep, "--tuned-recipe", str(choice)) == 0
    hi = read_manifest(rep)["hash_inputs"]
    assert (hi["lr"], hi["warmup_steps"], hi["dropout"]) == ((1e-3, 3e-3)[best], (1, 2)[best], (0.0, 0.1)[best])
    plain = tmp_path / "plain"
    assert run(plain) == 0
    assert "dropout" not in read_manifest(plain)["hash_inputs"]
    (tmp_path / "bad.json").write_text("{}")
    assert run(tmp_path / "x", "--tuned-recipe", str(tmp_path / "bad.json")) == 2
    assert "bad.json" in capsys.readouterr().err


def test_the_workflow_runs_trials_then_the_tuned_replicates(tmp_path):
    """pretrain.tuning on the smoke configuration: the same trials for every arm, one choice per arm, and
    every full- and reduced-data run of an arm reads its arm's choice (a dry run: the DAG is whole)."""
    from taco.workflow import tuning_grid as tg
    from taco.workflow.plan.command import load_config

    overlay = tmp_path / "t.yaml"
    overlay.write_text("pretrain: {tuning: {enabled: true, trials: 3, horizon: 10, space: {warmup_steps: [1, 2]}}}\n")
    cfg = load_config([str(REPO / "configs" / "smoke.yaml"), str(overlay)])
    arms = tg.tuning_arms(cfg)
    assert ("tiny", "mlm") in arms and ("tiny", "taco") in arms and len(arms) == len(set(arms))
    assert [t["warmup_steps"] for t in tg.tuning_trials(cfg, "tiny")] == [t["warmup_steps"] for t in
                                                                   trial_settings({"warmup_steps": [1, 2]}, 3, 0)]
    bad = tmp_path / "bad.yaml"
    bad.write_text("pretrain: {tuning: {enabled: true, space: {momentum: [0.9]}}}\n")
    from taco.workflow.plan.inputs import PlanError

    with pytest.raises(PlanError, match="pretrain.tuning.space.momentum"):
        load_config([str(REPO / "configs" / "smoke.yaml"), str(bad)])


def test_a_size_tuned_as_another_reads_that_sizes_choices_and_runs_no_trials(tmp_path):
    """pretrain.sizes.<size>.tuned_as (configs/cpu-real-long.yaml): the long size's runs read the same
    objective's choice on the named size, get no trials of their own, and a bad name is refused naming
    the key before any job."""
    from taco.workflow import tuning_grid as tg
    from taco.workflow.plan.command import load_config
    from taco.workflow.plan.inputs import PlanError

    base = REPO / "configs" / "smoke.yaml"
    overlay = tmp_path / "long.yaml"
    overlay.write_text(
        "pretrain:\n"
        "  tuning: {enabled: true, trials: 2, horizon: 10, space: {warmup_steps: [1, 2]}}\n"
        "  runs: [{size: tiny, objectives: [mlm, taco], fractions: [1.0]}, {size: long, objectives: [taco]}]\n"
        "  sizes: {long: {preset: tiny, tuned_as: tiny, max_steps: 40, budgets: [20, 40]}}\n"
        "finetune: {budgets: {tiny: [100]}}\n")
    cfg = load_config([str(base), str(overlay)])
    assert tg.tuning_arms(cfg) == [("tiny", "mlm"), ("tiny", "taco")]
    assert tg.recipe_arm(cfg, "long", "taco") == ("tiny", "taco") and tg.tuned_arm(cfg, "long", "taco")
    assert tg.recipe_arm(cfg, "tiny", "mlm") == ("tiny", "mlm")

    for sizes, word in [("{long: {preset: tiny, tuned_as: nowhere, max_steps: 40, budgets: [40]}}", "nowhere"),
                        ("{long: {preset: tiny, tuned_as: long, max_steps: 40, budgets: [40]}}", "another size")]:
        overlay.write_text(overlay.read_text().split("  sizes:")[0] + f"  sizes: {sizes}\n"
                           "finetune: {budgets: {tiny: [100]}}\n")
        with pytest.raises(PlanError, match=rf"pretrain\.sizes\.long\.tuned_as: .*{word}"):
            load_config([str(base), str(overlay)])
    # an objective the named size does not tune
    overlay.write_text(overlay.read_text().replace("objectives: [taco]}", "objectives: [mlm_tp]}")
                       .replace("tuned_as: long", "tuned_as: tiny"))
    with pytest.raises(PlanError, match=r"pretrain\.sizes\.long\.tuned_as: 'tiny' has no tuned arm for mlm_tp"):
        load_config([str(base), str(overlay)])
    # tuning off: there is no choice to read
    overlay.write_text(overlay.read_text().replace("enabled: true", "enabled: false")
                       .replace("objectives: [mlm_tp]}", "objectives: [taco]}"))
    with pytest.raises(PlanError, match=r"pretrain\.sizes\.long\.tuned_as: .*pretrain\.tuning is off"):
        load_config([str(base), str(overlay)])


def test_a_size_with_its_own_search_space_draws_its_trials_there(tmp_path):
    """pretrain.sizes.<size>.tuning_space (configs/cpu-real-families.yaml's ModernBERT-tiny): both objectives of
    that size get the same trials from its space, the other sizes keep pretrain.tuning.space's, the trial count
    stays one; a bad space is refused naming its key, as is a space on a size tuned_as another."""
    from taco.workflow import tuning_grid as tg
    from taco.workflow.plan.command import load_config
    from taco.workflow.plan.inputs import PlanError

    base = REPO / "configs" / "smoke.yaml"
    overlay = tmp_path / "own.yaml"
    own = "{warmup_steps: [5, 6, 7]}"
    text = ("pretrain:\n"
            "  tuning: {enabled: true, trials: 3, horizon: 10, space: {warmup_steps: [1, 2]}}\n"
            "  runs: [{size: tiny, objectives: [mlm, taco], fractions: [1.0]}, {size: wide, objectives: [mlm, taco]}]\n"
            "  sizes: {wide: {preset: tiny, max_steps: 40, budgets: [20, 40], tuning_space: SPACE}}\n"
            "finetune: {budgets: {tiny: [100]}}\n")
    overlay.write_text(text.replace("SPACE", own))
    cfg = load_config([str(base), str(overlay)])
    assert ("wide", "mlm") in tg.tuning_arms(cfg) and ("wide", "taco") in tg.tuning_arms(cfg)
    assert tg.tuning_trials(cfg, "wide") == trial_settings({"warmup_steps": [5, 6, 7]}, 3, 0)
    assert tg.tuning_trials(cfg, "tiny") == trial_settings({"warmup_steps": [1, 2]}, 3, 0)
    assert tg.tuning_trial_count(cfg) == 3
    from taco.workflow.commands import Commands

    args = Commands(cfg).efficiency_args()
    spaces = json.loads(args[args.index("--tuning-spaces") + 1])
    assert spaces == {"tiny": {"warmup_steps": [1, 2]}, "wide": {"warmup_steps": [5, 6, 7]}}
    for trial in range(3):
        for objective in ("mlm", "taco"):
            w = argparse.Namespace(size="wide", objective=objective, trial=str(trial))
            cmd = Commands(cfg).trial_args(w)
            assert cmd[cmd.index("--warmup-steps") + 1] == str(tg.tuning_trials(cfg, "wide")[trial]["warmup_steps"])

    overlay.write_text(text.replace("SPACE", "{warmup_steps: [50]}"))
    with pytest.raises(PlanError, match=r"pretrain\.sizes\.wide\.tuning_space\.warmup_steps: every value below"):
        load_config([str(base), str(overlay)])
    overlay.write_text(text.replace("SPACE", own).replace("budgets: [20, 40],", "budgets: [20, 40], tuned_as: tiny,"))
    with pytest.raises(PlanError, match=r"pretrain\.sizes\.wide\.tuning_space: set, but the size is tuned_as 'tiny'"):
        load_config([str(base), str(overlay)])


RECORD = REPO / "docs" / "records" / "2026-12-07-modernbert-widened" / "space-1e-3-3e-2"


def _recorded_choice(path: Path, settings: list[dict], horizon: int, objective: str, losses: list[float]) -> dict:
    """A choice.json as `taco tuning-choice` writes it, for trials that ran ``settings``."""
    trials = [{"trial": f"trial-{i}", "path": f"<results>/trial-{i}/step-{horizon}", "step": horizon,
               "max_steps": horizon, "objective": objective, "mlm_loss": loss,
               "setting": {"learning_rate": 1e-3, "dropout": 0.1, **s}}  # a trial records all three
              for i, (s, loss) in enumerate(zip(settings, losses))]
    record = choose(trials)
    path.write_text(json.dumps(record))
    return record


def test_a_recorded_choice_stands_in_for_the_arms_trials(tmp_path):
    """pretrain.tuning.recorded: a recorded arm runs no trials and its tuning_choice job copies the file
    (snakemake -n); an edited or mismatched file is refused naming the key before any job."""
    from taco.training.tuning import main as tuning_choice_main
    from taco.workflow.plan.command import load_config
    from taco.workflow.plan.inputs import PlanError
    from test_mnli_start import dry_run, job_counts

    # the DAG: smoke with tuning on, tiny's MLM arm recorded
    settings = trial_settings({"warmup_steps": [1, 2]}, 2, 0)
    rec = _recorded_choice(tmp_path / "choice.json", settings, 10, "mlm", [5.0, 4.0])
    overlay = tmp_path / "rec.yaml"
    text = ("pretrain:\n  tuning: {enabled: true, trials: 2, horizon: 10, space: {warmup_steps: [1, 2]},\n"
            f"           recorded: {{tiny: {{mlm: {tmp_path / 'choice.json'}}}}}}}\n")
    overlay.write_text(text)
    smoke = REPO / "configs" / "smoke.yaml"
    out = dry_run(smoke, overlay, target="results/smoke/tuning/tiny/mlm/choice.json", extra=("--printshellcmds",))
    assert "pretrain_trial" not in job_counts(out) and job_counts(out)["tuning_choice"] == 1
    assert f"tuning-choice --recorded {tmp_path / 'choice.json'} --output" in out, out[-2000:]
    out = dry_run(smoke, overlay, target="results/smoke/tuning/tiny/taco/choice.json")
    assert job_counts(out)["pretrain_trial"] == 2  # the other arm runs its trials

    # the command checks and copies it, saying where it came from
    dst = tmp_path / "out" / "choice.json"
    assert tuning_choice_main(["--recorded", str(tmp_path / "choice.json"), "--output", str(dst)]) == 0
    got = json.loads(dst.read_text())
    assert got["chosen"] == rec["chosen"] and got["chosen"]["trial"] == "trial-1"
    assert got["recorded_from"] == str(tmp_path / "choice.json")
    edited = dict(rec, chosen=rec["trials"][0])
    (tmp_path / "edited.json").write_text(json.dumps(edited))
    assert tuning_choice_main(["--recorded", str(tmp_path / "edited.json"), "--output", str(dst)]) != 0
    assert json.loads(dst.read_text())["chosen"]["trial"] == "trial-1"  # nothing overwritten by the failure

    # refused before any job, naming the key: edited, another horizon, other settings, not an arm, missing, off
    key = r"pretrain\.tuning\.recorded\.tiny\.mlm"
    cases = [("edited.json", "the file was edited"),
             ("horizon.json", r"step 20, but this arm's is 10"),
             ("other.json", r"trial-0 ran .* but this configuration's trial draws"),
             ("missing.json", "no readable recorded choice")]
    _recorded_choice(tmp_path / "horizon.json", settings, 20, "mlm", [5.0, 4.0])
    _recorded_choice(tmp_path / "other.json", trial_settings({"warmup_steps": [7, 8]}, 2, 0), 10, "mlm", [5.0, 4.0])
    for name, word in cases:
        overlay.write_text(text.replace(str(tmp_path / "choice.json"), str(tmp_path / name)))
        with pytest.raises(PlanError, match=rf"{key} \(.*{name}\): .*{word}"):
            load_config([str(smoke), str(overlay)])
    overlay.write_text(text.replace("{tiny: {mlm:", "{tiny: {mlm_tp:"))  # another arm's record
    with pytest.raises(PlanError, match=r"recorded\.tiny\.mlm_tp \(.*\): its trials have objective 'mlm', but this"):
        load_config([str(smoke), str(overlay)])
    overlay.write_text(text.replace("{tiny: {mlm:", "{base: {mlm:"))
    with pytest.raises(PlanError, match=r"pretrain\.tuning\.recorded\.base\.mlm: not a tuned arm"):
        load_config([str(smoke), str(overlay)])
    overlay.write_text(text.replace("enabled: true", "enabled: false"))
    with pytest.raises(PlanError, match=r"pretrain\.tuning\.recorded: set, but pretrain\.tuning is off"):
        load_config([str(smoke), str(overlay)])


def test_the_records_choices_are_the_trials_cpu_real_families_draws(tmp_path, shared_data):
    """The record's choices (a real run's, 2026-12-07, on the machine that lost its trials) are accepted by
    the configuration that drew them (ModernBERT-tiny's own space), and not by BERT-tiny's space."""
    from taco.training.tuning import check_recorded
    from taco.workflow import tuning_grid as tg
    from taco.workflow.plan.command import load_config

    data = shared_data
    real = tmp_path / "real.yaml"
    real.write_text(f"data_root: {data}\npretrain:\n  tuning:\n    recorded:\n      modernbert_tiny:\n"
                    f"        mlm: {RECORD / 'mlm' / 'choice.json'}\n        taco: {RECORD / 'taco' / 'choice.json'}\n")
    cfg = load_config([str(REPO / "configs" / "cpu-real.yaml"), str(REPO / "configs" / "cpu-real-families.yaml"),
                       str(real)])
    assert tg.recorded_choice(cfg, "modernbert_tiny", "taco") == str(RECORD / "taco" / "choice.json")
    assert tg.recorded_choice(cfg, "tiny", "taco") is None
    # ... and not those BERT-tiny's space draws
    with pytest.raises(TuningError, match=r"trial-0 ran .*but this configuration's trial draws"):
        check_recorded(json.loads((RECORD / "mlm" / "choice.json").read_text()), "x",
                       tg.tuning_trials(cfg, "tiny"), 2000, "mlm")
