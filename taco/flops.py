"""FLOP and parameter counts of the BERT presets, the one formula the compute plan and the device
check share. Pure Python (no torch), so ``taco plan`` and the workflow can import it anywhere.

Training FLOPs per token (forward + backward = 3x forward; every matmul of an (m, k) x (k, n)
product costs 2mkn in forward), after Kaplan et al. (2020, Sec. 2.1) and the attention term of
PaLM (Chowdhery et al. 2022, App. B, "model FLOPs"):

    F_train/token = 6 * N_layers                      encoder matmuls: per layer 4 H^2 (Q, K, V, O)
                                                      + 2 H I (FFN), biases and norms ignored
                  + 6 * p_pred * (H^2 + H V)          MLM head (transform H x H + decoder H x V) at the
                                                      predicted positions only: p_pred = the run's
                                                      ``mlm_probability`` (0.15) for ``mlm``/TACO
                                                      (sparse prediction, this suite and the selected
                                                      positions of the official loss), 1.0 for
                                                      ``mlm_tp`` and for a dense head
                  + 12 * n_layers * H * L             attention scores QK^T and weighted sum AV
                                                      (2 L H each in forward, x3 for training)
                  + 4 * (K + 1) * H   [TC objectives] anchor-key dot products of the TC loss (forward
                                                      2 (K+1) H; backward reaches only the anchor:
                                                      another 2 (K+1) H), every real token an anchor

The head and extra terms are each objective's own declaration (``flops_per_token`` of its module in
``taco/objectives/``: the two lines above for MLM, MLM+TP and TACO; BERT-NCE and INFOWORD state theirs).
Only what the training step computes with gradient is counted: a diagnostic computed under
``torch.no_grad`` (BERT-NCE's and INFOWORD's full-softmax ``mlm_loss``) is not training compute and
is left out. These are *model FLOPs* (the matmuls the model needs), not the hardware's: wall-clock
cost per step is measured by ``benchmarks/step_time.py``.

with H the hidden size, I the FFN size, V the vocabulary, L the sequence length, K the negatives.
Embedding look-ups, softmax, layer norms, GELU and the optimizer are not counted (a few percent),
so model FLOPs utilisation (MFU) from this count is a slight underestimate.

Fine-tuning (sequence classification) per token: ``6 * N_layers + 12 * n_layers * H * L`` (the
pooler and the classifier act once per sequence: ``6 * (H^2 + H * C) / L`` per token, counted too).
Evaluation (forward only) is a third of the training count.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from taco.families import get_family
from taco.families.base import MAX_POSITIONS
from taco.objectives import DEFAULT_OBJECTIVE_PARAMS, OBJECTIVE_SPECS
from taco.registry import PRESET_SHAPES

#: peak dense bf16 tensor throughput of an NVIDIA H100/H200 SXM, TFLOP/s (NVIDIA H200 datasheet:
#: "BF16 Tensor Core 1,979 TFLOPS" with 2:4 sparsity, i.e. 989 dense)
H200_BF16_DENSE_TFLOPS = 989.0
#: the BERT vocabulary (bert-base-uncased ``vocab.txt``) used unless a config says otherwise
BERT_VOCAB_SIZE = 30522


def shape(preset: str) -> dict[str, int]:
    """The BERT shape of ``preset`` (``num_hidden_layers``, ``hidden_size``, ...); ValueError if unknown."""
    if preset not in PRESET_SHAPES:
        raise ValueError(f"unknown model preset {preset!r}; valid: {', '.join(PRESET_SHAPES)}")
    return PRESET_SHAPES[preset]


def encoder_matmul_params(preset: str, architecture: str = "bert") -> int:
    """Weights of the encoder layers' matrix products, the family's own count (its module's
    ``encoder_matmul_params``): ``n_layers * (4 H^2 + 2 H I)`` (no biases) for BERT and RoBERTa,
    ``n_layers * (4 H^2 + 3 H I')`` for ModernBERT's GeGLU (:mod:`taco.families.modernbert`). ValueError for an
    unknown preset or family."""
    return get_family(architecture).encoder_matmul_params(preset, shape(preset))


def parameter_count(preset: str, vocab_size: int = BERT_VOCAB_SIZE) -> int:
    """All parameters of ``PreTrainingModel`` (= ``BertForMaskedLM`` without pooler), decoder tied.

    Embeddings (word V x H, position 512 x H, token type 2 x H, LayerNorm 2H), per layer Q/K/V/O
    (4 (H^2 + H)), attention LayerNorm (2H), FFN (H I + I + I H + H), output LayerNorm (2H), MLM head
    transform (H^2 + H), its LayerNorm (2H) and the decoder bias (V). Equals
    ``sum(p.numel() for p in model.parameters())`` (tested).
    """
    s = shape(preset)
    h, i, n = s["hidden_size"], s["intermediate_size"], s["num_hidden_layers"]
    embeddings = vocab_size * h + MAX_POSITIONS * h + 2 * h + 2 * h
    layer = 4 * (h * h + h) + 2 * h + (h * i + i + i * h + h) + 2 * h
    head = h * h + h + 2 * h + vocab_size
    return embeddings + n * layer + head


def pretrain_flops_per_token(preset: str, seq_len: int, objective: str = "mlm",
                             vocab_size: int = BERT_VOCAB_SIZE,
                             options: Mapping[str, Any] | None = None, architecture: str = "bert") -> float:
    """Model FLOPs per token of one pre-training step, forward + backward of what has gradient
    (module docstring formula; the encoder family's FFN, :func:`encoder_matmul_params`).

    Args:
        preset: ``tiny``, ``small`` or ``base``.
        seq_len: tokens per block L.
        objective: objective name; its declaration (``taco.objectives``) adds its head and extra terms.
        vocab_size: V.
        options: the run's objective parameters by name (``tc_num_negatives`` K, ``mlm_probability``
            p_pred of the sparse MLM head, ``infoword_span_max``, ...); defaults for the rest
            (:data:`taco.objectives.DEFAULT_OBJECTIVE_PARAMS`).
    Raises:
        ValueError: unknown preset or objective, non-positive seq_len.
    """
    if seq_len <= 0:
        raise ValueError(f"seq_len must be positive, got {seq_len}")
    if objective not in OBJECTIVE_SPECS:
        raise ValueError(f"unknown objective {objective!r}; valid: {', '.join(OBJECTIVE_SPECS)}")
    s = shape(preset)
    h, n = s["hidden_size"], s["num_hidden_layers"]
    obj = OBJECTIVE_SPECS[objective]
    flops = 6.0 * encoder_matmul_params(preset, architecture)
    flops += 12.0 * n * h * seq_len
    return flops + obj.flops_per_token(s, seq_len, vocab_size, {**DEFAULT_OBJECTIVE_PARAMS, **(options or {})})


def finetune_flops_per_token(preset: str, seq_len: int, num_labels: int = 2) -> float:
    """Training FLOPs per token of sequence-classification fine-tuning (module docstring)."""
    if seq_len <= 0:
        raise ValueError(f"seq_len must be positive, got {seq_len}")
    s = shape(preset)
    h, n = s["hidden_size"], s["num_hidden_layers"]
    return (6.0 * encoder_matmul_params(preset) + 12.0 * n * h * seq_len
            + 6.0 * (h * h + h * num_labels) / seq_len)


def mfu(tokens_per_s: float, flops_per_token: float, peak_tflops: float = H200_BF16_DENSE_TFLOPS) -> float:
    """Model FLOPs utilisation: achieved model FLOP/s over the peak (a fraction, not percent)."""
    if peak_tflops <= 0:
        raise ValueError(f"peak_tflops must be positive, got {peak_tflops}")
    return tokens_per_s * flops_per_token / (peak_tflops * 1e12)
