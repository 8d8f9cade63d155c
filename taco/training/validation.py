"""Held-out losses of a pre-training checkpoint on the validation blocks (``eval.json``).

Every budget checkpoint written by ``taco pretrain`` (and the no-pre-training control written by
``taco init``) carries ``eval.json`` and a ``validation`` entry in its manifest:

- ``mlm_loss``: mean cross-entropy (nats) over every MLM-selected position of the validation blocks
  (token-weighted, i.e. the sum over blocks divided by the number of selected positions);
- ``mlm_accuracy``: share of those positions whose arg-max prediction is the original token
  (0-1; ties broken by ``torch.argmax``);
- ``<term>_loss`` for every other loss term of the objective (``taco.objectives.LOSS_TERMS``: ``tc`` for
  ``taco``, ``taco_concentrated``, ``taco_unmasked``, the InfoNCE TC loss of Eq. 2 as
  :func:`taco.tc.loss.tc_loss` computes it in training; ``tp`` for ``mlm_tp``; ``nce`` for BERT-NCE and
  INFOWORD; ``dim`` for INFOWORD): the mean over evaluation batches of the term as the objective's
  ``loss_terms`` computes it in training. ``tc_loss`` is always present (``None`` for an objective without
  a TC term); the other keys only for the objective's own terms. A term that needs the objective's own
  batch inputs (INFOWORD's n-gram, made by its ``collate`` hook) is computed in a second pass over the same
  blocks with the objective's collator, so the MLM loss above keeps the shared masks.

The masks are the same for every objective and every budget: the 80/10/10 corruption of batch ``i``
draws from ``torch.Generator().manual_seed(mask_seed + i)``, independent of the training seed and
of what ran before, and the sampling of the other terms (TC positives/negatives, in-batch candidates)
draws from a generator seeded with ``mask_seed + 1_000_003 + i``. Dropout is off (``model.eval()``). So two checkpoints evaluated on
the same blocks directory with the same ``mask_seed`` see identical inputs and targets, and their
numbers compare directly. Source of the corruption: :func:`taco.model.masking.mask_tokens`
(BERT's 80/10/10 rule, as ``transformers.DataCollatorForLanguageModeling``).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from taco.objectives.base import MLM_PROBABILITY

EVAL_NAME = "eval.json"
#: generator seed of the validation masks (a constant, so every checkpoint sees the same masks)
MASK_SEED = 20240601
VALIDATION_SPLIT = "validation"


def _batches(model: Any, rows: list[list[int]], collator: Any, batch_size: int, mask_seed: int, sample: bool,
             **forward: Any):
    """Yield ``(batch, output)`` of each evaluation batch of ``rows``: batch ``i``'s masks drawn with
    ``mask_seed + i`` and, when ``sample``, the loss terms' sampling with ``mask_seed + 1_000_003 + i``
    (module docstring); ``forward``: extra keyword arguments of the model's forward."""
    import torch

    device = next(model.parameters()).device
    for i, start in enumerate(range(0, len(rows), batch_size)):
        collator.generator = torch.Generator().manual_seed(mask_seed + i)
        batch = {k: v.to(device) for k, v in collator([{"input_ids": r} for r in rows[start:start + batch_size]]).items()}
        generator = torch.Generator(device=device).manual_seed(mask_seed + 1_000_003 + i) if sample else None
        yield batch, model(**batch, generator=generator, **forward)


def _collect(out: Any, terms: list[str], values: dict[str, list[float]]) -> None:
    """Append each of ``terms``' ``<term>_loss`` in the model output ``out`` (when there) to ``values``."""
    for t in terms:
        v = getattr(out, f"{t}_loss", None)
        if v is not None:
            values[t].append(float(v))


