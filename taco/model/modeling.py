"""The pre-training model of every encoder family with every objective of the paper (MLM, TACO, ablations).

One class per encoder family (:mod:`taco.families`), each a subclass of transformers' own masked-LM class
(the family's ``native_class``) with its modules unchanged, built here from the family's declaration (its
``encode`` and ``mlm_logits`` hooks) and named by its ``model_class_name``: ``PreTrainingModel``
(``BertForMaskedLM``: ``bert.*`` without pooler, ``cls.predictions.*``, decoder tied to the word embeddings),
``RobertaPreTrainingModel`` (``RobertaForMaskedLM``), ``ModernBertPreTrainingModel``
(``ModernBertForMaskedLM``); a new family's module adds its class with no edit here. Only ``forward``
differs from the native class: it computes the objective's losses (``taco.objectives``).
``save_pretrained`` names the native class in ``config.json`` (``architectures``), so the directory loads with ``AutoModelForMaskedLM``,
``AutoModelForSequenceClassification`` or ``pipeline("fill-mask")`` without this package (the pooler /
classifier then newly initialised, as for any MLM-only checkpoint, e.g. the official code's run_mlm ->
run_glue path). The objective and its hyper-parameters live in the config (``taco_objective``,
``taco_tc_weight``, ...), so :func:`load_pretraining_model` restores them.

Sparse prediction (as in cramming): the family's MLM head (:meth:`mlm_logits`) runs only at the positions
that need a prediction (MLM-selected positions; plus the other real positions for ``mlm_tp``).
"""

from __future__ import annotations

import copy
import json
from dataclasses import field, make_dataclass
from pathlib import Path
from typing import Any

import torch
import transformers
from transformers import PretrainedConfig
from transformers.modeling_outputs import ModelOutput

from taco.families import FAMILIES, family_of_model_type, get_family
from taco.families.base import Family
from taco.objectives import DEFAULT_OBJECTIVE_PARAMS, LOSS_TERMS, check_options, get_objective
from taco.objectives.base import MLM_PROBABILITY_PARAMETER

__all__ = ["PreTrainingOutput", "pretraining_model_class", "load_pretraining_model", "architecture_of",
           *(f.model_class_name for f in FAMILIES.values())]


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


def architecture_of(config: PretrainedConfig) -> str:
    """The encoder family's name of a model config (its ``model_type``,
    :func:`taco.families.family_of_model_type`); ValueError for another model type."""
    return family_of_model_type(getattr(config, "model_type", None)).name


