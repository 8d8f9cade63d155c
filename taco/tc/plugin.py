"""The TC loss as a plug-in for any Hugging Face masked-LM encoder: :func:`tc_term` on a model's output,
and :class:`TacoTrainer`, a ``transformers.Trainer`` whose loss is TACO = the model's MLM loss +
``tc_weight`` x TC (Fu et al. 2022, Eq. 9-10).

It needs only what every ``AutoModelForMaskedLM`` gives: ``hidden_states[0]`` (the embedding-layer
output e) and ``hidden_states[-1]`` (the last hidden state h; after ModernBERT's ``final_norm``), both
(B, L, H), and its MLM loss from ``labels``. No architectural change (the paper's "plug-and-play" claim).
Defaults are the paper's and the official code's: W = 5, K = 50, tau = 0.07, weight 1.0, every real
token an anchor. The MLM loss is the model's own (dense prediction; the suite's ``taco pretrain``
predicts only the selected positions, the same loss). Needs torch and transformers only::

    from transformers import DataCollatorForLanguageModeling, TrainingArguments
    from taco.tc.plugin import TacoTrainer

    collator = DataCollatorForLanguageModeling(tokenizer, mlm_probability=0.15)
    trainer = TacoTrainer(model=model, args=TrainingArguments("out", per_device_train_batch_size=8),
                          train_dataset=dataset, data_collator=collator)
    trainer.train()

Constraints, each refused with a message naming it: at least 2 sequences per device batch (the
negatives come from the other sequences), an odd window W >= 3, an integer K >= 1, and hidden states of
shape (B, L, H) (a model that returns unpadded states, such as ModernBERT under FlashAttention 2 in some
transformers versions, is refused: use ``attn_implementation="sdpa"`` or ``"eager"``).
"""

from __future__ import annotations

import numbers
from typing import Any

import torch
from transformers import Trainer

from taco.tc.loss import tc_loss
from taco.tc.options import DEFAULTS, check_tc_options
from taco.tc.sampling import sample_negative_index, sample_positive_index

__all__ = ["tc_term", "TacoTrainer"]


#: the TC options' defaults, declared once with the options (:mod:`taco.tc.options`)
_W, _K, _WEIGHT, _TAU = (DEFAULTS[n] for n in ("tc_window", "tc_num_negatives", "tc_weight", "tc_temperature"))


def tc_term(outputs: Any, attention_mask: torch.Tensor, *, window: int = _W, num_negatives: int = _K,
            temperature: float = _TAU, anchors: torch.Tensor | None = None,
            generator: torch.Generator | None = None) -> torch.Tensor:
    """The TC loss of one batch from a model output with hidden states (scalar fp32 tensor, nats).

    Args:
        outputs: a Hugging Face model output called with ``output_hidden_states=True``: its
            ``hidden_states`` tuple gives e = ``hidden_states[0]`` and h = ``hidden_states[-1]``, (B, L, H).
        attention_mask: (B, L), 1 at real tokens: positives and negatives are drawn among them.
        window: positive window W (odd, >= 3): the positive is at offset +-1..+-W//2 in the same sequence.
        num_negatives: K negatives per anchor, drawn from the other sequences of the batch.
        temperature: tau of the cosine-similarity score.
        anchors: bool (B, L) anchor positions; default every real token (the paper's TACO).
        generator: optional ``torch.Generator`` for the draws.

    Raises:
        ValueError: no hidden states, a shape that is not (B, L, H) or does not match the mask, fewer
            than 2 non-empty sequences, a bad W or K.
    """
    if isinstance(outputs, tuple):
        raise ValueError("the model output is a tuple: call the model with return_dict=True and "
                         "output_hidden_states=True (the TC loss reads outputs.hidden_states)")
    hidden_states = getattr(outputs, "hidden_states", None)
    if not hidden_states:
        raise ValueError("the model output has no hidden_states: call the model with output_hidden_states=True "
                         "(the TC loss needs the embedding output hidden_states[0] and the last hidden state)")
    e, h = hidden_states[0], hidden_states[-1]
    if h.dim() != 3 or e.shape != h.shape:
        raise ValueError(f"hidden states must be (B, L, H) with equal shapes; got embeddings {tuple(e.shape)} and last "
                         f"{tuple(h.shape)} (unpadded states, e.g. FlashAttention 2: use attn_implementation='sdpa')")
    if tuple(attention_mask.shape) != tuple(h.shape[:2]):
        raise ValueError(f"attention_mask {tuple(attention_mask.shape)} does not match the hidden states' (B, L) "
                         f"{tuple(h.shape[:2])}")
    if isinstance(num_negatives, bool) or not isinstance(num_negatives, numbers.Integral):
        raise ValueError(f"num_negatives K must be an integer, got {num_negatives!r}")
    mask = attention_mask.to(h.device)
    positive = sample_positive_index(mask, int(window) if isinstance(window, numbers.Integral) else window, generator)
    negative = sample_negative_index(mask, int(num_negatives), generator)
    anchors = mask.bool() if anchors is None else anchors.to(h.device).bool()
    return tc_loss(h, e, positive, negative, anchors, float(temperature))


