"""The encoder families a run can pre-train (config ``pretrain.sizes.<size>.architecture``, ``taco pretrain
--architecture``). Torch-free and dependency-free: the objectives' declarations, the workflow's checks and
the report import it.

Each family is built from transformers' own classes (:mod:`taco.model.configs`, :mod:`taco.model.modeling`):
BERT (the paper's), RoBERTa (BERT's layers with RoBERTa's position offset: the plug-in path) and ModernBERT
(pre-norm, RoPE, GeGLU, alternating local/global attention: the scientific test of "plug-and-play"). Every
family keeps the preset's layers, hidden size and heads, the suite's WordPiece and BERT-tiny's recipe.
"""

from __future__ import annotations

__all__ = ["ARCHITECTURES", "DEFAULT_ARCHITECTURE", "ARCHITECTURE_LABELS", "MODERNBERT_INTERMEDIATE", "NATIVE_CLASSES"]


#: the families; a run's path names its size key and a size key has one architecture (a non-BERT one
#: enters the run's config hash, so a finished run under a changed family is not taken for the new one)
ARCHITECTURES: tuple[str, ...] = ("bert", "roberta", "modernbert")
DEFAULT_ARCHITECTURE = "bert"

#: ModernBERT's GeGLU FFN width per preset: 2/3 of BERT's I (its FFN has 3 H I weights against BERT's
#: 2 H I), so a ModernBERT preset matches the BERT preset's FFN weights and FLOPs (tiny 344 ~ 341.3,
#: rounded to a multiple of 8; base 2048 exactly). Layers, H and heads are the BERT preset's.
MODERNBERT_INTERMEDIATE: dict[str, int] = {"tiny": 344, "small": 1368, "base": 2048}

#: printed names
ARCHITECTURE_LABELS: dict[str, str] = {"bert": "BERT", "roberta": "RoBERTa", "modernbert": "ModernBERT"}

#: the transformers class a checkpoint of each family is saved as (``config.json`` ``architectures``)
NATIVE_CLASSES: dict[str, str] = {"bert": "BertForMaskedLM", "roberta": "RobertaForMaskedLM",
                                  "modernbert": "ModernBertForMaskedLM"}