def evaluate_validation(model: Any, blocks: str | Path, tokenizer: Any, *, mlm_probability: float = MLM_PROBABILITY,
                        batch_size: int = 16, mask_seed: int = MASK_SEED,
                        max_blocks: int | None = None, probe: bool = True) -> dict[str, Any]:
    """MLM loss and accuracy, and every other loss term of the objective, of ``model`` on the validation blocks.

    Args:
        model: a :class:`taco.model.modeling.PreTrainingModel` (any device; evaluated in place, left
            in eval mode).
        blocks: a ``taco pack`` output with a ``validation`` split (LongTensor rows of length L).
        tokenizer: the blocks' tokenizer (mask / pad / special ids).
        mlm_probability: selection probability of the masks (paper: 0.15).
        batch_size: evaluation batch size (does not change the masks of a block only if unchanged:
            keep it fixed to compare checkpoints; recorded in the result).
        mask_seed: seed of the mask and TC-sampling generators (recorded).
        max_blocks: evaluate only the first N validation blocks (None: all).
        probe: also run the context-use probe (:func:`taco.training.context_probe.context_probe`: the
            loss with the block intact, its context shuffled, no context, and the unigram line).

    Returns a JSON-serialisable dict: ``mlm_loss`` (nats), ``mlm_accuracy`` (0-1), ``tc_loss`` (nats
    or None), ``<term>_loss`` (nats) for the objective's other terms (module docstring), ``n_blocks``, ``n_masked_tokens``, ``seq_len``, ``batch_size``, ``mask_seed``,
    ``mlm_probability``, ``objective`` and, with ``probe``, the probe's keys
    (:data:`taco.training.context_probe.PROBE_KEYS`).

    Raises ValueError if the blocks have no non-empty ``validation`` split (``taco pack
    --validation-blocks 0``), naming the directory.
    """
    import torch
    import torch.nn.functional as F
    from datasets import load_from_disk

    from taco.model.collator import PreTrainingCollator

    blocks = Path(blocks)
    ds = load_from_disk(str(blocks))
    if VALIDATION_SPLIT not in ds or len(ds[VALIDATION_SPLIT]) == 0:
        raise ValueError(f"{blocks}: no non-empty '{VALIDATION_SPLIT}' split to evaluate on "
                         "(pack with --validation-blocks N > 0)")
    val = ds[VALIDATION_SPLIT].select_columns(["input_ids"])
    if max_blocks is not None:
        val = val.select(range(min(max_blocks, len(val))))
    rows = [list(r) for r in val["input_ids"]]
    collator = PreTrainingCollator(tokenizer, mlm_probability=mlm_probability)
    terms = [t for t in model.objective.terms if t != "mlm"]
    values: dict[str, list[float]] = {t: [] for t in terms}
    was_training = model.training
    model.eval()
    ce_sum, n_sel, n_correct = 0.0, 0, 0
    with torch.no_grad():
        for batch, out in _batches(model, rows, collator, batch_size, mask_seed, bool(terms), output_hidden_states=True):
            selected = batch["labels"] != -100  # (B, L)
            logits = model.mlm_logits(out.hidden_states[-1][selected]).float()  # (P, V)
            targets = batch["labels"][selected]  # (P,)
            ce_sum += float(F.cross_entropy(logits, targets, reduction="sum"))
            n_correct += int((logits.argmax(-1) == targets).sum())
            n_sel += int(selected.sum())
            _collect(out, terms, values)
        missing = [t for t in terms if not values[t]]
        if missing and model.objective.collate is not None:  # terms that need the objective's own inputs
            own = PreTrainingCollator(tokenizer, mlm_probability=mlm_probability, objective=model.objective,
                                      objective_params=model.objective_params)
            for _, out in _batches(model, rows, own, batch_size, mask_seed, True):
                _collect(out, missing, values)
    probed = {}
    if probe:
        from taco.training.context_probe import context_probe

        probed = context_probe(model, blocks, tokenizer, mlm_probability=mlm_probability, mask_seed=mask_seed)
    if was_training:
        model.train()
    return {**probed,
        "mlm_loss": ce_sum / n_sel if n_sel else math.nan,
        "mlm_accuracy": n_correct / n_sel if n_sel else math.nan,
        "tc_loss": None,
        **{f"{t}_loss": (sum(v) / len(v)) if v else None for t, v in values.items()},
        "n_blocks": len(rows),
        "n_masked_tokens": n_sel,
        "seq_len": len(rows[0]) if rows else 0,
        "batch_size": batch_size,
        "mask_seed": mask_seed,
        "mlm_probability": mlm_probability,
        "objective": model.objective.name,
    }


