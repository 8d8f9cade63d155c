"""GLUE metrics as the GLUE benchmark (and Hugging Face's ``glue`` metric) defines them.

Everything is computed with scikit-learn / scipy and returned on the 0-1 scale (tables multiply
by 100, as the paper prints them). No ``evaluate`` import (it needs the Hub for its scripts).

Per task (source: GLUE paper, Wang et al. 2019; HF ``evaluate`` ``glue`` metric):

========== ======================================
task       metrics
========== ======================================
cola       ``matthews_correlation``
stsb       ``pearson``, ``spearmanr``
mrpc, qqp  ``accuracy``, ``f1`` (positive class 1)
others     ``accuracy`` (mnli matched/mismatched, qnli, rte, sst2, wnli)
========== ======================================

The paper's average (``glue_average``) is the plain mean of nine numbers, one per score key
``mnli_m, mnli_mm, qqp, qnli, sst2, cola, stsb, mrpc, rte`` (WNLI excluded); which metric is
the number of a task is a setting (``DEFAULT_PRIMARY_METRIC``: F1 for MRPC/QQP, Spearman for
STS-B, the paper's most likely choice; see docs/metrics.md), since the paper does not say.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from taco.registry import (
    AVERAGE_KEYS, DEFAULT_PRIMARY_METRIC, METRICS_BY_SCORE_KEY, SCORE_KEYS,
)


def metric_names(task_or_score_key: str) -> tuple[str, ...]:
    """Metric names computed for a task name or score key; ValueError for an unknown name."""
    try:
        return METRICS_BY_SCORE_KEY[task_or_score_key]
    except KeyError:
        raise ValueError(
            f"unknown GLUE task or score key {task_or_score_key!r}; "
            f"expected one of {sorted(METRICS_BY_SCORE_KEY)}"
        ) from None


def compute_glue_metrics(task_or_score_key: str, predictions: Sequence[Any] | np.ndarray,
                         references: Sequence[Any] | np.ndarray) -> dict[str, float]:
    """All GLUE metrics of one task on one dev split.

    Args:
        task_or_score_key: a task of :data:`taco.registry.GLUE_TASK_SPECS` (``cola``, ..., ``wnli``) or a score key
            (``mnli_m``, ``mnli_mm``).
        predictions: shape (N,): class ids (int) for classification, real scores for ``stsb``.
            (Arg-max logits before calling.)
        references: shape (N,): gold labels in the same space.

    Returns:
        ``{metric_name: float}`` on the 0-1 scale (Pearson/Spearman/MCC in [-1, 1]). F1 is binary
        F1 of class 1 (``equivalent`` / ``duplicate``), as GLUE defines it. MCC of constant
        predictions is 0.0 (scikit-learn's convention). Pearson/Spearman of a constant
        prediction vector are undefined and returned as ``nan`` (never silently 0).

    Raises:
        ValueError: unknown task, different lengths, empty input, or labels that are not finite.
    """
    names = metric_names(task_or_score_key)
    preds = np.asarray(predictions)
    refs = np.asarray(references)
    if preds.ndim != 1 or refs.ndim != 1:
        raise ValueError(
            f"{task_or_score_key}: predictions and references must be 1-D, got shapes "
            f"{preds.shape} and {refs.shape} (take the arg-max of logits first)"
        )
    if len(preds) != len(refs):
        raise ValueError(f"{task_or_score_key}: {len(preds)} predictions but {len(refs)} references")
    if len(preds) == 0:
        raise ValueError(f"{task_or_score_key}: no predictions to score")

    out: dict[str, float] = {}
    if "pearson" in names or "spearmanr" in names:
        p = preds.astype(np.float64)
        r = refs.astype(np.float64)
        if not (np.isfinite(p).all() and np.isfinite(r).all()):
            raise ValueError(f"{task_or_score_key}: non-finite predictions or references")
        from scipy.stats import pearsonr, spearmanr

        constant = bool(np.all(p == p[0]) or np.all(r == r[0]))
        if constant:
            out["pearson"] = math.nan
            out["spearmanr"] = math.nan
        else:
            out["pearson"] = float(pearsonr(p, r)[0])
            out["spearmanr"] = float(spearmanr(p, r)[0])
        return {k: out[k] for k in names}

    from sklearn.metrics import f1_score, matthews_corrcoef

    p = preds.astype(np.int64)
    r = refs.astype(np.int64)
    if not (np.array_equal(p, preds) and np.array_equal(r, refs)):
        raise ValueError(f"{task_or_score_key}: classification labels must be integers")
    for name in names:
        if name == "accuracy":
            out[name] = float((p == r).mean())
        elif name == "f1":
            out[name] = float(f1_score(r, p, pos_label=1, average="binary", zero_division=0.0))
        elif name == "matthews_correlation":
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                out[name] = float(matthews_corrcoef(r, p))
    return out


class GlueAverage(NamedTuple):
    """Result of :func:`glue_average`; unpacks as ``(value, covered_keys, is_partial)``.

    ``value`` is on the 0-1 scale. ``is_partial`` is True when fewer than the nine score keys
    were available; ``label`` then says which are missing ("GLUE avg (partial 7/9: no mnli_m,
    mnli_mm)") so a partial number can never be read as the paper's average.
    """

    value: float
    covered_keys: tuple[str, ...]
    is_partial: bool

    @property
    def missing_keys(self) -> tuple[str, ...]:
        return tuple(k for k in AVERAGE_KEYS if k not in self.covered_keys)

    @property
    def label(self) -> str:
        if not self.is_partial:
            return "GLUE avg"
        return (f"GLUE avg (partial {len(self.covered_keys)}/{len(AVERAGE_KEYS)}: "
                f"no {', '.join(self.missing_keys)})")


def glue_average(scores: Mapping[str, float | Mapping[str, float]],
                 primary: Mapping[str, str] | None = None) -> GlueAverage:
    """The paper's GLUE average: mean of the nine score keys present (WNLI excluded).

    Args:
        scores: score key -> a number (already the primary metric) or -> ``{metric: value}``
            (as in ``metrics.json``'s ``scores``), from which ``primary[key]`` is taken.
            ``wnli`` is accepted and ignored; other unknown keys raise ValueError.
        primary: score key -> metric name; defaults to ``DEFAULT_PRIMARY_METRIC`` (keys not
            given fall back to the default).

    Returns:
        GlueAverage(value, covered_keys, is_partial) with covered keys in the paper's order.
        NaN values propagate (a NaN score gives a NaN average).

    Raises:
        ValueError: no score key of the nine present, an unknown key, or a missing metric.
    """
    prim = dict(DEFAULT_PRIMARY_METRIC)
    if primary:
        prim.update(primary)
    unknown = [k for k in scores if k not in SCORE_KEYS]
    if unknown:
        raise ValueError(f"unknown GLUE score key(s) {unknown}; expected some of {list(SCORE_KEYS)}")
    covered = tuple(k for k in AVERAGE_KEYS if k in scores)
    if not covered:
        raise ValueError(f"no GLUE score key to average; got {sorted(scores)}")
    values = []
    for key in covered:
        v = scores[key]
        if isinstance(v, Mapping):
            metric = prim[key]
            if metric not in v:
                raise ValueError(f"score {key!r} has no metric {metric!r} (has {sorted(v)})")
            v = v[metric]
        values.append(float(v))
    return GlueAverage(float(np.mean(values)), covered, len(covered) < len(AVERAGE_KEYS))
