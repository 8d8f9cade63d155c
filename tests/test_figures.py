"""taco.report.figures: the three figures are written as non-empty PNG and PDF files; every figure of
the suite (figures 5, 2 and 6, ablation, data efficiency, pre-training curves, efficiency) keeps its
legends off the data and prints plain tick labels on log axes (item 4)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from fixtures_stats import PAPER_TABLE1_DEV, build_aggregate, smoke_spec, write_cell, write_spec
from taco.commands.figures import main

SPEC = smoke_spec(
    budget_names={"tiny": {"10k": 10, "50k": 20, "250k": 60}, "tinybase": {"250k": 40}},
    tasks=["mnli", "sst2", "rte"], n_resamples=99,
)


def _check(out):
    for name in ("figure5", "ablation", "data_efficiency"):
        png, pdf = out / f"{name}.png", out / f"{name}.pdf"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 2000
        assert pdf.read_bytes()[:5] == b"%PDF-" and pdf.stat().st_size > 1000


def test_figures_written(tmp_path):
    agg, spec = build_aggregate(tmp_path, SPEC, seeds=[1, 2, 3],
                                skip={("tiny", "mlm_tp", 1.0, 60)})
    out = tmp_path / "results"
    assert main(["--aggregate-dir", str(agg), "--analysis", str(spec), "--output-dir", str(out), "--dpi", "60"]) == 0
    _check(out)


def test_figures_with_nothing_run(tmp_path):
    # base-size runs only: every small-role figure is empty but drawn, saying what is missing
    import matplotlib.pyplot as plt

    from taco.report.figures import ablation_figure, data_efficiency_figure, figure5
    from taco.stats.aggregate import read_aggregate
    from taco.stats.analysis_config import load_analysis
    from taco.stats.table_data import load_paper_values

    spec = dict(SPEC, runs=[{"size": "tinybase", "objective": "mlm", "fraction": 1.0}])
    agg, spec_path = build_aggregate(tmp_path, spec, seeds=[1])
    frames, cfg, pv = read_aggregate(agg), load_analysis(spec_path), load_paper_values()
    for make in (figure5, ablation_figure, data_efficiency_figure):
        fig = make(frames, cfg, pv)
        texts = [t.get_text() for ax in fig.axes for t in ax.texts] + [t.get_text() for t in fig.texts]
        assert any("no" in t or "not run" in t for t in texts), make.__name__
        plt.close(fig)


def test_missing_aggregate_is_an_error(tmp_path):
    assert main(["--aggregate-dir", str(tmp_path / "nope"), "--output-dir", str(tmp_path)]) == 2


def _frames(tmp_path, spec, seeds=(1, 2, 3)):
    from taco.stats.analysis_config import load_analysis
    from taco.stats.aggregate import read_aggregate
    from taco.stats.table_data import load_paper_values

    agg, spec_path = build_aggregate(tmp_path, spec, seeds=list(seeds))
    return read_aggregate(agg), load_analysis(spec_path), load_paper_values()


def test_one_style_per_variant_in_every_figure():
    from taco.registry import CONTROL, OBJECTIVES
    from taco.report import dynamics_figures
    from taco.report.style import OBJECTIVE_STYLE

    objectives = list(OBJECTIVES) + [CONTROL]
    assert set(OBJECTIVE_STYLE) == set(objectives)
    assert len({OBJECTIVE_STYLE[v]["color"] for v in objectives}) == len(objectives)  # one colour each
    assert len({OBJECTIVE_STYLE[v]["marker"] for v in objectives}) == len(objectives)
    groups = [(v, "small", 1.0) for v in objectives]
    dyn = dynamics_figures._styles(groups)
    for v in objectives:  # Figures 2/6 and 5/ablation/data efficiency agree (TACO was blue vs vermillion)
        assert OBJECTIVE_STYLE[v]["color"] == dyn[(v, "small", 1.0)][0] == dynamics_figures.SERIES_STYLE[v][1]
    assert OBJECTIVE_STYLE["taco"]["color"] == "#0072B2" and OBJECTIVE_STYLE["mlm"]["color"] == "#D55E00"
    again = dynamics_figures._styles([("taco", "small", 1.0), ("taco", "base", 1.0)])
    assert again[("taco", "base", 1.0)][0] == OBJECTIVE_STYLE["taco"]["color"]  # repeated: same colour


def test_figure5_legend_outside_and_reference_line_labelled(tmp_path):
    import matplotlib.pyplot as plt

    from taco.report.figures import figure5
    from taco.report.style import OBJECTIVE_STYLE

    # the fixture's sizes play the paper's models here (else the published points are left out)
    frames, cfg, pv = _frames(tmp_path, dict(SPEC, presets={"tiny": "small", "tinybase": "base"}))
    fig = figure5(frames, cfg, pv)
    ax = fig.axes[0]
    leg = fig.legends[0]  # a figure legend below the plot: the plot keeps the figure's width (issue 53.3)
    labels = [t.get_text() for t in leg.get_texts()]
    assert any("MLM-250k level (paper, dashed)" in lab for lab in labels)
    dashed = [ln for ln in ax.get_lines() if ln.get_linestyle() == "--"]
    assert dashed and dashed[0].get_label() in labels
    taco_line = [ln for ln in ax.get_lines() if ln.get_label().startswith("TACO (ours")][0]
    assert taco_line.get_color() == OBJECTIVE_STYLE["taco"]["color"]
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    assert leg.get_window_extent(r).y1 <= ax.get_window_extent(r).y0  # below the axes: covers no point
    assert ax.get_window_extent(r).width >= 0.75 * fig.bbox.width  # not squeezed into a third of the figure
    plt.close(fig)


def test_data_efficiency_panels_only_for_what_was_run(tmp_path):
    import matplotlib.pyplot as plt

    from taco.report.figures import data_efficiency_figure, data_efficiency_panels
    from taco.stats.table_data import build_table2

    frames, cfg, pv = _frames(tmp_path / "a", SPEC)  # mnli, sst2, rte fine-tuned; 25% runs at 250k
    panels = data_efficiency_panels(build_table2(frames, cfg, pv), cfg)
    assert [c for c, _ in panels] == ["mnli_m", "mnli_mm", "sst2", "avg"]  # no QQP / QNLI panels
    assert panels[-1][1] == "average of MNLI-m, MNLI-mm, SST-2 (3 of the 5 Table 2 scores)"
    fig = data_efficiency_figure(frames, cfg, pv)
    assert len(fig.axes) == 4
    # the title promises bars only where some are drawn (a point of >= 3 seeds; issue 53.3)
    seeds = build_table2(frames, cfg, pv)["n_seeds"].astype(float)
    want = "bars: 95%" if (seeds >= 3).any() else "no bars: every point rests on fewer than 3 seeds"
    assert want in fig._suptitle.get_text(), fig._suptitle.get_text()
    plt.close(fig)
    one = dict(SPEC, tasks=["sst2"])  # one score: no "average" of it
    frames, cfg, pv = _frames(tmp_path / "b", one)
    assert [c for c, _ in data_efficiency_panels(build_table2(frames, cfg, pv), cfg)] == ["sst2"]
    full_only = dict(SPEC, runs=[v for v in SPEC["runs"] if v["fraction"] == 1.0])
    frames, cfg, pv = _frames(tmp_path / "c", full_only)  # the 25% comparison was not run
    fig = data_efficiency_figure(frames, cfg, pv)
    texts = [t.get_text() for ax in fig.axes for t in ax.texts]
    assert any("not run in this configuration" in t for t in texts)
    plt.close(fig)


def _texts(fig) -> list[str]:
    """Every title, axis label, legend entry and free text of a figure."""
    out = [t.get_text() for t in fig.texts] + [t.get_text() for leg in fig.legends for t in leg.get_texts()]
    if fig._suptitle is not None:
        out.append(fig._suptitle.get_text())
    for ax in fig.axes:
        out += [ax.get_title(), ax.get_ylabel(), ax.get_xlabel()] + [t.get_text() for t in ax.texts]
        leg = ax.get_legend()
        if leg is not None:
            out += [t.get_text() for t in leg.get_texts()]
    return [t for t in out if t]


def test_synthetic_tasks_are_labelled_in_every_figure_and_the_paper_points_left_out(tmp_path):
    import matplotlib.pyplot as plt

    from taco.report.figures import ablation_figure, data_efficiency_figure, figure5

    spec = dict(SPEC, glue_source="synthetic", corpus_source="synthetic", presets={"tiny": "tiny", "tinybase": "tiny"})
    frames, cfg, pv = _frames(tmp_path, spec)
    for make in (figure5, ablation_figure, data_efficiency_figure):
        fig = make(frames, cfg, pv)
        texts = _texts(fig)
        titles = [fig._suptitle.get_text()] if fig._suptitle is not None else [ax.get_title() for ax in fig.axes[:1]]
        assert all("SYNTHETIC GLUE-format tasks and synthetic corpus" in t for t in titles), (make.__name__, titles)
        ylabels = [ax.get_ylabel() for ax in fig.axes if ax.get_ylabel()]
        if fig._supylabel is not None:  # one y label for all rows of panels
            ylabels.append(fig._supylabel.get_text())
        assert ylabels and all("SYNTHETIC GLUE-format tasks" in y and "GLUE dev score" not in y for y in ylabels)
        assert not any("(paper" in t for t in texts), make.__name__
        plt.close(fig)
    fig = figure5(frames, cfg, pv)
    assert any("Figure 5 points are not drawn, because synthetic" in t for t in _texts(fig))
    plt.close(fig)


def test_figure5_draws_the_paper_points_only_beside_the_papers_model(tmp_path):
    import matplotlib.pyplot as plt

    from taco.report.figures import figure5

    for presets, drawn in (({"tiny": "small", "tinybase": "base"}, True), ({"tiny": "tiny", "tinybase": "tiny"}, False)):
        frames, cfg, pv = _frames(tmp_path / str(drawn), dict(SPEC, glue_source="hub", presets=presets))
        fig = figure5(frames, cfg, pv)
        texts = _texts(fig)
        assert any("(paper, Figure 5)" in t for t in texts) is drawn
        assert fig.axes[0].get_ylabel().startswith("average GLUE dev score")
        assert not any("SYNTHETIC" in t for t in texts)
        if not drawn:
            assert any("model preset 'tiny' is not BERT-small" in t for t in texts)
        plt.close(fig)


# ---------------------------------------------------------------------------------------------
# readable figures: no legend over data, plain log tick labels, a style per fraction
# ---------------------------------------------------------------------------------------------
#: objective -> (MLM-loss offset, auxiliary loss it logs)
CURVE_RUNS = {"mlm": (0.1, None), "taco": (0.0, "tc_loss"), "taco_concentrated": (0.05, "tc_loss"),
              "mlm_tp": (0.15, "tp_loss")}


def _curve_checkpoint(root: Path, obj: str, frac: float, step: int, lines: list[dict], ev: dict) -> Path:
    d = root / obj / f"data-{frac}" / f"step-{step}"
    d.mkdir(parents=True)
    (d / "manifest.json").write_text(json.dumps({"kind": "pretrain", "size": "tiny", "objective": obj,
                                                 "fraction": frac, "step": step}))
    (d / "train_log.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    (d / "eval.json").write_text(json.dumps({"step": step, **ev}))
    return d


def curve_checkpoints(root: Path, budgets=(2000, 4000), every: int = 100) -> list[Path]:
    """Budget checkpoints of a cpu-real-like grid: the control (step 0), every objective on full data
    and MLM and TACO on 25 % of it; training losses logged every 100 steps decay from ~9.6 to ~6
    (MLM) and ~3.9 to ~2.1 (TC, TP), all within one decade as in real runs (where matplotlib's
    default log labels read ``6x10^0``); the 25 % runs are 0.3 nats worse."""
    out = [_curve_checkpoint(root, "control", 1.0, 0, [], {"mlm_loss": 9.9, "mlm_accuracy": 0.0, "tc_loss": None})]
    for obj, frac in [(o, 1.0) for o in CURVE_RUNS] + [("mlm", 0.25), ("taco", 0.25)]:
        off, aux = CURVE_RUNS[obj]
        worse = off + (0.0 if frac == 1.0 else 0.3)
        lo = 0
        for hi in budgets:
            lines = []
            for s in range(lo + every, hi + 1, every):
                rec = {"event": "log", "step": s, "mlm_loss": 6.0 + worse + 3.5 * math.exp(-s / 900)}
                if aux:
                    rec[aux] = 2.1 + worse + 1.8 * math.exp(-s / 700)
                rec["loss"] = sum(v for k, v in rec.items() if k.endswith("_loss"))
                lines.append(rec)
            ev = {"mlm_loss": 6.0 + worse + 3.5 * math.exp(-hi / 900), "mlm_accuracy": 0.1,
                  "tc_loss": 2.0 + worse if aux == "tc_loss" else None}
            out.append(_curve_checkpoint(root, obj, frac, hi, lines, ev))
            lo = hi
    return out


#: GLUE averages (points) per objective at the steps 10, 20, 60: curves that cross and fill every
#: corner of the axes, so a legend inside them covers data wherever it goes
CROSSING = {"taco": (70.0, 75.0, 80.0), "mlm": (68.0, 72.0, 78.0), "taco_concentrated": (80.0, 74.0, 66.0),
            "mlm_tp": (66.0, 70.5, 67.0)}


def crossing_frames(tmp: Path, presets=None, **over):
    """Aggregated fixture runs with the :data:`CROSSING` curves (3 seeds; MLM and TACO also on 25 %
    of the data at the last budget, one point below full data): (frames, cfg, paper values).
    ``over``: analysis spec keys to change (:data:`QUICK_START`: the quick start's synthetic tasks)."""
    from taco.stats.analysis_config import load_analysis
    from taco.commands.aggregate import main as aggregate_main
    from taco.stats.aggregate import read_aggregate
    from taco.stats.table_data import load_paper_values

    spec = dict(SPEC, runs=[{"size": "tiny", "objective": o, "fraction": 1.0} for o in CROSSING]
                + [{"size": "tiny", "objective": o, "fraction": 0.25, "budgets": ["250k"]} for o in ("mlm", "taco")])
    if presets:
        spec["presets"] = presets
    spec.update(over)
    ref = PAPER_TABLE1_DEV["MLM-250k"]
    mean_ref = sum(ref.values()) / len(ref)
    paths = []
    for obj, levels in CROSSING.items():
        for step, level in zip((10, 20, 60), levels):
            paths += write_cell(tmp / "runs", size="tiny", objective=obj, fraction=1.0, step=step,
                                base={k: v - mean_ref + level for k, v in ref.items()}, seeds=[1, 2, 3],
                                tasks=spec["tasks"])
    for obj in ("mlm", "taco"):
        paths += write_cell(tmp / "runs", size="tiny", objective=obj, fraction=0.25, step=60,
                            base={k: v - mean_ref + CROSSING[obj][-1] - 1.0 for k, v in ref.items()},
                            seeds=[1, 2, 3], tasks=spec["tasks"])
    spec_path = write_spec(tmp / "analysis.json", spec)
    (tmp / "inputs.txt").write_text("\n".join(map(str, paths)) + "\n")
    assert aggregate_main(["--inputs-from", str(tmp / "inputs.txt"), "--analysis", str(spec_path),
                           "--output-dir", str(tmp / "aggregate")]) == 0
    return read_aggregate(tmp / "aggregate"), load_analysis(spec_path), load_paper_values()


def _dynamics_record(objective: str, step: int, intra: float, inter: float, aligned: float) -> dict:
    def stat(m):
        return {"mean": m, "ci_low": m - 0.02, "ci_high": m + 0.02, "n_pairs": 1000, "n_blocks": 64}

    rec = {"step": step, "objective": objective, "size": "small", "fraction": 1.0, "seed": 0}
    for rep, shift in (("h", 0.0), ("g", -0.1)):
        rec[rep] = {"intra": stat(intra + shift), "inter": stat(inter + shift), "gap": stat(intra - inter)}
    rec["anchor_alignment"] = {"aligned": stat(aligned), "random_baseline": stat(0.02),
                               "difference": stat(aligned - 0.02), "n_masked": 2000}
    return rec


def _dynamics_records() -> list[dict]:
    """MLM, TACO, MLM+TP at 10k, 50k, 250k; alignment and similarities that cross over the panels."""
    out = []
    for obj, intra, aligned in (("mlm", (0.6, 0.45, 0.35), (0.05, 0.2, 0.35)), ("taco", (0.6, 0.55, 0.55), (0.3, 0.2, 0.1)),
                                ("mlm_tp", (0.6, 0.4, 0.3), (0.1, 0.1, 0.1))):
        for step, v, a in zip((10_000, 50_000, 250_000), intra, aligned):
            out.append(_dynamics_record(obj, step, v, 0.2 + 0.3 * (step == 50_000), a))
    return out


def _efficiency_figure(tmp: Path):
    from test_efficiency import _cfg, _e1_checkpoints

    from taco.stats import efficiency as eff
    from taco.report.efficiency_figure import figure

    loss, fps, _ = eff.read_checkpoints(_e1_checkpoints(tmp))
    cfg = _cfg()
    pairs = eff.build_pairs(loss, None, cfg, fps)
    return figure(pairs, eff.evaluate(pairs, cfg))


def _figure(name: str, tmp: Path):
    """Draw figure ``name`` of the suite from fixture data (unsaved)."""
    from taco.report import dynamics_figures, figures, pretrain_curves

    if name == "pretrain_curves":
        return pretrain_curves.figure(*pretrain_curves.collect(curve_checkpoints(tmp)))
    if name == "efficiency":
        return _efficiency_figure(tmp)
    if name == "figure6":
        return dynamics_figures.draw_figure6(_dynamics_records())
    if name == "figure2":
        return dynamics_figures.draw_figure2(_dynamics_records())
    presets = {"tiny": "small", "tinybase": "base"} if name == "figure5" else None  # the paper's points drawn too
    frames, cfg, pv = crossing_frames(tmp, presets)
    return {"figure5": figures.figure5, "ablation": figures.ablation_figure,
            "data_efficiency": figures.data_efficiency_figure}[name](frames, cfg, pv)


ALL_FIGURES = ["pretrain_curves", "figure5", "ablation", "data_efficiency", "efficiency", "figure6", "figure2"]


@pytest.mark.parametrize("name", ALL_FIGURES)
def test_no_legend_covers_data_and_log_axes_print_plain_numbers(tmp_path, name):
    """Every plotted point (lines sampled along their segments, scatter points, error bars) lies outside
    every legend's box, in display coordinates; no log-axis tick label is mathtext (``6x10^0``)."""
    import matplotlib.pyplot as plt

    from taco.report.plotting import legend_collisions, legends, math_tick_labels

    fig = _figure(name, tmp_path)
    try:
        assert legends(fig), f"{name}: no legend drawn (nothing was checked)"
        assert legend_collisions(fig) == []
        assert math_tick_labels(fig) == []
        if name in ("pretrain_curves", "efficiency"):  # they have log axes: the check above saw labels
            labels = [t.get_text() for ax in fig.axes for axis in (ax.xaxis, ax.yaxis)
                      if axis.get_scale() == "log" for t in axis.get_ticklabels(which="both") if t.get_text()]
            assert labels and all(lab.replace(".", "").replace("k", "").isdigit() for lab in labels), labels
    finally:
        plt.close(fig)


def test_the_checks_catch_a_legend_over_data_and_a_math_tick_label():
    """The control of the test above: matplotlib's defaults (legend in the axes over a line, log labels
    in mathtext) are caught."""
    import matplotlib.pyplot as plt

    from taco.report.plotting import legend_collisions, math_tick_labels, plain_log_axis

    fig, ax = plt.subplots()
    ax.plot([1, 10], [6.0, 9.0], label="a line under the legend")
    ax.plot([1, 10], [9.0, 6.0], label="another")
    ax.set_yscale("log")
    ax.legend(loc="center")  # both lines pass through the centre
    assert len(legend_collisions(fig)) == 2
    assert any("times" in t for t in math_tick_labels(fig))  # 6x10^0, 7x10^0, ...
    plain_log_axis(ax.yaxis)
    assert math_tick_labels(fig) == []
    plt.close(fig)


def test_pretrain_curves_one_style_per_run():
    """The 25 % runs differ from the full-data runs of their objective (line style, marker fill), keep
    its colour and marker, and the legend names the fraction."""
    import tempfile

    import matplotlib.pyplot as plt

    from taco.registry import CONTROL
    from taco.report import pretrain_curves
    from taco.report.style import OBJECTIVE_STYLE, objective_label

    with tempfile.TemporaryDirectory() as tmp:
        fig = pretrain_curves.figure(*pretrain_curves.collect(curve_checkpoints(Path(tmp))))
    try:
        for ax in fig.axes:
            lines = {ln.get_label(): ln for ln in ax.get_lines()}
            look = {lab: (ln.get_color(), ln.get_linestyle(), ln.get_marker(), str(ln.get_markerfacecolor()))
                    for lab, ln in lines.items()}
            assert len(set(look.values())) == len(look), look  # no two runs alike
            for objective, label in (("mlm", "MLM"), ("taco", "TACO")):
                full, part = f"{label}, 100% data", f"{label}, 25% data"
                if full in lines and part in lines:
                    assert look[full][0] == look[part][0] == OBJECTIVE_STYLE[objective]["color"]
                    assert look[full][1] != look[part][1] and look[full][3] != look[part][3]
        legend_labels = [t.get_text() for leg in fig.legends for t in leg.get_texts()]
        assert "TACO, 25% data" in legend_labels and "TACO, 100% data" in legend_labels
        assert objective_label(CONTROL) in legend_labels  # no data fraction: it saw no data
    finally:
        plt.close(fig)


# ---------------------------------------------------------------------------------------------
# readable text: no title, label, tick label, legend or footnote runs into another or off the canvas
# ---------------------------------------------------------------------------------------------
#: the quick start's analysis (configs/smoke.yaml): synthetic tasks and corpus, three tasks, a tiny
#: model that plays the paper's sizes (its long "SYNTHETIC" labels and partial averages)
QUICK_START = dict(glue_source="synthetic", corpus_source="synthetic", tasks=["sst2", "mnli", "stsb"],
                   presets={"tiny": "tiny", "tinybase": "tiny"})

#: figure variant -> (how to draw it from fixture data, the dpi its module saves it at)
TEXT_FIGURES = ["pretrain_curves", "figure5", "ablation", "data_efficiency", "figure6", "figure2",
                "figure5 quick start", "ablation quick start", "data_efficiency quick start",
                "pretrain_curves without control", "pretrain_curves without data",
                "figure5 nothing run", "ablation nothing run", "data_efficiency nothing run",
                "figure5 base runs only", "data_efficiency base runs only",
                "figure6 quick start", "figure2 quick start", "pretrain_curves quick start"]
#: the title line of a figure of the smoke run's corpus (taco.report.synthetic_label.synthetic_corpus_label)
SYNTHETIC_CORPUS = "SYNTHETIC corpus (smoke test; not comparable with the paper)"


def _text_figure(variant: str, tmp: Path):
    """(figure, dpi as saved) of one :data:`TEXT_FIGURES` variant."""
    import pandas as pd

    from taco.report import figures, pretrain_curves

    name, _, how = variant.partition(" ")
    dpi = 200 if name in ("figure6", "figure2") else 150  # dynamics_figures' and save_figure's defaults
    makers = {"figure5": figures.figure5, "ablation": figures.ablation_figure,
              "data_efficiency": figures.data_efficiency_figure}
    if not how:
        return _figure(name, tmp), dpi
    if how == "quick start" and name in ("figure6", "figure2"):  # MLM and TACO at the tiny steps 50, 100, 150
        from taco.report import dynamics_figures

        steps = {10_000: 50, 50_000: 100, 250_000: 150}
        recs = [dict(r, size="tiny", step=steps[r["step"]]) for r in _dynamics_records() if r["objective"] != "mlm_tp"]
        return getattr(dynamics_figures, f"draw_{name}")(recs, label=SYNTHETIC_CORPUS), dpi
    if how == "quick start" and name == "pretrain_curves":  # the smoke run's nine runs, with its label
        return pretrain_curves.figure(*pretrain_curves.collect(curve_checkpoints(tmp, budgets=(50, 100, 150),
                                                                                 every=10)),
                                      label=SYNTHETIC_CORPUS), dpi
    if how == "quick start":
        return makers[name](*crossing_frames(tmp, **QUICK_START)), dpi
    if how == "without control":
        ckpts = [c for c in curve_checkpoints(tmp) if "control" not in c.parts]
        return pretrain_curves.figure(*pretrain_curves.collect(ckpts)), dpi
    if how == "without data":
        return pretrain_curves.figure(pd.DataFrame(), pd.DataFrame(columns=pretrain_curves.CSV_COLUMNS)), dpi
    if how == "nothing run":  # the placeholders
        return makers[name](*_frames(tmp, dict(SPEC, runs=[{"size": "tinybase", "objective": "mlm",
                                                             "fraction": 1.0}]), seeds=[1])), dpi
    if how == "base runs only":  # drawn, with its "not run" notes
        return makers[name](*_frames(tmp, dict(SPEC, runs=[v for v in SPEC["runs"] if v["fraction"] == 1.0]))), dpi
    raise ValueError(variant)


@pytest.mark.parametrize("variant", TEXT_FIGURES)
def test_every_text_fits_the_saved_figure(tmp_path, variant):
    """At the dpi it is saved at, no two text boxes of the figure (suptitle, titles, axis labels,
    tick labels, legends, footnotes, notes) intersect and none extends past the canvas
    (tests/figure_text.py). The efficiency figure is checked in tests/test_efficiency.py."""
    import matplotlib.pyplot as plt

    from figure_text import assert_text_fits

    drawn_by_figures = variant.split(" ")[0] in ("figure5", "ablation", "data_efficiency")
    with plt.rc_context({"font.size": 9} if drawn_by_figures else {}):  # as make_figures draws them
        fig, dpi = _text_figure(variant, tmp_path)
        try:
            assert_text_fits(fig, dpi)
        finally:
            plt.close(fig)


def test_the_text_check_catches_overlaps_and_clipping():
    """The control of the test above: a y label taller than its axes under a title wider than
    them, a footnote over tick labels, a legend over a title and a text past the canvas are caught."""
    import matplotlib.pyplot as plt

    from figure_text import text_problems

    fig, ax = plt.subplots(figsize=(3, 2))
    ax.set_title("a title wider than the axes below it, reaching left")
    ax.set_ylabel("a y label much taller than the axes it labels, so it runs into the title")
    fig.text(0.0, 0.0, "a footnote at the bottom left", va="top")
    problems = text_problems(fig, 100)
    assert any("title" in p and "y label" in p for p in problems), problems
    assert any("footnote" in p and "x tick label" in p for p in problems), problems
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(3, 2))
    ax.plot([0, 1], label="x")
    ax.set_title("a title as wide as a legend beside it")
    fig.legend(loc="upper right")
    assert any("legend" in p and "overlaps axes 0 title" in p for p in text_problems(fig, 100))
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(3, 2))
    ax.set_axis_off()
    fig.text(0.5, 0.5, "inside")
    assert text_problems(fig, 100, bbox_inches=None) == []
    fig.text(0.9, 0.3, "past the right edge")
    assert any("past the canvas" in p for p in text_problems(fig, 100, bbox_inches=None))
    plt.close(fig)


