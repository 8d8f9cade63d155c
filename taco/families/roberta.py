"""``roberta``: RoBERTa (Liu et al. 2019) as transformers' ``RobertaForMaskedLM``: BERT's layers with position
ids from ``padding_idx + 1`` (RoBERTa's ``create_position_ids_from_input_ids``), so
``max_position_embeddings`` = 512 + pad id + 1 (RoBERTa's own 514 with its pad id 1). ``type_vocab_size``
stays 2: the suite's WordPiece tokenizer gives segment ids to sentence pairs (RoBERTa's checkpoints have 1).
At the same tokenizer and masking nothing else differs from BERT: it proves the plug-in path."""

from __future__ import annotations

from taco.families.base import MAX_POSITIONS, Family


def _config(preset, shape, vocab_size, special_ids):
    pad, cls, sep = (int(special_ids[k]) for k in ("pad", "cls", "sep"))
    return dict(shape, vocab_size=vocab_size, max_position_embeddings=MAX_POSITIONS + pad + 1, type_vocab_size=2,
                pad_token_id=pad, bos_token_id=cls, eos_token_id=sep)


def _encode(model, input_ids, attention_mask, token_type_ids, output_hidden_states, **kwargs):
    return model.roberta(input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids,
                         output_hidden_states=output_hidden_states, return_dict=True, **kwargs)


def _mlm_logits(model, hidden):
    return model.lm_head(hidden)


DECLARED = Family(
    name="roberta", label="RoBERTa", model_type="roberta", native_class="RobertaForMaskedLM", config_kwargs=_config,
    dropout_fields=("hidden_dropout_prob", "attention_probs_dropout_prob"), encode=_encode, mlm_logits=_mlm_logits,
    model_class_name="RobertaPreTrainingModel",
    recipe="RoBERTa (Liu et al. 2019): byte-level BPE of 50k, lr 6e-4 (base), batch 8k, Adam beta2 0.98, "
           "dynamic masking, 512-token sequences")
