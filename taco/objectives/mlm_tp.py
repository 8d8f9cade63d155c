"""``mlm_tp``: "extended MLM" (Fu et al. 2022, Sec. 5): MLM on the selected 15% plus token prediction
(TP: cross-entropy to the original token) at every other real position.

Both parts are reported (``mlm_loss``, ``tp_loss``). Weighting (group ``tp``; the paper does not say
which it used, the official code has no MLM+TP): ``separate`` (default: MLM mean + tp_weight x TP
mean, the same structure as TACO's MLM + 1.0 x TC) or ``joint`` (one mean cross-entropy over all
predicted positions, where the ~85% unselected positions outweigh the MLM part about 5.7 : 1;
tp_weight must stay 1.0).
"""

from __future__ import annotations

from typing import Any

from taco.objectives.base import Objective, head_flops
from taco.parameters import objective_option
from taco.objectives.mlm import masked_mean, predict_tokens

__all__ = ["DECLARED", "OPTIONS", "TP_MODES"]

#: how ``mlm_tp`` combines its MLM and token-prediction parts
TP_MODES: tuple[str, ...] = ("separate", "joint")

OPTIONS = (
    objective_option("tp", "weight", "tp_weight", 1.0, "weight of the token-prediction mean (mode separate)",
                     minimum=0, hash_always=True, pass_default=False),
    objective_option("tp", "mode", "tp_mode", "separate",
                     "separate = MLM mean + weight x TP mean; joint = one cross-entropy over all predicted positions",
                     choices=TP_MODES, hash_when_default=False, pass_default=False),
)


def tp_terms(model: Any, batch: dict[str, Any], outputs: Any, options: dict[str, Any],
             generator: Any = None) -> dict[str, Any]:
    """``{"loss", "mlm", "tp"}`` (scalar tensors); see the module docstring for the weighting."""
    ce, is_mlm = predict_tokens(model, outputs.last_hidden_state, batch, predict_unselected=True)
    mlm_loss = masked_mean(ce, is_mlm)
    tp_loss = masked_mean(ce, ~is_mlm)
    if options["tp_mode"] == "joint":  # one CE over every predicted position
        loss = ce.mean() if ce.numel() else mlm_loss
    else:  # "separate": MLM mean + tp_weight x TP mean
        loss = mlm_loss + options["tp_weight"] * tp_loss
    return {"loss": loss, "mlm": mlm_loss, "tp": tp_loss}


def tp_flops(shape, seq_len, vocab_size, options) -> float:
    """The MLM head at every position (dense prediction)."""
    return head_flops(shape, vocab_size, predicted_share=1.0)


def check_tp(values: dict[str, Any], where: dict[str, str]) -> str | None:
    """Cross-option rule: tp_weight has no effect with tp_mode joint (it must stay 1.0); ``where`` names
    the options as the caller does."""
    if values.get("tp_mode") == "joint" and float(values.get("tp_weight", 1.0)) != 1.0:
        return (f"{where.get('tp_weight', 'tp_weight')}: {values['tp_weight']} has no effect with "
                f"{where.get('tp_mode', 'tp_mode')} joint (one cross-entropy over all predicted positions); "
                "leave it at 1.0")
    return None


DECLARED = (
    Objective("mlm_tp", "MLM+TP", "extended MLM: MLM + token prediction at the other real positions (paper's MLM+TP)",
              ("mlm", "tp"), tp_terms, tp_flops, options=("tp",),
              style=dict(color="#CC79A7", marker="D", linestyle=":")),
)