def evaluate_checkpoint_dir(checkpoint: str | Path, blocks: str | Path, *, mlm_probability: float = MLM_PROBABILITY,
                            device: str = "cpu", **kwargs: Any) -> dict[str, Any]:
    """Load a pre-training checkpoint directory (weights + tokenizer) and evaluate it (see above)."""
    from transformers import AutoTokenizer

    from taco.model.modeling import load_pretraining_model

    checkpoint = Path(checkpoint)
    model = load_pretraining_model(checkpoint).to(device)
    tokenizer = AutoTokenizer.from_pretrained(str(checkpoint))
    return evaluate_validation(model, blocks, tokenizer, mlm_probability=mlm_probability, **kwargs)


def add_glue_probe_options(parser: Any, every: bool) -> None:
    """The frozen-feature GLUE probe's options of ``taco pretrain`` (``every``: with ``--glue-probe-every``)
    and ``taco init`` (the control, at step 0): tasks, data, caps. They change no weight and are in no
    config hash."""
    g = parser.add_argument_group("frozen-feature GLUE probe (taco.training.glue_probe; changes no weight, not in "
                                  "the config hash)")
    g.add_argument("--glue-probe-tasks", default="", metavar="LIST",
                   help="comma-separated GLUE tasks probed at the checkpoint" + (
                       " and at every --glue-probe-every-th step (log event 'validation')" if every else "")
                   + ", written to eval.json (default: empty, no probe)")
    if every:
        g.add_argument("--glue-probe-every", type=int, default=0,
                       help="steps between probes inside the segment, a multiple of --eval-every (0: --eval-every)")
    g.add_argument("--glue-source", choices=("hub", "local", "synthetic"), default="hub",
                   help="where the probe's GLUE data comes from (as taco finetune)")
    g.add_argument("--glue-dir", default=None, help="GLUE folder (needed for --glue-source local)")
    g.add_argument("--glue-probe-max-train-samples", type=int, default=5000,
                   help="cap of each task's training sample (taco finetune's seeded sample)")
    g.add_argument("--glue-probe-max-eval-samples", type=int, default=2000, help="cap of each task's dev split")


def check_glue_probe_options(args: Any) -> None:
    """The probe's options before any work: known tasks, a GLUE folder that exists, caps large enough for
    5-fold cross-validation. Raises :class:`taco.errors.UsageError` naming the option."""
    from taco.errors import UsageError
    from taco.registry import GLUE_TASK_SPECS

    tasks = glue_probe_tasks(args)
    if not tasks:
        return
    unknown = [t for t in tasks if t not in GLUE_TASK_SPECS]
    if unknown:
        raise UsageError(f"--glue-probe-tasks: unknown GLUE task(s) {unknown}; expected some of {', '.join(GLUE_TASK_SPECS)}")
    if args.glue_source == "local" and not (args.glue_dir and Path(args.glue_dir).is_dir()):
        raise UsageError(f"--glue-source local needs --glue-dir, an existing folder (got {args.glue_dir!r})")
    for flag in ("glue_probe_max_train_samples", "glue_probe_max_eval_samples"):
        if getattr(args, flag) < 10:
            raise UsageError(f"--{flag.replace('_', '-')} must be >= 10 (5-fold cross-validation)")


def glue_probe_tasks(args: Any) -> list[str]:
    """The tasks of ``taco pretrain --glue-probe-tasks`` (comma-separated; empty: no probe)."""
    return [t.strip() for t in str(getattr(args, "glue_probe_tasks", "") or "").split(",") if t.strip()]


