"""``modernbert``: ModernBERT (Warner et al. 2024) as transformers' ``ModernBertForMaskedLM``: pre-norm, RoPE,
GeGLU FFN of width :data:`INTERMEDIATE` (2/3 of BERT's, the same FFN weights), no biases, no dropout, no
segment embedding, ``layer_types`` set explicitly (every third layer global from the first, ModernBERT's
``global_attn_every_n_layers=3``; transformers 5.24 derives them from that number when absent) and
``local_attention`` 128 (a window of +-64 tokens). ``ModernBertConfig``'s special ids default to its own
tokenizer's (pad 50283, cls/bos 50281, sep/eos 50282): they are set from the run's tokenizer, since
``pad_token_id`` is the embedding's ``padding_idx``. ``hidden_states[0]`` is the embedding output and
``last_hidden_state`` comes after ModernBERT's ``final_norm`` (transformers 5.24). The scientific test of
"plug-and-play"."""

from __future__ import annotations

from taco.families.base import MAX_POSITIONS, Family

#: the GeGLU FFN width per preset: 2/3 of BERT's I (its FFN has 3 H I weights against BERT's 2 H I), so a
#: ModernBERT preset matches the BERT preset's FFN weights and FLOPs (tiny 344 ~ 341.3, rounded to a multiple
#: of 8; base 2048 exactly). Layers, H and heads are the BERT preset's.
INTERMEDIATE: dict[str, int] = {"tiny": 344, "small": 1368, "base": 2048}
#: a global-attention layer every this many layers, from the first (ModernBERT's default)
GLOBAL_EVERY = 3
#: the local layers' attention window in tokens (ModernBERT's default; +-64 each side)
LOCAL_ATTENTION = 128


def _intermediate(preset: str) -> int:
    if preset not in INTERMEDIATE:
        raise ValueError(f"modernbert has no FFN width for preset {preset!r}; known: {', '.join(INTERMEDIATE)} "
                         "(taco.families.modernbert.INTERMEDIATE)")
    return INTERMEDIATE[preset]


def _config(preset, shape, vocab_size, special_ids):
    pad, cls, sep = (int(special_ids[k]) for k in ("pad", "cls", "sep"))
    n = shape["num_hidden_layers"]
    return dict(num_hidden_layers=n, hidden_size=shape["hidden_size"], num_attention_heads=shape["num_attention_heads"],
                intermediate_size=_intermediate(preset), vocab_size=vocab_size,
                max_position_embeddings=MAX_POSITIONS, pad_token_id=pad, bos_token_id=cls, eos_token_id=sep,
                cls_token_id=cls, sep_token_id=sep, local_attention=LOCAL_ATTENTION,
                layer_types=["full_attention" if i % GLOBAL_EVERY == 0 else "sliding_attention" for i in range(n)])


def _matmul_params(preset, shape):
    """``n_layers * (4 H^2 + 3 H I')`` (GeGLU: ``Wi`` H x 2I', ``Wo`` I' x H). Local layers are counted as global
    in the attention term (an upper bound: at L <= 128 the +-64 window spans most of the sequence)."""
    h = shape["hidden_size"]
    return shape["num_hidden_layers"] * (4 * h * h + 3 * h * _intermediate(preset))


def _encode(model, input_ids, attention_mask, token_type_ids, output_hidden_states, **kwargs):
    if token_type_ids is not None and bool(token_type_ids.any()):
        raise ValueError("ModernBERT has no segment (token type) embedding: pass token_type_ids=None")
    return model.model(input_ids=input_ids, attention_mask=attention_mask,
                       output_hidden_states=output_hidden_states, return_dict=True, **kwargs)


def _mlm_logits(model, hidden):
    return model.decoder(model.head(hidden))


DECLARED = Family(
    name="modernbert", label="ModernBERT", model_type="modernbert", native_class="ModernBertForMaskedLM",
    config_kwargs=_config, dropout_fields=("embedding_dropout", "attention_dropout", "mlp_dropout"),
    encoder_matmul_params=_matmul_params, encode=_encode, mlm_logits=_mlm_logits,
    model_class_name="ModernBertPreTrainingModel",
    recipe="ModernBERT (Warner et al. 2024): its BPE of 50,368, lr 8e-4 (base), StableAdamW, "
           "warmup-stable-decay schedule, 30% masking, 8,192-token context")
