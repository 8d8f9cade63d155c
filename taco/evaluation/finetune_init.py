"""A fine-tuned model as the start of another fine-tuning run (``taco finetune --save-model`` / ``--init-from``).

MosaicBERT (Portes et al., 2023) and ModernBERT (Warner et al., 2024) fine-tune RTE, MRPC and STS-B
from the MNLI fine-tuned checkpoint rather than from the pre-trained one (as RoBERTa did); the TACO
paper's fine-tuning scripts start every task from the pre-trained checkpoint. This module is both
ends of that convention:

- :func:`save_finetuned` writes the reported epoch's sequence-classification model of one run into
  ``<output>/model/`` (:data:`MODEL_DIR`): ``config.json``, ``model.safetensors``, the tokenizer, and
  :data:`FINETUNED_RECORD` (task, seed, reported epoch, the pre-trained checkpoint and the sha256 of
  its manifest);
- :func:`check_init_from` refuses, before any work, a folder that is not such a model or that was
  fine-tuned from another pre-trained checkpoint or with another seed;
- :func:`load_encoder` copies the saved model's encoder (everything under the model's
  ``base_model_prefix``: embeddings, Transformer layers and the pooler) into a freshly built
  classification model, whose head (the ``classifier`` layer, sized for the new task's labels and
  initialised from the run's seed) stays new.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from taco.errors import UsageError

#: the folder below a run's ``--output`` that ``--save-model`` writes
MODEL_DIR = "model"
#: the record beside the saved weights (what the model is and where it comes from)
FINETUNED_RECORD = "finetuned.json"
#: version of :data:`FINETUNED_RECORD`'s fields
FINETUNED_FORMAT = 1


def save_finetuned(model: Any, tokenizer: Any, directory: str | Path, record: dict[str, Any]) -> Path:
    """Save ``model`` (a ``transformers`` sequence-classification model) and ``tokenizer`` into
    ``directory`` (created; the caller makes it atomic) with ``record`` as :data:`FINETUNED_RECORD`
    (``format`` added). ``record`` should hold ``task``, ``seed``, ``epoch``, ``checkpoint`` and
    ``checkpoint_manifest_sha256``. Returns ``directory``."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(d), safe_serialization=True)
    tokenizer.save_pretrained(str(d))
    (d / FINETUNED_RECORD).write_text(json.dumps({"format": FINETUNED_FORMAT, **record}, indent=2) + "\n")
    return d


def read_finetuned(directory: str | Path) -> dict[str, Any]:
    """The :data:`FINETUNED_RECORD` of a saved model. Raises FileNotFoundError naming the folder when it or
    its record or weights are missing, UsageError when the record is not valid JSON of that form."""
    d = Path(directory)
    if not d.is_dir():
        raise FileNotFoundError(f"--init-from {d}: no such directory")
    rec_path = d / FINETUNED_RECORD
    if not rec_path.is_file():
        raise FileNotFoundError(f"--init-from {d}: no {FINETUNED_RECORD} (not a model saved by "
                                "`taco finetune --save-model`)")
    if not (d / "config.json").is_file() or not any(d.glob("model*.safetensors")):
        raise FileNotFoundError(f"--init-from {d}: incomplete (config.json or model.safetensors missing)")
    try:
        rec = json.loads(rec_path.read_text())
    except json.JSONDecodeError as exc:
        raise UsageError(f"--init-from {rec_path}: not valid JSON ({exc})") from None
    need = ("task", "seed", "checkpoint_manifest_sha256")
    if not isinstance(rec, dict) or any(k not in rec for k in need):
        raise UsageError(f"--init-from {rec_path}: expected an object with {', '.join(need)}")
    return rec


def check_init_from(directory: str | Path, checkpoint_manifest_sha256: str, seed: int) -> dict[str, Any]:
    """The record of the model in ``directory``, checked to belong to this run: fine-tuned from the
    same pre-trained checkpoint (the sha256 of its ``manifest.json``) with the same fine-tuning
    ``seed``. Raises UsageError naming the folder and the difference (and :func:`read_finetuned`'s errors)."""
    rec = read_finetuned(directory)
    if rec["checkpoint_manifest_sha256"] != checkpoint_manifest_sha256:
        raise UsageError(f"--init-from {directory}: fine-tuned from another pre-trained checkpoint "
                         f"({rec.get('checkpoint')}, manifest sha256 {rec['checkpoint_manifest_sha256'][:12]}...) "
                         f"than --checkpoint (manifest sha256 {checkpoint_manifest_sha256[:12]}...)")
    if int(rec["seed"]) != int(seed):
        raise UsageError(f"--init-from {directory}: fine-tuned with seed {rec['seed']}, this run's --seed is "
                         f"{seed} (the model of the same seed is the start: use {{seed}} in --init-from)")
    return rec


def load_encoder(model: Any, directory: str | Path) -> list[str]:
    """Copy the encoder of the saved classification model in ``directory`` into ``model`` in place:
    every parameter and buffer under ``model.base_model_prefix`` (``bert``: embeddings, layers,
    pooler). The head (``classifier``) of ``model`` is left as built. Returns the names of the head's
    parameters that were left (for the record). Raises UsageError when the two encoders differ in
    shape or parameter names."""
    from transformers import AutoModelForSequenceClassification

    src = AutoModelForSequenceClassification.from_pretrained(str(directory))
    prefix = model.base_model_prefix
    if getattr(src, "base_model_prefix", None) != prefix:
        raise UsageError(f"--init-from {directory}: a {type(src).__name__}, not the --checkpoint's architecture "
                         f"({type(model).__name__})")
    try:
        getattr(model, prefix).load_state_dict(getattr(src, prefix).state_dict(), strict=True)
    except RuntimeError as exc:
        raise UsageError(f"--init-from {directory}: its encoder does not fit the --checkpoint's ({exc})") from None
    return [n for n, _ in model.named_parameters() if not n.startswith(prefix + ".")]