class _ObjectiveModel:
    """The objective half of every family's pre-training model (mixed in before the family's
    ``*ForMaskedLM``, whose ``__init__`` builds the encoder and the MLM head unchanged).

    Args:
        config: the family's config (``taco.model.configs.encoder_config``).
        objective: registry name; ``None`` keeps ``config.taco_objective`` (default ``"mlm"``).
        **objective_params: any of ``tc_weight``, ``tc_temperature``, ``tc_window``,
            ``tc_num_negatives``, ``tp_weight``, ``tp_mode`` (``"separate"`` | ``"joint"``, see
            :data:`taco.objectives.DEFAULT_OBJECTIVE_PARAMS`), ``mlm_probability``; stored
            as ``config.taco_<name>``.

    Raises:
        TypeError: an unknown objective parameter.
        ValueError: an unknown objective, a bad parameter value, or an objective that does not work on
            this family (``Objective.architectures``: BERT-NCE and INFOWORD are BERT-only).
    """

    # The loss is a per-batch mean: the Trainer must not pass num_items_in_batch nor rescale it.
    accepts_loss_kwargs = False

    def __init__(self, config: PretrainedConfig, objective: str | None = None, **objective_params: Any):
        unknown = set(objective_params) - set(DEFAULT_OBJECTIVE_PARAMS)
        if unknown:
            raise TypeError(
                f"unknown objective parameter(s) {sorted(unknown)}; valid: {', '.join(DEFAULT_OBJECTIVE_PARAMS)}"
            )
        # own copy: two models built from one config must not switch each other's objective
        config = copy.deepcopy(config)
        if objective is None:
            objective = getattr(config, "taco_objective", "mlm")
        spec = get_objective(objective)  # validates the name
        family = architecture_of(config)
        if family not in spec.architectures:
            raise ValueError(f"objective {objective!r} works on {', '.join(spec.architectures)} only, not on "
                             f"{family}: it reaches modules of those models (taco.objectives.{objective})")
        config.taco_objective = objective
        for name, default in DEFAULT_OBJECTIVE_PARAMS.items():
            value = objective_params.get(name, getattr(config, _config_key(name), default))
            setattr(config, _config_key(name), type(default)(value))
        self._validate_params(config)
        super().__init__(config)

    @staticmethod
    def _validate_params(config: PretrainedConfig) -> None:
        """The option checks declared by the objective modules (``taco.objectives``); ValueError."""
        errors = check_options({name: getattr(config, _config_key(name)) for name in DEFAULT_OBJECTIVE_PARAMS
                                if name != "mlm_probability"},
                               {name: _config_key(name) for name in DEFAULT_OBJECTIVE_PARAMS})
        if (msg := MLM_PROBABILITY_PARAMETER.check(config.taco_mlm_probability, "taco_mlm_probability")):
            errors.append(msg)
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

    @property
    def architecture(self) -> str:
        """The encoder family (``bert``, ``roberta``, ``modernbert``)."""
        return architecture_of(self.config)

    # --- family hooks (the family module's, taco.families.base.Family) ------------------------------
    family: Family  # set on each family's class (_family_class)

    def encode(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor | None,
               output_hidden_states: bool, **kwargs: Any):
        """The encoder's output (``last_hidden_state`` (B, L, H); ``hidden_states``: a tuple whose first
        entry is the embedding-layer output, each (B, L, H), when asked): the family's ``encode``."""
        return self.family.encode(self, input_ids, attention_mask, token_type_ids, output_hidden_states, **kwargs)

    def mlm_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """The family's own MLM head on hidden states (..., H) -> logits (..., V): the family's ``mlm_logits``."""
        return self.family.mlm_logits(self, hidden)

    # --- export ----------------------------------------------------------------------------------
    def save_pretrained(self, save_directory, *args: Any, **kwargs: Any):
        """``PreTrainedModel.save_pretrained``, then ``config.json`` rewritten with ``architectures`` the
        family's native class (``BertForMaskedLM``, ``RobertaForMaskedLM``, ``ModernBertForMaskedLM``:
        transformers writes this class's name, which no other tool knows). The objective's ``taco_*``
        keys stay, so :func:`load_pretraining_model` restores it; ``AutoModelForMaskedLM`` /
        ``pipeline("fill-mask")`` load the native class and ignore them."""
        out = super().save_pretrained(save_directory, *args, **kwargs)
        is_main = kwargs.get("is_main_process", True)
        if is_main:
            config = copy.deepcopy(self.config)
            config.architectures = [self.family.native_class]
            config.save_pretrained(save_directory)
        return out

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
            token_type_ids: optional (B, L) (BERT and RoBERTa; ModernBERT has no segment embedding and
                refuses a non-zero one).
            labels: LongTensor (B, L), original id at MLM-selected positions, -100 elsewhere. Without
                labels no loss is computed (and dense logits are returned).
            original_input_ids: LongTensor (B, L), uncorrupted ids (targets of ``mlm_tp``'s token
                prediction; unselected positions are never corrupted, so ``input_ids`` is used there
                when it is not given).
            return_dict: return a :class:`PreTrainingOutput` (else a tuple of its non-None fields).
            output_logits: also return the dense (B, L, V) logits.
            output_hidden_states: return all hidden states (``hidden_states[0]`` = embedding output).
            generator: optional ``torch.Generator`` for the TC positive/negative sampling.

        Raises:
            ValueError: labels of another shape than input_ids; an encoder output that is not (B, L, H)
                (ModernBERT with FlashAttention has returned unpadded states, transformers#38499).
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

        outputs = self.encode(input_ids, attention_mask, token_type_ids,
                              (compute_loss and obj.needs_hidden_states) or output_hidden_states, **kwargs)
        sequence = outputs.last_hidden_state  # (B, L, H)
        if sequence.dim() != 3 or sequence.shape[:2] != input_ids.shape:
            raise ValueError(f"{type(self).__name__}: the encoder returned hidden states of shape "
                             f"{tuple(sequence.shape)}, not (B, L, H) with (B, L) = {tuple(input_ids.shape)} "
                             "(unpadded output of a FlashAttention kernel? use attn_implementation sdpa or eager)")
        loss = logits = None
        terms: dict[str, Any] = {}
        if compute_loss:
            batch = {"input_ids": input_ids, "attention_mask": attention_mask, "labels": labels,
                     "original_input_ids": original_input_ids, **extra}
            terms = obj.loss_terms(self, batch, outputs, self.objective_params, generator)
            loss = terms.pop("loss")

        if output_logits or not compute_loss:
            logits = self.mlm_logits(sequence)

        out = PreTrainingOutput(
            loss=loss,
            **{f"{name}_loss": value for name, value in terms.items()},
            logits=logits,
            hidden_states=outputs.hidden_states if output_hidden_states else None,
        )
        return out if return_dict else out.to_tuple()


def _family_class(family: Family) -> type:
    """The pre-training model class of ``family``: :class:`_ObjectiveModel` before transformers'
    ``family.native_class`` (its modules and parameters exactly the native class's), named
    ``family.model_class_name`` and placed in this module (so it pickles and is found by that name)."""
    native = getattr(transformers, family.native_class)
    cls = type(family.model_class_name, (_ObjectiveModel, native), {
        "family": family, "__module__": __name__, "__qualname__": family.model_class_name,
        "__doc__": f"{family.label} + its MLM head ({family.native_class}), trained with one objective of "
                   f":data:`taco.objectives.OBJECTIVE_SPECS` (arguments: :class:`_ObjectiveModel`); parameters "
                   f"exactly ``{family.native_class}``'s. Declared by ``taco/families/{family.name}.py``."})
    globals()[family.model_class_name] = cls
    return cls


#: family name -> its pre-training model class (``PreTrainingModel`` for BERT, ``RobertaPreTrainingModel``,
#: ``ModernBertPreTrainingModel``, and one per family module added)
_CLASSES: dict[str, type] = {name: _family_class(f) for name, f in FAMILIES.items()}
PreTrainingModel = _CLASSES["bert"]  # the paper's model: named statically for readers and type checkers


def pretraining_model_class(architecture: str) -> type:
    """The pre-training model class of an encoder family; ValueError naming the valid ones."""
    return _CLASSES[get_family(architecture).name]


def load_pretraining_model(path: str | Path, **kwargs: Any):
    """A saved pre-training model of any family (its ``config.json``'s ``model_type`` picks the class),
    with its objective restored from the ``taco_*`` keys. ``kwargs`` go to ``from_pretrained``.

    Raises FileNotFoundError without ``config.json``, ValueError for a model type of no family."""
    config_file = Path(path) / "config.json"
    if not config_file.is_file():
        raise FileNotFoundError(f"{config_file}: no model config (is {path} a checkpoint?)")
    family = family_of_model_type(json.loads(config_file.read_text()).get("model_type"), where=str(config_file))
    return _CLASSES[family.name].from_pretrained(str(path), **kwargs)
