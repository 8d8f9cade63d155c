"""Command-line entry point: ``taco <command> [options]`` (also ``python -m taco``).

Each command lives in its own module, which exposes ``main(argv: list[str] | None) -> int``;
this file only dispatches, so importing it stays cheap (torch is imported by the command). What the
command modules share (the ``--help`` layout, the error tail) is :mod:`taco.cli_parts`, below them.
"""

from __future__ import annotations

import importlib
import sys


#: command name -> (module, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "data-recipe": ("taco.data.recipe", "fetch and check the real-data folder of configs/cpu-real.yaml (docs/data.md)"),
    "corpus": ("taco.data.corpus", "materialize a corpus (synthetic, local text, Hub) as documents"),
    "tokenizer": ("taco.data.tokenizer", "build or train the WordPiece tokenizer (save_pretrained dir)"),
    "pack": ("taco.data.packing", "tokenize and pack documents into [CLS] ... [SEP] blocks"),
    "pretrain": ("taco.training.pretrain", "pre-train one segment up to a budget (resumable)"),
    "init": ("taco.training.control", "write the no-pre-training control (random init, step 0)"),
    "tuning-choice": ("taco.training.tuning", "the best of an arm's tuning trials (pretrain.tuning) as choice.json"),
    "finetune": ("taco.evaluation.finetune", "fine-tune one checkpoint on one GLUE task with one seed"),
    "finetune-choice": ("taco.evaluation.finetune_tuning",
                        "per task the best of a checkpoint's fine-tuning trials (finetune.tuning) as choice.json"),
    "glue-submission": ("taco.evaluation.submission",
                        "zip one checkpoint's GLUE test predictions (one seed) for the GLUE server"),
    "probe": ("taco.training.glue_probe", "frozen-feature linear probe of one checkpoint on GLUE tasks (no fine-tuning)"),
    "dynamics": ("taco.evaluation.dynamics", "representation similarity dynamics of one checkpoint"),
    "dynamics-figures": ("taco.commands.dynamics_figures", "figures 2 and 6 from dynamics.json files"),
    "aggregate": ("taco.commands.aggregate", "aggregate fine-tuning metrics.json files into per-cell statistics"),
    "tables": ("taco.commands.tables", "paper tables (CSV, Markdown, LaTeX) beside published values"),
    "figures": ("taco.commands.figures", "paper figures (PNG, PDF)"),
    "pretrain-curves": ("taco.commands.pretrain_curves", "pre-training curves: training losses, validation loss per budget"),
    "efficiency": ("taco.commands.efficiency",
                   "steps-to-target speedups of TACO over MLM with intervals, and their verdicts"),
    "claims": ("taco.commands.claims", "check the paper's claims on the reproduced numbers"),
    "claims-definitions": ("taco.commands.claims_definitions",
                           "docs/claims.md (what each claim compares, its kind, margin, source) from the declarations"),
    "deviations": ("taco.commands.deviations", "every difference of the run configuration from the paper's setup"),
    "plan": ("taco.workflow.plan.command", "compute plan of a configuration: jobs, FLOPs, GPU-hours, disk, time limits"),
    "gpu-slot": ("taco.launch.gpuslots", "print the GPU slot (CUDA_VISIBLE_DEVICES) for a local job"),
    "cpu-seconds": ("taco.launch.cpu_seconds", "CPU-seconds of a results folder's jobs per rule, from their logs"),
}


def _usage() -> str:
    lines = ["usage: taco <command> [options]", "", "commands:"]
    for name, (_, help_) in COMMANDS.items():
        lines.append(f"  {name:<15} {help_}")
    lines.append("")
    lines.append("Run `taco <command> --help` for the options of one command.")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Dispatch ``argv[0]`` to the module that implements it; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in {"-h", "--help"}:
        print(_usage())
        return 0
    if argv[0] == "--version":
        from taco import __version__

        print(__version__)
        return 0
    name, rest = argv[0], argv[1:]
    if name not in COMMANDS:
        print(f"taco: unknown command {name!r}\n\n{_usage()}", file=sys.stderr)
        return 2
    try:
        module = importlib.import_module(COMMANDS[name][0])
    except ModuleNotFoundError as exc:  # a base install (torch + transformers) without the suite's libraries
        print(f"taco {name}: needs {exc.name!r}, one of the suite's libraries: pip install 'taco-repro[suite]' "
              "(the base install holds the TC loss, its Trainer plug-in and the objectives)", file=sys.stderr)
        return 2
    return int(module.main(rest) or 0)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