@dataclass(frozen=True)
class GlueProbeOptions:
    """The frozen-feature GLUE probe's options, typed (from ``--glue-probe-tasks``, ``--glue-source``,
    ``--glue-dir``, ``--glue-probe-max-train-samples``, ``--glue-probe-max-eval-samples``:
    :func:`add_glue_probe_options`; checked by :func:`check_glue_probe_options`).

    Attributes:
        tasks: the GLUE tasks probed, in the order given (empty: no probe).
        glue_source: ``hub``, ``local`` or ``synthetic`` (as ``taco finetune``).
        glue_dir: the GLUE folder of ``local`` (None otherwise).
        max_train_samples / max_eval_samples: caps of each task's training sample and dev split (examples).
    """

    tasks: tuple[str, ...]
    glue_source: str
    glue_dir: str | None
    max_train_samples: int
    max_eval_samples: int

    @classmethod
    def from_args(cls, args: Any) -> "GlueProbeOptions":
        """The options of a parsed ``taco pretrain`` / ``taco init`` command line (attributes named as the
        flags' destinations; AttributeError for a parser without the probe's options)."""
        return cls(tasks=tuple(glue_probe_tasks(args)), glue_source=args.glue_source, glue_dir=args.glue_dir,
                   max_train_samples=args.glue_probe_max_train_samples,
                   max_eval_samples=args.glue_probe_max_eval_samples)


def glue_probe(model: Any, tokenizer: Any, options: GlueProbeOptions) -> dict[str, Any]:
    """The frozen-feature GLUE probe of ``model`` at a validation point of pre-training
    (:func:`taco.training.glue_probe.probe_point`: ``glue_probe_mean``, ``glue_probe_cls`` (probe averages,
    0-1), ``glue_probe_<task>``) on ``options.tasks`` with its data and caps; ``{}`` when no task is asked for."""
    from taco.training.glue_probe import probe_point

    if not options.tasks:
        return {}
    return probe_point(model, tokenizer, list(options.tasks), glue_source=options.glue_source,
                       glue_dir=options.glue_dir, max_train_samples=options.max_train_samples,
                       max_eval_samples=options.max_eval_samples)


def budget_glue_probe(checkpoint: str | Path, options: GlueProbeOptions) -> dict[str, Any]:
    """:func:`glue_probe` of the budget checkpoint directory ``checkpoint`` (its weights and tokenizer, on
    the CPU; ``{}`` without probe tasks)."""
    if not options.tasks:
        return {}
    from transformers import AutoTokenizer

    from taco.model.modeling import load_pretraining_model

    model = load_pretraining_model(Path(checkpoint))
    return glue_probe(model, AutoTokenizer.from_pretrained(str(checkpoint)), options)


def write_eval(checkpoint: str | Path, result: dict[str, Any], step: int) -> Path:
    """Write ``eval.json`` (``result`` plus ``step``) into ``checkpoint`` as strict JSON (a loss that is not
    finite, e.g. of a validation set that drew no masked token, is written as ``null``; such a set is also
    named on stderr and recorded in ``note``); returns its path."""
    import sys

    from taco.manifest import finite_or_null

    record = {"step": int(step), **result}
    if record.get("n_masked_tokens") == 0:
        record["note"] = ("the validation set drew no masked token (blocks too short for the MLM rate): no "
                          "validation loss; pack more or longer validation blocks")
        print(f"taco: warning: {Path(checkpoint)}: {record['note']}", file=sys.stderr)
    path = Path(checkpoint) / EVAL_NAME
    path.write_text(json.dumps(finite_or_null(record), indent=2, sort_keys=True, allow_nan=False) + "\n")
    return path


def validate_checkpoint(checkpoint: str | Path, blocks: str | Path, step: int, *, mlm_probability: float = MLM_PROBABILITY,
                        device: str = "auto") -> dict[str, Any]:
    """Evaluate the checkpoint directory on ``blocks``' validation split and write its ``eval.json``.

    ``device``: ``auto`` (CUDA when visible, else CPU) or ``cpu``. Returns the result (see
    :func:`evaluate_validation`), or ``{"skipped": reason}`` without writing a file when the blocks
    have no validation split, so a checkpoint of such blocks is still written.
    """
    import torch

    dev = "cuda" if device == "auto" and torch.cuda.is_available() else "cpu"
    try:
        result = evaluate_checkpoint_dir(checkpoint, blocks, mlm_probability=mlm_probability, device=dev)
    except ValueError as exc:
        return {"skipped": str(exc)}
    write_eval(checkpoint, result, step)
    return {"step": int(step), **result}
