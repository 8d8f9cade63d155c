"""BERT pre-training model with every objective of the paper (MLM, TACO and its ablations).

:class:`PreTrainingModel` has exactly the parameters of ``transformers.BertForMaskedLM``
(``bert.*`` without pooler, ``cls.predictions.*``, decoder tied to the word embeddings), so its
``save_pretrained`` directory loads as plain BERT with ``AutoModelForMaskedLM`` or
``AutoModelForSequenceClassification`` (the pooler is then newly initialised, as for any MLM-only
checkpoint, e.g. the official code's run_mlm -> run_glue path). The objective and its
hyper-parameters live in the config (``taco_objective``, ``taco_tc_weight``, ...), so
``PreTrainingModel.from_pretrained(dir)`` restores them.

Sparse prediction (as in cramming): the vocabulary projection runs only at the positions that need
a prediction (MLM-selected positions; plus the other real positions for ``mlm_tp``).
"""

from __future__ import annotations

import copy
from dataclasses import field, make_dataclass
from typing import Any

import torch
from transformers import BertConfig
from transformers.modeling_outputs import ModelOutput
from transformers.models.bert.modeling_bert import BertModel, BertOnlyMLMHead, BertPreTrainedModel

from taco.objectives import DEFAULT_OBJECTIVE_PARAMS, get_objective
from taco.objectives import LOSS_TERMS, check_options
from taco.registry import PRESET_SHAPES

__all__ = ["SIZES", "PRESET_SHAPES", "bert_config", "PreTrainingModel", "PreTrainingOutput"]

SIZES: tuple[str, ...] = tuple(PRESET_SHAPES)


def bert_config(size: str, vocab_size: int, **overrides: Any) -> BertConfig:
    """``BertConfig`` of a preset size (``tiny``, ``small``, ``base``), max positions 512.

    ``overrides`` are any ``BertConfig`` fields (e.g. ``hidden_dropout_prob=0.0``,
    ``attn_implementation="eager"``).
    """
    if size not in PRESET_SHAPES:
        raise ValueError(f"unknown model size {size!r}; valid sizes: {', '.join(SIZES)}")
    if not isinstance(vocab_size, int) or vocab_size <= 0:
        raise ValueError(f"vocab_size must be a positive int, got {vocab_size!r}")
    kwargs: dict[str, Any] = dict(PRESET_SHAPES[size], vocab_size=vocab_size, max_position_embeddings=512)
    kwargs.update(overrides)
    attn = kwargs.pop("attn_implementation", None)
    config = BertConfig(**kwargs)
    if attn is not None:
        config._attn_implementation = attn
    return config


def _output_class() -> type:
    """:class:`PreTrainingOutput`: a ``ModelOutput`` with ``loss``, one ``<term>_loss`` field per
    loss term any registered objective logs (``taco.objectives.LOSS_TERMS``), ``logits`` and
    ``hidden_states`` (all default ``None``), so a new objective's term needs no edit here."""
    fields = [("loss", Any, None)] + [(f"{t}_loss", Any, None) for t in LOSS_TERMS] + [
        ("logits", Any, None), ("hidden_states", Any, None)]
    cls = make_dataclass("PreTrainingOutput", [(n, t, field(default=d)) for n, t, d in fields],
                         bases=(ModelOutput,))
    cls.__module__ = __name__
    cls.__doc__ = """Output of :class:`PreTrainingModel` (fields default ``None``).

    Attributes:
        loss: scalar total loss of the objective (its module's ``loss_terms``: MLM + tc_weight x TC for
            the TACO family; for ``mlm_tp`` MLM + tp_weight x TP (tp_mode "separate") or one mean
            cross-entropy over all predicted positions ("joint"); for ``bert_nce`` the InfoNCE loss; for
            ``infoword`` InfoNCE + weight x the span term).
        mlm_loss: scalar MLM cross-entropy over the selected positions (for ``bert_nce``/``infoword`` a
            no-gradient diagnostic of the same head).
        tc_loss, tp_loss, nce_loss, dim_loss, ...: scalar loss terms (``<term>_loss`` for every term in
            ``taco.objectives.LOSS_TERMS``), None unless the objective has that term.
        logits: (B, L, V) dense vocabulary logits, only when ``output_logits=True`` or no labels given.
        hidden_states: tuple of (B, L, H), only when ``output_hidden_states=True``.
    """
    return cls


PreTrainingOutput = _output_class()


def _config_key(param: str) -> str:
    return f"taco_{param}"