def test_pretrain_curves_name_the_control_only_when_there_is_one(tmp_path):
    import matplotlib.pyplot as plt

    from taco.report import pretrain_curves

    ckpts = curve_checkpoints(tmp_path)
    for given, named in ((ckpts, True), ([c for c in ckpts if "control" not in c.parts], False)):
        fig = pretrain_curves.figure(*pretrain_curves.collect(given))
        assert ("control at step 0" in fig.axes[2].get_title().replace("\n", " ")) is named
        plt.close(fig)


def test_a_synthetic_corpus_labels_the_corpus_figures(tmp_path):
    """The pre-training curves and Figures 2 and 6 of a run on the synthetic corpus carry the synthetic
    label in their title, through the commands' ``--analysis``; a real corpus gives none."""
    import json

    import matplotlib.pyplot as plt

    from fixtures_stats import smoke_spec
    from taco.commands import dynamics_figures as dynamics_command
    from taco.commands import pretrain_curves
    from taco.report import dynamics_figures
    from taco.stats.analysis_config import load_analysis
    from taco.report.synthetic_label import synthetic_corpus_label

    titles = []
    real = _orig_figure = pretrain_curves.figure

    def spy(*args, **kw):  # the drawn figure's title, whatever the command passes on
        fig = real(*args, **kw)
        titles.append(fig._suptitle.get_text() if fig._suptitle else "")
        return fig

    for source, want in (("synthetic", SYNTHETIC_CORPUS), ("local", "")):
        spec = tmp_path / f"{source}.json"
        spec.write_text(json.dumps(smoke_spec(corpus_source=source)))
        assert synthetic_corpus_label(load_analysis(spec)) == want
        pretrain_curves.figure = spy
        try:
            ck = curve_checkpoints(tmp_path / source, budgets=(50, 100), every=10)
            assert pretrain_curves.main(["--checkpoints", *map(str, ck), "--analysis", str(spec),
                                         "--output-dir", str(tmp_path / source / "out")]) == 0
        finally:
            pretrain_curves.figure = _orig_figure
        assert titles.pop() == want
        for draw in (dynamics_figures.draw_figure6, dynamics_figures.draw_figure2):
            fig = draw(_dynamics_records(), label=synthetic_corpus_label(load_analysis(spec)))
            assert fig._suptitle.get_text().endswith(f"\n{want}" if want else "blocks)")
            plt.close(fig)
    spec = tmp_path / "synthetic.json"
    dyn = tmp_path / "dyn"
    inputs = []
    for i, rec in enumerate(_dynamics_records()):
        (dyn / str(i)).mkdir(parents=True)
        (dyn / str(i) / "dynamics.json").write_text(json.dumps(rec))
        inputs.append(str(dyn / str(i) / "dynamics.json"))
    assert dynamics_command.main(["--inputs", *inputs, "--analysis", str(spec), "--output-dir", str(dyn)]) == 0
    assert dynamics_command.main(["--inputs", *inputs, "--analysis", str(tmp_path / "none.json"),
                                  "--output-dir", str(tmp_path / "x")]) == 2
    assert not (tmp_path / "x").exists()
