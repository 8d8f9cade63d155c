"""What is synthetic in a run, for the titles of its tables, figures and pages: the smoke configuration's
synthetic GLUE-format tasks and synthetic corpus are labelled wherever a number is shown, so nobody takes
them for a result (read from the analysis spec, :class:`taco.stats.analysis_config.AnalysisConfig`)."""

from __future__ import annotations

from taco.stats.analysis_config import AnalysisConfig


def synthetic_label(cfg: AnalysisConfig | None) -> str:
    """What is synthetic in this run, for titles (``''`` when the tasks are real): e.g.
    ``SYNTHETIC GLUE-format tasks and synthetic corpus (smoke test; not comparable with the paper)``."""
    if cfg is None or not cfg.synthetic_tasks:
        return ""
    return ("SYNTHETIC GLUE-format tasks" + (" and synthetic corpus" if cfg.synthetic_corpus else "")
            + " (smoke test; not comparable with the paper)")


def synthetic_corpus_label(cfg: AnalysisConfig | None) -> str:
    """What is synthetic in a figure of the pre-training corpus alone (the pre-training curves, Figures 2
    and 6), for titles (``''`` when the corpus is real): ``SYNTHETIC corpus (smoke test; not comparable
    with the paper)``."""
    if cfg is None or not cfg.synthetic_corpus:
        return ""
    return "SYNTHETIC corpus (smoke test; not comparable with the paper)"