class TacoTrainer(Trainer):
    """A ``transformers.Trainer`` that trains TACO: the model's MLM loss + ``tc_weight`` x :func:`tc_term`.

    Args:
        model: any masked-LM model (``AutoModelForMaskedLM``: BERT, RoBERTa, ModernBERT, ...).
        tc_weight, tc_window, tc_num_negatives, tc_temperature: the TC options (defaults: the paper's).
        *args, **kwargs: as ``transformers.Trainer`` (a masking collator such as
            ``DataCollatorForLanguageModeling`` gives the ``labels``).

    Raises:
        ValueError: a model without an MLM head (``get_output_embeddings()`` is None), a bad TC option, a
            device batch of 1 (``per_device_train_batch_size`` or ``per_device_eval_batch_size``); at the first
            step, a batch without ``attention_mask`` or a model that returns no loss.

    **A last batch of 1 sequence** (a data set of n = k B + 1 sequences) has no other sequence to draw
    negatives from. One policy for training, evaluation and prediction: that last batch is dropped (the
    dataloader's ``drop_last``), with a warning naming how many sequences were left out; a run that never
    reaches it (``max_steps``) loses nothing.

    **Logging.** The MLM and TC parts are logged through the Trainer's own logging on every logging step
    (``mlm_loss``, ``tc_loss``: means over the optimizer steps since the last log, so TensorBoard and W&B
    draw them beside ``loss``); ``self.last_terms`` keeps the last batch's ``{"mlm": float, "tc": float}``.

    **Gradient accumulation.** The loss is a mean over one micro-batch (the model's MLM mean and the TC mean
    over anchors), so the Trainer divides it by the accumulation steps (``loss_is_scaled_for_ga = False``):
    the logged loss and the gradient are those of the mean over the accumulated micro-batches.
    """

    #: transformers' flag: compute_loss returns a per-micro-batch mean, not a sum scaled by num_items_in_batch
    loss_is_scaled_for_ga = False

    def __init__(self, *args: Any, tc_weight: float = _WEIGHT, tc_window: int = _W, tc_num_negatives: int = _K,
                 tc_temperature: float = _TAU, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.model_accepts_loss_kwargs = False  # versions without loss_is_scaled_for_ga read this instead
        head = getattr(self.model, "get_output_embeddings", lambda: None)()
        if head is None:
            raise ValueError(f"{type(self.model).__name__} has no MLM head (get_output_embeddings() is None): TACO "
                             "adds the TC loss to a masked-LM loss; load the model with AutoModelForMaskedLM")
        # the checks of the TC options' declarations (as taco pretrain and the config check apply them)
        values = {"tc_weight": tc_weight, "tc_window": tc_window, "tc_num_negatives": tc_num_negatives,
                  "tc_temperature": tc_temperature}
        errors = check_tc_options(values)
        if errors:
            raise ValueError("; ".join(errors))
        for name in ("per_device_train_batch_size", "per_device_eval_batch_size"):
            batch = getattr(self.args, name)
            if batch < 2:
                raise ValueError(f"{name} {batch}: the TC loss draws its negatives from the other sequences of the "
                                 "device batch; use >= 2")
        tok = getattr(self, "processing_class", None)
        pad_model, pad_tok = getattr(self.model.config, "pad_token_id", None), getattr(tok, "pad_token_id", None)
        if pad_model is not None and pad_tok is not None and int(pad_model) != int(pad_tok):
            import warnings

            warnings.warn(f"TacoTrainer: the model's pad_token_id {pad_model} differs from the tokenizer's {pad_tok} "
                          "(RobertaConfig's default is 1): padding is then embedded as a word. Build the config from "
                          "the tokenizer (taco.model.configs.config_from_tokenizer)", stacklevel=2)
        self.tc_weight, self.tc_window = float(tc_weight), int(tc_window)
        self.tc_num_negatives, self.tc_temperature = int(tc_num_negatives), float(tc_temperature)
        self.last_terms: dict[str, float] = {}
        self._term_sums: dict[str, float] = {"mlm": 0.0, "tc": 0.0}
        self._term_count = 0

    # --- a last batch of 1 --------------------------------------------------------------------------
    def _drop_a_last_single(self, dataset: Any, batch: int, what: str):
        """Whether ``dataset`` leaves a last device batch of 1 (one process): then warn once and say drop it."""
        n = len(dataset) if dataset is not None and hasattr(dataset, "__len__") else None
        if n is None or n % batch != 1 or self.args.dataloader_drop_last or self.args.world_size != 1:
            return False
        import warnings

        warnings.warn(f"TacoTrainer: {n} {what} sequences in device batches of {batch} leave a last batch of 1, "
                      "which the TC loss cannot use: that sequence is left out (dataloader drop_last)", stacklevel=3)
        return True

    def _with_drop_last(self, drop: bool, make: Any):
        if not drop:
            return make()
        old = self.args.dataloader_drop_last
        self.args.dataloader_drop_last = True
        try:
            return make()
        finally:
            self.args.dataloader_drop_last = old

    def get_train_dataloader(self):
        drop = self._drop_a_last_single(self.train_dataset, self.args.per_device_train_batch_size, "training")
        return self._with_drop_last(drop, super().get_train_dataloader)

    def get_eval_dataloader(self, eval_dataset=None):
        ds = eval_dataset if eval_dataset is not None else self.eval_dataset
        if isinstance(ds, dict):  # several named eval sets: each gets its own dataloader call
            return super().get_eval_dataloader(eval_dataset)
        drop = self._drop_a_last_single(ds, self.args.per_device_eval_batch_size, "evaluation")
        return self._with_drop_last(drop, lambda: super(TacoTrainer, self).get_eval_dataloader(eval_dataset))

    def get_test_dataloader(self, test_dataset):
        drop = self._drop_a_last_single(test_dataset, self.args.per_device_eval_batch_size, "prediction")
        return self._with_drop_last(drop, lambda: super(TacoTrainer, self).get_test_dataloader(test_dataset))

    # --- the loss -----------------------------------------------------------------------------------
    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        """MLM + tc_weight x TC of one batch (the MLM loss is the model's own, from ``labels``); the outputs
        returned for evaluation carry no hidden states (``predict`` keeps the logits, not every layer)."""
        if "attention_mask" not in inputs:
            raise ValueError("the batch has no attention_mask: the TC loss draws its positives and negatives among "
                             "the real tokens (use a tokenizer/collator that returns it)")
        outputs = model(**inputs, output_hidden_states=True)
        if getattr(outputs, "loss", None) is None:
            raise ValueError("the model returned no loss: give labels (a masking collator such as "
                             "DataCollatorForLanguageModeling) to a masked-LM model")
        tc = tc_term(outputs, inputs["attention_mask"], window=self.tc_window, num_negatives=self.tc_num_negatives,
                     temperature=self.tc_temperature)
        loss = outputs.loss + self.tc_weight * tc
        self.last_terms = {"mlm": float(outputs.loss.detach()), "tc": float(tc.detach())}
        if model.training:
            for k, v in self.last_terms.items():
                self._term_sums[k] += v
            self._term_count += 1
        if not return_outputs:
            return loss
        kept = {k: v for k, v in outputs.items() if k not in ("hidden_states", "attentions")}
        return loss, type(outputs)(**kept)

    def log(self, logs: dict[str, float], *args: Any, **kwargs: Any) -> None:
        """The Trainer's log, with ``mlm_loss`` and ``tc_loss`` (means of the micro-batches since the last
        training log) added to every training log."""
        if "loss" in logs and self._term_count:
            logs = {**logs, **{f"{k}_loss": round(v / self._term_count, 4) for k, v in self._term_sums.items()}}
            self._term_sums = {"mlm": 0.0, "tc": 0.0}
            self._term_count = 0
        super().log(logs, *args, **kwargs)