class PreTrainingModel(BertPreTrainedModel):
    """BERT encoder + MLM head, trained with one objective of :data:`taco.registry.OBJECTIVE_SPECS`.

    Args:
        config: a ``BertConfig`` (e.g. from :func:`bert_config`).
        objective: registry name; ``None`` keeps ``config.taco_objective`` (default ``"mlm"``).
        **objective_params: any of ``tc_weight``, ``tc_temperature``, ``tc_window``,
            ``tc_num_negatives``, ``tp_weight``, ``tp_mode`` (``"separate"`` | ``"joint"``, see
            :data:`taco.objectives.DEFAULT_OBJECTIVE_PARAMS`), ``mlm_probability``; stored
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
        """The option checks declared by the objective modules (``taco.objectives``); ValueError."""
        errors = check_options({name: getattr(config, _config_key(name)) for name in DEFAULT_OBJECTIVE_PARAMS
                                if name != "mlm_probability"},
                               {name: _config_key(name) for name in DEFAULT_OBJECTIVE_PARAMS})
        if not 0.0 <= config.taco_mlm_probability <= 1.0:
            errors.append(f"taco_mlm_probability must be in [0, 1], got {config.taco_mlm_probability}")
        if errors:
            raise ValueError("; ".join(errors))

    # --- objective ------------------------------------------------------------------------------
    @property
    def objective(self):
        """The :class:`taco.objectives.base.Objective` this model trains with."""
        return get_objective(self.config.taco_objective)

    @property
    def objective_params(self) -> dict[str, float | int]:
        """Current objective hyper-parameters (``tc_weight``, ``tc_temperature``, ...)."""
        return {name: getattr(self.config, _config_key(name)) for name in DEFAULT_OBJECTIVE_PARAMS}

    # --- export ----------------------------------------------------------------------------------
    #: what ``config.json`` names as the architecture: the weights are exactly ``BertForMaskedLM``'s
    #: (encoder without pooler, MLM head, tied decoder), a class every tool that reads ``architectures``
    #: (the Hub's widgets, ``pipeline`` task inference) knows; ``PreTrainingModel`` is not one
    EXPORTED_ARCHITECTURE = "BertForMaskedLM"

    def save_pretrained(self, save_directory, *args: Any, **kwargs: Any):
        """``PreTrainedModel.save_pretrained``, then ``config.json`` rewritten with
        ``architectures: ["BertForMaskedLM"]`` (transformers writes this class's name). The
        objective's ``taco_*`` keys stay, so ``PreTrainingModel.from_pretrained`` restores it;
        ``AutoModelForMaskedLM``/``pipeline("fill-mask")`` load plain BERT and ignore them."""
        out = super().save_pretrained(save_directory, *args, **kwargs)
        is_main = kwargs.get("is_main_process", True)
        if is_main:
            config = copy.deepcopy(self.config)
            config.architectures = [self.EXPORTED_ARCHITECTURE]
            config.save_pretrained(save_directory)
        return out

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
    ) -> PreTrainingOutput | tuple:
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
            return_dict: return a :class:`PreTrainingOutput` (else a tuple of its non-None fields).
            output_logits: also return the dense (B, L, V) logits.
            output_hidden_states: return all hidden states (``hidden_states[0]`` = embedding output).
            generator: optional ``torch.Generator`` for the TC positive/negative sampling.
        """
        kwargs.pop("num_items_in_batch", None)
        kwargs.pop("return_loss", None)
        obj = self.objective
        extra = {k: kwargs.pop(k, None) for k in obj.batch_keys}  # the objective's own inputs
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        compute_loss = labels is not None
        if compute_loss and labels.shape != input_ids.shape:
            raise ValueError(f"labels shape {tuple(labels.shape)} != input_ids shape {tuple(input_ids.shape)}")

        outputs = self.bert(
            input_ids,
            attention_mask=attention_mask,
            token_type_ids=token_type_ids,
            output_hidden_states=(compute_loss and obj.needs_hidden_states) or output_hidden_states,
            return_dict=True,
            **kwargs,
        )
        sequence = outputs.last_hidden_state  # (B, L, H)
        loss = logits = None
        terms: dict[str, Any] = {}
        if compute_loss:
            batch = {"input_ids": input_ids, "attention_mask": attention_mask, "labels": labels,
                     "original_input_ids": original_input_ids, **extra}
            terms = obj.loss_terms(self, batch, outputs, self.objective_params, generator)
            loss = terms.pop("loss")

        if output_logits or not compute_loss:
            logits = self.cls(sequence)

        out = PreTrainingOutput(
            loss=loss,
            **{f"{name}_loss": value for name, value in terms.items()},
            logits=logits,
            hidden_states=outputs.hidden_states if output_hidden_states else None,
        )
        return out if return_dict else out.to_tuple()
