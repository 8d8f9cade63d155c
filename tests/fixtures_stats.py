"""Hand-built metrics.json fixtures for the statistics, tables, figures and claims tests.

Values are deterministic: a per-cell base score plus a fixed per-seed offset, so tests can recompute
every statistic independently with numpy / scipy.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from taco.registry import TASK_SCORE_KEYS

PAPER_TABLE1_DEV = {  # taco_tab1.png, validation set (GLUE points)
    "MLM-250k": dict(mnli_m=76.9, mnli_mm=77.4, qqp=85.7, qnli=86.2, sst2=89.0, cola=28.8, stsb=85.6, mrpc=85.9, rte=59.6),
    "TACO-50k": dict(mnli_m=76.7, mnli_mm=76.8, qqp=85.2, qnli=85.0, sst2=87.5, cola=31.3, stsb=85.6, mrpc=87.1, rte=59.1),
    "TACO-250k": dict(mnli_m=77.9, mnli_mm=78.4, qqp=86.1, qnli=86.5, sst2=88.9, cola=34.2, stsb=86.1, mrpc=88.1, rte=59.5),
}
PAPER_TASKS = ["mnli", "qqp", "qnli", "sst2", "cola", "stsb", "mrpc", "rte"]
#: the primary metric of each score key (the suite's defaults: F1 for MRPC/QQP, Spearman for STS-B)
PRIMARY = {"cola": "matthews_correlation", "stsb": "spearmanr", "mrpc": "f1", "qqp": "f1"}


def write_run(root: Path, *, size: str, objective: str, fraction: float, step: int, task: str, seed: int,
              scores: dict[str, float], degenerate: dict[str, bool] | None = None) -> Path:
    """Write one metrics.json; ``scores`` maps score key -> primary value on the 0-1 scale.

    ``scores`` values are the key's primary metric (:data:`PRIMARY`); every key also gets a second
    metric (value + 0.01: accuracy / pearson / f1) so that per_seed.csv has several metric columns
    and a wrong metric choice shows as a 1-point shift.
    """
    d = root / size / objective / f"data-{fraction}" / f"step-{step}" / task / f"seed-{seed}"
    d.mkdir(parents=True, exist_ok=True)
    sc: dict[str, dict[str, float]] = {}
    for key, v in scores.items():
        pm = PRIMARY.get(key, "accuracy")
        other = {"accuracy": "f1", "f1": "accuracy", "matthews_correlation": "accuracy",
                 "spearmanr": "pearson"}[pm]
        sc[key] = {pm: v, other: min(1.0, v + 0.01)}
    rec: dict[str, Any] = {
        "task": task, "seed": seed, "size": size, "objective": objective, "fraction": fraction,
        "step": step, "checkpoint": "x", "checkpoint_manifest_sha256": "0" * 64,
        "report_rule": "last", "reported_epoch": 4, "epochs": [], "scores": sc,
        "degenerate": {k: bool((degenerate or {}).get(k, False)) for k in scores},
        "n_dev": {k: 100 for k in scores}, "wall_time_s": 1.0, "hyperparameters": {},
    }
    p = d / "metrics.json"
    p.write_text(json.dumps(rec))
    return p


def write_cell(root: Path, *, size: str, objective: str, fraction: float, step: int,
               base: dict[str, float], seeds: list[int], tasks: list[str] = PAPER_TASKS,
               spread: float = 0.5, degenerate: dict[tuple[str, int], bool] | None = None) -> list[Path]:
    """Write one cell: for each task and seed, score = (base[key] + offset(seed)) / 100 where
    ``offset(seed) = spread * ((seed * 37) % 7 - 3) / 3`` (a fixed, seed-dependent pattern)."""
    paths = []
    for task in tasks:
        for seed in seeds:
            off = spread * (((seed * 37) % 7) - 3) / 3.0
            scores = {k: (base[k] + off) / 100.0 for k in TASK_SCORE_KEYS[task]}
            deg = {k: bool((degenerate or {}).get((k, seed), False)) for k in scores}
            paths.append(write_run(root, size=size, objective=objective, fraction=fraction, step=step,
                                   task=task, seed=seed, scores=scores, degenerate=deg))
    return paths


def seed_offset(seed: int, spread: float = 0.5) -> float:
    """The offset :func:`write_cell` adds for ``seed`` (GLUE points)."""
    return spread * (((seed * 37) % 7) - 3) / 3.0


def paper_table1_runs(root: Path) -> list[Path]:
    """The paper's Table 1 dev numbers as one seed per cell (values / 100)."""
    paths = []
    for name, step in (("MLM-250k", 250000), ("TACO-50k", 50000), ("TACO-250k", 250000)):
        obj = name.split("-")[0].lower()
        for task in PAPER_TASKS:
            scores = {k: PAPER_TABLE1_DEV[name][k] / 100.0 for k in TASK_SCORE_KEYS[task]}
            paths.append(write_run(root, size="small", objective=obj, fraction=1.0, step=step,
                                   task=task, seed=1, scores=scores))
    return paths


