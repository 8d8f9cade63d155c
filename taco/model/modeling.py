"""BERT pre-training model with every objective of the paper (MLM, TACO and its ablations).

:class:`TacoForPreTraining` has exactly the parameters of ``transformers.BertForMaskedLM``
(``bert.*`` without pooler, ``cls.predictions.*``, decoder tied to the word embeddings), so its
``save_pretrained`` directory loads as plain BERT with ``AutoModelForMaskedLM`` or
``AutoModelForSequenceClassification`` (the pooler is then newly initialised, as for any MLM-only
checkpoint, e.g. the official code's run_mlm -> run_glue path). The objective and its
hyper-parameters live in the config (``taco_objective``, ``taco_tc_weight``, ...), so
``TacoForPreTraining.from_pretrained(dir)`` restores them.

Sparse prediction (as in cramming): the vocabulary projection runs only at the positions that need
a prediction (MLM-selected positions; plus the other real positions for ``mlm_tp``).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from transformers import BertConfig
from transformers.modeling_outputs import ModelOutput
from transformers.models.bert.modeling_bert import BertModel, BertOnlyMLMHead, BertPreTrainedModel

from taco.model.losses import tc_loss
from taco.model.objectives import DEFAULT_OBJECTIVE_PARAMS, TP_MODES, get_objective, tc_anchor_mask
from taco.model.sampling import sample_negative_index, sample_positive_index
from taco.registry import PRESET_SHAPES

__all__ = ["SIZES", "SIZE_PRESETS", "bert_config", "TacoForPreTraining", "TacoPreTrainingOutput"]

#: name -> BERT shape (defined once in taco.registry)
SIZE_PRESETS = PRESET_SHAPES
SIZES: tuple[str, ...] = tuple(SIZE_PRESETS)


def bert_config(size: str, vocab_size: int, **overrides: Any) -> BertConfig:
    """``BertConfig`` of a preset size (``tiny``, ``small``, ``base``), max positions 512.

    ``overrides`` are any ``BertConfig`` fields (e.g. ``hidden_dropout_prob=0.0``,
    ``attn_implementation="eager"``).
    """
    if size not in SIZE_PRESETS:
        raise ValueError(f"unknown model size {size!r}; valid sizes: {', '.join(SIZES)}")
    if not isinstance(vocab_size, int) or vocab_size <= 0:
        raise ValueError(f"vocab_size must be a positive int, got {vocab_size!r}")
    kwargs: dict[str, Any] = dict(SIZE_PRESETS[size], vocab_size=vocab_size, max_position_embeddings=512)
    kwargs.update(overrides)
    attn = kwargs.pop("attn_implementation", None)
    config = BertConfig(**kwargs)
    if attn is not None:
        config._attn_implementation = attn
    return config


@dataclass
class TacoPreTrainingOutput(ModelOutput):
    """Output of :class:`TacoForPreTraining`.

    Attributes:
        loss: scalar total loss (``mlm_loss + tc_weight * tc_loss``; for ``mlm_tp``
            ``mlm_loss + tp_weight * tp_loss`` with tp_mode "separate", or the mean cross-entropy over
            all predicted positions with tp_mode "joint").
        mlm_loss: scalar MLM cross-entropy over the selected positions.
        tc_loss: scalar TC loss (None unless the objective uses TC).
        tp_loss: scalar token-prediction loss at the unselected real positions (``mlm_tp`` only).
        logits: (B, L, V) dense vocabulary logits, only when ``output_logits=True`` or no labels given.
        hidden_states: tuple of (B, L, H), only when ``output_hidden_states=True``.
    """

    loss: torch.FloatTensor | None = None
    mlm_loss: torch.FloatTensor | None = None
    tc_loss: torch.FloatTensor | None = None
    tp_loss: torch.FloatTensor | None = None
    logits: torch.FloatTensor | None = None
    hidden_states: tuple[torch.FloatTensor, ...] | None = None


def _config_key(param: str) -> str:
    return f"taco_{param}"


class TacoForPreTraining(BertPreTrainedModel):
    """BERT encoder + MLM head, trained with one objective of :data:`taco.model.objectives.OBJECTIVES`.

    Args:
        config: a ``BertConfig`` (e.g. from :func:`bert_config`).
        objective: registry name; ``None`` keeps ``config.taco_objective`` (default ``"mlm"``).
        **objective_params: any of ``tc_weight``, ``tc_temperature``, ``tc_window``,
            ``tc_num_negatives``, ``tp_weight``, ``tp_mode`` (``"separate"`` | ``"joint"``, see
            :data:`taco.model.objectives.DEFAULT_OBJECTIVE_PARAMS`), ``mlm_probability``; stored
            as ``config.taco_<name>``.
    """

    _tied_weights_keys = {
        "cls.predictions.decoder.weight": "bert.embeddings.word_embeddings.weight",
        "cls.predictions.decoder.bias": "cls.predictions.bias",
    }
    # The loss is a per-batch mean: the Trainer must not pass num_items_in_batch nor rescale it.
    accepts_loss_kwargs = False

    def __init__(self, config: BertConfig, objective: str | None = None, **objective_params: Any):
        unknown = set(objective_params) - set(DEFAULT_OBJECTIVE_PARAMS)
        if unknown:
            raise TypeError(
                f"unknown objective parameter(s) {sorted(unknown)}; valid: {', '.join(DEFAULT_OBJECTIVE_PARAMS)}"
            )
        # own copy: two models built from one config must not switch each other's objective
        config = copy.deepcopy(config)
        if objective is None:
            objective = getattr(config, "taco_objective", "mlm")
        get_objective(objective)  # validates the name
        config.taco_objective = objective
        for name, default in DEFAULT_OBJECTIVE_PARAMS.items():
            value = objective_params.get(name, getattr(config, _config_key(name), default))
            setattr(config, _config_key(name), type(default)(value))
        self._validate_params(config)
        super().__init__(config)
        self.bert = BertModel(config, add_pooling_layer=False)
        self.cls = BertOnlyMLMHead(config)
        self.post_init()

    @staticmethod
    def _validate_params(config: BertConfig) -> None:
        w = config.taco_tc_window
        if w < 3 or w % 2 == 0:
            raise ValueError(f"taco_tc_window must be odd and >= 3, got {w}")
        if config.taco_tc_num_negatives < 1:
            raise ValueError(f"taco_tc_num_negatives must be >= 1, got {config.taco_tc_num_negatives}")
        if not config.taco_tc_temperature > 0:
            raise ValueError(f"taco_tc_temperature must be > 0, got {config.taco_tc_temperature}")
        if not 0.0 <= config.taco_mlm_probability <= 1.0:
            raise ValueError(f"taco_mlm_probability must be in [0, 1], got {config.taco_mlm_probability}")
        if config.taco_tp_mode not in TP_MODES:
            raise ValueError(f"taco_tp_mode must be one of {', '.join(TP_MODES)}, got {config.taco_tp_mode!r}")
        if config.taco_tp_mode == "joint" and config.taco_tp_weight != 1.0:
            raise ValueError(f"taco_tp_weight {config.taco_tp_weight} has no effect with tp_mode 'joint' "
                             "(one cross-entropy over all predicted positions); leave it at 1.0")

    # --- objective ------------------------------------------------------------------------------
    @property
    def objective(self):
        """The :class:`taco.model.objectives.Objective` this model trains with."""
        return get_objective(self.config.taco_objective)

    @property
    def objective_params(self) -> dict[str, float | int]:
        """Current objective hyper-parameters (``tc_weight``, ``tc_temperature``, ...)."""
        return {name: getattr(self.config, _config_key(name)) for name in DEFAULT_OBJECTIVE_PARAMS}

    # --- HF plumbing (same as BertForMaskedLM) ----------------------------------------------------
    def get_output_embeddings(self):
        return self.cls.predictions.decoder

    def set_output_embeddings(self, new_embeddings):
        self.cls.predictions.decoder = new_embeddings
        self.cls.predictions.bias = new_embeddings.bias

    # --- forward ----------------------------------------------------------------------------------
    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
        original_input_ids: torch.Tensor | None = None,
        return_dict: bool = True,
        output_logits: bool = False,
        output_hidden_states: bool = False,
        generator: torch.Generator | None = None,
        **kwargs: Any,
    ) -> TacoPreTrainingOutput | tuple:
        """Encode and compute the objective's losses.

        Args:
            input_ids: LongTensor (B, L), the corrupted ids (collator output).
            attention_mask: (B, L), 1 at real tokens (default: all real).
            token_type_ids: optional (B, L).
            labels: LongTensor (B, L), original id at MLM-selected positions, -100 elsewhere. Without
                labels no loss is computed (and dense logits are returned).
            original_input_ids: LongTensor (B, L), uncorrupted ids (targets of ``mlm_tp``'s token
                prediction; unselected positions are never corrupted, so ``input_ids`` is used there
                when it is not given).
            return_dict: return a :class:`TacoPreTrainingOutput` (else a tuple of its non-None fields).
            output_logits: also return the dense (B, L, V) logits.
            output_hidden_states: return all hidden states (``hidden_states[0]`` = embedding output).
            generator: optional ``torch.Generator`` for the TC positive/negative sampling.
        """
        kwargs.pop("num_items_in_batch", None)
        kwargs.pop("return_loss", None)
        obj = self.objective
        cfg = self.config
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        compute_loss = labels is not None
        need_tc = compute_loss and obj.uses_tc
        if compute_loss and labels.shape != input_ids.shape:
            raise ValueError(f"labels shape {tuple(labels.shape)} != input_ids shape {tuple(input_ids.shape)}")

        outputs = self.bert(
            input_ids,
            attention_mask=attention_mask,
            token_type_ids=token_type_ids,
            output_hidden_states=need_tc or output_hidden_states,
            return_dict=True,
            **kwargs,
        )
        sequence = outputs.last_hidden_state  # (B, L, H)
        loss = mlm_loss = tc = tp_loss = logits = None

        if compute_loss:
            selected = labels != -100  # (B, L)
            real = attention_mask.bool()
            if obj.uses_tp:
                tp_mask = real & ~selected
                predict = selected | tp_mask
                source = original_input_ids if original_input_ids is not None else input_ids
                targets = torch.where(selected, labels, source)
            else:
                predict = selected
                targets = labels
            # sparse prediction: vocabulary projection only where a prediction is needed
            pred_logits = self.cls(sequence[predict])  # (P, V)
            pred_targets = targets[predict]  # (P,)
            ce = F.cross_entropy(pred_logits.float(), pred_targets, reduction="none")  # (P,)
            is_mlm = selected[predict]
            mlm_loss = _masked_mean(ce, is_mlm)
            loss = mlm_loss
            if obj.uses_tp:
                tp_loss = _masked_mean(ce, ~is_mlm)
                if cfg.taco_tp_mode == "joint":  # one CE over every predicted position
                    loss = ce.mean() if ce.numel() else mlm_loss
                else:  # "separate": MLM mean + tp_weight x TP mean
                    loss = loss + cfg.taco_tp_weight * tp_loss
            if need_tc:
                embeddings = outputs.hidden_states[0]  # embedding-layer output e (docs/paper-facts.md)
                anchors = tc_anchor_mask(obj, attention_mask, labels)
                pos = sample_positive_index(attention_mask, cfg.taco_tc_window, generator)
                neg = sample_negative_index(attention_mask, cfg.taco_tc_num_negatives, generator)
                tc = tc_loss(sequence, embeddings, pos, neg, anchors, cfg.taco_tc_temperature)
                loss = loss + cfg.taco_tc_weight * tc

        if output_logits or not compute_loss:
            logits = self.cls(sequence)

        out = TacoPreTrainingOutput(
            loss=loss,
            mlm_loss=mlm_loss,
            tc_loss=tc,
            tp_loss=tp_loss,
            logits=logits,
            hidden_states=outputs.hidden_states if output_hidden_states else None,
        )
        return out if return_dict else out.to_tuple()


def _masked_mean(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean of ``values[mask]`` (values, mask: (P,)); a graph-connected 0 when ``mask`` is empty.

    Written without a host sync (no ``mask.any()``), so it is cheap on CUDA.
    """
    m = mask.to(values.dtype)
    return (values * m).sum() / m.sum().clamp_min(1.0)
