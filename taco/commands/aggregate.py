"""Aggregate fine-tuning metrics.json files: per-seed rows, per-cell statistics with t-based CIs, GLUE averages.

The command ``taco aggregate``: :func:`taco.stats.aggregate.aggregate` computes the three tables, written here
as ``per_seed.csv``, ``cells.csv`` and ``glue_average.csv`` with a manifest (one atomic folder).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import pandas as pd

from taco.cli_parts import cli_error
from taco.stats.aggregate import AGGREGATE_FILES, InputError, aggregate
from taco.stats.analysis_config import AnalysisConfigError, load_analysis


def _write_csv(df: pd.DataFrame, path: Path) -> None:
    df.to_csv(path, index=False, float_format="%.12g")


def read_input_list(path: str | Path) -> list[str]:
    """Paths listed one per line in ``path`` (blank lines and ``#`` comments ignored)."""
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"--inputs-from {p}: no such file")
    return [ln.strip() for ln in p.read_text().splitlines() if ln.strip() and not ln.strip().startswith("#")]


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``taco aggregate``."""
    from taco.cli_parts import HelpFormatter
    ap = argparse.ArgumentParser(formatter_class=HelpFormatter, prog="taco aggregate", description="Aggregate fine-tuning metrics.json files: per-seed rows, per-cell statistics with t-based CIs, GLUE averages.")
    ap.add_argument("--inputs", nargs="*", default=[], help="metrics.json files")
    ap.add_argument("--inputs-from", help="a file listing metrics.json paths, one per line")
    ap.add_argument("--analysis", help="analysis spec (JSON/YAML); default: the paper's grid")
    ap.add_argument("--output-dir", default="results/aggregate",
                    help="folder for per_seed.csv, cells.csv and glue_average.csv")
    return ap


def main(argv: list[str] | None = None) -> int:
    """``taco aggregate``: metrics.json files -> per_seed.csv, cells.csv, glue_average.csv."""
    from taco.manifest import atomic_directory, build_manifest, sha256_file, write_manifest

    args = build_parser().parse_args(argv)
    t0 = time.time()
    try:
        cfg = load_analysis(args.analysis)
        paths = list(args.inputs) + (read_input_list(args.inputs_from) if args.inputs_from else [])
        if not paths:
            raise InputError("no inputs: give --inputs and/or --inputs-from")
        frames = aggregate(paths, cfg)
    except (InputError, AnalysisConfigError, FileNotFoundError) as exc:
        return cli_error("aggregate", exc)
    with atomic_directory(args.output_dir, overwrite=True) as tmp:
        for name in AGGREGATE_FILES:
            _write_csv(frames[name[:-4]], tmp / name)
        write_manifest(tmp, build_manifest(
            "aggregate", {"analysis": cfg.to_dict()},
            inputs={p: sha256_file(p) for p in paths}, wall_time_s=round(time.time() - t0, 3),
            outputs=list(AGGREGATE_FILES)))
    print(f"taco aggregate: {len(paths)} runs -> {args.output_dir}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
