"""GLUE metrics against values computed by hand (not by the libraries under test)."""

from __future__ import annotations

import math

import pytest

from taco.registry import AVERAGE_KEYS, DEFAULT_PRIMARY_METRIC
from taco.data.glue_metrics import GlueAverage, compute_glue_metrics, glue_average


def test_accuracy_and_f1_mrpc_qqp():
    # TP=2 (idx 0, 3), FP=1 (idx 2), TN=1, FN=0 -> acc 3/4, P 2/3, R 1, F1 0.8
    for task in ("mrpc", "qqp"):
        m = compute_glue_metrics(task, [1, 0, 1, 1], [1, 0, 0, 1])
        assert set(m) == {"accuracy", "f1"}
        assert m["accuracy"] == pytest.approx(0.75)
        assert m["f1"] == pytest.approx(0.8)


def test_matthews_cola():
    # TP=2, TN=2, FP=1, FN=0: (2*2 - 1*0) / sqrt(3*2*3*2) = 4/6
    m = compute_glue_metrics("cola", [1, 1, 0, 0, 1], [1, 0, 0, 0, 1])
    assert m == {"matthews_correlation": pytest.approx(4 / 6)}
    # constant predictions: 0 by convention (the degenerate CoLA run)
    assert compute_glue_metrics("cola", [1, 1, 1], [1, 0, 1])["matthews_correlation"] == 0.0


def test_pearson_spearman_stsb():
    x, y = [1.0, 2.0, 3.0, 4.0], [2.0, 4.0, 5.0, 4.0]
    m = compute_glue_metrics("stsb", x, y)
    assert m["pearson"] == pytest.approx(3.5 / math.sqrt(5 * 4.75))
    # ranks of y: 1, 2.5, 4, 2.5 -> 3 / sqrt(5 * 4.5)
    assert m["spearmanr"] == pytest.approx(3.0 / math.sqrt(5 * 4.5))
    const = compute_glue_metrics("stsb", [2.0, 2.0, 2.0], [1.0, 2.0, 3.0])
    assert math.isnan(const["pearson"]) and math.isnan(const["spearmanr"])


def test_accuracy_only_tasks_and_score_keys():
    for key in ("sst2", "mnli", "mnli_m", "mnli_mm", "qnli", "rte", "wnli"):
        assert compute_glue_metrics(key, [0, 1, 2, 2], [0, 1, 1, 2]) == {"accuracy": 0.75}


def test_metric_errors():
    with pytest.raises(ValueError, match="unknown"):
        compute_glue_metrics("squad", [1], [1])
    with pytest.raises(ValueError, match="2 predictions but 3"):
        compute_glue_metrics("sst2", [1, 0], [1, 0, 1])
    with pytest.raises(ValueError, match="no predictions"):
        compute_glue_metrics("sst2", [], [])
    with pytest.raises(ValueError, match="1-D"):
        compute_glue_metrics("sst2", [[0.1, 0.9]], [1])


def test_default_primary_metric():
    assert DEFAULT_PRIMARY_METRIC["cola"] == "matthews_correlation"
    # the paper's metrics (docs/metrics.md): F1 for MRPC and QQP, Spearman for STS-B
    assert DEFAULT_PRIMARY_METRIC["stsb"] == "spearmanr"
    assert DEFAULT_PRIMARY_METRIC["mrpc"] == "f1" and DEFAULT_PRIMARY_METRIC["qqp"] == "f1"
    assert set(AVERAGE_KEYS) | {"wnli"} == set(DEFAULT_PRIMARY_METRIC)


def test_glue_average_full_and_paper_value():
    # Table 1 MLM-250k dev row averages to 75.0 in the paper; here: a hand-made row of nine numbers
    scores = dict(zip(AVERAGE_KEYS, [0.8, 0.81, 0.86, 0.88, 0.9, 0.4, 0.85, 0.82, 0.6]))
    scores["wnli"] = 0.1  # excluded
    avg = glue_average(scores)
    assert isinstance(avg, GlueAverage)
    value, covered, partial = avg
    assert value == pytest.approx(6.92 / 9)
    assert covered == AVERAGE_KEYS and partial is False and avg.label == "GLUE avg"


def test_glue_average_partial_and_metric_dicts():
    scores = {
        "cola": {"matthews_correlation": 0.3},
        "stsb": {"pearson": 0.8, "spearmanr": 0.7},
        "mrpc": {"accuracy": 0.75, "f1": 0.85},
    }
    avg = glue_average(scores)  # defaults: MCC, Spearman, F1
    assert avg.value == pytest.approx((0.3 + 0.7 + 0.85) / 3)
    assert avg.is_partial and avg.covered_keys == ("cola", "stsb", "mrpc")
    assert "partial 3/9" in avg.label and "mnli_m" in avg.label
    alt = glue_average(scores, primary={"mrpc": "accuracy", "stsb": "pearson"})
    assert alt.value == pytest.approx((0.3 + 0.8 + 0.75) / 3)
    with pytest.raises(ValueError, match="no metric 'matthews_correlation'"):
        glue_average({"cola": {"accuracy": 0.5}})
    with pytest.raises(ValueError, match="unknown GLUE score key"):
        glue_average({"mnli": 0.8})
    with pytest.raises(ValueError, match="no GLUE score key"):
        glue_average({"wnli": 0.5})
