"""Matplotlib helpers shared by every figure of the suite: plain tick labels on log axes, and the
checks that a figure is readable (no legend over a plotted point, no ``6x10^0`` tick label).

- :func:`plain_log_axis`: the tick labels of a log axis as plain numbers (``6``, ``0.5``, ``2000``,
  ``250k``) instead of matplotlib's ``6x10^0``; which ticks carry a label is matplotlib's choice
  (:class:`matplotlib.ticker.LogFormatter`: the decades, and some minor ticks when the axis spans
  less than about one decade).
- :func:`legend_collisions`: every plotted point (lines, sampled along their segments, scatter
  points, error bars) that lies inside a legend's box, in display coordinates: the figure tests
  (``tests/test_figures.py``) require none.
- :func:`math_tick_labels`: tick labels of log axes written in mathtext (``\\times``, ``^``).
- :func:`save_figure`: a figure written as PNG and PDF, atomically and without timestamps.

Imported by the figure modules only (matplotlib is loaded by them, with the Agg backend).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.ticker import LogFormatter


def plain_number(x: float) -> str:
    """``6.0`` -> ``"6"``, ``0.5`` -> ``"0.5"``, ``2000`` -> ``"2000"``."""
    return f"{x:g}"


def step_number(x: float) -> str:
    """A pre-training step: ``2000`` -> ``"2000"``, ``250000`` -> ``"250k"``, ``1.5e6`` -> ``"1500k"``."""
    return f"{x / 1000:g}k" if abs(x) >= 10_000 else f"{x:g}"


class PlainLogFormatter(LogFormatter):
    """:class:`LogFormatter` (same choice of labelled ticks) whose labels are ``fmt(x)``: plain text,
    never mathtext."""

    def __init__(self, fmt: Callable[[float], str] = plain_number, **kwargs: Any):
        super().__init__(**kwargs)
        self._fmt = fmt

    def _num_to_string(self, x, vmin, vmax):  # noqa: D401 - matplotlib's hook
        return self._fmt(x)


def plain_log_axis(axis, fmt: Callable[[float], str] = plain_number) -> None:
    """Plain major and minor tick labels on the log-scaled ``axis`` (``ax.xaxis`` / ``ax.yaxis``); call
    it after ``set_xscale("log")`` / ``set_yscale("log")``, which reset the formatters."""
    axis.set_major_formatter(PlainLogFormatter(fmt))
    axis.set_minor_formatter(PlainLogFormatter(fmt))


def _densify(xy: np.ndarray, per_segment: int = 16) -> np.ndarray:
    """Points along the straight segments between consecutive display points (NaN breaks a line)."""
    if len(xy) < 2:
        return xy
    out = [xy]
    t = np.linspace(0.0, 1.0, per_segment + 2)[1:-1, None]
    for a, b in zip(xy[:-1], xy[1:]):
        if np.isfinite(a).all() and np.isfinite(b).all():
            out.append(a + t * (b - a))
    return np.vstack(out)


def _visible_points(artist, xy: np.ndarray, renderer) -> np.ndarray:
    """``xy`` (display coordinates) without non-finite points and, for an artist clipped to its
    axes, without the points outside the axes (not drawn)."""
    xy = np.asarray(xy, dtype=float).reshape(-1, 2)
    xy = xy[np.isfinite(xy).all(axis=1)]
    ax = getattr(artist, "axes", None)
    if ax is not None and artist.get_clip_on() and len(xy):
        box = ax.get_window_extent(renderer)
        inside = ((xy[:, 0] >= box.x0 - 0.5) & (xy[:, 0] <= box.x1 + 0.5)
                  & (xy[:, 1] >= box.y0 - 0.5) & (xy[:, 1] <= box.y1 + 0.5))
        xy = xy[inside]
    return xy


def plotted_points(fig, renderer) -> list[tuple[str, np.ndarray]]:
    """(description, display points) of every visible line, scatter and error-bar collection of the
    axes of ``fig``. A line drawn with a line style is sampled along its segments too, so a legend
    over the middle of a segment counts, not only one over a data point."""
    from matplotlib.collections import LineCollection, PathCollection

    out = []
    for ax in fig.axes:
        for line in ax.get_lines():
            if not line.get_visible() or len(line.get_xydata()) == 0:
                continue
            xy = line.get_transform().transform(np.asarray(line.get_xydata(), dtype=float))
            if line.get_linestyle() not in ("None", "", " ", "none"):
                xy = _densify(xy)
            out.append((f"line {line.get_label()!r}", _visible_points(line, xy, renderer)))
        for coll in ax.collections:
            if not coll.get_visible():
                continue
            if isinstance(coll, PathCollection) and len(coll.get_offsets()):  # scatter
                xy = coll.get_offset_transform().transform(np.asarray(coll.get_offsets(), dtype=float))
                out.append((f"scatter {coll.get_label()!r}", _visible_points(coll, xy, renderer)))
            elif isinstance(coll, LineCollection):  # error bars
                pts = [_densify(coll.get_transform().transform(np.asarray(s, dtype=float)))
                       for s in coll.get_segments() if len(s)]
                if pts:
                    out.append((f"error bars {coll.get_label()!r}", _visible_points(coll, np.vstack(pts), renderer)))
    return out


def legends(fig) -> list:
    """Every legend of ``fig``: the axes' and the figure's own."""
    found = [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None]
    return found + list(fig.legends)


def legend_collisions(fig) -> list[str]:
    """Why a legend of ``fig`` covers data: one line per (legend, artist) with a plotted point inside
    the legend's box (display coordinates, after drawing). Empty when no legend covers any point."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    problems = []
    points = plotted_points(fig, renderer)
    for leg in legends(fig):
        box = leg.get_window_extent(renderer)
        title = ", ".join(t.get_text() for t in leg.get_texts()[:2])
        for what, xy in points:
            if not len(xy):
                continue
            inside = ((xy[:, 0] > box.x0) & (xy[:, 0] < box.x1) & (xy[:, 1] > box.y0) & (xy[:, 1] < box.y1))
            if inside.any():
                problems.append(f"legend [{title}, ...] covers {int(inside.sum())} point(s) of {what}")
    return problems