def smoke_spec(**over: Any) -> dict[str, Any]:
    """A small analysis spec: paper budget names mapped to tiny steps, small n_resamples."""
    spec: dict[str, Any] = {
        "roles": {"small": "tiny", "base": "tinybase"},
        "budget_names": {"tiny": {"10k": 10, "50k": 20, "150k": 40, "250k": 60},
                         "tinybase": {"100k": 20, "250k": 40, "500k": 80}},
        "runs": [
            {"size": "tiny", "objective": "mlm", "fraction": 1.0},
            {"size": "tiny", "objective": "taco", "fraction": 1.0},
            {"size": "tiny", "objective": "taco_concentrated", "fraction": 1.0},
            {"size": "tiny", "objective": "mlm_tp", "fraction": 1.0},
            {"size": "tiny", "objective": "mlm", "fraction": 0.25, "budgets": ["250k"]},
            {"size": "tiny", "objective": "taco", "fraction": 0.25, "budgets": ["250k"]},
            {"size": "tinybase", "objective": "mlm", "fraction": 1.0},
            {"size": "tinybase", "objective": "taco", "fraction": 1.0},
        ],
        "tasks": PAPER_TASKS,
        "n_resamples": 199,
        "seed": 7,
    }
    spec.update(over)
    return spec


def write_spec(path: Path, spec: dict[str, Any]) -> Path:
    """Write a spec as JSON."""
    path.write_text(json.dumps(spec))
    return path


#: per-objective offsets (GLUE points) added to the paper's MLM-250k row in :func:`write_smoke_runs`
SMOKE_OFFSETS = {"mlm": 0.0, "taco": 1.2, "taco_concentrated": 0.4, "mlm_tp": 0.1}
#: the no-pre-training control (spec key ``controls``, step 0): this far below MLM-250k
CONTROL_OFFSET = -20.0


def write_smoke_runs(root: Path, seeds: list[int], spec: dict[str, Any] | None = None,
                     skip: set[tuple[str, str, float, int]] = frozenset(), spread: float = 0.5) -> list[Path]:
    """Every cell of ``spec`` (default :func:`smoke_spec`) with the given seeds: base = the paper's
    MLM-250k dev row + an objective offset - a budget penalty (4 points at the first budget, 0 at
    the last); 25%-data objectives lose 0.3. ``skip`` lists (size, objective, fraction, step) not written."""
    spec = spec or smoke_spec()
    paths = []
    for v in spec["runs"]:
        names = spec["budget_names"][v["size"]]
        budgets = v.get("budgets") or list(names)
        steps = sorted(names.values())
        for b in budgets:
            step = names[b]
            if (v["size"], v["objective"], v["fraction"], step) in skip:
                continue
            pen = 4.0 * (steps[-1] - step) / max(1, steps[-1] - steps[0])
            off = SMOKE_OFFSETS.get(v["objective"], 0.0) - pen - (0.3 if v["fraction"] < 1 else 0.0)
            base = {k: x + off for k, x in PAPER_TABLE1_DEV["MLM-250k"].items()}
            paths += write_cell(root, size=v["size"], objective=v["objective"], fraction=v["fraction"],
                                step=step, base=base, seeds=seeds, tasks=spec["tasks"], spread=spread)
    for size in spec.get("controls", []):
        if (size, "control", 1.0, 0) in skip:
            continue
        base = {k: x + CONTROL_OFFSET for k, x in PAPER_TABLE1_DEV["MLM-250k"].items()}
        paths += write_cell(root, size=size, objective="control", fraction=1.0, step=0, base=base, seeds=seeds,
                            tasks=spec["tasks"], spread=spread)
    return paths


def build_aggregate(tmp: Path, spec: dict[str, Any], seeds: list[int],
                    skip: set[tuple[str, str, float, int]] = frozenset(),
                    extra_paths: list[Path] | None = None, spread: float = 0.5) -> tuple[Path, Path]:
    """Write runs for ``spec`` and run ``taco aggregate``; returns (aggregate dir, spec path)."""
    from taco.commands.aggregate import main as aggregate_main

    paths = write_smoke_runs(tmp / "runs", seeds, spec, skip=skip, spread=spread) + list(extra_paths or [])
    spec_path = write_spec(tmp / "analysis.json", spec)
    lst = tmp / "inputs.txt"
    lst.write_text("\n".join(str(p) for p in paths) + "\n")
    out = tmp / "aggregate"
    assert aggregate_main(["--inputs-from", str(lst), "--analysis", str(spec_path), "--output-dir", str(out)]) == 0
    return out, spec_path
