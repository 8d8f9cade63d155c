"""Is every text of a figure readable in the saved image? One helper for every figure test.

:func:`assert_text_fits` saves the figure (into memory) exactly as the suite saves it
(``bbox_inches="tight"`` at the given dpi, as :func:`taco.report.plotting.save_figure`), and during that
draw, in the saved image's own pixels, collects the boxes of every text artist: the suptitle and
the figure's other texts (footnotes), figure legends, and per axes (secondary axes too) the
titles, axis labels, tick labels that are drawn, offset texts, free texts and its legend. It
fails when two of them intersect, or when one extends past the canvas (is clipped), and names
both texts. :func:`text_problems` returns the same findings as a list of lines.

A wrapped text (``wrap=True``) is measured as drawn, i.e. wrapped at the saved canvas, which is
how matplotlib clips it. Usage from any figure test::

    from figure_text import assert_text_fits
    assert_text_fits(fig, dpi=150)
"""

from __future__ import annotations

import io
from typing import Any

#: pixels two boxes may share (antialiasing) before they count as overlapping
TOLERANCE_PX = 1.0


def _label(artist: Any, role: str) -> str:
    text = artist.get_texts()[0].get_text() if hasattr(artist, "get_texts") and artist.get_texts() else ""
    if hasattr(artist, "get_text"):
        text = artist.get_text()
    text = text.replace("\n", " ")
    return f"{role} {text[:60]!r}"


def _axis_texts(axis, name: str) -> list[tuple[str, Any]]:
    out = []
    ticks = axis._update_ticks()  # the ticks drawn: inside the view interval (matplotlib's own choice)
    for tick in ticks:
        for lab in (tick.label1, tick.label2):
            if lab.get_visible() and lab.get_text():
                out.append((f"{name} tick label", lab))
    if axis.label.get_visible() and axis.label.get_text():
        out.append((f"{name} label", axis.label))
    if axis.offsetText.get_visible() and axis.offsetText.get_text():
        out.append((f"{name} offset text", axis.offsetText))
    return out


def _axes_texts(ax, where: str) -> list[tuple[str, Any]]:
    out = []
    for t in (ax.title, ax._left_title, ax._right_title):
        if t.get_visible() and t.get_text():
            out.append((f"{where} title", t))
    if ax.axison:  # set_axis_off() draws neither axis
        out += [(f"{where} {role}", t) for name, axis in (("x", ax.xaxis), ("y", ax.yaxis))
                if axis.get_visible() for role, t in _axis_texts(axis, name)]
    out += [(f"{where} text", t) for t in ax.texts if t.get_visible() and t.get_text()]
    leg = ax.get_legend()
    if leg is not None and leg.get_visible():
        out.append((f"{where} legend", leg))
    for child in getattr(ax, "child_axes", []):  # secondary axes (a top axis of paper budgets)
        if child.get_visible():
            out += _axes_texts(child, f"{where} secondary axis")
    return out


def text_artists(fig) -> list[tuple[str, Any]]:
    """(role, artist) of every visible, non-empty text artist of ``fig`` (see the module docstring)."""
    out = []
    for name in ("_suptitle", "_supxlabel", "_supylabel"):
        t = getattr(fig, name, None)
        if t is not None and t.get_visible() and t.get_text():
            out.append((name.lstrip("_"), t))
    out += [("figure text", t) for t in fig.texts if t.get_visible() and t.get_text()]
    out += [("figure legend", leg) for leg in fig.legends if leg.get_visible()]
    for i, ax in enumerate(fig.axes):
        if ax.get_visible():
            out += _axes_texts(ax, f"axes {i}")
    unique, seen = [], set()
    for role, artist in out:  # the suptitle is one of fig.texts too
        if id(artist) not in seen:
            seen.add(id(artist))
            unique.append((role, artist))
    return unique


def _extents(fig, renderer) -> tuple[Any, list[tuple[str, Any]]]:
    boxes = []
    for role, artist in text_artists(fig):
        box = artist.get_window_extent(renderer)
        if box.width > 0 and box.height > 0:
            boxes.append((_label(artist, role), box.frozen()))
    return fig.bbox.frozen(), boxes


def text_problems(fig, dpi: float, **savefig_kwargs: Any) -> list[str]:
    """Overlapping and clipped texts of ``fig`` as saved at ``dpi`` (one line each; empty when all
    fit). ``savefig_kwargs`` default to ``bbox_inches="tight"``, format PNG (how the suite saves)."""
    kwargs = {"bbox_inches": "tight", "format": "png", **savefig_kwargs}
    seen: list[tuple[Any, list]] = []
    cid = fig.canvas.mpl_connect("draw_event", lambda ev: seen.append(_extents(fig, ev.renderer)))
    try:
        fig.savefig(io.BytesIO(), dpi=dpi, **kwargs)
    finally:
        fig.canvas.mpl_disconnect(cid)
    assert seen, "the figure was not drawn"
    canvas, boxes = seen[-1]  # the last draw is the saved one (after bbox_inches="tight" cropped it)
    tol = TOLERANCE_PX
    problems = []
    for what, b in boxes:
        if (b.x0 < canvas.x0 - tol or b.y0 < canvas.y0 - tol or b.x1 > canvas.x1 + tol
                or b.y1 > canvas.y1 + tol):
            problems.append(f"{what} extends past the canvas ({b.x0:.0f}, {b.y0:.0f}, {b.x1:.0f}, {b.y1:.0f} "
                            f"in a {canvas.width:.0f} x {canvas.height:.0f} px image)")
    for i, (wa, a) in enumerate(boxes):
        for wb, b in boxes[i + 1:]:
            w = min(a.x1, b.x1) - max(a.x0, b.x0)
            h = min(a.y1, b.y1) - max(a.y0, b.y0)
            if w > tol and h > tol:
                problems.append(f"{wa} overlaps {wb} ({w:.0f} x {h:.0f} px)")
    return problems


def assert_text_fits(fig, dpi: float, **savefig_kwargs: Any) -> None:
    """Fail, listing :func:`text_problems`, when any text of ``fig`` overlaps another or is clipped."""
    problems = text_problems(fig, dpi, **savefig_kwargs)
    assert not problems, f"{len(problems)} text problem(s) at {dpi} dpi:\n" + "\n".join(problems)
