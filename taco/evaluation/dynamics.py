"""Learning dynamics of one pre-training checkpoint: the representation analyses of the paper.

Source: Fu et al. (ACL 2022), Section 2.2 ("How does embedding anchor affect the learning dynamics
of MLM?", Figure 2) and the learning-dynamics paragraph of Section 4 (Figure 6: "the Cosine
similarity among contextualized representations of tokens in the same context (intra-context) and
different contexts (inter-context)"). The paper does not publish how the pairs were chosen, how many,
nor the Figure 6 values (``docs/paper-facts.md``: UNKNOWN); the choices below are ours and are recorded in the
output so that every number can be regenerated.

Measures (for one checkpoint, on a seed-fixed sample of held-out packed blocks)
-------------------------------------------------------------------------------
Representations, from one forward pass on the *uncorrupted* block, model in eval mode:

- ``h``: the last layer, ``hidden_states[-1]`` (B, L, H).
- ``g = h - e`` with ``e = hidden_states[0]`` (the embedding layer's output: word + position +
  token type, after LayerNorm), i.e. the "global part" of TACO with lambda = 1 (Eq. 3; the official
  code subtracts ``hidden_states[0]``).

For each representation:

- ``intra``: cosine similarity between two *different positions* of the same block;
- ``inter``: cosine similarity between a position of one block and a position of another block;
- ``gap = intra - inter``.

Special tokens (every id in the tokenizer's ``all_special_ids``: [CLS], [SEP], [PAD], [MASK],
[UNK], as Hugging Face's MLM collator treats them) and padding (``attention_mask == 0``) are excluded
from every pair. Pairs are sampled, never enumerated: each block ``b`` contributes
``max_pairs // n_blocks`` intra pairs (``i`` uniform over its valid positions, ``j`` uniform over the
other valid positions) and as many inter pairs (a uniform position of ``b`` with a uniform position
of a uniformly chosen other block). Memory is O(tokens x hidden), never O(tokens^2); the same pair
indices are used for ``h`` and ``g``.

Anchor alignment (Section 2.2, Figure 2): a second forward pass on a corrupted copy of each block,
masked with ``taco.model.masking.mask_tokens`` (15 %, 80/10/10; one generator per block, seeded by
``(seed, block index)``, so the result does not depend on the batch size). At every position ``i``
selected by the masker *and replaced by* ``[MASK]`` (the 80 %; the 10 % left unchanged would show the
target in the input, which makes the alignment trivial through the residual stream, and the 10 %
random replacements are a different input), with original token ``x_i``:

- ``aligned``: cos(h_i, E[x_i]), ``E`` the static word-embedding matrix (input embeddings, tied to
  the MLM decoder) -- how close the fused context representation is to its embedding anchor;
- ``random_baseline``: cos(h_i, E[y_i]) with ``y_i`` drawn from the unigram distribution of the
  evaluation sample (the original token at a uniformly random valid position of the sample),
  redrawn where it equals ``x_i``; frequency-matched, so the baseline is not an artefact of rare,
  barely-trained embedding rows;
- ``difference = aligned - random_baseline``.

The same three numbers are also reported through the MLM head's transform
(``anchor_alignment_head``: cos(T(h_i), E[x_i]) where ``T = cls.predictions.transform``), which is
the space in which Eq. 1's dot product is actually taken; absent if the model has no such module.

Confidence intervals
--------------------
Tokens of one block are not independent, so the unit of resampling is the block: every number is
the mean over blocks of the per-block mean, and its 95 % CI is a BCa bootstrap over blocks
(``scipy.stats.bootstrap``, 9,999 resamples, generator seeded by ``seed``), falling back to the
percentile method where BCa is undefined (e.g. constant per-block values, then the CI is the point).
Inter pairs touch two blocks; resampling the anchor block only ignores that second dependency, which
makes the inter and gap intervals slightly optimistic.

Output (``dynamics.json``)
--------------------------
``step``, ``objective``, ``size``, ``fraction`` (copied from the checkpoint manifest), ``checkpoint``,
``checkpoint_manifest_sha256``, ``blocks``, ``split``, ``seed``, ``num_blocks`` (used),
``num_blocks_requested``, ``block_indices``, ``max_pairs``, ``pairs_per_block``, ``num_tokens``,
``mlm_probability``, ``h`` and ``g`` (each ``{"intra", "inter", "gap"}``), ``anchor_alignment``
(``{"aligned", "random_baseline", "difference", "n_masked", "n_selected"}``; ``n_masked`` counts the
``[MASK]`` positions used, ``n_selected`` all positions the masker chose), optionally
``anchor_alignment_head``, ``ci`` (method description), ``masking`` (which ``mask_tokens``),
``code_version``, ``packages``, ``wall_time_s``. Each statistic is
``{"mean", "ci_low", "ci_high", "n_pairs", "n_blocks"}`` (cosines, unitless, in [-1, 1]);
``n_pairs`` of ``gap`` counts its intra plus inter pairs; anchor statistics carry ``n_positions``
instead of ``n_pairs``. Values that cannot be computed (e.g. a CI from one block) are ``null``.
The measures themselves (pure functions on tensors) are in :mod:`taco.evaluation.similarities`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from taco.cli_parts import cli_error
from taco.evaluation.similarities import (
    CI_LEVEL,
    N_RESAMPLES,
    anchor_cosines,
    bootstrap_summary,
    context_similarity,
    gather_valid,
    sample_baseline_tokens,
    sample_pairs,
    valid_token_mask,
)
from taco.objectives.base import MLM_PROBABILITY, MLM_PROBABILITY_PARAMETER

#: keys the checkpoint manifest must hold (``docs/INTERFACES.md``)
REQUIRED_MANIFEST_KEYS = ("step", "objective", "size", "fraction")
TOKENIZER_FILES = ("tokenizer.json", "vocab.txt", "tokenizer_config.json")


class DynamicsInputError(ValueError):
    """Bad input to ``taco dynamics``; the message names the offending path or option."""


# --------------------------------------------------------------------------------------------------
# Checkpoint / data handling
# --------------------------------------------------------------------------------------------------


def _tokenizer_dir(checkpoint: Path, blocks: Path) -> Path | None:
    for d in (checkpoint, blocks / "tokenizer"):
        if any((d / f).is_file() for f in TOKENIZER_FILES):
            return d
    return None


def validate_inputs(checkpoint: str | os.PathLike, blocks: str | os.PathLike, split: str,
                    num_blocks: int, max_pairs: int, seed: int = 0) -> dict[str, Any]:
    """Check every input before any work; returns the checkpoint manifest.

    Raises:
        DynamicsInputError: the checkpoint directory, its ``manifest.json`` (or one of
            ``step/objective/size/fraction`` in it), ``config.json``, a tokenizer (in the checkpoint
            or ``<blocks>/tokenizer``), the blocks ``DatasetDict`` directory or its ``split`` is
            missing, or ``num_blocks < 2`` / ``max_pairs < num_blocks`` / ``seed < 0``. The message
            names the path or option.
    """
    ck, bl = Path(checkpoint), Path(blocks)
    if not ck.is_dir():
        raise DynamicsInputError(f"{ck}: checkpoint directory does not exist")
    from taco.manifest import read_json_record

    mpath = ck / "manifest.json"
    manifest = read_json_record(mpath, REQUIRED_MANIFEST_KEYS, DynamicsInputError,
                                "checkpoint manifest (incomplete checkpoint?)")
    from taco.manifest import ManifestError, check_model_sha256

    try:
        check_model_sha256(ck, manifest)
    except ManifestError as exc:
        raise DynamicsInputError(str(exc)) from None
    if not (ck / "config.json").is_file():
        raise DynamicsInputError(f"{ck / 'config.json'}: missing; not a save_pretrained directory")
    if not bl.is_dir():
        raise DynamicsInputError(f"{bl}: blocks directory does not exist")
    dd_json = bl / "dataset_dict.json"
    if not dd_json.is_file():
        raise DynamicsInputError(f"{bl}: not a DatasetDict saved with save_to_disk (no dataset_dict.json)")
    splits = json.loads(dd_json.read_text()).get("splits", [])
    if split not in splits:
        raise DynamicsInputError(f"{bl}: split {split!r} missing (available: {', '.join(splits) or 'none'})")
    if _tokenizer_dir(ck, bl) is None:
        raise DynamicsInputError(f"{ck}: no tokenizer files, and none in {bl / 'tokenizer'}")
    if num_blocks < 2:
        raise DynamicsInputError(f"--num-blocks must be >= 2 (inter-context pairs), got {num_blocks}")
    if max_pairs < num_blocks:
        raise DynamicsInputError(f"--max-pairs ({max_pairs}) must be >= --num-blocks ({num_blocks})")
    if seed < 0:
        raise DynamicsInputError(f"--seed must be >= 0, got {seed}")
    return manifest


def _resolve_device(name: str):
    import torch

    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


def compute_dynamics(checkpoint: str | os.PathLike, blocks: str | os.PathLike, *, split: str = "validation",
                     num_blocks: int = 64, max_pairs: int = 200_000, seed: int = 0, batch_size: int = 16,
                     device: str = "auto", mlm_probability: float | None = None,
                     n_resamples: int = N_RESAMPLES) -> dict[str, Any]:
    """All measures for one checkpoint (see the module docstring); returns the ``dynamics.json`` dict.

    Args:
        checkpoint: ``save_pretrained`` directory with ``manifest.json`` (and tokenizer files, or the
            tokenizer in ``<blocks>/tokenizer``).
        blocks: packed-blocks ``DatasetDict`` directory (column ``input_ids``, (L,) ids per row).
        split: split to sample from (held-out: ``validation``).
        num_blocks: blocks sampled without replacement with ``seed`` (all of them if fewer).
        max_pairs: pair budget per measure (intra and inter each); ``max_pairs // blocks`` per block.
        seed: fixes the block sample, the masking, the pairs, the baseline tokens and the bootstrap.
        batch_size: blocks per forward pass (does not change the numbers beyond float round-off).
        device: ``auto``, ``cpu``, ``cuda``, ``cuda:1`` ...
        mlm_probability: masking rate for the anchor-alignment pass; None: the rate the checkpoint was
            pre-trained with (its manifest's ``parameters.mlm_probability``; :data:`MLM_PROBABILITY` for a
            checkpoint whose manifest does not say).
        n_resamples: bootstrap resamples per confidence interval.
    Raises:
        DynamicsInputError: see :func:`validate_inputs`; also if the split has fewer than 2 blocks
            with >= 2 valid tokens, lacks an ``input_ids`` column, or its blocks differ in length.
    """
    t0 = time.time()
    manifest = validate_inputs(checkpoint, blocks, split, num_blocks, max_pairs, seed)
    if mlm_probability is None:
        mlm_probability = float((manifest.get("parameters") or {}).get("mlm_probability", MLM_PROBABILITY))
    if (msg := MLM_PROBABILITY_PARAMETER.check(mlm_probability)):
        raise DynamicsInputError(msg)
    ck, bl = Path(checkpoint), Path(blocks)
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    from taco.manifest import code_version, package_versions, sha256_file

    ids, block_indices = _sample_blocks(bl, split, num_blocks, seed)
    tokenizer = AutoTokenizer.from_pretrained(str(_tokenizer_dir(ck, bl)))
    if tokenizer.mask_token_id is None:
        raise DynamicsInputError(f"{_tokenizer_dir(ck, bl)}: tokenizer has no mask token")
    ids, attention, valid, block_indices, special_ids = _keep_usable_blocks(ids, block_indices, tokenizer, bl, split)
    dev = _resolve_device(device)
    model = AutoModelForMaskedLM.from_pretrained(str(ck)).to(dev).eval()
    corrupted, labels, at_mask = _mask_blocks(ids, attention, valid, block_indices, tokenizer, special_ids,
                                              model.get_input_embeddings().weight.shape[0], mlm_probability, seed)
    emb = model.get_input_embeddings().weight.detach().float().cpu()  # (V, H)
    reps = _forward_representations(model, ids, corrupted, attention, valid, at_mask, batch_size, dev)
    del model

    lengths = [len(x) for x in reps["h"]]
    pairs_per_block = max_pairs // ids.shape[0]
    context = _context_measures(reps, lengths, pairs_per_block, seed, n_resamples)
    anchor, anchor_head = _anchor_alignment(ids, valid, at_mask, labels, reps, emb, seed, n_resamples)

    record: dict[str, Any] = {k: manifest[k] for k in REQUIRED_MANIFEST_KEYS}
    record.update({
        "checkpoint": str(ck),
        "checkpoint_manifest_sha256": sha256_file(ck / "manifest.json"),
        "blocks": str(bl),
        "split": split,
        "seed": int(seed),
        "num_blocks": int(ids.shape[0]),
        "num_blocks_requested": int(num_blocks),
        "block_indices": [int(i) for i in block_indices],
        "max_seq_length": int(ids.shape[1]),
        "max_pairs": int(max_pairs),
        "pairs_per_block": int(pairs_per_block),
        "num_tokens": int(sum(lengths)),
        "mlm_probability": float(mlm_probability),
        "h": context["h"],
        "g": context["g"],
        "anchor_alignment": anchor,
    })
    if anchor_head is not None:
        record["anchor_alignment_head"] = anchor_head
    record.update({
        "ci": {"level": CI_LEVEL, "unit": "block",
               "method": f"bootstrap over blocks of per-block means (scipy.stats.bootstrap BCa, "
                         f"percentile fallback), {n_resamples} resamples, rng seeded by seed"},
        "masking": "taco.model.masking.mask_tokens",
        "representations": {"h": "hidden_states[-1] on the uncorrupted block",
                            "g": "hidden_states[-1] - hidden_states[0] on the uncorrupted block",
                            "anchor": "hidden_states[-1] at masked positions vs input word embeddings"},
        "excluded": {"special_ids": special_ids, "padding": "attention_mask == 0"},
        "device": str(dev),
        "code_version": code_version(),
        "packages": package_versions(),
        "wall_time_s": round(time.time() - t0, 3),
    })
    return record


def _sample_blocks(bl: Path, split: str, num_blocks: int, seed: int):
    """``num_blocks`` blocks of ``split`` drawn without replacement with ``seed``, in index order.

    Returns ``(ids, block_indices)``: LongTensor (n, L) and int array (n,). Raises
    DynamicsInputError without an ``input_ids`` column or with blocks of different lengths.
    """
    import datasets
    import torch

    ds = datasets.load_from_disk(str(bl))[split]
    if "input_ids" not in ds.column_names:
        raise DynamicsInputError(f"{bl} [{split}]: no 'input_ids' column (columns: {ds.column_names})")
    n_avail = len(ds)
    n_take = min(num_blocks, n_avail)
    if n_take < num_blocks:
        print(f"taco dynamics: {bl} [{split}] has {n_avail} blocks < --num-blocks {num_blocks}; using all",
              file=sys.stderr)
    block_indices = np.sort(np.random.default_rng([seed, 0]).choice(n_avail, size=n_take, replace=False))
    rows = ds.select(block_indices.tolist())["input_ids"]
    if len({len(r) for r in rows}) != 1:
        raise DynamicsInputError(f"{bl} [{split}]: blocks of different lengths "
                                 f"({sorted({len(r) for r in rows})}); expected packed max_seq_length blocks")
    return torch.tensor(rows, dtype=torch.long), block_indices


def _keep_usable_blocks(ids, block_indices, tokenizer, bl: Path, split: str):
    """Attention and valid-token masks (B, L); drops blocks with < 2 non-special tokens.

    Returns ``(ids, attention, valid, block_indices, special_ids)`` restricted to the kept blocks.
    """
    import torch

    special_ids = sorted(set(tokenizer.all_special_ids))
    pad_id = tokenizer.pad_token_id
    attention = (ids != pad_id).long() if pad_id is not None else torch.ones_like(ids)
    valid = valid_token_mask(ids, attention, special_ids)
    keep = valid.sum(1) >= 2
    if int(keep.sum()) < 2:
        raise DynamicsInputError(f"{bl} [{split}]: fewer than 2 sampled blocks with >= 2 non-special tokens")
    return ids[keep], attention[keep], valid[keep], block_indices[keep.numpy()], special_ids


def _mask_blocks(ids, attention, valid, block_indices, tokenizer, special_ids, vocab_size: int,
                 mlm_probability: float, seed: int):
    """BERT masking of each block with its own generator (numbers independent of the batch size).

    Returns ``(corrupted, labels, at_mask)``, each (n, L): the corrupted ids, the MLM labels (-100
    where not selected) and the anchor positions: selected AND replaced by [MASK] (the 10 % kept
    tokens would show the target in the input, so their alignment would be trivial; the 10 %
    random ones are a different input).
    """
    import torch

    from taco.model.masking import mask_tokens

    special_mask = torch.isin(ids, torch.tensor(special_ids))  # (n, L) bool
    corrupted, labels = [], []
    for b in range(ids.shape[0]):
        gen = torch.Generator().manual_seed(int(seed) * 1_000_003 + int(block_indices[b]))
        c, lab = mask_tokens(ids[b : b + 1].clone(), special_mask[b : b + 1], attention[b : b + 1],
                             tokenizer.mask_token_id, vocab_size, mlm_probability=mlm_probability,
                             generator=gen)
        corrupted.append(c)
        labels.append(lab)
    corrupted, labels = torch.cat(corrupted), torch.cat(labels)
    labels[~valid] = -100  # the shared masker excludes these already; be safe
    at_mask = (labels != -100) & (corrupted == tokenizer.mask_token_id)
    return corrupted, labels, at_mask


def _forward_representations(model, ids, corrupted, attention, valid, at_mask, batch_size: int, dev):
    """Encoder passes (no vocabulary projection) collecting, per block, the valid tokens' h and g = h - e
    on the uncorrupted input and, on the corrupted input, h at the anchor positions (and the MLM head's
    transform of it, None for a model without one). Returns lists of (n_b, H) float tensors."""
    import torch

    transform = getattr(getattr(getattr(model, "cls", None), "predictions", None), "transform", None)
    encoder = model.base_model  # hidden states only: skip the (B, L, V) vocabulary projection
    reps: dict[str, list] = {"h": [], "g": [], "masked_h": [], "masked_t": []}
    with torch.inference_mode():
        for start in range(0, ids.shape[0], batch_size):
            sl = slice(start, start + batch_size)
            out = encoder(input_ids=ids[sl].to(dev), attention_mask=attention[sl].to(dev),
                          output_hidden_states=True)
            h, e = out.hidden_states[-1], out.hidden_states[0]
            reps["h"] += gather_valid(h, valid[sl].to(dev))
            reps["g"] += gather_valid(h - e, valid[sl].to(dev))
            out = encoder(input_ids=corrupted[sl].to(dev), attention_mask=attention[sl].to(dev),
                          output_hidden_states=True)
            hm = out.hidden_states[-1]
            sel = at_mask[sl].to(dev)
            for b in range(hm.shape[0]):
                reps["masked_h"].append(hm[b][sel[b]].float().cpu())
                reps["masked_t"].append(transform(hm[b][sel[b]]).float().cpu() if transform is not None else None)
    return reps


def _context_measures(reps, lengths, pairs_per_block: int, seed: int, n_resamples: int) -> dict[str, Any]:
    """Intra-/inter-context similarity and their gap for h and g, with bootstrap CIs over blocks."""
    pairs = sample_pairs(lengths, pairs_per_block, np.random.default_rng([seed, 1]))
    result: dict[str, Any] = {}
    for name in ("h", "g"):
        per_block = context_similarity(reps[name], pairs)
        result[name] = {}
        for kind, values in per_block.items():
            summary = bootstrap_summary(values, seed, n_resamples)
            summary["n_pairs"] = pairs_per_block * summary["n_blocks"] * (2 if kind == "gap" else 1)
            result[name][kind] = summary
    return result


def _anchor_alignment(ids, valid, at_mask, labels, reps, emb, seed: int, n_resamples: int):
    """Cosine of h at [MASK] positions with the target's input embedding against a random-token baseline.

    Returns ``(anchor, anchor_head)``: summaries for the raw hidden state and for the MLM head's
    transform of it (None when the model has no head transform).
    """
    pool = ids[valid].numpy()
    rng = np.random.default_rng([seed, 2])
    per = {"aligned": [], "random_baseline": [], "difference": []}
    per_head = {"aligned": [], "random_baseline": [], "difference": []}
    counts = []
    has_head = any(t is not None for t in reps["masked_t"])
    for b in range(ids.shape[0]):
        targets = ids[b][at_mask[b]].numpy()
        counts.append(len(targets))
        base = sample_baseline_tokens(targets, pool, rng) if len(targets) else targets
        for store, r_b in ((per, reps["masked_h"][b]), (per_head, reps["masked_t"][b])):
            if r_b is None or not len(targets):
                for k in store:
                    store[k].append(np.nan)
                continue
            a, r = anchor_cosines(r_b, emb, targets, base)
            store["aligned"].append(a.mean())
            store["random_baseline"].append(r.mean())
            store["difference"].append((a - r).mean())

    def summarise(store):
        out = {}
        for k, v in store.items():
            summary = bootstrap_summary(np.asarray(v), seed, n_resamples)
            summary["n_positions"] = int(sum(c for c, x in zip(counts, v) if np.isfinite(x)))
            out[k] = summary
        out["n_masked"] = int(sum(counts))  # positions replaced by [MASK]
        out["n_selected"] = int((labels != -100).sum())  # all positions chosen by the masker
        return out

    return summarise(per), (summarise(per_head) if has_head else None)


def write_json_atomic(path: str | os.PathLike, obj: Any) -> Path:
    """Write ``obj`` as JSON to ``path`` atomically, NaN -> null (``taco.manifest.atomic_write_json``)."""
    from taco.manifest import atomic_write_json

    return atomic_write_json(path, obj)


def build_parser() -> argparse.ArgumentParser:
    from taco.cli_parts import HelpFormatter
    p = argparse.ArgumentParser(formatter_class=HelpFormatter, prog="taco dynamics", description=__doc__.split("\n\n")[0])
    p.add_argument("--checkpoint", required=True, help="save_pretrained checkpoint dir with manifest.json")
    p.add_argument("--blocks", required=True, help="packed-blocks DatasetDict dir (save_to_disk)")
    p.add_argument("--output", required=True, help="dynamics.json to write")
    p.add_argument("--split", default="validation", help="split of --blocks the blocks are sampled from")
    p.add_argument("--num-blocks", type=int, default=64, help="blocks sampled with --seed (default 64)")
    p.add_argument("--max-pairs", type=int, default=200_000, help="pairs per measure (default 200000)")
    p.add_argument("--seed", type=int, default=0, help="seed of the sampled blocks, pairs and masks")
    p.add_argument("--batch-size", type=int, default=16, help="blocks per forward pass")
    p.add_argument("--device", default="auto", help="auto (cuda if available), cpu, cuda, cuda:N")
    p.add_argument(MLM_PROBABILITY_PARAMETER.flag, type=float, default=None,
                   help=f"{MLM_PROBABILITY_PARAMETER.help}, in (0, 1); default: the checkpoint's own pre-training "
                        f"rate (its manifest's parameters.mlm_probability; {MLM_PROBABILITY} where it does not say)")
    p.add_argument("--n-resamples", type=int, default=N_RESAMPLES, help="bootstrap resamples per CI")
    return p


def main(argv: list[str] | None = None) -> int:
    """``taco dynamics``: write ``dynamics.json`` for one checkpoint; exit 2 on bad input."""
    args = build_parser().parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        record = compute_dynamics(args.checkpoint, args.blocks, split=args.split,
                                  num_blocks=args.num_blocks, max_pairs=args.max_pairs, seed=args.seed,
                                  batch_size=args.batch_size, device=args.device,
                                  mlm_probability=args.mlm_probability, n_resamples=args.n_resamples)
    except DynamicsInputError as exc:
        return cli_error("dynamics", exc)
    write_json_atomic(args.output, record)
    h = record["h"]
    print(f"taco dynamics: step {record['step']} {record['objective']}: intra {h['intra']['mean']:.4f} "
          f"inter {h['inter']['mean']:.4f} gap {h['gap']['mean']:.4f}; anchor "
          f"{record['anchor_alignment']['aligned']['mean']:.4f} vs "
          f"{record['anchor_alignment']['random_baseline']['mean']:.4f} -> {args.output}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
