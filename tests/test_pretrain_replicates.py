"""Replicated pre-training: the pre-training run is the statistical unit, fine-tuning seeds nested."""

from __future__ import annotations

import json

import numpy as np
import pytest
import yaml

from taco.stats.analysis_config import validate_analysis
from taco.stats.aggregate import (UNIT_FINETUNE, UNIT_PRETRAIN, aggregate, load_metrics, per_seed_table,
                               statistical_units)


def _write(root, objective, pseed, seed, sst2, step=100):
    d = root / objective / f"p{pseed}" / f"seed-{seed}"
    d.mkdir(parents=True, exist_ok=True)
    rec = {"task": "sst2", "seed": seed, "size": "tiny", "objective": objective, "fraction": 1.0,
           "step": step, "scores": {"sst2": {"accuracy": sst2}}, "degenerate": {"sst2": False}}
    if pseed is not None:
        rec["pretrain_seed"] = pseed
    (d / "metrics.json").write_text(json.dumps(rec))
    return d / "metrics.json"


def _spec():
    return validate_analysis({
        "roles": {"small": "tiny", "base": None}, "budget_names": {"tiny": {"250k": 100}},
        "runs": [{"size": "tiny", "objective": "mlm", "fraction": 1.0},
                     {"size": "tiny", "objective": "taco", "fraction": 1.0}],
        "tasks": ["sst2"], "n_resamples": 199, "min_seeds": 2})


def test_two_pretraining_runs_are_the_units(tmp_path):
    # MLM: pre-training run 0 gives 0.80/0.82/0.84, run 1 gives 0.70/0.72/0.74 (fine-tuning seeds 1-3)
    paths = [_write(tmp_path, "mlm", p, s, base + 0.02 * (s - 1))
             for p, base in ((0, 0.80), (1, 0.70)) for s in (1, 2, 3)]
    paths += [_write(tmp_path, "taco", None, s, 0.9) for s in (1, 2, 3)]
    agg = aggregate(paths, _spec())
    per_seed = agg["per_seed"]
    assert sorted(per_seed.loc[per_seed.objective == "mlm", "pretrain_seed"].unique()) == [0, 1]
    cells = agg["cells"].set_index("objective")
    mlm = cells.loc["mlm"]
    # independent: mean of the two pre-training-run means (82, 72) in points
    assert mlm["n_seeds"] == 2 and mlm["mean"] == pytest.approx(np.mean([82.0, 72.0]))
    assert mlm["std"] == pytest.approx(np.std([82.0, 72.0], ddof=1))
    assert "pre-training run" in mlm["note"]
    taco = cells.loc["taco"]
    assert taco["n_seeds"] == 3 and "fine-tuning seeds only" in taco["note"]
    avg = agg["glue_average"]
    cell = avg[(avg.level == "cell") & (avg.objective == "mlm")].iloc[0]
    assert cell["n_seeds"] == 2 and cell["mean"] == pytest.approx(77.0)


def test_units_table_is_idempotent_and_marks_units(tmp_path):
    paths = [_write(tmp_path, "mlm", p, s, 0.5 + 0.1 * p) for p in (3, 4) for s in (1, 2)]
    units = statistical_units(per_seed_table(load_metrics(paths), _spec()))
    assert list(units["unit"].unique()) == [UNIT_PRETRAIN]
    assert sorted(units["seed"]) == [3, 4] and list(units["n_finetune_seeds"]) == [2, 2]
    assert statistical_units(units) is units
    single = statistical_units(per_seed_table(load_metrics(paths[:2]), _spec()))
    assert list(single["unit"].unique()) == [UNIT_FINETUNE] and len(single) == 2


def test_duplicate_only_within_the_same_pretraining_run(tmp_path):
    a = _write(tmp_path / "a", "mlm", 0, 1, 0.5)
    b = _write(tmp_path / "b", "mlm", 1, 1, 0.6)
    assert len(per_seed_table(load_metrics([a, b]), _spec())) == 2
    c = _write(tmp_path / "c", "mlm", 0, 1, 0.7)
    with pytest.raises(ValueError, match="duplicate run"):
        per_seed_table(load_metrics([a, c]), _spec())


