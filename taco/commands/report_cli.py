"""The shared command-line shell of ``taco tables``, ``taco figures`` and ``taco claims``.

Each of them reads the aggregate CSVs (``taco aggregate``) and the analysis spec, produces files in
``--output-dir`` and records a ``<name>.manifest.json`` beside them (inputs with sha256, the
resolved analysis spec, outputs, wall time). Bad input (missing aggregate, invalid spec) exits 2
with the file or key named, before anything is written.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from taco.cli_parts import cli_error
from taco.manifest import atomic_write_text
from taco.stats.analysis_config import AnalysisConfig, AnalysisConfigError, load_analysis


def report_parser(name: str, description: str,
                  add_arguments: Callable[[argparse.ArgumentParser], None] | None = None) -> argparse.ArgumentParser:
    """The parser of ``taco <name>``: ``--aggregate-dir --analysis --output-dir`` plus ``add_arguments``."""
    from taco.cli_parts import HelpFormatter
    ap = argparse.ArgumentParser(formatter_class=HelpFormatter, prog=f"taco {name}", description=description)
    ap.add_argument("--aggregate-dir", default="results/aggregate", help="output folder of `taco aggregate`")
    ap.add_argument("--analysis", help="analysis spec (JSON/YAML); default: the paper's grid")
    ap.add_argument("--output-dir", default="results", help="folder for the outputs and their manifest")
    if add_arguments is not None:
        add_arguments(ap)
    return ap


def report_main(
    name: str,
    description: str,
    produce: Callable[[Mapping[str, pd.DataFrame], AnalysisConfig, argparse.Namespace], Sequence[Path]],
    argv: list[str] | None = None,
    add_arguments: Callable[[argparse.ArgumentParser], None] | None = None,
) -> int:
    """Parse ``--aggregate-dir --analysis --output-dir`` (+ extra options), run ``produce``, write the manifest.

    ``produce(aggregate, cfg, args)`` returns the paths it wrote. Returns the exit status.
    """
    from taco.manifest import build_manifest, sha256_file
    from taco.stats.aggregate import AGGREGATE_FILES, read_aggregate

    args = report_parser(name, description, add_arguments).parse_args(argv)
    t0 = time.time()
    try:
        cfg = load_analysis(args.analysis)
        agg = read_aggregate(args.aggregate_dir)
    except (AnalysisConfigError, FileNotFoundError, ValueError) as exc:
        return cli_error(name, exc)
    out = Path(args.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    try:  # an extra input a command reads itself (taco claims --efficiency) is named as the rest
        written = list(produce(agg, cfg, args))
    except (AnalysisConfigError, FileNotFoundError, ValueError) as exc:
        return cli_error(name, exc)
    agg_dir = Path(args.aggregate_dir)
    inputs: dict[str, Any] = {str(agg_dir / f): sha256_file(agg_dir / f) for f in AGGREGATE_FILES}
    man = build_manifest(name, {"analysis": cfg.to_dict()}, inputs=inputs,
                         outputs=[Path(p).name for p in written], wall_time_s=round(time.time() - t0, 3))
    atomic_write_text(out / f"{name}.manifest.json", json.dumps(man, indent=2, default=str) + "\n")
    print(f"taco {name}: {len(written)} files -> {out}")
    return 0
