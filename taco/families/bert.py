"""``bert``: BERT (Devlin et al. 2019), the paper's encoder, as transformers' ``BertForMaskedLM``."""

from __future__ import annotations

from taco.families.base import MAX_POSITIONS, Family


def _config(preset, shape, vocab_size, special_ids):
    # BertConfig's own special-id defaults are kept (the runs made before the families existed)
    return dict(shape, vocab_size=vocab_size, max_position_embeddings=MAX_POSITIONS)


def _encode(model, input_ids, attention_mask, token_type_ids, output_hidden_states, **kwargs):
    return model.bert(input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids,
                      output_hidden_states=output_hidden_states, return_dict=True, **kwargs)


def _mlm_logits(model, hidden):
    return model.cls(hidden)


DECLARED = Family(
    name="bert", label="BERT", model_type="bert", native_class="BertForMaskedLM", config_kwargs=_config,
    needs_special_ids=False, dropout_fields=("hidden_dropout_prob", "attention_probs_dropout_prob"),
    encode=_encode, mlm_logits=_mlm_logits, model_class_name="PreTrainingModel")