def test_workflow_replicates_pretraining_per_seed(tmp_path):
    """pretrain.seeds [0, 1]: seed 0 (the top-level seed) keeps the plain paths, seed 1 adds
    /pretrain-seed-1 and reaches `taco pretrain --seed 1`; packing (the data subset) is not repeated."""
    import re
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parent.parent
    overlay = tmp_path / "seeds.yaml"
    overlay.write_text("pretrain:\n  seeds: [0, 1]\n  control: true\n")
    work = tmp_path / "work"  # a scratch folder, never the checkout's results/
    work.mkdir()
    out = subprocess.run([sys.executable, "-m", "snakemake", "-n", "-p", "--cores", "1",
                          "--snakefile", str(repo / "Snakefile"), "--directory", str(work), "--configfile",
                          str(repo / "configs/smoke.yaml"), str(overlay)], cwd=work, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    cmds = [line for line in out.stdout.splitlines() if "-m taco pretrain " in line]
    plain = [c for c in cmds if "/pretrain-seed-" not in c]
    seed1 = [c for c in cmds if "/pretrain-seed-1/" in c]
    smoke = yaml.safe_load((repo / "configs/smoke.yaml").read_text())["pretrain"]
    runs = sum(len(r["objectives"]) * len(r["fractions"]) for r in smoke["runs"])
    assert len(plain) == len(seed1) == runs * len(smoke["sizes"]["tiny"]["budgets"]) == 16  # 8 runs x 2 budgets
    assert all(re.search(r"--seed 0 ", c) for c in plain) and all(re.search(r"--seed 1 ", c) for c in seed1)
    assert any("results/smoke/pretrain/tiny/mlm/data-1.0/step-50" in c for c in plain)
    # replicates read the same packed blocks: one pack job per fraction
    assert len(re.findall(r"-m taco pack ", out.stdout)) == 2
    inits = [line for line in out.stdout.splitlines() if "-m taco init " in line]
    assert len(inits) == 2 and any("--seed 1 " in c and "control/data-1.0/pretrain-seed-1/step-0" in c
                                   for c in inits)
    # the analysis spec lists each objective once
    from taco.workflow import config as wc
    from snakemake.utils import validate
    from taco.workflow.schema import schema_file

    cfg = yaml.safe_load((repo / "configs/smoke.yaml").read_text())
    cfg["pretrain"]["seeds"] = [0, 1]
    validate(cfg, str(schema_file(repo / "workflow/schemas/config.schema.yaml")))
    spec = wc.analysis_spec(cfg, ["sst2"])
    keys = [(v["size"], v["objective"], v["fraction"]) for v in spec["runs"]]
    assert len(keys) == len(set(keys)) == runs == 8


def test_table_and_claim_notes_say_what_the_uncertainty_covers(tmp_path):
    from taco.commands.claims import main as claims_main
    from taco.commands.aggregate import main as aggregate_main
    from taco.commands.tables import main as tables_main

    paths = [_write(tmp_path / "m", "mlm", p, s, 0.8 - 0.1 * p + 0.01 * s) for p in (0, 1) for s in (1, 2, 3)]
    paths += [_write(tmp_path / "m", "taco", None, s, 0.9) for s in (1, 2, 3)]
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps(_spec().to_dict()))
    assert aggregate_main(["--inputs", *map(str, paths), "--analysis", str(spec),
                           "--output-dir", str(tmp_path / "agg")]) == 0
    args = ["--aggregate-dir", str(tmp_path / "agg"), "--analysis", str(spec), "--output-dir", str(tmp_path / "r")]
    assert tables_main(args) == 0 and claims_main(args) == 0
    table1 = (tmp_path / "r" / "table1.md").read_text()
    assert "unit: pre-training run (2 runs, 3 fine-tuning seeds nested" in table1
    assert "one pre-training run: uncertainty covers fine-tuning seeds only" in table1
    claims = (tmp_path / "r" / "claims.md").read_text()
    assert "arms differ in units" in claims or "pre-training run" in claims
