"""One colour, marker and line style per pre-training objective, for every figure of the suite.

``figures`` (Figure 5, ablation, data efficiency) and ``dynamics_figures`` (Figures 2 and 6) both
take their styles from :data:`OBJECTIVE_STYLE`, so TACO is the same blue everywhere. Colours: Okabe &
Ito (2008), colour-blind safe; markers and line styles differ as well, so the figures survive
greyscale printing. Includes the no-pre-training control (``taco.registry.CONTROL``). Torch-free
and matplotlib-free (plain strings / tuples that matplotlib accepts).
"""

from __future__ import annotations

from typing import Any

from taco.registry import CONTROL, OBJECTIVE_LABELS
from taco.objectives import OBJECTIVE_SPECS

#: Okabe & Ito (2008) colour-blind-safe palette
OKABE_ITO: dict[str, str] = {"blue": "#0072B2", "vermillion": "#D55E00", "green": "#009E73",
                             "purple": "#CC79A7", "orange": "#E69F00", "sky": "#56B4E9",
                             "yellow": "#F0E442", "black": "#000000"}

#: the style of an objective declared without one (a new objective never breaks a figure)
UNSTYLED: dict[str, Any] = dict(color="#7F7F7F", marker=".", linestyle="-")

#: objective (objective name, or the control) -> matplotlib style of its line: each objective's own
#: declaration (``style`` in its module under ``taco/objectives/``; :data:`UNSTYLED` without one),
#: and the control's
OBJECTIVE_STYLE: dict[str, dict[str, Any]] = {
    **{name: dict(o.style) or dict(UNSTYLED) for name, o in OBJECTIVE_SPECS.items()},
    CONTROL: dict(color=OKABE_ITO["black"], marker="X", linestyle=(0, (3, 1, 1, 1, 1, 1))),
}

#: line style and marker fill per data fraction, largest fraction first: full data solid with filled
#: markers, the next fraction dashed with hollow markers, then dash-dot and dotted (hollow)
FRACTION_LINESTYLES: tuple[Any, ...] = ("-", "--", "-.", ":", (0, (5, 1, 1, 1)), (0, (1, 2)))

#: colours left for series that are not objectives (e.g. Figure 2's baselines)
SPARE_COLOURS: tuple[str, ...] = (OKABE_ITO["sky"], OKABE_ITO["yellow"])


def objective_style(objective: str) -> dict[str, Any]:
    """A copy of the style of ``objective`` (``color``, ``marker``, ``linestyle``).

    Raises:
        KeyError: naming the objective and the known ones, for a name that is no objective nor the control.
    """
    try:
        return dict(OBJECTIVE_STYLE[objective])
    except KeyError:
        raise KeyError(f"no figure style for objective {objective!r} (known: {', '.join(OBJECTIVE_STYLE)})") from None


def fraction_styles(fractions) -> dict[float, dict[str, Any]]:
    """fraction -> ``linestyle`` and ``markerfacecolor`` for the distinct ``fractions`` of a figure,
    largest first (:data:`FRACTION_LINESTYLES`): the largest (full data) solid with filled markers
    (``markerfacecolor`` None: the line's colour), every smaller one another line style with hollow
    markers (``"none"``). Combined with a objective's colour and marker, two runs of one objective on
    different data fractions never look alike, also in greyscale."""
    out = {}
    for i, f in enumerate(sorted({float(x) for x in fractions}, reverse=True)):
        out[f] = {"linestyle": FRACTION_LINESTYLES[i % len(FRACTION_LINESTYLES)],
                  "markerfacecolor": None if i == 0 else "none"}
    return out


def objective_label(objective: str) -> str:
    """Printed name of a objective (``taco.registry.OBJECTIVE_LABELS``; the name itself if unknown)."""
    return OBJECTIVE_LABELS.get(objective, objective)
