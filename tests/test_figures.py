"""taco.report.figures: the three figures are written as non-empty PNG and PDF files."""

from __future__ import annotations

from fixtures_stats import build_aggregate, smoke_spec
from taco.report.figures import main

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
    from taco.report.stats import read_aggregate
    from taco.report.analysis_config import load_analysis
    from taco.report.tables import load_paper_values

    spec = dict(SPEC, variants=[{"size": "tinybase", "objective": "mlm", "fraction": 1.0}])
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
    from taco.report.analysis_config import load_analysis
    from taco.report.stats import read_aggregate
    from taco.report.tables import load_paper_values

    agg, spec_path = build_aggregate(tmp_path, spec, seeds=list(seeds))
    return read_aggregate(agg), load_analysis(spec_path), load_paper_values()


def test_one_style_per_variant_in_every_figure():
    from taco.registry import CONTROL, OBJECTIVES
    from taco.report import dynamics_figures, figures
    from taco.report.style import VARIANT_STYLE

    variants = list(OBJECTIVES) + [CONTROL]
    assert set(VARIANT_STYLE) == set(variants)
    assert len({VARIANT_STYLE[v]["color"] for v in variants}) == len(variants)  # one colour each
    assert len({VARIANT_STYLE[v]["marker"] for v in variants}) == len(variants)
    groups = [(v, "small", 1.0) for v in variants]
    dyn = dynamics_figures._styles(groups)
    for v in variants:  # Figures 2/6 and 5/ablation/data efficiency agree (TACO was blue vs vermillion)
        assert figures.STYLE[v]["color"] == dyn[(v, "small", 1.0)][0] == dynamics_figures.OBJECTIVE_STYLE[v][1]
    assert figures.STYLE["taco"]["color"] == "#0072B2" and figures.STYLE["mlm"]["color"] == "#D55E00"
    again = dynamics_figures._styles([("taco", "small", 1.0), ("taco", "base", 1.0)])
    assert again[("taco", "base", 1.0)][0] == VARIANT_STYLE["taco"]["color"]  # repeated: same colour


def test_figure5_legend_outside_and_reference_line_labelled(tmp_path):
    import matplotlib.pyplot as plt

    from taco.report.figures import figure5
    from taco.report.style import VARIANT_STYLE

    # the fixture's sizes play the paper's models here (else the published points are left out)
    frames, cfg, pv = _frames(tmp_path, dict(SPEC, presets={"tiny": "small", "tinybase": "base"}))
    fig = figure5(frames, cfg, pv)
    ax = fig.axes[0]
    leg = ax.get_legend()
    labels = [t.get_text() for t in leg.get_texts()]
    assert any("MLM-250k level (paper, dashed)" in lab for lab in labels)
    dashed = [ln for ln in ax.get_lines() if ln.get_linestyle() == "--"]
    assert dashed and dashed[0].get_label() in labels
    taco_line = [ln for ln in ax.get_lines() if ln.get_label().startswith("TACO (ours")][0]
    assert taco_line.get_color() == VARIANT_STYLE["taco"]["color"]
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    assert leg.get_window_extent(r).x0 >= ax.get_window_extent(r).x1  # right of the axes: covers no point
    plt.close(fig)


def test_data_efficiency_panels_only_for_what_was_run(tmp_path):
    import matplotlib.pyplot as plt

    from taco.report.figures import data_efficiency_figure, data_efficiency_panels
    from taco.report.tables import build_table2

    frames, cfg, pv = _frames(tmp_path / "a", SPEC)  # mnli, sst2, rte fine-tuned; 25% runs at 250k
    panels = data_efficiency_panels(build_table2(frames, cfg, pv), cfg)
    assert [c for c, _ in panels] == ["mnli_m", "mnli_mm", "sst2", "avg"]  # no QQP / QNLI panels
    assert panels[-1][1] == "average of MNLI-m, MNLI-mm, SST-2 (3 of the 5 Table 2 scores)"
    fig = data_efficiency_figure(frames, cfg, pv)
    assert len(fig.axes) == 4
    plt.close(fig)
    one = dict(SPEC, tasks=["sst2"])  # one score: no "average" of it
    frames, cfg, pv = _frames(tmp_path / "b", one)
    assert [c for c, _ in data_efficiency_panels(build_table2(frames, cfg, pv), cfg)] == ["sst2"]
    full_only = dict(SPEC, variants=[v for v in SPEC["variants"] if v["fraction"] == 1.0])
    frames, cfg, pv = _frames(tmp_path / "c", full_only)  # the 25% comparison was not run
    fig = data_efficiency_figure(frames, cfg, pv)
    texts = [t.get_text() for ax in fig.axes for t in ax.texts]
    assert any("not run in this configuration" in t for t in texts)
    plt.close(fig)


def _texts(fig) -> list[str]:
    """Every title, axis label, legend entry and free text of a figure."""
    out = [t.get_text() for t in fig.texts]
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
        assert ylabels and all("SYNTHETIC GLUE-format tasks" in y and "GLUE dev score" not in y for y in ylabels)
        assert not any("(paper" in t for t in texts), make.__name__
        plt.close(fig)
    fig = figure5(frames, cfg, pv)
    assert any("Figure 5 points are not drawn: synthetic" in t for t in _texts(fig))
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
