"""taco.paper holds the paper's grid, tasks, budgets and table sets once; config.yaml (the paper's full
grid as the default configuration, YAML that cannot import them) writes the same facts."""

from __future__ import annotations

from pathlib import Path

import yaml

from taco import paper
from taco.objectives import OBJECTIVE_SPECS
from taco.stats.analysis_config import DEFAULTS

REPO = Path(__file__).resolve().parents[1]


def _grid_of(config: dict) -> dict[str, dict[float, set[str]]]:
    grid: dict[str, dict[float, set[str]]] = {}
    for run in config["pretrain"]["runs"]:
        for fraction in run["fractions"]:
            grid.setdefault(run["size"], {}).setdefault(float(fraction), set()).update(run["objectives"])
    return grid


def test_config_yaml_runs_the_papers_grid_and_table4():
    config = yaml.safe_load((REPO / "config.yaml").read_text())
    grid = _grid_of(config)
    for role, by_fraction in paper.PAPER_GRID.items():
        for fraction, objectives in by_fraction.items():
            assert set(objectives) <= grid[role][fraction], (role, fraction)
    # Table 4 at the base role: the paper's grid plus this suite's reimplemented baselines
    assert set(paper.TABLE4_OBJECTIVES) == grid["base"][1.0]
    assert sorted(config["glue"]["tasks"]) == sorted(paper.PAPER_TASKS)
    for role, steps in paper.PAPER_BUDGETS.items():
        assert tuple(config["pretrain"]["sizes"][role]["budgets"]) == steps
    assert config["pretrain"]["mlm_probability"] == paper.PAPER_SETUP["mlm_probability"]


def test_the_analysis_defaults_are_the_papers_grid():
    expect = [(role, o, f) for role, by_f in paper.PAPER_GRID.items() for f, objs in by_f.items() for o in objs]
    assert [(r["size"], r["objective"], r["fraction"]) for r in DEFAULTS["runs"]] == expect
    assert DEFAULTS["tasks"] == list(paper.PAPER_TASKS)


def test_every_named_objective_is_registered_and_the_order_is_the_papers():
    assert paper.TABLE_OBJECTIVES <= set(OBJECTIVE_SPECS)
    assert set(paper.OBJECTIVE_ORDER) <= set(OBJECTIVE_SPECS)
    known = [o for o in OBJECTIVE_SPECS if o in paper.OBJECTIVE_ORDER]
    assert known == [o for o in paper.OBJECTIVE_ORDER if o in OBJECTIVE_SPECS]
