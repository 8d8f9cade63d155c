"""Reading a budget checkpoint's validation points (``eval.json``) with errors that name the file.

``eval.json`` (written by ``taco pretrain``, :mod:`taco.training.validation`) holds the validation MLM
loss of the checkpoint (``step``, ``mlm_loss``, ``mlm_accuracy``, ``tc_loss``) and, with
``--eval-every``, the points measured inside the segment (``points``: a list of ``{"step", "mlm_loss",
...}``). Readers: ``taco efficiency`` and the pre-training curves. Torch-free.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any


class EvalFileError(ValueError):
    """A damaged or inconsistent ``eval.json``; the message names the file and the problem."""


def _number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def parse_eval(ev: Any, source: str, manifest_step: int | None = None) -> tuple[list[tuple[int, float]], list[str]]:
    """(step, validation MLM loss in nats) points of one ``eval.json`` object, sorted by step, and notes.

    ``source`` names the file in errors and notes. The checkpoint's own point is ``(ev["step"] or
    manifest_step, ev["mlm_loss"])``; ``points`` adds the in-segment ones. A point whose loss is
    ``null`` or non-finite (NaN/inf: a diverged evaluation) is left out and named in the notes, never
    silently. Raises :class:`EvalFileError` naming ``source`` when the object is not a mapping,
    ``points`` is not a list of ``{"step": int, "mlm_loss": number|null}`` objects, or ``step``
    disagrees with ``manifest_step`` (the checkpoint's manifest), which would move the target T.
    """
    if not isinstance(ev, Mapping):
        raise EvalFileError(f"{source}: expected a JSON object, got {type(ev).__name__}")
    step = ev.get("step")
    if step is not None and not (_number(step) and float(step).is_integer()):
        raise EvalFileError(f"{source}: 'step' must be an integer, got {step!r}")
    if manifest_step is not None and step is not None and int(step) != int(manifest_step):
        raise EvalFileError(f"{source}: 'step' is {int(step)} but the checkpoint's manifest says step "
                            f"{int(manifest_step)} (a file copied from another checkpoint?)")
    raw = ev.get("points", [])
    if raw is None:
        raw = []
    if not isinstance(raw, list):
        raise EvalFileError(f"{source}: 'points' must be a list of {{\"step\", \"mlm_loss\"}} objects, "
                            f"got {type(raw).__name__}")
    out: dict[int, float] = {}
    notes: list[str] = []

    def add(s: Any, v: Any, where: str) -> None:
        if not (_number(s) and float(s).is_integer()):
            raise EvalFileError(f"{source}: {where}: 'step' must be an integer, got {s!r}")
        if v is not None and not _number(v):
            raise EvalFileError(f"{source}: {where}: 'mlm_loss' must be a number, got {v!r}")
        if v is None or not math.isfinite(float(v)):
            notes.append(f"{source}: step {int(s)}: validation MLM loss is {v!r}, left out")
            return
        out[int(s)] = float(v)

    for i, p in enumerate(raw):
        if not isinstance(p, Mapping) or "step" not in p or "mlm_loss" not in p:
            raise EvalFileError(f"{source}: points[{i}] must be an object with 'step' and 'mlm_loss', got {p!r}")
        add(p["step"], p["mlm_loss"], f"points[{i}]")
    s = step if step is not None else manifest_step
    if s is not None and "mlm_loss" in ev:
        add(s, ev["mlm_loss"], "the checkpoint's point")
    return sorted(out.items()), notes


def load_eval(path: str | Path) -> Mapping[str, Any]:
    """The JSON object of the file ``path`` (``eval.json``); invalid JSON, a non-text file or another
    JSON type than an object is an :class:`EvalFileError` naming it."""
    from taco.manifest import read_json_object

    return read_json_object(path, EvalFileError, "rerun the segment or restore the file")


def read_eval(path: str | Path, manifest_step: int | None = None) -> tuple[list[tuple[int, float]], list[str]]:
    """:func:`parse_eval` of the file ``path`` (:func:`load_eval`: errors name the file)."""
    return parse_eval(load_eval(path), str(Path(path)), manifest_step)


#: the order gap (nats: probe_shuffled_loss - probe_intact_loss) above which a run has left the bag-of-words
#: plateau (taco.training.context_probe); the plateau-exit step is the first validation point beyond it
PLATEAU_EXIT_GAP = 0.1
#: the context probe's per-point keys (taco.training.context_probe.PROBE_KEYS, the losses in nats)
PROBE_COLUMNS = ("probe_intact_loss", "probe_shuffled_loss", "probe_no_context_loss", "probe_unigram_loss",
                 "probe_order_gap")


def probe_points(ev: Mapping[str, Any], manifest_step: int | None = None) -> dict[int, dict[str, float]]:
    """The context probe's losses (:data:`PROBE_COLUMNS`, nats) per step of one ``eval.json`` object: the
    in-segment ``points`` and the checkpoint's own point; a point without the probe (written before it
    existed) or with a non-number is left out. Never raises on a well-formed file (:func:`parse_eval`
    checks the shape)."""
    out: dict[int, dict[str, float]] = {}
    pts = [p for p in (ev.get("points") or []) if isinstance(p, Mapping)]
    own = ev.get("step") if ev.get("step") is not None else manifest_step
    for p, s in [(p, p.get("step")) for p in pts] + [(ev, own)]:
        if not (_number(s) and all(_number(p.get(k)) for k in PROBE_COLUMNS)):
            continue
        out[int(s)] = {k: float(p[k]) for k in PROBE_COLUMNS}
    return out


#: the frozen-feature GLUE probe's averages per point (``taco pretrain --glue-probe-tasks``,
#: taco.training.glue_probe.GLUE_PROBE_AVERAGE_KEYS: 0-1, mean-pooled and [CLS] features)
GLUE_PROBE_COLUMNS = ("glue_probe_mean", "glue_probe_cls")


def glue_probe_points(ev: Mapping[str, Any], manifest_step: int | None = None) -> dict[int, dict[str, float]]:
    """The GLUE probe's averages (:data:`GLUE_PROBE_COLUMNS`) per step of one ``eval.json`` object, as
    :func:`probe_points` reads the context probe's: points without the probe (a step between its cadence, a
    run without it) or with a non-number are left out."""
    out: dict[int, dict[str, float]] = {}
    pts = [p for p in (ev.get("points") or []) if isinstance(p, Mapping)]
    own = ev.get("step") if ev.get("step") is not None else manifest_step
    for p, s in [(p, p.get("step")) for p in pts] + [(ev, own)]:
        if not (_number(s) and all(_number(p.get(k)) for k in GLUE_PROBE_COLUMNS)):
            continue
        out[int(s)] = {k: float(p[k]) for k in GLUE_PROBE_COLUMNS}
    return out