def math_tick_labels(fig) -> list[str]:
    """Tick labels of the log-scaled axes of ``fig`` written in mathtext (``\\times``, ``^``), after
    drawing: ``["y: $\\mathdefault{6\\times10^{0}}$", ...]``; empty when every label is plain."""
    fig.canvas.draw()
    bad = []
    for ax in fig.axes:
        for name, axis, scale in (("x", ax.xaxis, ax.get_xscale()), ("y", ax.yaxis, ax.get_yscale())):
            if scale != "log":
                continue
            lo, hi = sorted(axis.get_view_interval())
            for which in ("major", "minor"):
                for t in axis.get_ticklabels(which=which):
                    pos = t.get_position()[0 if name == "x" else 1]
                    text = t.get_text()
                    if t.get_visible() and lo <= pos <= hi and ("\\times" in text or "^" in text):
                        bad.append(f"{name}: {text}")
    return bad


#: file metadata left out of the saved figures (no timestamps or versions: the files are reproducible)
_NO_STAMPS = {"png": {"Software": None}, "pdf": {"CreationDate": None, "Creator": None, "Producer": None}}


def write_figure(fig, path: Path, ext: str, dpi: int = 150) -> Path:
    """Save ``fig`` as the one file ``path`` in the format ``ext`` (``png`` or ``pdf``) without timestamps,
    leaving the figure open (for :class:`taco.output_set.OutputSet`, which names the temporary path)."""
    fig.savefig(path, format=ext, dpi=dpi, metadata=_NO_STAMPS[ext], bbox_inches="tight")
    return Path(path)


def save_figure(fig, out_dir: Path, name: str, dpi: int = 150) -> list[Path]:
    """Save ``name``.png and .pdf into ``out_dir`` atomically (no timestamps in the files, so they are
    reproducible) and close the figure; returns the two paths."""
    import matplotlib.pyplot as plt

    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for ext in _NO_STAMPS:
        p = out_dir / f"{name}.{ext}"
        tmp = out_dir / f".{name}.tmp-{os.getpid()}.{ext}"
        write_figure(fig, tmp, ext, dpi)
        os.replace(tmp, p)
        paths.append(p)
    plt.close(fig)
    return paths
