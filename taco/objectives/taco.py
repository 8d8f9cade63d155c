"""The TACO family: MLM + the token-alignment contrastive (TC) loss (Fu et al. 2022, Eq. 5-10).

==================  ==========================================================================
``taco``            MLM + tc_weight x TC at every real position (the paper's method; weight 1.0).
``taco_concentrated`` TC only at the MLM-selected positions (paper Sec. 5, "concentrated TACO").
``taco_unmasked``   TC only at the real positions not selected by MLM (third position flag of the
                    official code).
==================  ==========================================================================

The TC options (group ``tc``: weight, temperature tau, positive window W, negatives K, the negative
pool under several processes) are declared beside the TC loss, :mod:`taco.tc.options`, and are this module's
``OPTIONS``; the loss itself is :func:`taco.tc.loss.tc_loss`, the sampling :mod:`taco.tc.sampling`. In
training with ``tc_negative_pool == "all_ranks"`` the negatives come from every process's sequences
(:mod:`taco.tc.options` says why); a validation forward (``model.eval()``, run by one process) keeps its own
batch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from taco.objectives.base import Objective, head_flops
from taco.objectives.mlm import masked_mean, predict_tokens
from taco.tc.options import OPTIONS

__all__ = ["DECLARED", "OPTIONS", "TacoObjective", "tc_anchor_mask"]

#: which real positions are TC anchors
TcPositions = Literal["all", "masked", "unmasked"]


@dataclass(frozen=True)
class TacoObjective(Objective):
    """An objective of the TACO family: MLM + the TC loss at the real positions ``tc_positions``
    (``all``: the paper's TACO; ``masked``: concentrated TACO; ``unmasked``: the official code's third
    option)."""

    tc_positions: TcPositions = "all"

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.tc_positions not in ("all", "masked", "unmasked"):
            raise ValueError(f"objective {self.name!r}: tc_positions must be all/masked/unmasked")


def tc_anchor_mask(objective: Any, attention_mask: Any, labels: Any) -> Any:
    """Bool (B, L): the TC anchors of ``objective`` (an Objective or its name; real positions,
    restricted by the MLM selection).

    ``labels`` (B, L) with -100 at unselected positions is required for ``masked``/``unmasked``.
    Raises ValueError for an objective without TC or missing labels.
    """
    if isinstance(objective, str):
        from taco.objectives import OBJECTIVE_SPECS

        if objective not in OBJECTIVE_SPECS:
            raise ValueError(f"unknown objective {objective!r}; valid objectives: {', '.join(OBJECTIVE_SPECS)}")
        objective = OBJECTIVE_SPECS[objective]
    if not isinstance(objective, TacoObjective):
        raise ValueError(f"objective {objective.name!r} has no TC loss")
    real = attention_mask.bool()
    if objective.tc_positions == "all":
        return real
    if labels is None:
        raise ValueError(f"objective {objective.name!r} needs labels to find the {objective.tc_positions} positions")
    selected = labels != -100
    if objective.tc_positions == "masked":
        return real & selected
    return real & ~selected


def tc_terms(model: Any, batch: dict[str, Any], outputs: Any, options: dict[str, Any],
             generator: Any = None) -> dict[str, Any]:
    """``{"loss": MLM + tc_weight x TC, "mlm", "tc"}`` (scalar tensors; paper Eq. 9-10).

    In training with ``tc_negative_pool == "all_ranks"`` the negatives are drawn from every process's
    sequences (a collective: every rank's forward takes part; module docstring)."""
    from taco.tc.loss import gather_negative_pool, tc_loss
    from taco.tc.sampling import sample_negative_index, sample_positive_index

    sequence = outputs.last_hidden_state
    ce, is_mlm = predict_tokens(model, sequence, batch)
    mlm_loss = masked_mean(ce, is_mlm)
    attention_mask = batch["attention_mask"]
    embeddings = outputs.hidden_states[0]  # embedding-layer output e (docs/paper-facts.md)
    anchors = tc_anchor_mask(model.objective, attention_mask, batch["labels"])
    pos = sample_positive_index(attention_mask, options["tc_window"], generator)
    pool = options["tc_negative_pool"] if model.training else "rank"
    if pool == "all_ranks":
        pool_mask, first_row = gather_negative_pool(attention_mask)
        rows = (first_row, first_row + attention_mask.shape[0])
        neg = sample_negative_index(pool_mask, options["tc_num_negatives"], generator, rows=rows)
    else:
        neg = sample_negative_index(attention_mask, options["tc_num_negatives"], generator)
    tc = tc_loss(sequence, embeddings, pos, neg, anchors, options["tc_temperature"], negative_pool=pool)
    return {"loss": mlm_loss + options["tc_weight"] * tc, "mlm": mlm_loss, "tc": tc}


def tc_flops(shape, seq_len, vocab_size, options) -> float:
    """MLM head at ``mlm_probability`` + the TC anchor-key dot products: forward 2 (K+1) H, backward
    to the anchor only another 2 (K+1) H, every real token an anchor (an upper bound for the restricted
    TC positions)."""
    return (head_flops(shape, vocab_size, options["mlm_probability"])
            + 4.0 * (int(options["tc_num_negatives"]) + 1) * shape["hidden_size"])


def _taco(name: str, positions: str, label: str, description: str, style: dict) -> Objective:
    return TacoObjective(name, label, description, ("mlm", "tc"), tc_terms, tc_flops, options=("tc",),
                         style=style, tc_positions=positions, min_device_batch=2, needs_hidden_states=True)


DECLARED = (
    _taco("taco", "all", "TACO", "MLM + token-alignment contrastive loss at all real positions",
          dict(color="#0072B2", marker="^", linestyle="-")),
    _taco("taco_concentrated", "masked", "TACO (concentrated)",
          "MLM + TC loss only at the MLM-selected positions (paper's concentrated TACO)",
          dict(color="#009E73", marker="s", linestyle="--")),
    _taco("taco_unmasked", "unmasked", "TACO (unmasked)",
          "MLM + TC loss only at real positions not selected by MLM (official code's third option)",
          dict(color="#E69F00", marker="v", linestyle="-.")),
)
