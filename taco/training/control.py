"""``taco init``: the no-pre-training control, a randomly initialised checkpoint of a run's architecture.

Fine-tuning from random initialisation tells whether pre-training helped at all: without it, a
configuration whose pre-trained checkpoints score like an untrained model looks like a result. The
control is written like a budget checkpoint (same layout, so ``taco finetune`` takes it unchanged):

- ``config.json``, ``model.safetensors``, tokenizer files: an untrained
  :class:`taco.model.modeling.PreTrainingModel` of ``--size`` with the blocks' vocabulary, built
  after ``transformers.set_seed(--seed)`` exactly as ``taco pretrain`` builds its model before the
  first step (so with the MLM objective and the run's seed it *is* that run's step-0 model);
- ``eval.json`` and the manifest's ``validation``: its MLM loss and accuracy on the validation
  blocks with the shared fixed masks (:mod:`taco.training.validation`);
- ``manifest.json``: ``kind: pretrain``, ``step: 0``, ``objective: control`` (the objective name the
  statistics, tables and claims use), ``control: true``, ``init_objective``, ``size``,
  ``size_preset``, ``fraction``, ``seed``, ``seq_len``, ``model_sha256``.

No ``trainer_state/``: the control is never resumed. Written atomically; an existing ``--output`` is
an error (exit 2), as for every checkpoint.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from taco.objectives.base import MLM_PROBABILITY_PARAMETER
from taco.cli_parts import cli_error
from taco.manifest import MANIFEST_NAME, atomic_directory, build_manifest, read_manifest, sha256_file, write_manifest
from taco.registry import PRESETS

KIND = "pretrain"
CONTROL = "control"


from taco.errors import UsageError  # noqa: E402


def build_parser() -> argparse.ArgumentParser:
    from taco.cli_parts import HelpFormatter
    p = argparse.ArgumentParser(formatter_class=HelpFormatter,
        prog="taco init",
        description="Write the no-pre-training control: a randomly initialised checkpoint (step 0) of "
        "the architecture `taco pretrain` would train, with its validation MLM loss.")
    p.add_argument("--blocks", required=True, help="packed blocks directory (taco pack output)")
    p.add_argument("--size", required=True, choices=PRESETS,
                   help="the model preset (the manifest's size_preset; config pretrain.sizes.<size>.preset)")
    p.add_argument("--size-name", default=None,
                   help="the run's size key, recorded as the manifest's size (a key of config pretrain.sizes; default: --size)")
    from taco.training.recipe import DEFAULT_PRETRAIN_SEED, RECIPE

    next(f for f in RECIPE if f.name == "architecture").add_to(p)
    p.add_argument("--seed", type=int, default=DEFAULT_PRETRAIN_SEED, help="initialisation seed (the pre-training seed)")
    p.add_argument("--init-objective", default="mlm",
                   help="objective the model is built with (its heads; default mlm)")
    MLM_PROBABILITY_PARAMETER.add_to(p, help_suffix="; the masks of the control's validation loss")
    p.add_argument("--output", required=True, help="checkpoint directory to write (must not exist)")
    p.add_argument("--device", choices=("auto", "cpu"), default="auto", help="device of the validation pass")
    from taco.training.validation import add_glue_probe_options

    add_glue_probe_options(p, every=False)
    return p


def check_inputs(args: argparse.Namespace) -> dict:
    """Validate; returns the facts needed. Raises UsageError / FileNotFoundError / FileExistsError."""
    from taco.objectives import get_objective
    from taco.training.validation import check_glue_probe_options

    check_glue_probe_options(args)
    try:
        get_objective(args.init_objective)
    except ValueError as exc:
        raise UsageError(f"--init-objective: {exc}") from None
    if (msg := MLM_PROBABILITY_PARAMETER.check(args.mlm_probability)):
        raise UsageError(msg)
    blocks = Path(args.blocks)
    if not blocks.is_dir():
        raise FileNotFoundError(f"--blocks {blocks}: no such directory")
    if not (blocks / "tokenizer").is_dir():
        raise FileNotFoundError(f"--blocks {blocks}: no tokenizer/ directory (is it a `taco pack` output?)")
    output = Path(args.output)
    if output.exists():
        raise FileExistsError(f"--output {output} exists; a finished checkpoint is never modified")
    from datasets import load_from_disk

    try:
        ds = load_from_disk(str(blocks))
    except Exception as exc:  # noqa: BLE001 - report which folder is broken
        raise FileNotFoundError(f"--blocks {blocks}: not a datasets save_to_disk directory ({exc})") from None
    if "train" not in ds or len(ds["train"]) == 0 or "input_ids" not in ds["train"].column_names:
        raise UsageError(f"--blocks {blocks}: needs a non-empty 'train' split with an 'input_ids' column")
    try:
        bm = read_manifest(blocks)
        fraction = float(bm.get("fraction", (bm.get("parameters") or {}).get("fraction", 1.0)))
        blocks_sha = sha256_file(blocks / MANIFEST_NAME)
    except FileNotFoundError:
        fraction, blocks_sha = 1.0, None
    return {"blocks": blocks, "output": output, "seq_len": len(ds["train"][0]["input_ids"]),
            "fraction": fraction, "blocks_manifest_sha256": blocks_sha}


def write_control(args: argparse.Namespace, facts: dict) -> Path:
    """Build the untrained model, evaluate it on the validation blocks, write the checkpoint."""
    import torch
    from transformers import AutoTokenizer, set_seed

    from taco.model.configs import encoder_config, special_token_ids
    from taco.model.modeling import pretraining_model_class
    from taco.training.validation import EVAL_NAME, GlueProbeOptions, evaluate_validation, glue_probe, write_eval

    t0 = time.time()
    tokenizer = AutoTokenizer.from_pretrained(str(facts["blocks"] / "tokenizer"))
    set_seed(args.seed)
    config = encoder_config(args.size, len(tokenizer), args.architecture, special_token_ids(tokenizer))
    model = pretraining_model_class(args.architecture)(config, objective=args.init_objective,
                                                       mlm_probability=args.mlm_probability)
    device = "cuda" if args.device == "auto" and torch.cuda.is_available() else "cpu"
    with atomic_directory(facts["output"]) as tmp:
        model.save_pretrained(str(tmp))
        tokenizer.save_pretrained(str(tmp))
        try:
            validation = evaluate_validation(model.to(device), facts["blocks"], tokenizer,
                                             mlm_probability=args.mlm_probability)
        except ValueError as exc:  # blocks without a validation split: the checkpoint is still usable
            validation = {"skipped": str(exc)}
        else:  # a failing GLUE probe is an error of the run, not a missing validation split
            validation.update(glue_probe(model, tokenizer, GlueProbeOptions.from_args(args)))  # the control's probe (--glue-probe-tasks)
            write_eval(tmp, validation, step=0)
        manifest = build_manifest(
            KIND, vars(args), {"blocks": str(facts["blocks"]),
                               "blocks_manifest_sha256": facts["blocks_manifest_sha256"]},
            step=0, tokens_seen=0, objective=CONTROL, control=True, init_objective=args.init_objective,
            size=args.size_name or args.size, size_preset=args.size, architecture=args.architecture,
            fraction=facts["fraction"],
            seed=args.seed, pretrain_seed=args.seed, seq_len=facts["seq_len"], max_steps=0, parent_checkpoint=None,
            validation=validation, eval_file=EVAL_NAME if "skipped" not in validation else None,
            wall_time_s=round(time.time() - t0, 3), total_wall_time_s=round(time.time() - t0, 3),
            model_sha256=sha256_file(tmp / "model.safetensors"),
        )
        write_manifest(tmp, manifest)
    return facts["output"]


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        facts = check_inputs(args)
    except (UsageError, FileNotFoundError, FileExistsError) as exc:
        return cli_error("init", exc)
    out = write_control(args, facts)
    print(f"taco init: wrote the no-pre-training control {out} (size {args.size}, seed {args.seed})",
          file=sys.stderr)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
